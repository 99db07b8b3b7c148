// The trained model's files (web/page/data/model/):
//   manifest.json  corpus, licence, seed, steps, held-out figures, per-head stats, and `tensors`:
//                  [{ name, shape, offset }] where offset counts float32s into model.bin
//   model.bin      every tensor, float32 little-endian, back to back in `tensors` order
//   vocab.txt      the output classes, one a line; the last is "<unk>" (every other word)
// Tensor names: layers.L.wq|wk|wv|wo (L = 0, 1; no biases), wout (d,d), bout (V), unk (d), and
// wdelta (V,d) when the model learned corrections to its output word vectors (lm.js outputWords).

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
  const [m, b, v] = await Promise.all([get('manifest.json'), get('model.bin'), get('vocab.txt')]);
  const manifest = await m.json();
  const vocab = (await v.text()).split('\n').filter((w) => w !== '');
  return { manifest, tensors: unpackTensors(await b.arrayBuffer(), manifest), vocab };
}
