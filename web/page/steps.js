// The eighteen steps: for each, its title, formula, the shapes of its operands, a few sentences,
// the library call its numbers come from, and the matrices it shows.
//   part 'one'   1-7    X, then one head h forward: Q K V, QKᵀ, ÷√d_k, mask, softmax, AV
//   part 'all'   8-11   all heads, concat, W_O, output Y
//   part 'back'  12-18  backward from L = ½‖y_i − x_j‖²: dY, head h's dZ, dV, dA, dS, dQ and dK,
//                       then the whole layer's weight gradients (scope 'layer' or 'head')
//
//   buildSteps(ctx) -> [{ id, part, scope?, title, titleHtml?, formulaHtml, shapes, explainHtml,
//                         source, sourceHtml?, timingCall?, detailsHtml?, matrices }]
//
// ctx: { worked, labels (n tokens), unknown, n, dModel, heads, dK, dV, head, causal, scaling,
//        positions, projection, seed, e (n,d_model) | null, p (n,d_model) | null, x (n,d_model),
//        result (compute.run's), back (compute.runBackward's) }
// A matrix is a heatmap spec (see heatmap.js) plus `place`: 'main' (default), 'details' (behind a
// disclosure) or 'multiples' (small multiples).
import { weightTop } from './colors.js';
import { esc, fmt, fmtShape, quote } from './format.js';

const v = (s) => `<var>${s}</var>`;
const W = (s) => `${v('W')}<sub>${s}</sub>`;
const T = (s) => `${v(s)}<sup>T</sup>`;
const dims = (shape) => shape.join('\u00d7');
const d = (s) => `d${s}`;  // a gradient: d + the (marked-up) name
// 9 -> "₉": token numbers in canvas labels.
const subDigits = (k) => String(k).replace(/\d/g, (c) => String.fromCharCode(0x2080 + Number(c)));

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

  steps.push(...backwardSteps(ctx, { groups, wo }));
  return steps;
}

// Steps 12-18: backward from the loss, through head h, to the weight gradients of the layer.
function backwardSteps(ctx, { groups, wo }) {
  const { result: r, back: b, n, dModel, heads, dK, dV, head, worked, causal } = ctx;
  const s = r.single;
  const g = b.grads;
  const h1 = head + 1;
  const oneHead = heads === 1 ? 'the one head' : `head ${h1}`;
  const i = b.query, j = b.target, I = i + 1, J = j + 1;
  const tok = (k) => esc(quote(ctx.labels[k]));
  const scaleHtml = ctx.scaling ? `1/√${dK}` : '1';
  const backward = 'attn.attentionBackward(Q, K, V, dZ, { causal, scale, trace: true })';
  const masked = causal ? (row, col) => col > row : undefined;
  const identityWO = worked || ctx.projection === 'identity';
  const steps = [];
  const sq = (name, label, labelHtml, t, rest) => tokenMatrix(ctx, name, label, labelHtml, t, { square: true, rowNoun: 'query', ...rest });
  const dZM = tokenMatrix(ctx, 'dZ', 'dZ', `${d(v('Z'))}`, b.dZ, { targetWidth: 230 });
  const aM = sq('weights', 'A (forward)', `${v('A')} (forward)`, g.weights, { scale: 'unit' });
  const dAM = sq('dA', 'dA', d(v('A')), g.dWeights);
  const dSM = sq('dS', 'dS', d(v('S')), g.dScores, { maskedCells: masked });

  // 12 --------------------------------------------------------------------------------------
  steps.push({
    id: 'loss', part: 'back', scope: 'layer', title: 'Target and loss',
    formulaHtml: `${v('L')} = ½ ‖${v('y')}<sub>${v('i')}</sub> − ${v('x')}<sub>${v('j')}</sub>‖², &nbsp; ` +
      `${d(v('Y'))} = ∂${v('L')}/∂${v('Y')}: row ${v('i')} is ${v('y')}<sub>${v('i')}</sub> − ${v('x')}<sub>${v('j')}</sub>, every other row 0`,
    shapes: [`y_i, x_j ${dModel} numbers each`, `dY ${n}\u00d7${dModel}, the shape of Y`],
    explainHtml: `<p>Training needs a <strong>loss</strong>: one number that says how far the output is from what we want. This page makes one up: pull the output of token i = ${I}, ${tok(i)} (the token you follow), toward the input row of token j = ${J}, ${tok(j)}. The loss is half the squared distance between the two rows, L = ½ Σ<sub>c</sub> (y<sub>ic</sub> − x<sub>jc</sub>)²; x<sub>j</sub> is held fixed, like a label.</p>` +
      `<p>Backpropagation starts from the gradient dY = ∂L/∂Y: one number per entry of Y, how much L grows when that entry grows, so the entry should move the other way. Only row i of Y is in the loss, so only row i of dY is nonzero, and it is y<sub>i</sub> − x<sub>j</sub>. Steps 13 to 17 carry it back through ${oneHead}; step 18 shows the gradients of all the layer's weights. Pick i and j above.</p>`,
    source: null,
    sourceHtml: 'Computed by the page: y<sub>i</sub> is row i of the output (step 11, from <code>mha.forward</code>); L and dY are one subtraction and a sum of squares.',
    matrices: [
      {
        name: 'loss_rows', label: 'y_i, x_j and y_i − x_j', labelHtml: `${v('y')}<sub>${I}</sub>, ${v('x')}<sub>${J}</sub> and their difference`,
        data: b.lossRows.data, shape: b.lossRows.shape, scale: 'signed', selectableRows: false,
        rowLabels: [`y${subDigits(I)} output`, `x${subDigits(J)} target`, 'y \u2212 x'], rowNoun: 'row', colNoun: 'dimension',
        description: `the output row of token ${I}, the input row of token ${J} and their difference, row ${I} of dY`,
      },
      tokenMatrix(ctx, 'dOutput', 'dY', `${d(v('Y'))} = ∂${v('L')}/∂${v('Y')}`, b.dOutput),
    ],
  });

  // 13 --------------------------------------------------------------------------------------
  const from = head * dV + 1;
  steps.push({
    id: 'dhead', part: 'back', scope: 'head', title: 'Back through W_O', titleHtml: `Back through ${W('O')}`,
    formulaHtml: `${d(v('C'))} = ${d(v('Y'))} ${W('O')}<sup>T</sup>, &nbsp; ${d(v('Z'))} = columns ${from}–${from + dV - 1} of ${d(v('C'))}`,
    shapes: [`dY ${n}\u00d7${dModel} · W_Oᵀ ${dModel}\u00d7${heads * dV} → dC ${n}\u00d7${heads * dV}`, `dZ ${n}\u00d7${dV} (${oneHead})`],
    explainHtml: `<p>Y = C${W('O')} (step 10). Back through a matrix product, the gradient is multiplied by the other factor, transposed: dC = dY ${W('O')}<sup>T</sup>. ${identityWO ? `Here ${W('O')} = I, so dC equals dY.` : `Row i of dC spreads y<sub>i</sub> − x<sub>j</sub> over the ${heads * dV} columns of C.`}</p>` +
      `<p>${heads > 1 ? `Each head owns ${dV} of C's columns (step 9), so ${oneHead}'s share is its block: ` : 'With one head, '}dZ, the gradient of the head's output Z from step 7 (often written dO). Steps 14 to 17 follow ${oneHead} back${heads > 1 ? '; the other heads go back the same way' : ''}.</p>`,
    source: 'attn.matmul(dY, W_O, { transposeB: true }), then the head\'s columns',
    timingCall: 'attn.matmul',
    detailsHtml: `The output projection ${W('O')} (${fmtShape(wo.shape)})`,
    matrices: [
      tokenMatrix(ctx, 'dConcat', 'dC', d(v('C')), b.dConcat, { colGroups: groups, colNoun: 'column' }),
      dZM,
      weightMatrix('W_O', 'W_O', W('O'), wo, { rowGroups: groups, place: 'details' }),
    ],
  });

  // 14 --------------------------------------------------------------------------------------
  steps.push({
    id: 'dv', part: 'back', scope: 'head', title: 'Gradient of V', titleHtml: `Gradient of ${v('V')}`,
    formulaHtml: `${d(v('V'))} = ${T('A')} ${d(v('Z'))}, &nbsp; ${d(v('v'))}<sub>${v('j')}</sub> = Σ<sub>${v('r')}</sub> ${v('A')}<sub>${v('rj')}</sub> ${d(v('z'))}<sub>${v('r')}</sub>`,
    shapes: [`Aᵀ ${n}\u00d7${n} · dZ ${n}\u00d7${dV} → dV ${n}\u00d7${dV}`],
    explainHtml: `<p>Z = AV (step 7): value v<sub>j</sub> went to every query r with weight A<sub>rj</sub>, so its gradient collects every dz<sub>r</sub> times A<sub>rj</sub>. Only row i of dZ is nonzero, so dv<sub>j</sub> = A<sub>ij</sub> dz<sub>i</sub>: every row of dV points along dz<sub>i</sub>, and the values token i attended to most are pushed hardest.${causal ? ` With the causal mask A<sub>ij</sub> = 0 for j > i, so those rows of dV are exactly 0.` : ''}</p>` +
      '<p>This and the next three steps come from one call, <code>attn.attentionBackward</code>: it returns dQ, dK and dV, and with <code>trace</code> also A, dA and dS.</p>',
    source: backward,
    timingCall: 'attn.attentionBackward',
    matrices: [aM, dZM, tokenMatrix(ctx, 'dV', 'dV', d(v('V')), g.dv, { targetWidth: 230 })],
  });

  // 15 --------------------------------------------------------------------------------------
  steps.push({
    id: 'dA', part: 'back', scope: 'head', title: 'Gradient of the weights A', titleHtml: `Gradient of the weights ${v('A')}`,
    formulaHtml: `${d(v('A'))} = ${d(v('Z'))} ${T('V')}, &nbsp; ${d(v('A'))}<sub>${v('ij')}</sub> = ${d(v('z'))}<sub>${v('i')}</sub> · ${v('v')}<sub>${v('j')}</sub>`,
    shapes: [`dZ ${n}\u00d7${dV} · Vᵀ ${dV}\u00d7${n} → dA ${n}\u00d7${n}`],
    explainHtml: '<p>The same product from the other side: dA<sub>ij</sub> = dz<sub>i</sub> · v<sub>j</sub>, how much L would change if query i gave a little more weight to key j. Positive (red): more weight on j would raise the loss; negative (blue): it would lower it. Only row i is nonzero. The library calls this dWeights; papers often write dP.</p>' +
      (causal ? '<p>Masked cells get a value too (dz<sub>i</sub> · v<sub>j</sub> is defined for every j), but their weight is exactly 0 and stays 0. The next step multiplies by A, so nothing passes through them.</p>' : ''),
    source: backward,
    timingCall: 'attn.attentionBackward',
    matrices: [dZM, tokenMatrix(ctx, 'V', 'V', v('V'), s.v, { targetWidth: 230 }), dAM],
  });

  // 16 --------------------------------------------------------------------------------------
  steps.push({
    id: 'dS', part: 'back', scope: 'head', title: 'Softmax backward',
    formulaHtml: `${d(v('S'))}<sub>${v('ij')}</sub> = ${scaleHtml} · ${v('A')}<sub>${v('ij')}</sub> (${d(v('A'))}<sub>${v('ij')}</sub> − Σ<sub>${v('k')}</sub> ${v('A')}<sub>${v('ik')}</sub> ${d(v('A'))}<sub>${v('ik')}</sub>)`,
    shapes: [`A, dA ${n}\u00d7${n} → dS ${n}\u00d7${n}`, `scale ${ctx.scaling ? `1/√${dK} = ${fmt(1 / Math.sqrt(dK))}` : '1 (scaling off)'}`],
    explainHtml: '<p>Softmax ties a row together: raising one score lowers every other weight in the row. Its Jacobian for row i is the n×n matrix diag(a<sub>i</sub>) − a<sub>i</sub>a<sub>i</sub><sup>T</sup>, and dS is a <strong>Jacobian-vector product</strong>: that matrix times dA<sub>i</sub>, worked out without building it as A<sub>ij</sub>(dA<sub>ij</sub> − Σ<sub>k</sub> A<sub>ik</sub> dA<sub>ik</sub>). ' +
      `${ctx.scaling ? `The scale ${scaleHtml} of step 4 multiplies too` : 'The scale (1, scaling off) multiplies too'}, so dS is the gradient with respect to S = Q${T('K')} of step 3. Each row of dS sums to 0 (the Σ column): adding one number to a whole row of scores leaves the softmax unchanged.</p>` +
      (causal
        ? '<p><strong>Masked cells are exactly 0</strong> (hatched): their weight A<sub>ij</sub> is 0, and the factor A<sub>ij</sub> stops the gradient whatever dA<sub>ij</sub> was. The mask lets nothing back, as it let nothing through.</p>'
        : '<p>Where a weight is near 0, its dS is near 0 too: a key the query ignores gets almost no gradient. Turn on the causal mask to see masked cells at exactly 0.</p>'),
    source: backward,
    timingCall: 'attn.attentionBackward',
    matrices: [aM, dAM, { ...dSM, rowSums: true }],
  });

  // 17 --------------------------------------------------------------------------------------
  steps.push({
    id: 'dqk', part: 'back', scope: 'head', title: 'Gradients of Q and K', titleHtml: `Gradients of ${v('Q')} and ${v('K')}`,
    formulaHtml: `${d(v('Q'))} = ${d(v('S'))} ${v('K')}, &nbsp; ${d(v('K'))} = ${d(T('S'))} ${v('Q')}`,
    shapes: [`dS ${n}\u00d7${n} · K ${n}\u00d7${dK} → dQ ${n}\u00d7${dK}`, `dSᵀ ${n}\u00d7${n} · Q ${n}\u00d7${dK} → dK ${n}\u00d7${dK}`],
    explainHtml: `<p>S = Q${T('K')} is a product again: dQ = dS K (row i: Σ<sub>j</sub> dS<sub>ij</sub> k<sub>j</sub>, a blend of the keys) and dK = dS<sup>T</sup>Q (row j: Σ<sub>r</sub> dS<sub>rj</sub> q<sub>r</sub>). Only row i of dS is nonzero, so dQ has one nonzero row and every dk<sub>j</sub> is dS<sub>ij</sub> q<sub>i</sub>, a multiple of the one query${causal ? '; masked keys (j > i) get exactly 0' : ''}.</p>` +
      `<p>dQ, dK and dV are what <code>attn.attentionBackward</code> returns. Back through Q = X${W('Q')}, K = X${W('K')} and V = X${W('V')} they give ${oneHead}'s columns of the weight gradients, d${W('Q')} = ${T('X')}dQ and so on: the next step.</p>`,
    source: backward,
    timingCall: 'attn.attentionBackward',
    matrices: [dSM, tokenMatrix(ctx, 'dQ', 'dQ', d(v('Q')), g.dq, { targetWidth: 230 }), tokenMatrix(ctx, 'dK', 'dK', d(v('K')), g.dk, { targetWidth: 230 })],
  });

  // 18 --------------------------------------------------------------------------------------
  const L = b.layer;
  const hk = heads * dK;
  const wSpec = (name, label, labelHtml, t, rest) => weightMatrix(name, label, labelHtml, t, { maxSide: 300, ...rest });
  steps.push({
    id: 'dw', part: 'back', scope: 'layer', title: 'Weight gradients',
    formulaHtml: `${d(W('Q'))} = ${T('X')} ${d(v('Q'))}, &nbsp; ${d(W('K'))} = ${T('X')} ${d(v('K'))}, &nbsp; ${d(W('V'))} = ${T('X')} ${d(v('V'))}, &nbsp; ${d(W('O'))} = ${T('C')} ${d(v('Y'))}`,
    shapes: [`Xᵀ ${dModel}\u00d7${n} · dQ, dK, dV ${n}\u00d7${hk} (all heads) → dW_Q, dW_K, dW_V ${dModel}\u00d7${hk}`,
      `Cᵀ ${hk}\u00d7${n} · dY ${n}\u00d7${dModel} → dW_O ${hk}\u00d7${dModel}`, `dX ${n}\u00d7${dModel}`],
    explainHtml: `<p><code>mha.backward(dY)</code> runs steps 13 to 17 for every head and goes on through the projections. Each weight gradient has its weight's shape: entry (r, c) says how L changes when that weight grows. ${heads > 1 ? `Head ${h1}'s block of columns in d${W('Q')}, d${W('K')} and d${W('V')} is ${T('X')} times dQ, dK and dV of the steps before; the other blocks come from the other heads.` : `d${W('Q')}, d${W('K')} and d${W('V')} are ${T('X')} times dQ, dK and dV of the steps before.`} Only row i of dY is nonzero, so d${W('O')} = c<sub>i</sub><sup>T</sup>(y<sub>i</sub> − x<sub>j</sub>): every row a multiple of the same vector.</p>` +
      '<p>dX, the gradient with respect to the input, is what a layer hands back to the one below it (or to the embeddings). <strong>Gradient descent</strong> then moves every weight a little against its gradient, W ← W − lr · dW. Try it below: a small learning rate lowers the loss; a large one can overshoot and raise it.</p>',
    source: 'mha.backward(dY) after mha.forward(X, { causal, scale }) with the same weights',
    timingCall: 'mha.backward',
    matrices: [
      wSpec('dW_Q', 'dW_Q', d(W('Q')), L.dwq, { colGroups: groups }),
      wSpec('dW_K', 'dW_K', d(W('K')), L.dwk, { colGroups: groups }),
      wSpec('dW_V', 'dW_V', d(W('V')), L.dwv, { colGroups: groups }),
      wSpec('dW_O', 'dW_O', d(W('O')), L.dwo, { rowGroups: groups }),
      tokenMatrix(ctx, 'dX', 'dX', d(v('X')), L.dx),
    ],
  });
  return steps;
}

// The step's one-line heading for screen readers and the kicker: "One head · step 3 of 11".
export function stepKicker(step, index, count, ctx) {
  const headText = ctx.heads === 1 ? 'the one head' : `head ${ctx.head + 1} of ${ctx.heads}`;
  const part = step.part === 'back'
    ? (step.scope === 'head' ? `Backward, ${headText}` : 'Backward, the whole layer')
    : step.part === 'one'
      ? (ctx.heads === 1 ? 'Single-head attention' : `One head (head ${ctx.head + 1} of ${ctx.heads})`)
      : `Multi-head attention (${ctx.heads} head${ctx.heads > 1 ? 's' : ''})`;
  return `${part} · step ${index + 1} of ${count}`;
}

export const STEP_LABELS = ['X', 'Q K V', 'QKᵀ', '÷√d', 'mask', 'softmax', 'AV', 'heads', 'concat', 'W_O', 'out',
  'loss', 'dZ', 'dV', 'dA', 'dS', 'dQ dK', 'dW'];
