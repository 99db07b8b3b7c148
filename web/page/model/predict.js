// The trained model's next-word guesses, from the last layer's residual stream.
//
//   predictNext(model, emb, h, n, k) -> [[{ word, p }] × k] × n
//     model: loadModelFiles' { tensors, vocab }; h (n,d_model) = h2, the input plus both layers'
//     outputs; row i: the k most likely words to follow token i, most likely first
import { forwardHead, headParams, outputWords, topK } from './lm.js';

export function predictNext(model, emb, h, n, k = 5) {
  const { tensors, vocab } = model;
  const d = emb.dim,
    V = vocab.length;
  const words = outputWords(emb, vocab, tensors.unk.data, tensors.wdelta?.data);
  const { logits } = forwardHead(headParams(tensors), words, h, n, d, V);
  return Array.from({ length: n }, (_, i) => topK(logits, i * V, V, k).map(({ c, p }) => ({ word: vocab[c], p })));
}
