// What a training run and its reference figures (ceilings.mjs) share: the page's word vectors,
// the corpus split (corpus.mjs), the vocabulary, class ids and counts, the baselines' guesses
// and the held-out windows.
//
//   loadTrainingData({ vocab, n, heldOutWindows }) -> { emb, files, train, heldOut, vocab,
//     trainIds, heldIds, counts, total, baseline, wordBaseline, held }
//     vocab     the number of output classes ("<unk>" included)
//     baseline  the 10 most frequent classes in training; wordBaseline the 10 most frequent words
//     held      `heldOutWindows` windows of n+1 tokens, evenly spaced over the held-out addresses
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseEmbeddings } from '../../web/page/embeddings.js';
import { classCounts, isWord, windowsOf } from '../../web/page/model/train.js';
import { buildVocab, loadCorpus, toIds } from './corpus.mjs';

export const DATA_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../web/page/data');

export function loadEmbeddings() {
  return parseEmbeddings(
    fs.readFileSync(path.join(DATA_DIR, 'embeddings-100d.bin')),
    fs.readFileSync(path.join(DATA_DIR, 'embeddings-vocab.txt'), 'utf8'),
  );
}

export function loadTrainingData({ vocab: size, n, heldOutWindows }) {
  const emb = loadEmbeddings();
  const { train, heldOut, files } = loadCorpus(emb);
  const vocab = buildVocab(train, emb, size);
  const V = vocab.length;
  const trainIds = train.map((doc) => toIds(doc, vocab));
  const heldIds = heldOut.map((doc) => toIds(doc, vocab));
  const { counts, total } = classCounts(trainIds, V);
  const byCount = [...counts.keys()].sort((a, b) => counts[b] - counts[a] || a - b);
  return {
    emb,
    files,
    train,
    heldOut,
    vocab,
    trainIds,
    heldIds,
    counts,
    total,
    baseline: byCount.slice(0, 10),
    wordBaseline: byCount.filter((c) => isWord(vocab[c])).slice(0, 10),
    held: windowsOf(heldOut, heldIds, n, heldOutWindows),
  };
}
