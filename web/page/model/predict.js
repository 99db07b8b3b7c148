// The trained model's next-token guesses, from the last layer's residual stream.
//
//   predictNext(model, h, n, k) -> [[{ word, p, c }] × k] × n
//     model: loadModelFiles' { tensors, vocab }; h (n,d_model) = h2, the input plus both layers'
//     outputs; row i: the k most likely tokens to follow token i, most likely first (word: the
//     token's piece, c: its id)
import { forwardHead, headParams, topK } from './lm.js';

export function predictNext(model, h, n, k = 5) {
  const { tensors, vocab } = model;
  const V = vocab.length,
    d = tensors.embed.shape[1];
  const { logits } = forwardHead(headParams(tensors), h, n, d, V);
  return Array.from({ length: n }, (_, i) => topK(logits, i * V, V, k).map(({ c, p }) => ({ word: vocab[c], p, c })));
}
