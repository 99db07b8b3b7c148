// Does a pronoun look at what it refers to? What the trained model's heads do from a pronoun
// ("it" in "The animal didn't cross the street because it was too tired"), measured on the
// sentence: the weights the library computed, never a claim about heads in general.
//
//   pronounAt(norms, focus) -> focus when it is a pronoun; else the first pronoun; −1 when none
//   referenceHtml(ctx, focus) -> '' without the trained model or a pronoun; else a paragraph: of
//     the earlier words of 4 letters or more (not the one just before the pronoun), the three on
//     which some head puts the most weight from the pronoun, each with that weight and head; the
//     even share 1/(i+1) (the pronoun at i sees i+1 tokens); how many times that share the first
//     gets and where that head's largest weight from the pronoun goes. Measured weights only: the
//     page does not know what the pronoun refers to, so it states where the weight goes
import { esc, quote } from './format.js';

const PRONOUNS = new Set(['it', 'he', 'she', 'they', 'him', 'her', 'them', 'its', 'his', 'their']);
const pct = (x) => `${Math.round(100 * x)} %`;

export function pronounAt(norms, focus) {
  if (PRONOUNS.has(norms[focus])) return focus;
  return norms.findIndex((w) => PRONOUNS.has(w));
}

export function referenceHtml(ctx, focus) {
  if (!ctx?.trained || !ctx.norms) return '';
  const i = pronounAt(ctx.norms, focus);
  if (i < 2) return '';
  const n = ctx.n;
  const found = [];
  for (let j = 0; j < i - 1; ++j) {
    if (!/^\p{L}{4,}$/u.test(ctx.norms[j])) continue;
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
  const even = 1 / (i + 1);
  const row = ctx.trained.heads[top.layer][top.head].data.subarray(i * n, (i + 1) * n);
  let most = 0;
  for (let j = 1; j <= i; ++j) if (row[j] > row[most]) most = j;
  const head = `Layer ${top.layer + 1} head ${top.head + 1}`;
  const where =
    most === top.j
      ? `that is the most it puts on any token it sees`
      : `its largest weight from ${quote(esc(ctx.labels[i]))} is on ${word(most)}, ${pct(row[most])}`;
  const verdict =
    `Spread evenly over the ${i + 1} tokens it sees, each would get ${pct(even)}. ${head} gives ${word(top.j)} ${(top.w / even).toFixed(1)} times that; ${where}. ` +
    (top.w >= 0.5
      ? `More than half of that head's weight goes to one earlier word.`
      : `No head puts half its weight on one of them: where a head looks is measured here, not what the pronoun means, and the model was trained only to predict the next word.`);
  return `<p><strong>Does ${word(i)} look at what it refers to?</strong> The most weight any of the ${ctx.trained.heads.flat().length} heads puts from it on an earlier word of four letters or more (not the word just before): ${list}. ${verdict}</p>`;
}
