// Does a pronoun look at what it refers to? What the trained model's heads do from a pronoun
// ("it" in "The animal didn't cross the street because it was too tired"), measured on the
// sentence: the weights the library computed, never a claim about heads in general.
//
//   pronounAt(norms, focus) -> focus when it is a pronoun; else the first pronoun; −1 when none
//   referenceHtml(ctx, focus) -> '' without the trained model or a pronoun; else a paragraph: of
//     the earlier words of 4 letters or more (not the one just before the pronoun), the three on
//     which some head puts the most weight from the pronoun, each with that weight and head, and
//     whether any head puts half its weight or more on one of them
import { esc, quote } from './format.js';

const PRONOUNS = new Set(['it', 'he', 'she', 'they', 'him', 'her', 'them', 'its', 'his', 'their']);
const pct = (x) => `${Math.round(100 * x)} %`;

// a token's piece as a word: " It" is "it"
const wordOf = (piece) => piece.trim().toLowerCase();

export function pronounAt(norms, focus) {
  if (PRONOUNS.has(wordOf(norms[focus] ?? ''))) return focus;
  return norms.findIndex((w) => PRONOUNS.has(wordOf(w)));
}

export function referenceHtml(ctx, focus) {
  if (!ctx?.trained || !ctx.norms) return '';
  const i = pronounAt(ctx.norms, focus);
  if (i < 2) return '';
  const n = ctx.n;
  const found = [];
  for (let j = 0; j < i - 1; ++j) {
    if (!/^\p{L}{4,}$/u.test(wordOf(ctx.norms[j]))) continue;
    let best = { w: -1 };
    ctx.trained.heads.forEach((layer, L) =>
      layer.forEach((h, k) => {
        const w = h.data[i * n + j];
        if (w > best.w) best = { w, layer: L, head: k };
      }),
    );
    found.push({ j, ...best });
  }
  if (!found.length) return '';
  found.sort((a, b) => b.w - a.w);
  const word = (j) => `${quote(esc(ctx.labels[j]))} (word ${j + 1})`;
  const list = found
    .slice(0, 3)
    .map((f) => `${word(f.j)} ${pct(f.w)} (layer ${f.layer + 1} head ${f.head + 1})`)
    .join(', ');
  const top = found[0];
  const verdict =
    top.w >= 0.5
      ? `Layer ${top.layer + 1} head ${top.head + 1} puts ${pct(top.w)} of its weight on ${word(top.j)}.`
      : `No head puts even half its weight on any of them: on this sentence, no head of this model links ${quote(esc(ctx.labels[i]))} to what it refers to. It was trained only to predict the next word: nothing in that asks a head to link a pronoun to its noun.`;
  return `<p><strong>Does ${word(i)} look at what it refers to?</strong> The most weight any of the ${ctx.trained.heads.flat().length} heads puts from it on an earlier word of four letters or more (not the word just before): ${list}. ${verdict}</p>`;
}
