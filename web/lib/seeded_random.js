// Seeded random numbers, public (index.js): a small generator, and the Xavier-uniform weights
// multiHeadAttention draws from it for a layer's seed; the same seed gives the same numbers
// everywhere, so an app can reproduce a layer's initial weights.

// mulberry32: a small 32-bit generator -> uniform floats in [0, 1).
export function seededRandom(seed) {
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
// fanIn·fanOut draws of next in row-major order.
export function xavierUniform(fanIn, fanOut, next) {
  const a = Math.sqrt(6 / (fanIn + fanOut));
  const data = new Float32Array(fanIn * fanOut);
  for (let i = 0; i < data.length; ++i) data[i] = (2 * next() - 1) * a;
  return data;
}
