// The eleven steps: for each, its title, formula, the shapes of its operands, a few sentences,
// the library call its numbers come from, and the matrices it shows.
//
//   buildSteps(ctx) -> [{ id, part, title, titleHtml?, formulaHtml, shapes, explainHtml, source, matrices }]
//
// ctx: { worked, labels (n tokens), unknown, n, dModel, heads, dK, dV, head, causal, scaling,
//        positions, projection, seed, e (n,d_model) | null, p (n,d_model) | null, x (n,d_model),
//        result (compute.run's) }
// A matrix is a heatmap spec (see heatmap.js) plus `place`: 'main' (default), 'details' (behind a
// disclosure) or 'multiples' (small multiples).
import { weightTop } from './colors.js';
import { fmt } from './format.js';

const v = (s) => `<var>${s}</var>`;
const W = (s) => `${v('W')}<sub>${s}</sub>`;
const T = (s) => `${v(s)}<sup>T</sup>`;
const dims = (shape) => shape.join('\u00d7');

// A tensor as a matrix spec with token rows (and token columns when `square`).
function tokenMatrix(ctx, name, label, labelHtml, t, { scale = 'signed', square = false, rowNoun = 'token', colNoun = 'dimension', ...rest } = {}) {
  return {
    name, label, labelHtml, data: t.data, shape: t.shape, scale,
    rowLabels: ctx.labels, unknown: ctx.unknown, rowNoun,
    colLabels: square ? ctx.labels : undefined, colNoun: square ? 'key' : colNoun,
    ...rest,
  };
}

function weightMatrix(name, label, labelHtml, t, rest = {}) {
  return { name, label, labelHtml, data: t.data, shape: t.shape, scale: 'signed', rowNoun: 'row', colNoun: 'column', ...rest };
}

function headRange(ctx) {
  const from = ctx.head * ctx.dK + 1;
  return `${from}\u2013${from + ctx.dK - 1}`;
}

export function buildSteps(ctx) {
  const { result: r, n, dModel, heads, dK, dV, head, worked } = ctx;
  const s = r.single;
  const h1 = head + 1;
  const oneHead = heads === 1 ? 'the one head' : `head ${h1} of ${heads}`;
  const sqrtDk = Math.sqrt(dK);
  const scaleText = ctx.scaling ? `÷ √${dK} = × ${fmt(1 / sqrtDk)}` : '× 1 (scaling off)';
  const forward = 'mha.forward(X, { causal, scale, trace: true })';
  const single = 'attn.attention(Q, K, V, { causal, scale, trace: true })';
  const projections = r.projectionSource === 'attn.matmul'
    ? 'attn.matmul(X, W) for W_Q, W_K, W_V'
    : `mha.forward(X, { trace: true }): head ${h1}'s Q, K, V`;
  const weightsIs = worked
    ? `the worked example's ${W('Q')} = I, ${W('K')} = [1 1; 0 1], ${W('V')} = I`
    : ctx.projection === 'identity'
      ? `identity projections: ${heads === 1 ? `${W('Q')} = ${W('K')} = ${W('V')} = I, so Q = K = V = X` : `${oneHead} takes dimensions ${headRange(ctx)} of X as they are, so its Q, K and V are those columns of X`}`
      : `random projections (Xavier-uniform, seed ${ctx.seed})`;

  const steps = [];

  // 1 ---------------------------------------------------------------------------------------
  {
    const matrices = [];
    if (ctx.positions) {
      matrices.push(tokenMatrix(ctx, 'E', 'E (word vectors)', `${v('E')} word vectors`, { data: ctx.e.data, shape: ctx.e.shape }));
      matrices.push(tokenMatrix(ctx, 'P', 'P (positions)', `${v('P')} positions`, { data: ctx.p.data, shape: ctx.p.shape }, { rowNoun: 'position' }));
    }
    matrices.push(tokenMatrix(ctx, 'X', 'X', v('X'), ctx.x));
    steps.push({
      id: 'x', part: 'one', title: worked ? 'The input X' : 'Embeddings X',
      formulaHtml: worked ? `${v('X')} = [1 0; 0 1; 1 1]` : ctx.positions ? `${v('X')} = ${v('E')} + ${v('P')}` : `${v('X')} = ${v('E')}`,
      shapes: ctx.positions ? [`E ${dims(ctx.e.shape)}`, `P ${dims(ctx.p.shape)}`, `X ${dims(ctx.x.shape)}`] : [`X ${n}\u00d7${dModel}  (n \u00d7 d_model)`],
      explainHtml: worked
        ? '<p>Three tokens x₁, x₂, x₃, each a row of d_model = 2 numbers. Small enough that you can redo every step on paper; every number shown is still computed by the library.</p>'
        : `<p>Each token becomes a row of ${dModel} numbers: its GloVe word vector, learned from how often words occur near each other. Words used in similar contexts get similar rows, so their dot product is large.</p>` +
          (ctx.positions
            ? '<p>Attention by itself ignores word order: shuffle the tokens and each one gets the same output as before, only in another row. Adding the sinusoidal position vectors P (sine and cosine waves of different lengths, one row per position) makes each row depend on where its token stands.</p>'
            : '<p>Attention by itself ignores word order. Turn on <em>Add positions</em> to add sinusoidal position vectors P to each row.</p>'),
      source: null,  // the page's own code: word vectors and positions
      matrices,
    });
  }

  // 2 ---------------------------------------------------------------------------------------
  steps.push({
    id: 'qkv', part: 'one', title: 'Queries, keys and values',
    formulaHtml: `${v('Q')} = ${v('X')}${W('Q')}, &nbsp; ${v('K')} = ${v('X')}${W('K')}, &nbsp; ${v('V')} = ${v('X')}${W('V')}`,
    shapes: [`X ${dims(ctx.x.shape)} · W_Q ${dims(s.wq.shape)} → Q ${dims(s.q.shape)}`,
      `X · W_K ${dims(s.wk.shape)} → K ${dims(s.k.shape)}`, `X · W_V ${dims(s.wv.shape)} → V ${dims(s.v.shape)}`],
    explainHtml: '<p>Three linear maps give each token three new vectors: a <strong>query</strong> (what this token looks for), a <strong>key</strong> (what it can be found by) and a <strong>value</strong> (what it hands on to whoever attends to it).</p>' +
      `<p>This page uses ${weightsIs}.${heads > 1 ? ` Steps 2 to 7 follow ${oneHead}, whose W matrices are ${dModel}\u00d7${dK} slices of the layer's.` : ''}${!worked && ctx.projection === 'random' ? ' A trained model would have learned them; random ones still show the mechanics.' : ''}</p>`,
    source: projections,
    matrices: [
      tokenMatrix(ctx, 'Q', 'Q', v('Q'), s.q, { targetWidth: 230 }),
      tokenMatrix(ctx, 'K', 'K', v('K'), s.k, { targetWidth: 230 }),
      tokenMatrix(ctx, 'V', 'V', v('V'), s.v, { targetWidth: 230 }),
      weightMatrix('W_Q', 'W_Q', W('Q'), s.wq, { place: 'details' }),
      weightMatrix('W_K', 'W_K', W('K'), s.wk, { place: 'details' }),
      weightMatrix('W_V', 'W_V', W('V'), s.wv, { place: 'details' }),
    ],
  });

  // 3 ---------------------------------------------------------------------------------------
  const scoresM = tokenMatrix(ctx, 'scores', 'QKᵀ', `${v('S')} = ${v('Q')}${T('K')}`, s.scores, { square: true, rowNoun: 'query' });
  steps.push({
    id: 'scores', part: 'one', title: 'Scores QKᵀ', titleHtml: `Scores ${v('Q')}${T('K')}`,
    formulaHtml: `${v('S')} = ${v('Q')}${T('K')}, &nbsp; ${v('S')}<sub>ij</sub> = ${v('q')}<sub>i</sub> · ${v('k')}<sub>j</sub>`,
    shapes: [`Q ${dims(s.q.shape)} · Kᵀ ${dK}\u00d7${n} → S ${n}\u00d7${n}`],
    explainHtml: '<p>Row i, column j is the dot product of query i with key j: a large positive number when the two vectors point the same way, near zero when they are unrelated, negative when opposed. Rows are queries (the token doing the looking), columns are keys (the tokens being looked at).</p>',
    source: single,
    matrices: [scoresM],
  });

  // 4 ---------------------------------------------------------------------------------------
  const scaledM = tokenMatrix(ctx, 'scaled', ctx.scaling ? 'QKᵀ/√d_k' : 'QKᵀ·1', `${v('S')}′`, s.scaled, { square: true, rowNoun: 'query' });
  steps.push({
    id: 'scale', part: 'one', title: ctx.scaling ? 'Scale by 1/√d_k' : 'Scale (off)',
    titleHtml: ctx.scaling ? `Scale by 1/√${v('d')}<sub>k</sub>` : 'Scale (off)',
    formulaHtml: ctx.scaling ? `${v('S')}′ = ${v('S')} / √${v('d')}<sub>k</sub> = ${v('S')} / √${dK}` : `${v('S')}′ = ${v('S')} · 1`,
    shapes: [`S ${n}\u00d7${n} ${scaleText} → S′ ${n}\u00d7${n}`],
    explainHtml: ctx.scaling
      ? `<p>A dot product of two d_k-dimensional vectors is a sum of d_k terms, so its typical size grows like √d_k, and large inputs push softmax to put almost all weight on one key. Dividing by √d_k = ${fmt(sqrtDk, 3)} keeps the scores in a range where softmax still spreads weight. Turn <em>Scale by 1/√d_k</em> off and watch step 6 saturate.</p>`
      : '<p>Scaling is off: the scores go to softmax unchanged (scale 1), so S′ equals S. Large scores make softmax put nearly all of a row\'s weight on one key; compare step 6 with scaling on.</p>',
    source: single,
    matrices: [{ ...scoresM, name: 'scores' }, scaledM],
  });

  // 5 ---------------------------------------------------------------------------------------
  const maskedM = tokenMatrix(ctx, 'masked', 'masked scores', `${v('M')}`, s.masked, { square: true, rowNoun: 'query' });
  steps.push({
    id: 'mask', part: 'one', title: ctx.causal ? 'Causal mask' : 'Mask (off)',
    formulaHtml: ctx.causal
      ? `${v('M')}<sub>ij</sub> = ${v('S')}′<sub>ij</sub> if ${v('j')} ≤ ${v('i')}, &nbsp; −∞ if ${v('j')} > ${v('i')}`
      : `${v('M')} = ${v('S')}′ &nbsp; (no mask)`,
    shapes: [`S′ ${n}\u00d7${n} → M ${n}\u00d7${n}`],
    explainHtml: ctx.causal
      ? '<p>With the causal mask, token i may look only at itself and the tokens before it (j ≤ i), as in a model that writes text left to right and must not see the future. Entries above the diagonal become −∞, and exp(−∞) = 0, so they get exactly zero weight in the next step.</p>'
      : '<p>No mask: every token may look at every other token, before or after it, as in an encoder that reads the whole sentence at once. M is S′ unchanged. Turn on <em>Causal mask</em> to let token i see only tokens j ≤ i.</p>',
    source: single,
    matrices: [scaledM, maskedM],
  });

  // 6 ---------------------------------------------------------------------------------------
  const weightsM = tokenMatrix(ctx, 'weights', 'softmax weights A', v('A'), s.weights, { square: true, scale: 'unit', rowNoun: 'query', rowSums: true });
  steps.push({
    id: 'softmax', part: 'one', title: 'Row softmax',
    formulaHtml: `${v('A')}<sub>ij</sub> = exp(${v('M')}<sub>ij</sub> − ${v('m')}<sub>i</sub>) / Σ<sub>j</sub> exp(${v('M')}<sub>ij</sub> − ${v('m')}<sub>i</sub>), &nbsp; ${v('m')}<sub>i</sub> = max<sub>j</sub> ${v('M')}<sub>ij</sub>`,
    shapes: [`M ${n}\u00d7${n} → A ${n}\u00d7${n}, each row sums to 1`],
    explainHtml: '<p>Softmax turns each row into weights: exponentiate, then divide by the row total. Every weight is between 0 and 1 and each row sums to 1 (the Σ column). Subtracting the row maximum m<sub>i</sub> first does not change the result, but keeps exp from overflowing. Row i now says how much token i attends to each token j.</p>',
    source: single,
    matrices: [maskedM, weightsM],
  });

  // 7 ---------------------------------------------------------------------------------------
  steps.push({
    id: 'weighted', part: 'one', title: 'Weighted sum of values',
    formulaHtml: `${v('Z')} = ${v('A')}${v('V')}, &nbsp; ${v('z')}<sub>i</sub> = Σ<sub>j</sub> ${v('A')}<sub>ij</sub> ${v('v')}<sub>j</sub>`,
    shapes: [`A ${n}\u00d7${n} · V ${dims(s.v.shape)} → Z ${dims(s.output.shape)}`],
    explainHtml: `<p>Each output row is a blend of the value rows, mixed in the proportions of that row of A. A token that attends mostly to itself keeps roughly its own value; one that spreads its weight gets an average. This Z is the output of ${oneHead}.</p>`,
    source: single,
    matrices: [
      { ...weightsM, rowSums: false },
      tokenMatrix(ctx, 'V', 'V', v('V'), s.v, { targetWidth: 230 }),
      tokenMatrix(ctx, 'head_output', 'Z = AV', `${v('Z')} = ${v('A')}${v('V')}`, s.output, { targetWidth: 230 }),
    ],
  });

  // 8 ---------------------------------------------------------------------------------------
  const m = r.multi;
  const compact = heads > 2 || n > 24;
  // One colour range for all heads, so that the grids compare.
  const headsTop = Math.max(...m.heads.map((hd) => hd.weights.data.reduce((a, b) => Math.max(a, b), 0)));
  const domainMax = weightTop(headsTop);
  steps.push({
    id: 'heads', part: 'all', title: heads === 1 ? 'The head\'s weights' : `All ${heads} heads`,
    formulaHtml: `head<sub>k</sub> = softmax(${v('Q')}<sub>k</sub>${v('K')}<sub>k</sub><sup>T</sup> / √${v('d')}<sub>k</sub>) ${v('V')}<sub>k</sub>, &nbsp; k = 1 … ${heads}`,
    shapes: [`${heads} × A_k ${n}\u00d7${n}`, `Q_k, K_k, V_k ${n}\u00d7${dK} each`],
    explainHtml: heads === 1
      ? `<p>With one head, the layer is exactly steps 2 to 7, so this grid is step 6's A again.${worked ? '' : ' Choose more heads above to see several attention patterns side by side.'}</p>`
      : `<p>A multi-head layer runs ${heads} heads side by side, each with its own ${dModel}\u00d7${dK} projections${ctx.projection === 'identity' && !worked ? ' (here: each head its own slice of the dimensions)' : ''}, so each can attend in its own way. One grid per head: rows are queries, columns keys, brighter is more weight. Head ${h1} is the one steps 2 to 7 followed.</p>`,
    source: forward,
    matrices: m.heads.map((hd, k) => ({
      ...tokenMatrix(ctx, `weights_head${k + 1}`, `head ${k + 1} weights`, `head ${k + 1}`, hd.weights, { square: true, scale: 'unit', rowNoun: 'query' }),
      compact, domainMax, place: 'multiples',
    })),
  });

  // 9 ---------------------------------------------------------------------------------------
  // Head blocks in C's columns and W_O's rows (none to mark with one head).
  const groups = heads > 1 ? { size: dV, label: (k) => `head ${k + 1}`, short: (k) => `h${k + 1}` } : undefined;
  const concatLabel = heads > 1 ? `${v('C')} = [head<sub>1</sub> … head<sub>${heads}</sub>]` : `${v('C')} = head<sub>1</sub>`;
  const concatM = tokenMatrix(ctx, 'concat', 'concat', concatLabel, m.concat, { colGroups: groups, colNoun: 'column' });
  steps.push({
    id: 'concat', part: 'all', title: 'Concatenate the heads',
    formulaHtml: `${v('C')} = [ head<sub>1</sub> | head<sub>2</sub> | … | head<sub>${heads}</sub> ]`,
    shapes: [`${heads} × Z_k ${n}\u00d7${dV} → C ${dims(m.concat.shape)}`],
    explainHtml: `<p>The heads' outputs are laid side by side: columns 1\u2013${dV} come from head 1${heads > 1 ? `, the next ${dV} from head 2, and so on` : ''}. Each token now has ${heads * dV} numbers, ${dV} from each head.</p>`,
    source: forward,
    matrices: [concatM],
  });

  // 10 --------------------------------------------------------------------------------------
  const wo = r.weights.wo;
  steps.push({
    id: 'wo', part: 'all', title: 'Output projection W_O', titleHtml: `Output projection ${W('O')}`,
    formulaHtml: `${v('Y')} = ${v('C')}${W('O')}`,
    shapes: [`C ${dims(m.concat.shape)} · W_O ${dims(wo.shape)} → Y ${dims(m.output.shape)}`],
    explainHtml: `<p>One more linear map mixes the heads' results and brings each row back to d_model = ${dModel} numbers. ${worked || ctx.projection === 'identity' ? `Here ${W('O')} = I, so it changes nothing and Y equals C.` : `Here ${W('O')} is random too (same seed).`}</p>`,
    source: forward,
    matrices: [concatM, weightMatrix('W_O', 'W_O', W('O'), wo, { rowGroups: groups })],
  });

  // 11 --------------------------------------------------------------------------------------
  steps.push({
    id: 'output', part: 'all', title: 'Output',
    formulaHtml: `MultiHead(${v('X')}) = Concat(head<sub>1</sub>, …, head<sub>${heads}</sub>) ${W('O')}`,
    shapes: [`Y ${dims(m.output.shape)}, the same shape as X ${dims(ctx.x.shape)}`],
    explainHtml: '<p>One new vector per token, the same shape as the input, so layers can be stacked. Each row now mixes in information from the tokens its query attended to. Compare it with X below it.</p>',
    source: forward,
    matrices: [tokenMatrix(ctx, 'output', 'output Y', `${v('Y')}`, m.output), { ...tokenMatrix(ctx, 'X', 'X (input)', `${v('X')} (input, for comparison)`, ctx.x) }],
  });

  return steps;
}

// The step's one-line heading for screen readers and the kicker: "One head · step 3 of 11".
export function stepKicker(step, index, count, ctx) {
  const part = step.part === 'one'
    ? (ctx.heads === 1 ? 'Single-head attention' : `One head (head ${ctx.head + 1} of ${ctx.heads})`)
    : `Multi-head attention (${ctx.heads} head${ctx.heads > 1 ? 's' : ''})`;
  return `${part} · step ${index + 1} of ${count}`;
}

export const STEP_LABELS = ['X', 'Q K V', 'QKᵀ', '÷√d', 'mask', 'softmax', 'AV', 'heads', 'concat', 'W_O', 'out'];
