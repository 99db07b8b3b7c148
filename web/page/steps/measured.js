// Notes computed from the numbers a step shows, so that the prose says what this head does on
// this sentence, never what heads in general do.
//
//   softmaxFacts(ctx) -> { low, high, gap, top, sharp, rows } over the followed head's causal
//     rows i >= 1 (from row 2 on, a query has two keys or more): low, high the smallest and largest
//     scaled score a softmax reads (masked cells left out); gap the mean over rows of the largest
//     scaled score minus the next; top the mean of each row's largest weight; sharp how many rows
//     give one key more than 99 %; rows how many rows were counted
//   scaleNoteHtml(ctx), softmaxNoteHtml(ctx) -> a paragraph on those numbers: whether this head's
//     softmax spreads its weight or is nearly one-hot, and for the trained model's previous-word
//     head (its manifest's training.previousHead) why it is one-hot
//   zeroColumnsHtml(ctx) -> a paragraph naming the columns that are 0 for every token in both Q and
//     K (their W_Q and W_K columns are all 0, and why training left them so), or ''
import { fmt } from '../format.js';

const pct = (x) => `${Math.round(100 * x)} %`;

export function softmaxFacts(ctx) {
  const { n } = ctx;
  const { scaled, weights } = ctx.result.single;
  let low = Infinity,
    high = -Infinity,
    gap = 0,
    top = 0,
    sharp = 0,
    rows = 0;
  for (let i = 1; i < n; ++i) {
    const last = ctx.causal ? i : n - 1;
    let a = -Infinity,
      b = -Infinity,
      w = 0;
    for (let j = 0; j <= last; ++j) {
      const s = scaled.data[i * n + j];
      low = Math.min(low, s);
      high = Math.max(high, s);
      if (s > a) [a, b] = [s, a];
      else if (s > b) b = s;
      w = Math.max(w, weights.data[i * n + j]);
    }
    gap += a - b;
    top += w;
    if (w > 0.99) ++sharp;
    ++rows;
  }
  return { low, high, gap: gap / rows, top: top / rows, sharp, rows };
}

const isPreviousHead = (ctx) => {
  const p = ctx.trained?.manifest.training?.previousHead;
  return Boolean(p && p.layer === ctx.layer && p.head === ctx.head);
};

function verdict(ctx, f) {
  const numbers = `On this sentence this head's scaled scores run from ${fmt(f.low, 1)} to ${fmt(f.high, 1)}; in the average row the largest is ${fmt(f.gap, 1)} above the next, and the top key gets ${pct(f.top)} of the weight (in ${f.sharp} of the ${f.rows} rows from row 2 on, one key gets more than 99 %).`;
  if (f.top < 0.9) return `${numbers} So here softmax spreads the weight over several keys.`;
  const why = isPreviousHead(ctx)
    ? ` That is this head's job: it is the model's previous-word head, started looking one word back (its W<sub>Q</sub> and W<sub>K</sub> read the positions: the manifest's <code>training.previousHead</code>) and trained sharper, so each word's score for the word before it stands far above the rest even after scaling. Open a head that spreads (in the model view, one described as spreading its weight) to see softmax share weight.`
    : ' Scaling divides every score by the same number; it cannot undo gaps this large, which training put there.';
  return `${numbers} So here softmax is nearly one-hot.${why}`;
}

export function scaleNoteHtml(ctx) {
  if (!ctx.scaling || ctx.n < 2) return '';
  return `<p>${verdict(ctx, softmaxFacts(ctx))}</p>`;
}

export function softmaxNoteHtml(ctx) {
  if (ctx.n < 2) return '';
  return `<p>${verdict(ctx, softmaxFacts(ctx))}</p>`;
}

export function zeroColumnsHtml(ctx) {
  const { wq, wk } = ctx.result.single;
  const [d, dK] = wq.shape;
  const zero = [];
  for (let c = 0; c < dK; ++c) {
    let all = true;
    for (let r = 0; r < d && all; ++r) all = wq.data[r * dK + c] === 0 && wk.data[r * dK + c] === 0;
    if (all) zero.push(c + 1);
  }
  if (!zero.length) return '';
  const cols = zero.length === 1 ? `Column ${zero[0]}` : `Columns ${zero.join(', ')}`;
  const start = isPreviousHead(ctx)
    ? ` This head was started looking one word back from the positions' sine–cosine pairs, ${2 * Math.floor(dK / 2)} of its ${dK} columns, with every other entry of its W<sub>Q</sub> and W<sub>K</sub> 0.`
    : '';
  return (
    `<p>${cols} of Q and K ${zero.length === 1 ? 'is' : 'are'} 0 for every token: ${zero.length === 1 ? 'that column' : 'those columns'} of W<sub>Q</sub> and W<sub>K</sub> ${zero.length === 1 ? 'is' : 'are'} all 0.${start} ` +
    `A column that is 0 in both W<sub>Q</sub> and W<sub>K</sub> gets no gradient (dQ's column is dS·K's column, 0, and dK's is dSᵀ·Q's, 0), so training left it at 0: it adds nothing to the scores.</p>`
  );
}
