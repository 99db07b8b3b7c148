// The page's seeded generator (mulberry32, the generator the package draws a layer's
// initial weights from): unknown words' vectors (embeddings.js) and the trainer's windows
// (model/trainer.js, as scripts/train_model.mjs) come from its exact numbers, so it must not
// change. An app's own copy: the package keeps its generator internal.

// mulberry32: a small 32-bit generator -> uniform floats in [0, 1).
export function random(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Xavier (Glorot) uniform for a (fanIn, fanOut) matrix: U(-a, a), a = sqrt(6 / (fanIn + fanOut)),
// drawn from next (the trained model's feed-forward weights, model/train.js).
export function xavierUniform(fanIn, fanOut, next) {
  const a = Math.sqrt(6 / (fanIn + fanOut));
  const data = new Float32Array(fanIn * fanOut);
  for (let i = 0; i < data.length; ++i) data[i] = (2 * next() - 1) * a;
  return data;
}
