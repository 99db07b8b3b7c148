// The input as the page feeds it to the library: tokens and X (n,d_model), from the sentence (word
// vectors, plus positions when asked) or the worked example.
//
//   prepareInput(settings, emb, positionScale = 1) -> { labels, unknown, tokens, x, e, p, truncatedFrom } | null
//
//   labels (n) token texts; unknown (n) booleans, true for a token not in the vocabulary;
//   tokens [{ text, norm, known }]; x, e, p (n,d_model) tensors: X = E + P, the word vectors E
//   and the positions P = positionScale × the sinusoids (the trained model's manifest gives its scale)
//   (e and p null for the worked example, p null without positions);
//   truncatedFrom: the token count before the cap of MAX_TOKENS, or null. null: no tokens.
import { sinusoidalPositions } from './embeddings.js';
import { MAX_TOKENS } from './limits.js';
import { tokenize } from './tokenize.js';
import { WORKED } from './worked_example.js';

export function prepareInput(settings, emb, positionScale = 1) {
  if (settings.mode === 'worked') {
    return {
      labels: WORKED.tokens,
      unknown: WORKED.tokens.map(() => false),
      tokens: WORKED.tokens.map((t) => ({ text: t, norm: t, known: true })),
      x: WORKED.x,
      e: null,
      p: null,
      truncatedFrom: null,
    };
  }
  const all = tokenize(settings.text, { vocab: emb });
  if (all.length === 0) return null;
  const toks = all.slice(0, MAX_TOKENS);
  const n = toks.length,
    d = emb.dim;
  // E (n,d): each token's word vector, or its stand-in when unknown.
  const looked = toks.map((t) => emb.lookup(t));
  const e = new Float32Array(n * d);
  looked.forEach((l, i) => e.set(l.vector, i * d));
  let x = e,
    p = null;
  if (settings.positions) {
    // P (n,d) sinusoidal × positionScale; X = E + P (n,d)
    p = sinusoidalPositions(n, d);
    if (positionScale !== 1) for (let k = 0; k < p.length; ++k) p[k] *= positionScale;
    x = new Float32Array(n * d);
    for (let k = 0; k < x.length; ++k) x[k] = e[k] + p[k];
  }
  return {
    labels: toks.map((t) => t.text),
    unknown: looked.map((l) => !l.known),
    tokens: toks.map((t, i) => ({ text: t.text, norm: t.norm, known: looked[i].known })),
    x: { data: x, shape: [n, d] },
    e: { data: e, shape: [n, d] },
    p: p && { data: p, shape: [n, d] },
    truncatedFrom: all.length > MAX_TOKENS ? all.length : null,
  };
}
