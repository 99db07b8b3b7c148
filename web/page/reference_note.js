// Does a pronoun look at what it refers to? What the trained model's heads do from a pronoun
// ("it" in "The animal didn't cross the street because it was too tired"), measured on the
// sentence: the weights the library computed, never a claim about heads in general.
//
//   pronounAt(norms, focus) -> focus when it is a pronoun; else the first pronoun; −1 when none
//     (norms: the tokens' pieces; " It" is the pronoun "it")
//   referenceHtml(ctx, focus) -> '' without the trained model or a pronoun; else a paragraph: of
//     the earlier tokens that are words of 4 letters or more (not the one just before the pronoun), the three on
//     which some head puts the most weight from the pronoun, each with that weight and head; the
//     even share 1/(i+1) (the pronoun at i sees i+1 tokens); how many times that share the first
//     gets and where that head's largest weight from the pronoun goes. Measured weights only: the
//     page does not know what the pronoun refers to, so it states where the weight goes
import { esc, quote } from './format.js';

const PRONOUNS = new Set(['it', 'he', 'she', 'they', 'him', 'her', 'them', 'its', 'his', 'their']);
const pct = (x) => `${Math.round(100 * x)} %`;

// a token's word: its piece without the leading space, lower case (" It" -> "it")
const wordOf = (piece) => piece.trim().toLowerCase();

export function pronounAt(norms, focus) {
  if (PRONOUNS.has(wordOf(norms[focus] ?? ''))) return focus;
  return norms.findIndex((w) => PRONOUNS.has(wordOf(w)));
}

// pieces -> [{ from, to, text }]: the words, each a run of tokens from one that starts with a
// space (or the first) up to the next such token; text the word without its space
function wordsOf(pieces) {
  const words = [];
  pieces.forEach((p, j) => {
    if (j === 0 || /^\s/u.test(p) || !/\p{L}/u.test(p) || !/\p{L}/u.test(pieces[j - 1]))
      words.push({ from: j, to: j, text: p.trim() });
    else {
      words.at(-1).to = j;
      words.at(-1).text += p;
    }
  });
  return words;
}

export function referenceHtml(ctx, focus) {
  if (!ctx?.trained || !ctx.norms) return '';
  const i = pronounAt(ctx.norms, focus);
  if (i < 2) return '';
  const n = ctx.n;
  // the words before the pronoun's, but for the one just before it; a word's weight: the sum of
  // its tokens' weights
  const words = wordsOf(ctx.norms.slice(0, i)).slice(0, -1);
  const found = [];
  for (const wd of words) {
    if (!/^\p{L}{4,}$/u.test(wd.text)) continue;
    let best = { w: -1 };
    ctx.trained.heads.forEach((layer, L) =>
      layer.forEach((h, k) => {
        let w = 0;
        for (let j = wd.from; j <= wd.to; ++j) w += h.data[i * n + j];
        if (w > best.w) best = { w, layer: L, head: k };
      }),
    );
    found.push({ wd, ...best });
  }
  if (!found.length) return '';
  found.sort((a, b) => b.w - a.w);
  const tokens = ({ from, to }) => (from === to ? `token ${from + 1}` : `tokens ${from + 1}–${to + 1}`);
  const word = (wd) => `${quote(esc(wd.text))} (${tokens(wd)})`;
  const list = found
    .slice(0, 3)
    .map((f) => `${word(f.wd)} ${pct(f.w)} (layer ${f.layer + 1} head ${f.head + 1})`)
    .join(', ');
  const top = found[0];
  const even = 1 / (i + 1);
  const share = (top.wd.to - top.wd.from + 1) * even;
  const row = ctx.trained.heads[top.layer][top.head].data.subarray(i * n, (i + 1) * n);
  let most = 0;
  for (let j = 1; j <= i; ++j) if (row[j] > row[most]) most = j;
  const head = `Layer ${top.layer + 1} head ${top.head + 1}`;
  const pronoun = { from: i, to: i, text: ctx.norms[i].trim() };
  const where =
    most >= top.wd.from && most <= top.wd.to
      ? `that word holds the token it puts the most on`
      : `its largest weight from ${quote(esc(pronoun.text))} is on ${quote(esc(ctx.labels[most]))} (token ${most + 1}), ${pct(row[most])}`;
  const verdict =
    `Spread evenly over the ${i + 1} tokens it sees, that word would get ${pct(share)}. ${head} gives ${word(top.wd)} ${(top.w / share).toFixed(1)} times that; ${where}. ` +
    (top.w >= 0.5
      ? `More than half of that head's weight goes to one earlier word.`
      : `No head puts half its weight on one of them: where a head looks is measured here, not what the pronoun means, and the model was trained only to predict the next token.`);
  return `<p><strong>Does ${word(pronoun)} look at what it refers to?</strong> The most weight any of the ${ctx.trained.heads.flat().length} heads puts from it on an earlier word of four letters or more (not the word just before; a word's weight is the sum over its tokens): ${list}. ${verdict}</p>`;
}
