// Seeded random numbers, public (index.js): a small generator, and the Xavier-uniform weights
// multiHeadAttention draws from it for a layer's seed; the same seed gives the same numbers
// everywhere, so an app can reproduce a layer's initial weights.
import { checkPositiveInteger, checkUint32, describe } from './validate.js';

// mulberry32: a small 32-bit generator -> uniform floats in [0, 1). seed: an integer from 0
// to 2^32-1.
export function seededRandom(seed) {
  checkUint32('seededRandom', 'seed', seed);
  let s = seed;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Xavier (Glorot) uniform for a (fanIn, fanOut) matrix: U(-a, a), a = sqrt(6 / (fanIn + fanOut)),
// fanIn·fanOut draws of next in row-major order, each a number in [0, 1).
export function xavierUniform(fanIn, fanOut, next) {
  const where = 'xavierUniform';
  checkPositiveInteger(where, 'fanIn', fanIn);
  checkPositiveInteger(where, 'fanOut', fanOut);
  if (typeof next !== 'function') {
    throw new TypeError(
      `${where}: next must be a function returning uniform numbers in [0, 1) (e.g. seededRandom(seed)), got ${describe(next)}`,
    );
  }
  const a = Math.sqrt(6 / (fanIn + fanOut));
  const data = new Float32Array(fanIn * fanOut);
  for (let i = 0; i < data.length; ++i) {
    const u = next();
    if (typeof u !== 'number' || !(u >= 0 && u < 1))
      throw new RangeError(`${where}: next() must return numbers in [0, 1); draw ${i} was ${describe(u)}`);
    data[i] = (2 * u - 1) * a;
  }
  return data;
}
