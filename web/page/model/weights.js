// The trained model's files (web/page/data/model/):
//   manifest.json  corpus, licence, tokenizer, seed, steps, held-out figures, per-head stats, and
//                  `tensors`: [{ name, shape, offset }] where offset counts float32s into model.bin
//   model.bin      every tensor, float32 little-endian, back to back in `tensors` order
//   tokenizer.json { pattern, merges }: the byte-level BPE (tokenize.js createTokenizer); token c
//                  is the model's input row c and output class c
// Tensor names: layers.L.wq|wk|wv|wo (L = 0, 1; no biases), embed (V,d) the token embeddings,
// wout (d,d), bout (V), and w1 (d,m), b1 (m), w2 (m,d), b2 (d) for layer 2's feed-forward block.
//
//   modelFromFiles(manifest, bin, tokenizerSpec) -> { manifest, tensors, tokenizer, vocab, dim }
//     vocab: the tokens' pieces (tokenizer.pieces), dim: d_model
//   loadModelFiles(baseUrl) -> Promise of the same, fetched

// { name: Float32Array } with shapes -> { bin: Uint8Array, tensors: [{ name, shape, offset }] }
export function packTensors(entries) {
  const tensors = [];
  let offset = 0;
  for (const [name, { data, shape }] of entries) {
    tensors.push({ name, shape, offset });
    offset += data.length;
  }
  const all = new Float32Array(offset);
  entries.forEach(([, { data }], i) => all.set(data, tensors[i].offset));
  const bin = new Uint8Array(all.length * 4);
  const view = new DataView(bin.buffer);
  for (let i = 0; i < all.length; ++i) view.setFloat32(4 * i, all[i], true);
  return { bin, tensors };
}

import { createTokenizer } from '../tokenize.js';

// (model.bin bytes, manifest) -> { name: { data, shape } }
export function unpackTensors(bin, manifest) {
  const bytes =
    bin instanceof ArrayBuffer ? new Uint8Array(bin) : new Uint8Array(bin.buffer, bin.byteOffset, bin.byteLength);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = {};
  for (const { name, shape, offset } of manifest.tensors) {
    const size = shape.reduce((a, b) => a * b, 1);
    if (4 * (offset + size) > bytes.length) throw new Error(`model: ${name} runs past the end of model.bin`);
    const data = new Float32Array(size);
    for (let i = 0; i < size; ++i) data[i] = view.getFloat32(4 * (offset + i), true);
    out[name] = { data, shape };
  }
  return out;
}

// The package layers' weights of layer L, as multiHeadAttention({ weights }) takes them.
export function layerWeights(tensors, L) {
  const names = ['wq', 'wk', 'wv', 'wo'];
  return Object.fromEntries(names.map((k) => [k, tensors[`layers.${L}.${k}`]]));
}

export function modelFromFiles(manifest, bin, spec) {
  const tokenizer = createTokenizer(spec);
  const tensors = unpackTensors(bin, manifest);
  if (tensors.embed?.shape[0] !== tokenizer.size)
    throw new Error(`model: embed has ${tensors.embed?.shape[0]} rows but the tokenizer ${tokenizer.size} tokens`);
  return { manifest, tensors, tokenizer, vocab: tokenizer.pieces, dim: manifest.model.dModel };
}

// Fetch the three files (browser, or any fetch that can read baseUrl).
export async function loadModelFiles(baseUrl = new URL('../data/model/', import.meta.url)) {
  const base = new URL(
    String(baseUrl).endsWith('/') ? String(baseUrl) : `${baseUrl}/`,
    typeof location !== 'undefined' ? location.href : import.meta.url,
  );
  const get = async (name) => {
    const res = await fetch(new URL(name, base));
    if (!res.ok) throw new Error(`model: ${res.status} ${res.statusText} for ${name}`);
    return res;
  };
  const [m, b, t] = await Promise.all([get('manifest.json'), get('model.bin'), get('tokenizer.json')]);
  return modelFromFiles(await m.json(), await b.arrayBuffer(), await t.json());
}
