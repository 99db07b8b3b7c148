// The backward steps, the pass from L = ½‖y_i − x_j‖², one descriptor each (see steps/index.js
// for the fields): dY, head h's dZ, dV, dA, dS, dQ and dK, then the whole layer's weight gradients.
// `scope` says what the kicker names: 'layer' (the whole layer) or 'head' (the followed head).
// Each step's formula quotes the forward step it undoes.
import { esc, fmt, fmtList, fmtShape, quote } from '../format.js';
import { HAND, HAND_BACK, byHandBack } from '../worked_example.js';
import { T, W, d, headGroups, subDigits, tokenMatrix, v, weightMatrix } from './markup.js';
import { stepNumber } from './index.js';
import { keyCell, row, sub, table, vectorList } from './readout.js';

const BACKWARD = 'attn.attentionBackward(Q, K, V, dZ, { causal, scale, trace: true })';

const oneHead = (ctx) => (ctx.heads === 1 ? 'the one head' : `head ${ctx.head + 1}`);
const tok = (ctx, k) => esc(quote(ctx.labels[k]));
const scaleHtml = (ctx) => (ctx.scaling ? `1/√${ctx.dK}` : '1');

// The matrices more than one step shows.
const square = (ctx, name, label, labelHtml, t, rest) =>
  tokenMatrix(ctx, name, label, labelHtml, t, { square: true, rowNoun: 'query', ...rest });
const afterQuery = (r, c) => c > r; // one function, so that the drawn pixels are reused (raster.js)
const dZMatrix = (ctx) => tokenMatrix(ctx, 'dZ', 'dZ', `${d(v('Z'))}`, ctx.back.dZ, { targetWidth: 230 });
const aMatrix = (ctx) =>
  square(ctx, 'weights', 'A (forward)', `${v('A')} (forward)`, ctx.back.grads.weights, {
    scale: 'unit',
    maskedCells: ctx.causal ? afterQuery : undefined,
  });
const dAMatrix = (ctx) => square(ctx, 'dA', 'dA', d(v('A')), ctx.back.grads.dWeights);
const dSMatrix = (ctx, rest) =>
  square(ctx, 'dS', 'dS', d(v('S')), ctx.back.grads.dScores, {
    maskedCells: ctx.causal ? afterQuery : undefined,
    ...rest,
  });

// Side-panel pieces for a causal mask: key j > i is masked.
const isMasked = (ctx, i, j) => ctx.causal && j > i;
const MASK_MARK =
  '<span class="masked-swatch inline" aria-hidden="true"></span><span class="visually-hidden"> (masked)</span>';
const maskNote = (ctx, i) =>
  ctx.causal && i < ctx.n - 1
    ? `<p class="hint"><span class="masked-swatch inline" aria-hidden="true"></span> a masked key (j > ${i + 1}).</p>`
    : '';

// The hand values (worked example, i = x₁, j = x₂).
const H = HAND_BACK;
const [a1, a2] = HAND.weightsRow1;
const g = H.dOutputRow1;

export const BACKWARD_STEPS = [
  // 12 --------------------------------------------------------------------------------------------
  {
    id: 'loss',
    part: 'back',
    scope: 'layer',
    label: 'loss',
    source: null, // the page's own arithmetic (sourceHtml)
    view(ctx) {
      const { n, dModel } = ctx;
      const b = ctx.back;
      const i = b.query,
        j = b.target,
        I = i + 1,
        J = j + 1;
      return {
        title: 'Target and loss',
        formulaHtml:
          `${v('L')} = ½ ‖${v('y')}<sub>${v('i')}</sub> − ${v('x')}<sub>${v('j')}</sub>‖², &nbsp; ` +
          `${d(v('Y'))} = ∂${v('L')}/∂${v('Y')}: row ${v('i')} is ${v('y')}<sub>${v('i')}</sub> − ${v('x')}<sub>${v('j')}</sub>, every other row 0`,
        shapes: [`y_i, x_j ${dModel} numbers each`, `dY ${n}\u00d7${dModel}, the shape of Y`],
        explainHtml:
          `<p>Training needs a <strong>loss</strong>: one number that says how far the output is from what we want. This page makes one up: pull the output of token i = ${I}, ${tok(ctx, i)} (the token you follow), toward the input row of token j = ${J}, ${tok(ctx, j)}. The loss is half the squared distance between the two rows, L = ½ Σ<sub>c</sub> (y<sub>ic</sub> − x<sub>jc</sub>)²; x<sub>j</sub> is held fixed, like a label.</p>` +
          `<p>Backpropagation starts from the gradient dY = ∂L/∂Y: one number per entry of Y, how much L grows when that entry grows, so the entry should move the other way. Only row i of Y is in the loss, so only row i of dY is nonzero, and it is y<sub>i</sub> − x<sub>j</sub>. Steps ${stepNumber('dhead')} to ${stepNumber('dqk')} carry it back through ${oneHead(ctx)}; step ${stepNumber('dw')} shows the gradients of all the layer's weights. Pick i and j above.</p>`,
        sourceHtml: `Computed by the page: y<sub>i</sub> is row i of the output (step ${stepNumber('output')}, from <code>mha.forward</code>); L and dY are one subtraction and a sum of squares.`,
        matrices: [
          {
            name: 'loss_rows',
            label: 'y_i, x_j and y_i − x_j',
            labelHtml: `${v('y')}<sub>${I}</sub>, ${v('x')}<sub>${J}</sub> and their difference`,
            data: b.lossRows.data,
            shape: b.lossRows.shape,
            scale: 'signed',
            selectableRows: false,
            rowLabels: [`y${subDigits(I)} output`, `x${subDigits(J)} target`, 'y \u2212 x'],
            rowNoun: 'row',
            colNoun: 'dimension',
            description: `the output row of token ${I}, the input row of token ${J} and their difference, row ${I} of dY`,
          },
          tokenMatrix(ctx, 'dOutput', 'dY', `${d(v('Y'))} = ∂${v('L')}/∂${v('Y')}`, b.dOutput),
        ],
      };
    },
    inspect(ctx, i) {
      const b = ctx.back;
      const I = i + 1,
        J = b.target + 1;
      return (
        `<p>L = ½ Σ${sub('c')} (y${sub(`${I}c`)} − x${sub(`${J}c`)})² = <strong>${fmt(b.loss)}</strong></p>` +
        `<h3>Row ${I} of dY = y${sub(I)} − x${sub(J)}, ${ctx.dModel} numbers</h3>${vectorList(row(b.dOutput, i))}` +
        `<details><summary>y${sub(I)}, the output row</summary>${vectorList(row(b.lossRows, 0))}</details>` +
        `<details><summary>x${sub(J)}, the target row</summary>${vectorList(row(b.lossRows, 1))}</details>`
      );
    },
    hand: (ctx) =>
      byHandBack(
        ctx,
        `y₁ = ${fmtList(HAND.outputRow1)} (step ${stepNumber('output')}) and x₂ = [0, 1], so row 1 of dY is y₁ − x₂ = ${fmtList(H.dOutputRow1)}, and L = ½(${fmt(g[0])}² + ${fmt(-g[1])}²) = ${fmt(H.loss)}. Rows 2 and 3 of dY are 0.`,
      ),
  },

  // 13 --------------------------------------------------------------------------------------------
  {
    id: 'dhead',
    part: 'back',
    scope: 'head',
    label: 'dZ',
    source: "attn.matmul(dY, W_O, { transposeB: true }), then the head's columns",
    timing: 'attn.matmul',
    view(ctx) {
      const { n, dModel, heads, dV } = ctx;
      const b = ctx.back;
      const wo = ctx.result.weights.wo;
      const groups = headGroups(ctx);
      const from = ctx.head * dV + 1;
      return {
        title: 'Back through W_O',
        titleHtml: `Back through ${W('O')}`,
        formulaHtml: `${d(v('C'))} = ${d(v('Y'))} ${W('O')}<sup>T</sup>, &nbsp; ${d(v('Z'))} = columns ${from}–${from + dV - 1} of ${d(v('C'))}`,
        shapes: [
          `dY ${n}\u00d7${dModel} · W_Oᵀ ${dModel}\u00d7${heads * dV} → dC ${n}\u00d7${heads * dV}`,
          `dZ ${n}\u00d7${dV} (${oneHead(ctx)})`,
        ],
        explainHtml:
          `<p>Y = C${W('O')} (step ${stepNumber('wo')}). Back through a matrix product, the gradient is multiplied by the other factor, transposed: dC = dY ${W('O')}<sup>T</sup>. ${ctx.worked || ctx.projection === 'identity' ? `Here ${W('O')} = I, so dC equals dY.` : `Row i of dC spreads y<sub>i</sub> − x<sub>j</sub> over the ${heads * dV} columns of C.`}</p>` +
          `<p>${heads > 1 ? `Each head owns ${dV} of C's columns (step ${stepNumber('concat')}), so ${oneHead(ctx)}'s share is its block: ` : 'With one head, '}dZ, the gradient of the head's output Z from step ${stepNumber('weighted')} (often written dO). Steps ${stepNumber('dv')} to ${stepNumber('dqk')} follow ${oneHead(ctx)} back${heads > 1 ? '; the other heads go back the same way' : ''}.</p>`,
        detailsHtml: `The output projection ${W('O')} (${fmtShape(wo.shape)})`,
        matrices: [
          tokenMatrix(ctx, 'dConcat', 'dC', d(v('C')), b.dConcat, { colGroups: groups, colNoun: 'column' }),
          dZMatrix(ctx),
          weightMatrix('W_O', 'W_O', W('O'), wo, { rowGroups: groups, place: 'details' }),
        ],
      };
    },
    inspect(ctx, i) {
      const b = ctx.back;
      const I = i + 1;
      return (
        `<h3>Row ${I} of dC, ${ctx.heads} block${ctx.heads > 1 ? 's' : ''} of ${ctx.dV}</h3>${vectorList(row(b.dConcat, i), { groupSize: ctx.heads > 1 ? ctx.dV : 0 })}` +
        `<h3>dz${sub(I)}: head ${ctx.head + 1}'s block</h3>${vectorList(row(b.dZ, i))}`
      );
    },
    hand: (ctx) =>
      byHandBack(
        ctx,
        `one head and W<sub>O</sub> = I, so dZ = dC = dY·I = dY: row 1 is ${fmtList(H.dOutputRow1)}, the other rows 0.`,
      ),
  },

  // 14 --------------------------------------------------------------------------------------------
  {
    id: 'dv',
    part: 'back',
    scope: 'head',
    label: 'dV',
    source: BACKWARD,
    timing: 'attn.attentionBackward',
    view(ctx) {
      const { n, dV } = ctx;
      return {
        title: 'Gradient of V',
        titleHtml: `Gradient of ${v('V')}`,
        formulaHtml: `${d(v('V'))} = ${T('A')} ${d(v('Z'))}, &nbsp; ${d(v('v'))}<sub>${v('j')}</sub> = Σ<sub>${v('r')}</sub> ${v('A')}<sub>${v('rj')}</sub> ${d(v('z'))}<sub>${v('r')}</sub>`,
        shapes: [`Aᵀ ${n}\u00d7${n} · dZ ${n}\u00d7${dV} → dV ${n}\u00d7${dV}`],
        explainHtml:
          `<p>Z = AV (step ${stepNumber('weighted')}): value v<sub>j</sub> went to every query r with weight A<sub>rj</sub>, so its gradient collects every dz<sub>r</sub> times A<sub>rj</sub>. Only row i of dZ is nonzero, so dv<sub>j</sub> = A<sub>ij</sub> dz<sub>i</sub>: every row of dV points along dz<sub>i</sub>, and the values token i attended to most are pushed hardest.${ctx.causal ? ` With the causal mask A<sub>ij</sub> = 0 for j > i, so those rows of dV are exactly 0.` : ''}</p>` +
          '<p>This and the next three steps come from one call, <code>attn.attentionBackward</code>: it returns dQ, dK and dV, and with <code>trace</code> also A, dA and dS.</p>',
        matrices: [
          aMatrix(ctx),
          dZMatrix(ctx),
          tokenMatrix(ctx, 'dV', 'dV', d(v('V')), ctx.back.grads.dv, { targetWidth: 230 }),
        ],
      };
    },
    inspect(ctx, i) {
      const I = i + 1;
      const a = row(ctx.back.grads.weights, i);
      const rows = Array.from({ length: ctx.n }, (_, j) => [keyCell(ctx, j), fmt(a[j])]);
      return (
        `<p>dv${sub('j')} = A${sub(`${I}j`)} dz${sub(I)}: each value row gets dz${sub(I)} times the weight token ${I} gave it.</p>` +
        table(['key j', `A${sub(`${I}j`)}`], rows, i) +
        `<h3>dz${sub(I)}</h3>${vectorList(row(ctx.back.dZ, i))}`
      );
    },
    hand: (ctx) =>
      byHandBack(
        ctx,
        `dv<sub>j</sub> = A<sub>1j</sub> dz<sub>1</sub>, with A<sub>1</sub> = ${fmtList(HAND.weightsRow1)}: dv<sub>1</sub> = dv<sub>3</sub> = ${fmt(a1)}·${fmtList(g)} = ${fmtList(H.dVRows[0])} and dv<sub>2</sub> = ${fmt(a2)}·${fmtList(g)} = ${fmtList(H.dVRows[1])}.`,
      ),
  },

  // 15 --------------------------------------------------------------------------------------------
  {
    id: 'dA',
    part: 'back',
    scope: 'head',
    label: 'dA',
    source: BACKWARD,
    timing: 'attn.attentionBackward',
    view(ctx) {
      const { n, dV } = ctx;
      return {
        title: 'Gradient of the weights A',
        titleHtml: `Gradient of the weights ${v('A')}`,
        formulaHtml: `${d(v('A'))} = ${d(v('Z'))} ${T('V')}, &nbsp; ${d(v('A'))}<sub>${v('ij')}</sub> = ${d(v('z'))}<sub>${v('i')}</sub> · ${v('v')}<sub>${v('j')}</sub>`,
        shapes: [`dZ ${n}\u00d7${dV} · Vᵀ ${dV}\u00d7${n} → dA ${n}\u00d7${n}`],
        explainHtml:
          '<p>The same product from the other side: dA<sub>ij</sub> = dz<sub>i</sub> · v<sub>j</sub>, how much L would change if query i gave a little more weight to key j. Positive (red): more weight on j would raise the loss; negative (blue): it would lower it. Only row i is nonzero. The library calls this dWeights; papers often write dP.</p>' +
          (ctx.causal
            ? '<p>Masked cells get a value too (dz<sub>i</sub> · v<sub>j</sub> is defined for every j), but their weight is exactly 0 and stays 0. The next step multiplies by A, so nothing passes through them.</p>'
            : ''),
        matrices: [
          dZMatrix(ctx),
          tokenMatrix(ctx, 'V', 'V', v('V'), ctx.result.single.v, { targetWidth: 230 }),
          dAMatrix(ctx),
        ],
      };
    },
    inspect(ctx, i) {
      const I = i + 1;
      const da = row(ctx.back.grads.dWeights, i);
      const rows = Array.from({ length: ctx.n }, (_, j) => [
        keyCell(ctx, j),
        fmt(da[j]) + (isMasked(ctx, i, j) ? MASK_MARK : ''),
      ]);
      return `<p>dA${sub(`${I}j`)} = dz${sub(I)} · v${sub('j')} for every key j, masked or not:</p>${table(['key j', `dA${sub(`${I}j`)}`], rows, i)}${maskNote(ctx, i)}`;
    },
    hand: (ctx) =>
      byHandBack(
        ctx,
        `dA<sub>1j</sub> = dz<sub>1</sub> · v<sub>j</sub> with v<sub>1</sub> = [1 0], v<sub>2</sub> = [0 1], v<sub>3</sub> = [1 1]: ${fmt(H.dARow1[0])}, ${fmt(H.dARow1[1])} and ${fmt(g[0])} − ${fmt(-g[1])} = ${fmt(H.dARow1[2])}.`,
      ),
  },

  // 16 --------------------------------------------------------------------------------------------
  {
    id: 'dS',
    part: 'back',
    scope: 'head',
    label: 'dS',
    source: BACKWARD,
    timing: 'attn.attentionBackward',
    view(ctx) {
      const { n, dK } = ctx;
      return {
        title: 'Softmax backward',
        formulaHtml: `${d(v('S'))}<sub>${v('ij')}</sub> = ${scaleHtml(ctx)} · ${v('A')}<sub>${v('ij')}</sub> (${d(v('A'))}<sub>${v('ij')}</sub> − Σ<sub>${v('k')}</sub> ${v('A')}<sub>${v('ik')}</sub> ${d(v('A'))}<sub>${v('ik')}</sub>)`,
        shapes: [
          `A, dA ${n}\u00d7${n} → dS ${n}\u00d7${n}`,
          `scale ${ctx.scaling ? `1/√${dK} = ${fmt(1 / Math.sqrt(dK))}` : '1 (scaling off)'}`,
        ],
        explainHtml:
          '<p>Softmax ties a row together: raising one score lowers every other weight in the row. Its Jacobian for row i is the n×n matrix diag(a<sub>i</sub>) − a<sub>i</sub>a<sub>i</sub><sup>T</sup>, and dS is a <strong>Jacobian-vector product</strong>: that matrix times dA<sub>i</sub>, worked out without building it as A<sub>ij</sub>(dA<sub>ij</sub> − Σ<sub>k</sub> A<sub>ik</sub> dA<sub>ik</sub>). ' +
          `${ctx.scaling ? `The scale ${scaleHtml(ctx)} of step ${stepNumber('scale')} multiplies too` : 'The scale (1, scaling off) multiplies too'}, so dS is the gradient with respect to S = Q${T('K')} of step ${stepNumber('scores')}. Each row of dS sums to 0 (the Σ column): adding one number to a whole row of scores leaves the softmax unchanged.</p>` +
          (ctx.causal
            ? '<p><strong>Masked cells are exactly 0</strong> (hatched): their weight A<sub>ij</sub> is 0, and the factor A<sub>ij</sub> stops the gradient whatever dA<sub>ij</sub> was. The mask lets nothing back, as it let nothing through.</p>'
            : '<p>Where a weight is near 0, its dS is near 0 too: a key the query ignores gets almost no gradient. Turn on the causal mask to see masked cells at exactly 0.</p>'),
        matrices: [aMatrix(ctx), dAMatrix(ctx), dSMatrix(ctx, { rowSums: true })],
      };
    },
    // A, dA, the row's Σ A·dA and dS side by side.
    inspect(ctx, i) {
      const gr = ctx.back.grads;
      const { n } = ctx;
      const I = i + 1;
      const a = row(gr.weights, i),
        da = row(gr.dWeights, i),
        ds = row(gr.dScores, i);
      let c = 0;
      for (let j = 0; j < n; ++j) c += a[j] * da[j];
      const rows = Array.from({ length: n }, (_, j) => [
        keyCell(ctx, j),
        fmt(a[j]),
        fmt(da[j]),
        fmt(ds[j]) + (isMasked(ctx, i, j) ? MASK_MARK : ''),
      ]);
      const sum = Array.from(ds).reduce((x, y) => x + y, 0);
      const only =
        ctx.causal && i === 0
          ? '<p class="note">With the causal mask token 1 sees only itself: its weight is 1 whatever the scores, so its dS is 0.</p>'
          : '';
      return (
        `<ol class="recipe"><li>The row's Σ${sub('k')} A${sub(`${I}k`)} dA${sub(`${I}k`)} = ${fmt(c)}: the weighted mean of dA over the row.</li>` +
        `<li>Subtract it from each dA${sub(`${I}j`)}: above the mean, dS is positive; below, negative.</li><li>Multiply by A${sub(`${I}j`)} and by the scale ${scaleHtml(ctx)}: dS${sub(`${I}j`)}.</li></ol>` +
        table(['key j', `A${sub(`${I}j`)}`, `dA${sub(`${I}j`)}`, `dS${sub(`${I}j`)}`], rows, i) +
        `<p class="sum-line">Σ<sub>j</sub> dS${sub(`${I}j`)} = <strong>${fmt(sum)}</strong></p>${maskNote(ctx, i)}${only}`
      );
    },
    hand: (ctx) =>
      byHandBack(
        ctx,
        `Σ<sub>k</sub> A<sub>1k</sub> dA<sub>1k</sub> = ${fmt(a1)}·${fmt(H.dARow1[0])} + ${fmt(a2)}·(${fmt(H.dARow1[1])}) + ${fmt(a1)}·${fmt(H.dARow1[2])} = ${fmt(H.meanDA)}. Then dS<sub>1j</sub> = A<sub>1j</sub>(dA<sub>1j</sub> − ${fmt(H.meanDA)})/√2 = ${fmtList(H.dSRow1)}, which sums to 0.`,
      ),
  },

  // 17 --------------------------------------------------------------------------------------------
  {
    id: 'dqk',
    part: 'back',
    scope: 'head',
    label: 'dQ dK',
    source: BACKWARD,
    timing: 'attn.attentionBackward',
    view(ctx) {
      const { n, dK } = ctx;
      const gr = ctx.back.grads;
      return {
        title: 'Gradients of Q and K',
        titleHtml: `Gradients of ${v('Q')} and ${v('K')}`,
        formulaHtml: `${d(v('Q'))} = ${d(v('S'))} ${v('K')}, &nbsp; ${d(v('K'))} = ${d(T('S'))} ${v('Q')}`,
        shapes: [
          `dS ${n}\u00d7${n} · K ${n}\u00d7${dK} → dQ ${n}\u00d7${dK}`,
          `dSᵀ ${n}\u00d7${n} · Q ${n}\u00d7${dK} → dK ${n}\u00d7${dK}`,
        ],
        explainHtml:
          `<p>S = Q${T('K')} is a product again: dQ = dS K (row i: Σ<sub>j</sub> dS<sub>ij</sub> k<sub>j</sub>, a blend of the keys) and dK = dS<sup>T</sup>Q (row j: Σ<sub>r</sub> dS<sub>rj</sub> q<sub>r</sub>). Only row i of dS is nonzero, so dQ has one nonzero row and every dk<sub>j</sub> is dS<sub>ij</sub> q<sub>i</sub>, a multiple of the one query${ctx.causal ? '; masked keys (j > i) get exactly 0' : ''}.</p>` +
          `<p>dQ, dK and dV are what <code>attn.attentionBackward</code> returns. Back through Q = X${W('Q')}, K = X${W('K')} and V = X${W('V')} they give ${oneHead(ctx)}'s columns of the weight gradients, d${W('Q')} = ${T('X')}dQ and so on: the next step.</p>`,
        matrices: [
          dSMatrix(ctx),
          tokenMatrix(ctx, 'dQ', 'dQ', d(v('Q')), gr.dq, { targetWidth: 230 }),
          tokenMatrix(ctx, 'dK', 'dK', d(v('K')), gr.dk, { targetWidth: 230 }),
        ],
      };
    },
    inspect(ctx, i) {
      const gr = ctx.back.grads;
      const I = i + 1;
      return (
        `<h3>dq${sub(I)} = Σ${sub('j')} dS${sub(`${I}j`)} k${sub('j')}</h3>${vectorList(row(gr.dq, i))}` +
        `<h3>dk${sub(I)} = dS${sub(`${I}${I}`)} q${sub(I)}, as key</h3>${vectorList(row(gr.dk, i))}`
      );
    },
    hand: (ctx) =>
      byHandBack(
        ctx,
        `dq<sub>1</sub> = dS<sub>11</sub>k<sub>1</sub> + dS<sub>12</sub>k<sub>2</sub> + dS<sub>13</sub>k<sub>3</sub> with k = [1 1], [0 1], [1 2]: ${fmtList(H.dQRow1)}. q<sub>1</sub> = [1 0], so dk<sub>j</sub> = dS<sub>1j</sub>·[1 0]: the first column of dK is ${fmtList(H.dKCol1)}, the second 0.`,
      ),
  },

  // 18 --------------------------------------------------------------------------------------------
  {
    id: 'dw',
    part: 'back',
    scope: 'layer',
    label: 'dW',
    sgd: true, // the gradient-descent panel (sgd_panel.js) under it
    source: 'mha.backward(dY) after mha.forward(X, { causal, scale }) with the same weights',
    timing: 'mha.backward',
    view(ctx) {
      const { n, dModel, heads, dK } = ctx;
      const L = ctx.back.layer;
      const hk = heads * dK;
      const groups = headGroups(ctx);
      const wSpec = (name, label, labelHtml, t, rest) =>
        weightMatrix(name, label, labelHtml, t, { maxSide: 300, ...rest });
      return {
        title: 'Weight gradients',
        formulaHtml: `${d(W('Q'))} = ${T('X')} ${d(v('Q'))}, &nbsp; ${d(W('K'))} = ${T('X')} ${d(v('K'))}, &nbsp; ${d(W('V'))} = ${T('X')} ${d(v('V'))}, &nbsp; ${d(W('O'))} = ${T('C')} ${d(v('Y'))}`,
        shapes: [
          `Xᵀ ${dModel}\u00d7${n} · dQ, dK, dV ${n}\u00d7${hk} (all heads) → dW_Q, dW_K, dW_V ${dModel}\u00d7${hk}`,
          `Cᵀ ${hk}\u00d7${n} · dY ${n}\u00d7${dModel} → dW_O ${hk}\u00d7${dModel}`,
          `dX ${n}\u00d7${dModel}`,
        ],
        explainHtml:
          `<p><code>mha.backward(dY)</code> runs steps ${stepNumber('dhead')} to ${stepNumber('dqk')} for every head and goes on through the projections. Each weight gradient has its weight's shape: entry (r, c) says how L changes when that weight grows. ${heads > 1 ? `Head ${ctx.head + 1}'s block of columns in d${W('Q')}, d${W('K')} and d${W('V')} is ${T('X')} times dQ, dK and dV of the steps before; the other blocks come from the other heads.` : `d${W('Q')}, d${W('K')} and d${W('V')} are ${T('X')} times dQ, dK and dV of the steps before.`} Only row i of dY is nonzero, so d${W('O')} = c<sub>i</sub><sup>T</sup>(y<sub>i</sub> − x<sub>j</sub>): every row a multiple of the same vector.</p>` +
          '<p>dX, the gradient with respect to the input, is what a layer hands back to the one below it (or to the embeddings). <strong>Gradient descent</strong> then moves every weight a little against its gradient, W ← W − lr · dW. Try it below: a small learning rate lowers the loss; a large one can overshoot and raise it.</p>',
        matrices: [
          wSpec('dW_Q', 'dW_Q', d(W('Q')), L.dwq, { colGroups: groups }),
          wSpec('dW_K', 'dW_K', d(W('K')), L.dwk, { colGroups: groups }),
          wSpec('dW_V', 'dW_V', d(W('V')), L.dwv, { colGroups: groups }),
          wSpec('dW_O', 'dW_O', d(W('O')), L.dwo, { rowGroups: groups }),
          tokenMatrix(ctx, 'dX', 'dX', d(v('X')), L.dx),
        ],
      };
    },
    inspect: (ctx, i) =>
      `<h3>Row ${i + 1} of dX, ${ctx.dModel} numbers</h3>${vectorList(row(ctx.back.layer.dx, i))}` +
      '<p class="hint">The weight gradients have no token rows; hover their cells for values.</p>',
    hand: (ctx) =>
      byHandBack(
        ctx,
        `only token 1 has a gradient, so dW<sub>Q</sub> = x<sub>1</sub><sup>T</sup>dq<sub>1</sub> = [${fmt(H.dQRow1[0])} ${fmt(H.dQRow1[1])}; 0 0] (x<sub>1</sub> = [1 0]), and dW<sub>O</sub> = c<sub>1</sub><sup>T</sup>dY<sub>1</sub> with c<sub>1</sub> = y<sub>1</sub> here: [${fmt(H.dWO[0])} ${fmt(H.dWO[1])}; ${fmt(H.dWO[2])} ${fmt(H.dWO[3])}].`,
      ),
  },
];
