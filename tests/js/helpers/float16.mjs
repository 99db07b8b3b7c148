// float16 from its definition, the reference the suites hold the package's conversions and its
// float16 caches to (web/lib/half.js and the C++ kernels convert on their own).
//   halfValue(bits) -> its value (a double; ±Infinity, NaN)
//   nearestHalfBits(x) -> the bits of the float16 nearest to x (a double), ties to the even
//     mantissa; beyond the largest half's rounding range ±Infinity; NaN 0x7e00
//   nearestHalf(x) -> that float16's value
//   POSITIVE_HALVES[bits] for bits 0..0x7c00: the finite positive halves in order, and 65536
//     standing for Infinity at 0x7c00 (where the tie at 65520 rounds to)
export function halfValue(h) {
  const sign = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f,
    m = h & 0x3ff;
  if (e === 31) return m ? NaN : sign * Infinity;
  return sign * (e === 0 ? m * 2 ** -24 : (1 + m / 1024) * 2 ** (e - 15));
}

export const POSITIVE_HALVES = Array.from({ length: 0x7c01 }, (_, h) => (h === 0x7c00 ? 65536 : halfValue(h)));

// By binary search over the positive halves in order.
export function nearestHalfBits(x) {
  if (Number.isNaN(x)) return 0x7e00;
  const sign = x < 0 || Object.is(x, -0) ? 0x8000 : 0;
  const a = Math.abs(x);
  if (a >= 65536) return sign | 0x7c00;
  let lo = 0,
    hi = 0x7c00; // POSITIVE_HALVES[lo] <= a < POSITIVE_HALVES[hi]
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (POSITIVE_HALVES[mid] <= a) lo = mid;
    else hi = mid;
  }
  const below = a - POSITIVE_HALVES[lo],
    above = POSITIVE_HALVES[hi] - a;
  return sign | (below < above || (below === above && lo % 2 === 0) ? lo : hi);
}

export const nearestHalf = (x) => halfValue(nearestHalfBits(x));
