// The input as the page feeds it to the library: tokens and X (n,d_model), from the sentence (the
// trained model's tokens and their embeddings, plus positions when asked) or the worked example.
//
//   prepareInput(settings, model, positionScale = 1) -> { labels, tokens, x, e, p, truncatedFrom } | null
//
//   model: weights.js' loaded model (its tokenizer and embed (V,d)); labels (n) the tokens'
//   pieces as shown (tokenize.js pieceLabel: " cat" is "␣cat"); tokens [{ text, id, norm,
//   start, end }] (a byte-level tokenizer knows every input: no token is unknown): text
//   the piece, norm the same piece (a token's identity where the page matches tokens); x, e, p
//   (n,d_model) tensors: X = E + P, the token embeddings E and the positions P = positionScale ×
//   the sinusoids (the trained model's manifest gives its scale) (e and p null for the worked
//   example, p null without positions); truncatedFrom: the token count before the cap of
//   MAX_TOKENS, or null. null: no tokens.
import { sinusoidalPositions } from './positions.js';
import { MAX_TOKENS } from './limits.js';
import { pieceLabel, tokenize } from './tokenize.js';
import { WORKED } from './worked_example.js';

export function prepareInput(settings, model, positionScale = 1) {
  if (settings.mode === 'worked') {
    return {
      labels: WORKED.tokens,
      tokens: WORKED.tokens.map((t) => ({ text: t, norm: t })),
      x: WORKED.x,
      e: null,
      p: null,
      truncatedFrom: null,
    };
  }
  const all = tokenize(settings.text, model.tokenizer);
  if (all.length === 0) return null;
  const toks = all.slice(0, MAX_TOKENS);
  const n = toks.length,
    d = model.dim;
  // E (n,d): each token's row of the model's embeddings
  const E = model.tensors.embed.data;
  const e = new Float32Array(n * d);
  toks.forEach((t, i) => e.set(E.subarray(t.id * d, (t.id + 1) * d), i * d));
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
    labels: toks.map((t) => pieceLabel(t.text)),
    tokens: toks.map((t) => ({ ...t, norm: t.text })),
    x: { data: x, shape: [n, d] },
    e: { data: e, shape: [n, d] },
    p: p && { data: p, shape: [n, d] },
    truncatedFrom: all.length > MAX_TOKENS ? all.length : null,
  };
}
