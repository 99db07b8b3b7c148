// The forward steps, one descriptor each (see steps/index.js for the fields):
//   part 'one'   X, then one head h forward: Q K V, QKᵀ, ÷√d_k, mask, softmax, AV
//   part 'all'   all heads, concat, W_O, output Y
import { weightTop } from '../colors.js';
import { esc, fmt, fmtList, quote } from '../format.js';
import { HAND, HAND_CAVEAT, byHand, handHolds } from '../worked_example.js';
import { describeHead } from '../model/head_stats.js';
import { pieceLabel } from '../tokenize.js';
import { inductionStepHtml } from '../induction.js';
import { scaleNoteHtml, softmaxNoteHtml, zeroColumnsHtml } from './measured.js';
import { T, W, dims, headGroups, tokenMatrix, v, weightMatrix } from './markup.js';
import { stepNumber } from './index.js';
import { keyCell, row, sub, table, vectorList } from './readout.js';

// Why positions: attention without a mask is permutation-equivariant; the causal mask breaks that.
const ORDER =
  'Without a mask, attention by itself ignores word order: shuffle the tokens and each one gets the same output as before, only in another row. With the causal mask that no longer holds: each token sees only itself and the tokens before it, so moving a token changes what it and the tokens after it can see (the mask knows positions, though not how far apart two tokens are).';

const FORWARD = 'mha.forward(X, { causal, scale, trace: true })';
const SINGLE = 'attn.attention(Q, K, V, { causal, scale, trace: true })';

const oneHead = (ctx) => (ctx.heads === 1 ? 'the one head' : `head ${ctx.head + 1} of ${ctx.heads}`);

// Dimensions 26–50: the columns of X that head h's identity projections take.
function headRange(ctx) {
  const from = ctx.head * ctx.dK + 1;
  return `${from}\u2013${from + ctx.dK - 1}`;
}

// The matrices more than one step shows.
const vMatrix = (ctx) => tokenMatrix(ctx, 'V', 'V', v('V'), ctx.result.single.v, { targetWidth: 230 });
const square = (ctx, name, label, labelHtml, t, rest) =>
  tokenMatrix(ctx, name, label, labelHtml, t, { square: true, rowNoun: 'query', ...rest });
const scoresMatrix = (ctx) => square(ctx, 'scores', 'QKᵀ', `${v('S')} = ${v('Q')}${T('K')}`, ctx.result.single.scores);
const scaledMatrix = (ctx) =>
  square(ctx, 'scaled', ctx.scaling ? 'QKᵀ/√d_k' : 'QKᵀ·1', `${v('S')}′`, ctx.result.single.scaled);
const maskedMatrix = (ctx) => square(ctx, 'masked', 'masked scores', `${v('M')}`, ctx.result.single.masked);
// Causal weights: the cells after the query are hatched as masked (their weight, 0, still given).
const afterQuery = (r, c) => c > r; // one function, so that the drawn pixels are reused (raster.js)
const maskedOf = (ctx) => (ctx.causal ? afterQuery : undefined);
const weightsMatrix = (ctx, rowSums) =>
  square(ctx, 'weights', 'softmax weights A', v('A'), ctx.result.single.weights, {
    scale: 'unit',
    rowSums,
    maskedCells: maskedOf(ctx),
  });
// Query i's row of [n,n] matrices side by side, one key a line: columns [name, tensor], each
// headed name_ij.
function queryRowTable(ctx, i, columns) {
  const { n } = ctx;
  const I = i + 1;
  const rows = Array.from({ length: n }, (_, j) => [
    keyCell(ctx, j),
    ...columns.map(([, t]) => fmt(t.data[i * n + j])),
  ]);
  return table(['key j', ...columns.map(([name]) => `${name}${sub(`${I}j`)}`)], rows, i);
}
function concatMatrix(ctx) {
  const { heads } = ctx;
  const label = heads > 1 ? `${v('C')} = [head<sub>1</sub> … head<sub>${heads}</sub>]` : `${v('C')} = head<sub>1</sub>`;
  return tokenMatrix(ctx, 'concat', 'concat', label, ctx.result.multi.concat, {
    colGroups: headGroups(ctx),
    colNoun: 'column',
  });
}

// The X step for the trained model's layer 2: its input is the residual stream after layer 1.
function secondLayerInput(ctx, matrices) {
  return {
    title: 'Layer 2 input X₂',
    titleHtml: `Layer 2 input ${v('X')}<sub>2</sub>`,
    formulaHtml: `${v('X')}<sub>2</sub> = ${v('X')}<sub>1</sub> + ${v('Y')}<sub>1</sub> &nbsp; (${v('X')}<sub>1</sub> = ${v('E')} + ${v('P')}, ${v('Y')}<sub>1</sub> = layer 1's output)`,
    shapes: [`X₂ ${dims(ctx.x.shape)}  (n × d_model)`],
    explainHtml:
      '<p>The trained model stacks two attention layers with <strong>residual connections</strong>: each layer adds its output to its input instead of replacing it. So layer 2 reads the token embeddings and positions plus whatever layer 1 gathered from earlier words (choose Layer 1 above to see that step by step).</p>',
    sourceHtml: "Built by the page: X₁ plus layer 1's output, from <code>mha.forward(X₁, { causal: true })</code>.",
    matrices,
  };
}

// Each trained head's measured behaviour on held-out text (from the model's manifest).
function headDescriptions(ctx) {
  const stats = ctx.trained.manifest.heads.filter((h) => h.layer === ctx.layer);
  const items = stats.map((h) => `<li><strong>head ${h.head + 1}</strong> ${esc(describeHead(h))}</li>`).join('');
  return `<p>Measured on held-out addresses (the model never trained on them), layer ${ctx.layer + 1}'s heads:</p><ul class="head-stats">${items}</ul>`;
}

// How the trained model turns the residual stream into next-word guesses (its manifest's output).
function nextWordNote(manifest) {
  const ff = manifest.model.feedForward;
  const block = ff
    ? `, passes each row through layer 2's feed-forward block (F = H + relu(H·W<sub>1</sub> + b<sub>1</sub>)·W<sub>2</sub> + b<sub>2</sub>, ${ff.hidden} hidden units)`
    : '';
  return `<p>The trained model adds both layers' outputs to X₁ (the residual stream H)${block}, maps each row through a 100×100 matrix and scores it against the embeddings of its ${manifest.model.classes.toLocaleString('en')} tokens (the same rows X₁ started from): a softmax over those scores is its guess of the next token. The side panel shows the five most likely tokens after the followed token.</p>`;
}

// The trained model's five most likely next words after token i, from the whole model.
function nextWords(ctx, i) {
  const items = ctx.trained.predictions[i]
    .map(
      ({ word, p }) =>
        `<li><span class="next-word">${esc(pieceLabel(word))}</span> <span class="next-p">${(100 * p).toFixed(1)} %</span></li>`,
    )
    .join('');
  return `<h3>Next word after ${quote(esc(ctx.labels[i]))}</h3><ol class="next-words" aria-label="The model's five most likely next words">${items}</ol>`;
}

export const FORWARD_STEPS = [
  // 1 ---------------------------------------------------------------------------------------------
  {
    id: 'x',
    part: 'one',
    label: 'X',
    source: null, // the page's own code: token embeddings and positions
    view(ctx) {
      const { n, dModel, worked } = ctx;
      const matrices = [];
      if (ctx.positions) {
        matrices.push(
          tokenMatrix(ctx, 'E', 'E (token embeddings)', `${v('E')} token embeddings`, {
            data: ctx.e.data,
            shape: ctx.e.shape,
          }),
        );
        matrices.push(
          tokenMatrix(
            ctx,
            'P',
            'P (positions)',
            `${v('P')} positions`,
            { data: ctx.p.data, shape: ctx.p.shape },
            { rowNoun: 'position' },
          ),
        );
      }
      matrices.push(tokenMatrix(ctx, 'X', 'X', v('X'), ctx.x));
      if (ctx.layer === 1) return secondLayerInput(ctx, matrices);
      return {
        title: worked ? 'The input X' : 'Embeddings X',
        formulaHtml: worked
          ? `${v('X')} = [1 0; 0 1; 1 1]`
          : ctx.positions
            ? `${v('X')} = ${v('E')} + ${v('P')}`
            : `${v('X')} = ${v('E')}`,
        shapes: ctx.positions
          ? [`E ${dims(ctx.e.shape)}`, `P ${dims(ctx.p.shape)}`, `X ${dims(ctx.x.shape)}`]
          : [`X ${n}\u00d7${dModel}  (n \u00d7 d_model)`],
        explainHtml: worked
          ? '<p>Three tokens x₁, x₂, x₃, each a row of d_model = 2 numbers. Small enough that you can redo every step on paper; every number shown is still computed by the library.</p>'
          : `<p>The text is cut into tokens: a byte-level BPE tokenizer, as GPT-2's, keeps frequent words whole (with their leading space, shown as ␣) and splits rarer ones into pieces, so any text you type has tokens. Each token becomes a row of ${dModel} numbers: its embedding, learned by the trained model along with its other weights (tokens used in similar places get similar rows).</p>` +
            (ctx.positions
              ? `<p>${ORDER} Adding the sinusoidal position vectors P (sine and cosine waves of different lengths, one row per position) makes each row depend on where its token stands, mask or no mask.</p>` +
                (ctx.trained && ctx.trained.manifest.model.positionScale !== 1
                  ? `<p>The trained model uses the sinusoids × ${ctx.trained.manifest.model.positionScale}, as it was trained.</p>`
                  : '')
              : `<p>${ORDER} Turn on <em>Add positions</em> to add sinusoidal position vectors P to each row.</p>`),
        sourceHtml: worked
          ? 'Typed in by hand: the page passes it to the library as it is.'
          : `Built by the page: each token's row of the trained model's embeddings${ctx.positions ? ', plus sinusoidal positions' : ''}.`,
        matrices,
      };
    },
    inspect(ctx, i) {
      const I = i + 1;
      return ctx.positions
        ? `<p>x${sub(I)} = e${sub(I)} + p${sub(I)} (token embedding plus position ${I}), ${ctx.dModel} numbers:</p>${vectorList(row(ctx.x, i))}`
        : `<p>x${sub(I)}, ${ctx.dModel} numbers:</p>${vectorList(row(ctx.x, i))}`;
    },
  },

  // 2 ---------------------------------------------------------------------------------------------
  {
    id: 'qkv',
    part: 'one',
    label: 'Q K V',
    source: 'attn.matmul(X, W) for W_Q, W_K, W_V',
    timing: 'attn.matmul',
    view(ctx) {
      const { heads, dModel, dK, worked } = ctx;
      const s = ctx.result.single;
      const weightsIs = worked
        ? `the worked example's ${W('Q')} = I, ${W('K')} = [1 1; 0 1], ${W('V')} = I`
        : ctx.projection === 'identity'
          ? `identity projections: ${heads === 1 ? `${W('Q')} = ${W('K')} = ${W('V')} = I, so Q = K = V = X` : `${oneHead(ctx)} takes dimensions ${headRange(ctx)} of X as they are, so its Q, K and V are those columns of X`}`
          : ctx.trained
            ? `the trained model's layer ${ctx.layer + 1} (trained by <code>npm run train-model</code> to predict the next word)`
            : `random projections (Xavier-uniform, seed ${ctx.seed})`;
      return {
        title: 'Queries, keys and values',
        formulaHtml: `${v('Q')} = ${v('X')}${W('Q')}, &nbsp; ${v('K')} = ${v('X')}${W('K')}, &nbsp; ${v('V')} = ${v('X')}${W('V')}`,
        shapes: [
          `X ${dims(ctx.x.shape)} · W_Q ${dims(s.wq.shape)} → Q ${dims(s.q.shape)}`,
          `X · W_K ${dims(s.wk.shape)} → K ${dims(s.k.shape)}`,
          `X · W_V ${dims(s.wv.shape)} → V ${dims(s.v.shape)}`,
        ],
        explainHtml:
          '<p>Three linear maps give each token three new vectors: a <strong>query</strong> (what this token looks for), a <strong>key</strong> (what it can be found by) and a <strong>value</strong> (what it hands on to whoever attends to it).</p>' +
          `<p>This page uses ${weightsIs}.${heads > 1 ? ` Steps ${stepNumber('qkv')} to ${stepNumber('weighted')} follow ${oneHead(ctx)}, whose W matrices are ${dModel}\u00d7${dK} slices of the layer's.` : ''}${!worked && ctx.projection === 'random' ? ' A trained model would have learned them; random ones still show the mechanics.' : ''}</p>` +
          zeroColumnsHtml(ctx),
        matrices: [
          tokenMatrix(ctx, 'Q', 'Q', v('Q'), s.q, { targetWidth: 230 }),
          tokenMatrix(ctx, 'K', 'K', v('K'), s.k, { targetWidth: 230 }),
          vMatrix(ctx),
          weightMatrix('W_Q', 'W_Q', W('Q'), s.wq, { place: 'details' }),
          weightMatrix('W_K', 'W_K', W('K'), s.wk, { place: 'details' }),
          weightMatrix('W_V', 'W_V', W('V'), s.wv, { place: 'details' }),
        ],
      };
    },
    inspect(ctx, i) {
      const s = ctx.result.single;
      const I = i + 1;
      return (
        `<h3>q${sub(I)} = x${sub(I)}W<sub>Q</sub></h3>${vectorList(row(s.q, i))}` +
        `<h3>k${sub(I)} = x${sub(I)}W<sub>K</sub></h3>${vectorList(row(s.k, i))}` +
        `<h3>v${sub(I)} = x${sub(I)}W<sub>V</sub></h3>${vectorList(row(s.v, i))}`
      );
    },
    hand: () =>
      byHand(
        'Q = X·I = X. K = X·W<sub>K</sub>: row 1 is [1 0]·[1 1; 0 1] = [1 1], row 2 is [0 1]·W<sub>K</sub> = [0 1], row 3 is [1 1]·W<sub>K</sub> = [1 2]. V = X·I = X.',
      ),
  },

  // 3 ---------------------------------------------------------------------------------------------
  {
    id: 'scores',
    part: 'one',
    label: 'QKᵀ',
    source: SINGLE,
    timing: 'attn.attention',
    view(ctx) {
      const { n, dK } = ctx;
      return {
        title: 'Scores QKᵀ',
        titleHtml: `Scores ${v('Q')}${T('K')}`,
        formulaHtml: `${v('S')} = ${v('Q')}${T('K')}, &nbsp; ${v('S')}<sub>ij</sub> = ${v('q')}<sub>i</sub> · ${v('k')}<sub>j</sub>`,
        shapes: [`Q ${dims(ctx.result.single.q.shape)} · Kᵀ ${dK}\u00d7${n} → S ${n}\u00d7${n}`],
        explainHtml:
          '<p>Row i, column j is the dot product of query i with key j: a large positive number when the two vectors point the same way, near zero when they are unrelated, negative when opposed. Rows are queries (the token doing the looking), columns are keys (the tokens being looked at).</p>',
        matrices: [scoresMatrix(ctx)],
      };
    },
    // With d_k <= 4 (the worked example) the dot products term by term.
    inspect(ctx, i) {
      const s = ctx.result.single;
      const { n } = ctx;
      const I = i + 1;
      const q = row(s.q, i);
      const terms = ctx.dK <= 4;
      const rows = Array.from({ length: n }, (_, j) => {
        const k = row(s.k, j);
        const cells = [keyCell(ctx, j)];
        if (terms)
          cells.push(
            Array.from(q, (qc, c) => `${fmt(qc, 0 === qc % 1 ? 0 : 4)}·${fmt(k[c], 0 === k[c] % 1 ? 0 : 4)}`).join(
              ' + ',
            ),
          );
        cells.push(fmt(s.scores.data[i * n + j]));
        return cells;
      });
      return (
        `<p>S${sub(`${I}j`)} = q${sub(I)} · k${sub('j')} for every key j:</p>` +
        table(['key j', ...(terms ? ['q·k term by term'] : []), `S${sub(`${I}j`)}`], rows, i)
      );
    },
    hand: () =>
      byHand(
        'entry (i, j) is q<sub>i</sub>·k<sub>j</sub>. Row 1: q<sub>1</sub> = [1 0] against k = [1 1], [0 1], [1 2] gives 1, 0, 1. Row 2: [0 1] gives 1, 1, 2. Row 3: [1 1] gives 2, 1, 3. So QKᵀ = [1 0 1; 1 1 2; 2 1 3].',
      ),
  },

  // 4 ---------------------------------------------------------------------------------------------
  {
    id: 'scale',
    part: 'one',
    label: '÷√d',
    source: SINGLE,
    timing: 'attn.attention',
    view(ctx) {
      const { n, dK } = ctx;
      const sqrtDk = Math.sqrt(dK);
      const scaleText = ctx.scaling ? `÷ √${dK} = × ${fmt(1 / sqrtDk)}` : '× 1 (scaling off)';
      return {
        title: ctx.scaling ? 'Scale by 1/√d_k' : 'Scale (off)',
        titleHtml: ctx.scaling ? `Scale by 1/√${v('d')}<sub>k</sub>` : 'Scale (off)',
        formulaHtml: ctx.scaling
          ? `${v('S')}′ = ${v('S')} / √${v('d')}<sub>k</sub> = ${v('S')} / √${dK}`
          : `${v('S')}′ = ${v('S')} · 1`,
        shapes: [`S ${n}\u00d7${n} ${scaleText} → S′ ${n}\u00d7${n}`],
        explainHtml: ctx.scaling
          ? `<p>A dot product of two d_k-dimensional vectors is a sum of d_k terms, so its typical size grows like √d_k, and large inputs push softmax to put almost all weight on one key. Dividing by √d_k = ${fmt(sqrtDk, 3)} keeps the typical size of a score from growing with d_k, so that softmax can spread weight when the learned W<sub>Q</sub> and W<sub>K</sub> do not make the gaps large. Turn <em>Scale by 1/√d_k</em> off and watch step ${stepNumber('softmax')} saturate.</p>${scaleNoteHtml(ctx)}`
          : `<p>Scaling is off: the scores go to softmax unchanged (scale 1), so S′ equals S. Large scores make softmax put nearly all of a row's weight on one key; compare step ${stepNumber('softmax')} with scaling on.</p>`,
        matrices: [scoresMatrix(ctx), scaledMatrix(ctx)],
      };
    },
    inspect(ctx, i) {
      const s = ctx.result.single;
      return (
        `<p>${ctx.scaling ? `Each score divided by √${ctx.dK} = ${fmt(Math.sqrt(ctx.dK))}` : 'Scaling off: multiplied by 1'}:</p>` +
        queryRowTable(ctx, i, [
          ['S', s.scores],
          ['S′', s.scaled],
        ])
      );
    },
    hand: ({ scaling }) =>
      scaling
        ? byHand('d<sub>k</sub> = 2, so every score is divided by √2 ≈ 1.4142: row 1 becomes [0.7071, 0, 0.7071].')
        : HAND_CAVEAT,
  },

  // 5 ---------------------------------------------------------------------------------------------
  {
    id: 'mask',
    part: 'one',
    label: 'mask',
    source: SINGLE,
    timing: 'attn.attention',
    view(ctx) {
      const { n } = ctx;
      return {
        title: ctx.causal ? 'Causal mask' : 'Mask (off)',
        formulaHtml: ctx.causal
          ? `${v('M')}<sub>ij</sub> = ${v('S')}′<sub>ij</sub> if ${v('j')} ≤ ${v('i')}, &nbsp; −∞ if ${v('j')} > ${v('i')}`
          : `${v('M')} = ${v('S')}′ &nbsp; (no mask)`,
        shapes: [`S′ ${n}\u00d7${n} → M ${n}\u00d7${n}`],
        explainHtml: ctx.causal
          ? '<p>With the causal mask, token i may look only at itself and the tokens before it (j ≤ i), as in a model that writes text left to right and must not see the future. Entries above the diagonal become −∞, and exp(−∞) = 0, so they get exactly zero weight in the next step.</p>'
          : '<p>No mask: every token may look at every other token, before or after it, as in an encoder that reads the whole sentence at once. M is S′ unchanged. Turn on <em>Causal mask</em> to let token i see only tokens j ≤ i.</p>',
        matrices: [scaledMatrix(ctx), maskedMatrix(ctx)],
      };
    },
    inspect(ctx, i) {
      const s = ctx.result.single;
      const what = ctx.causal
        ? `Token ${i + 1} sees keys 1 to ${i + 1}; keys after it become −∞.`
        : 'No mask: every key stays.';
      return `<p>${what}</p>${queryRowTable(ctx, i, [
        ['S′', s.scaled],
        ['M', s.masked],
      ])}`;
    },
  },

  // 6 ---------------------------------------------------------------------------------------------
  {
    id: 'softmax',
    part: 'one',
    label: 'softmax',
    source: SINGLE,
    timing: 'attn.attention',
    view(ctx) {
      const { n } = ctx;
      return {
        title: 'Row softmax',
        formulaHtml: `${v('A')}<sub>ij</sub> = exp(${v('M')}<sub>ij</sub> − ${v('m')}<sub>i</sub>) / Σ<sub>j</sub> exp(${v('M')}<sub>ij</sub> − ${v('m')}<sub>i</sub>), &nbsp; ${v('m')}<sub>i</sub> = max<sub>j</sub> ${v('M')}<sub>ij</sub>`,
        shapes: [`M ${n}\u00d7${n} → A ${n}\u00d7${n}, each row sums to 1`],
        explainHtml:
          '<p>Softmax turns each row into weights: exponentiate, then divide by the row total. Every weight is between 0 and 1 and each row sums to 1 (the Σ column). Subtracting the row maximum m<sub>i</sub> first does not change the result, but keeps exp from overflowing. Row i now says how much token i attends to each token j.</p>' +
          softmaxNoteHtml(ctx) +
          inductionStepHtml(ctx),
        matrices: [maskedMatrix(ctx), weightsMatrix(ctx, true)],
      };
    },
    // The softmax worked out: the row maximum, exp(M_ij − m_i), their sum and the weights.
    inspect(ctx, i) {
      const s = ctx.result.single;
      const I = i + 1;
      const z = Array.from(row(s.masked, i));
      const mx = Math.max(...z);
      const ex = z.map((x) => Math.exp(x - mx));
      const total = ex.reduce((a, b) => a + b, 0);
      const w = row(s.weights, i);
      const rows = z.map((x, j) => [keyCell(ctx, j), fmt(x), fmt(ex[j]), fmt(w[j])]);
      const wsum = w.reduce((a, b) => a + b, 0);
      return (
        `<ol class="recipe"><li>Row maximum m${sub(I)} = ${fmt(mx)}.</li><li>exp(M${sub(`${I}j`)} − m${sub(I)}) for every key; their sum is ${fmt(total)}.</li><li>Divide each by the sum: A${sub(`${I}j`)}.</li></ol>` +
        table(['key j', `M${sub(`${I}j`)}`, 'e<sup>M−m</sup>', `A${sub(`${I}j`)}`], rows, i) +
        `<p class="sum-line">Σ<sub>j</sub> A${sub(`${I}j`)} = <strong>${fmt(wsum)}</strong></p>`
      );
    },
    hand: (ctx) =>
      handHolds(ctx)
        ? byHand(
            `row 1 is [1/√2, 0, 1/√2]. With e = exp(1/√2) ≈ ${fmt(HAND.e)}, its weights are [e, 1, e] / (2e + 1) = ${fmtList(HAND.weightsRow1)}, which sum to 1.`,
          )
        : HAND_CAVEAT,
  },

  // 7 ---------------------------------------------------------------------------------------------
  {
    id: 'weighted',
    part: 'one',
    label: 'AV',
    source: SINGLE,
    timing: 'attn.attention',
    view(ctx) {
      const { n } = ctx;
      const s = ctx.result.single;
      return {
        title: 'Weighted sum of values',
        formulaHtml: `${v('Z')} = ${v('A')}${v('V')}, &nbsp; ${v('z')}<sub>i</sub> = Σ<sub>j</sub> ${v('A')}<sub>ij</sub> ${v('v')}<sub>j</sub>`,
        shapes: [`A ${n}\u00d7${n} · V ${dims(s.v.shape)} → Z ${dims(s.output.shape)}`],
        explainHtml: `<p>Each output row is a blend of the value rows, mixed in the proportions of that row of A. A token that attends mostly to itself keeps roughly its own value; one that spreads its weight gets an average. This Z is the output of ${oneHead(ctx)}.</p>`,
        matrices: [
          weightsMatrix(ctx, false),
          vMatrix(ctx),
          tokenMatrix(ctx, 'head_output', 'Z = AV', `${v('Z')} = ${v('A')}${v('V')}`, s.output, { targetWidth: 230 }),
        ],
      };
    },
    inspect(ctx, i) {
      const s = ctx.result.single;
      const I = i + 1;
      const w = Array.from(row(s.weights, i));
      const order = w.map((x, j) => j).sort((a, b) => w[b] - w[a]);
      const rows = order.map((j) => [keyCell(ctx, j), fmt(w[j])]);
      return (
        `<p>z${sub(I)} = Σ<sub>j</sub> A${sub(`${I}j`)} v${sub('j')}. The weights, largest first:</p>${table(['key j', `A${sub(`${I}j`)}`], rows, order.indexOf(i))}` +
        `<h3>z${sub(I)}, ${s.output.shape[1]} numbers</h3>${vectorList(row(s.output, i))}`
      );
    },
    hand: (ctx) =>
      handHolds(ctx)
        ? byHand(
            `output row 1 = w<sub>11</sub>·v<sub>1</sub> + w<sub>12</sub>·v<sub>2</sub> + w<sub>13</sub>·v<sub>3</sub> = (e·[1 0] + 1·[0 1] + e·[1 1]) / (2e + 1) = [2e, 1 + e] / (2e + 1) = ${fmtList(HAND.outputRow1)}.`,
          )
        : HAND_CAVEAT,
  },

  // 8 ---------------------------------------------------------------------------------------------
  {
    id: 'heads',
    part: 'all',
    label: 'heads',
    source: FORWARD,
    timing: 'mha.forward',
    view(ctx) {
      const { n, dModel, dK, worked } = ctx;
      const h = ctx.heads;
      const m = ctx.result.multi;
      const compact = h > 2 || n > 24;
      // One colour range for all heads, so that the grids compare.
      let headsTop = 0;
      for (const hd of m.heads) for (const w of hd.weights.data) if (w > headsTop) headsTop = w;
      const domainMax = weightTop(headsTop);
      return {
        title: h === 1 ? "The head's weights" : `All ${h} heads`,
        formulaHtml: `head<sub>k</sub> = softmax(${v('Q')}<sub>k</sub>${v('K')}<sub>k</sub><sup>T</sup> / √${v('d')}<sub>k</sub>) ${v('V')}<sub>k</sub>, &nbsp; k = 1 … ${h}`,
        shapes: [`${h} × A_k ${n}\u00d7${n}`, `Q_k, K_k, V_k ${n}\u00d7${dK} each`],
        explainHtml:
          h === 1
            ? `<p>With one head, the layer is exactly steps ${stepNumber('qkv')} to ${stepNumber('weighted')}, so this grid is step ${stepNumber('softmax')}'s A again.${worked ? '' : ' Choose more heads above to see several attention patterns side by side.'}</p>`
            : `<p>A multi-head layer runs ${h} heads side by side, each with its own ${dModel}\u00d7${dK} projections${ctx.projection === 'identity' && !worked ? ' (here: each head its own slice of the dimensions)' : ''}, so each can attend in its own way. One grid per head: rows are queries, columns keys, brighter is more weight. Head ${ctx.head + 1} is the one steps ${stepNumber('qkv')} to ${stepNumber('weighted')} followed.</p>${ctx.trained ? headDescriptions(ctx) : ''}`,
        matrices: m.heads.map((hd, k) => ({
          ...square(ctx, `weights_head${k + 1}`, `head ${k + 1} weights`, `head ${k + 1}`, hd.weights, {
            scale: 'unit',
            maskedCells: maskedOf(ctx),
          }),
          compact,
          domainMax,
          place: 'multiples',
        })),
      };
    },
    inspect(ctx, i) {
      const I = i + 1;
      const parts = ctx.result.multi.heads.map((hd, k) => {
        const w = row(hd.weights, i);
        const order = Array.from(w.keys()).sort((a, b) => w[b] - w[a] || a - b);
        const summary = order
          .slice(0, 3)
          .map((j) => `${esc(ctx.labels[j])} ${fmt(w[j], 2)}`)
          .join(', ');
        return `<details data-more="${k}"><summary><strong>head ${k + 1}</strong>: ${summary}</summary></details>`;
      });
      return `<p>Where token ${I} looks in each head (the top three keys; open a head for its whole row):</p>${parts.join('')}`;
    },
    // Head k's whole row, when its disclosure opens (four tables of 512 rows take a while).
    inspectMore(ctx, i, k) {
      const w = row(ctx.result.multi.heads[Number(k)].weights, i);
      return table(
        ['key j', 'A'],
        Array.from(w, (x, j) => [keyCell(ctx, j), fmt(x)]),
        i,
      );
    },
  },

  // 9 ---------------------------------------------------------------------------------------------
  {
    id: 'concat',
    part: 'all',
    label: 'concat',
    source: FORWARD,
    timing: 'mha.forward',
    view(ctx) {
      const { n, dV } = ctx;
      const h = ctx.heads;
      const m = ctx.result.multi;
      return {
        title: 'Concatenate the heads',
        formulaHtml: `${v('C')} = [ head<sub>1</sub> | head<sub>2</sub> | … | head<sub>${h}</sub> ]`,
        shapes: [`${h} × Z_k ${n}\u00d7${dV} → C ${dims(m.concat.shape)}`],
        explainHtml: `<p>The heads' outputs are laid side by side: columns 1\u2013${dV} come from head 1${h > 1 ? `, the next ${dV} from head 2, and so on` : ''}. Each token now has ${h * dV} numbers, ${dV} from each head.</p>`,
        matrices: [concatMatrix(ctx)],
      };
    },
    inspect: (ctx, i) =>
      `<p>c${sub(i + 1)}: ${ctx.heads} blocks of ${ctx.dV}, one per head:</p>${vectorList(row(ctx.result.multi.concat, i), { groupSize: ctx.dV })}`,
  },

  // 10 --------------------------------------------------------------------------------------------
  {
    id: 'wo',
    part: 'all',
    label: 'W_O',
    source: FORWARD,
    timing: 'mha.forward',
    view(ctx) {
      const m = ctx.result.multi;
      const w = ctx.result.weights.wo;
      return {
        title: 'Output projection W_O',
        titleHtml: `Output projection ${W('O')}`,
        formulaHtml: `${v('Y')} = ${v('C')}${W('O')}`,
        shapes: [`C ${dims(m.concat.shape)} · W_O ${dims(w.shape)} → Y ${dims(m.output.shape)}`],
        explainHtml: `<p>One more linear map mixes the heads' results and brings each row back to d_model = ${ctx.dModel} numbers. ${ctx.worked || ctx.projection === 'identity' ? `Here ${W('O')} = I, so it changes nothing and Y equals C.` : ctx.trained ? `Here ${W('O')} is the trained one.` : `Here ${W('O')} is random too (same seed).`}</p>`,
        matrices: [concatMatrix(ctx), weightMatrix('W_O', 'W_O', W('O'), w, { rowGroups: headGroups(ctx) })],
      };
    },
    inspect: (ctx, i) =>
      `<p>y${sub(i + 1)} = c${sub(i + 1)}W<sub>O</sub>. The row c${sub(i + 1)} that goes in:</p>${vectorList(row(ctx.result.multi.concat, i), { groupSize: ctx.dV })}`,
  },

  // 11 --------------------------------------------------------------------------------------------
  {
    id: 'output',
    part: 'all',
    label: 'out',
    source: FORWARD,
    timing: 'mha.forward',
    view(ctx) {
      const m = ctx.result.multi;
      return {
        title: 'Output',
        formulaHtml: `MultiHead(${v('X')}) = Concat(head<sub>1</sub>, …, head<sub>${ctx.heads}</sub>) ${W('O')}`,
        shapes: [`Y ${dims(m.output.shape)}, the same shape as X ${dims(ctx.x.shape)}`],
        explainHtml:
          '<p>One new vector per token, the same shape as the input, so layers can be stacked. Each row now mixes in information from the tokens its query attended to. Compare it with X below it.</p>' +
          (ctx.trained ? nextWordNote(ctx.trained.manifest) : ''),
        matrices: [
          tokenMatrix(ctx, 'output', 'output Y', `${v('Y')}`, m.output),
          tokenMatrix(ctx, 'X', 'X (input)', `${v('X')} (input, for comparison)`, ctx.x),
        ],
      };
    },
    inspect: (ctx, i) =>
      (ctx.trained ? nextWords(ctx, i) : '') +
      `<h3>y${sub(i + 1)}, ${ctx.dModel} numbers</h3>${vectorList(row(ctx.result.multi.output, i))}`,
    hand: () =>
      byHand(
        `with one head the concatenation is the head's output, and W<sub>O</sub> = I leaves it unchanged, so this equals step ${stepNumber('weighted')}.`,
      ),
  },
];
