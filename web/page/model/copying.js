// Copying on a text that repeats: where the model can copy the next token from an earlier
// occurrence, and how well it does. One definition for the training script's figures, the page
// and the tests.
//
//   copyPositions(ids, from) -> [{ at, target }]: every token i >= from (the second copy's
//     tokens) whose next token can be copied: some j + 1 < from has ids[j] = ids[i] and
//     ids[j + 1] = ids[i + 1] = target. A word the tokenizer splits differently the second time
//     ("Purple" at the start of the text, " Purple" after a space) is not counted where its
//     pieces differ.
//   secondCopy(text, tokens) -> from: for text = S + " " + S, the index of the first token of
//     the second copy (the first token that starts at or after S's end); tokens: tokenize.js'
//   copyStats(probs, positions) -> { positions, meanP, top1 }: probs(at) -> (V) probabilities
//     after token `at`; meanP the mean probability of each position's target, top1 the share of
//     positions where the target is the most likely token
//   copyOnSentences(model, tokenizer, sentences, positionScale) -> { meanP, top1, positions,
//     perSentence: [{ sentence, tokens, positions, meanP, top1 }] }: each sentence S written
//     twice (S + " " + S) through model { layers (the package's), p (lm.js headParams) }; the
//     figures over all sentences' positions together
//   COPY_SENTENCES: sentences of the kind a learner types, none from the training text
import { embedTokens, forwardHead, forwardLayers } from './lm.js';
import { sinusoidalPositions } from '../positions.js';

export const COPY_SENTENCES = [
  'Purple elephants dance quietly under the silver moon tonight.',
  'My grandmother bakes lemon cookies every Sunday for the neighbours.',
  'The cat that the dog chased ran up the tall tree.',
  'A small robot painted seven blue flowers on the kitchen wall.',
  'Tiny dragons sleep inside warm teacups during rainy afternoons.',
  'Our teacher played jazz guitar while the students ate pizza.',
  'Seventeen penguins wearing scarves marched across the frozen lake.',
  'She found an old map hidden behind the dusty bookshelf.',
];

export function copyPositions(ids, from) {
  const out = [];
  for (let i = from; i + 1 < ids.length; ++i) {
    for (let j = 0; j + 1 < from; ++j) {
      if (ids[j] === ids[i] && ids[j + 1] === ids[i + 1]) {
        out.push({ at: i, target: ids[i + 1] });
        break;
      }
    }
  }
  return out;
}

export function secondCopy(text, tokens) {
  const half = (text.length - 1) / 2;
  return tokens.findIndex((t) => t.start >= half);
}

export function copyStats(probs, positions) {
  let sum = 0,
    top = 0;
  for (const { at, target } of positions) {
    const p = probs(at);
    sum += p[target];
    let best = 0;
    for (let c = 1; c < p.length; ++c) if (p[c] > p[best]) best = c;
    top += best === target;
  }
  const m = positions.length;
  return { positions: m, meanP: m ? sum / m : NaN, top1: m ? top / m : NaN };
}

export function copyOnSentences({ layers, p }, tokenizer, sentences, positionScale) {
  const V = p.bout.length,
    d = p.embed.length / V;
  const perSentence = [];
  let positions = 0,
    sumP = 0,
    top = 0;
  for (const sentence of sentences) {
    const text = `${sentence} ${sentence}`;
    const tokens = tokenizer.encode(text);
    const ids = tokens.map((t) => t.id);
    const m = ids.length;
    const P = sinusoidalPositions(m, d).map((v) => v * positionScale);
    const { hs } = forwardLayers(layers, { data: embedTokens(p.embed, ids, d, P), shape: [1, m, d] });
    const { logits } = forwardHead(p, hs.at(-1), m, d, V);
    const probs = (at) => {
      const row = logits.subarray(at * V, (at + 1) * V);
      let max = -Infinity;
      for (const v of row) max = Math.max(max, v);
      const e = Float64Array.from(row, (v) => Math.exp(v - max));
      const z = e.reduce((a, b) => a + b, 0);
      return e.map((v) => v / z);
    };
    const st = copyStats(probs, copyPositions(ids, secondCopy(text, tokens)));
    perSentence.push({ sentence, tokens: m, ...st });
    positions += st.positions;
    sumP += st.meanP * st.positions;
    top += st.top1 * st.positions;
  }
  return { meanP: sumP / positions, top1: top / positions, positions, perSentence };
}
