// What a training run and its reference figures (ceilings.mjs) share: the corpus split
// (corpus.mjs), the tokenizer's merges (trained on the training addresses, bpe.mjs, or given),
// token ids and counts, the baselines' guesses and the held-out windows.
//
//   loadTrainingData({ vocab, n, heldOutWindows, spec }) -> { files, spec, tokenizer, vocab,
//     trainIds, heldIds, counts, total, baseline, wordBaseline, held, heldChars, bpeSeconds }
//     vocab     the number of tokens (V = 256 bytes + vocab − 256 merges); the returned vocab is
//               the tokens' pieces
//     spec      { pattern, merges } as tokenize.js' createTokenizer takes it: the given one, else
//               trained here (bpeSeconds)
//     baseline  the 10 most frequent tokens in training; wordBaseline the 10 most frequent with a
//               letter or digit
//     held      `heldOutWindows` windows of n+1 tokens, evenly spaced over the held-out addresses
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createTokenizer } from '../../web/page/tokenize.js';
import { classCounts, isWord, windowsOf } from '../../web/page/model/train.js';
import { trainBpe } from './bpe.mjs';
import { loadCorpus } from './corpus.mjs';

export const DATA_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../web/page/data');

export function loadTrainingData({ vocab: size, n, heldOutWindows, spec: given = null }) {
  const { train, heldOut, files } = loadCorpus();
  const t0 = performance.now();
  const spec = given ?? trainBpe(train, size);
  const bpeSeconds = (performance.now() - t0) / 1000;
  const tokenizer = createTokenizer(spec);
  const vocab = tokenizer.pieces;
  const encode = (text) => Int32Array.from(tokenizer.encode(text), (t) => t.id);
  const trainIds = train.map(encode);
  const heldIds = heldOut.map(encode);
  const { counts, total } = classCounts(trainIds, vocab.length);
  const byCount = [...counts.keys()].sort((a, b) => counts[b] - counts[a] || a - b);
  return {
    files,
    spec,
    tokenizer,
    vocab,
    trainIds,
    heldIds,
    counts,
    total,
    baseline: byCount.slice(0, 10),
    wordBaseline: byCount.filter((c) => isWord(vocab[c])).slice(0, 10),
    held: windowsOf(heldIds, n, heldOutWindows),
    heldChars: heldOut.reduce((a, t) => a + t.length, 0),
    bpeSeconds,
  };
}
