// The page's data as the tests read it from disk: the word vectors and the shipped trained model
// (web/page/data/model/: manifest, vocab, tensors), in the shapes the page's modules take.
//
//   loadWordVectors() -> embeddings.js' parsed vectors
//   loadShippedModel() -> { manifest, vocab, tensors } as weights.js' loadModelFiles gives them
import fs from 'node:fs';
import { parseEmbeddings } from '../../../web/page/embeddings.js';
import { unpackTensors } from '../../../web/page/model/weights.js';

const DATA = new URL('../../../web/page/data/', import.meta.url);
const MODEL = new URL('model/', DATA);

export const loadWordVectors = () =>
  parseEmbeddings(
    fs.readFileSync(new URL('embeddings-100d.bin', DATA)),
    fs.readFileSync(new URL('embeddings-vocab.txt', DATA), 'utf8'),
  );

export function loadShippedModel() {
  const manifest = JSON.parse(fs.readFileSync(new URL('manifest.json', MODEL), 'utf8'));
  const vocab = fs
    .readFileSync(new URL('vocab.txt', MODEL), 'utf8')
    .split('\n')
    .filter((w) => w !== '');
  return { manifest, vocab, tensors: unpackTensors(fs.readFileSync(new URL('model.bin', MODEL)), manifest) };
}
