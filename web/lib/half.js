// Half precision (IEEE 754 binary16, 'float16') in and out of the package: tensors whose data
// is a Float16Array (where the engine has one) or a Uint16Array holding the bits with
// dtype: 'float16' have their bits copied when they are checked (validate.js's readTensor),
// are widened to float32 as the call's run starts (widenHalves; in the worker form, in its
// worker), are computed on in float32, and results are narrowed back to the input's kind when
// they are read (heap.js).
//   binary16: 1 sign bit, 5 exponent bits (bias 15), 10 mantissa bits; largest 65504,
//   smallest normal 2^-14, smallest subnormal 2^-24. Every half is exactly a float32.

// The engine's Float16Array, or undefined (Node 20 has none): never patched or polyfilled.
const F16 = globalThis.Float16Array;

// How a tensor's values are held: its dtype and the typed array that carries them.
export const FORMATS = Object.freeze({
  float32: Object.freeze({ dtype: 'float32', array: 'Float32Array' }),
  float16: Object.freeze({ dtype: 'float16', array: 'Float16Array' }),
  float16Bits: Object.freeze({ dtype: 'float16', array: 'Uint16Array' }),
});
export const DTYPES = ['float32', 'float16'];

const HALF_MAX = 65504;
const TWO_POW_24 = 16777216; // 1 / (the smallest subnormal half)

// bits (Uint16Array, n halves) -> a new Float32Array (n), exact: widening never rounds.
// A lookup of each half's float32 bits in a table of all 65536 (256 KB, made on first use),
// faster than decoding each half (scripts/LAB.md, "Copies and conversions in the small").
let widened = null;
export function halfToFloat32(bits) {
  widened ??= float32BitsOfEveryHalf();
  const n = bits.length;
  const out = new Float32Array(n);
  const outBits = new Uint32Array(out.buffer);
  for (let i = 0; i < n; ++i) outBits[i] = widened[bits[i]];
  return out;
}

// -> Uint32Array(65536): entry h is the bits of the float32 equal to the half whose bits are h.
function float32BitsOfEveryHalf() {
  const table = new Uint32Array(65536);
  const values = new Float32Array(table.buffer);
  for (let h = 0; h < 65536; ++h) {
    const sign = (h & 0x8000) << 16;
    const exponent = h & 0x7c00;
    const mantissa = h & 0x03ff;
    if (exponent === 0x7c00) {
      table[h] = sign | 0x7f800000 | (mantissa << 13); // ±Infinity, NaN (payload kept)
    } else if (exponent !== 0) {
      table[h] = sign | (((exponent >> 10) + 112) << 23) | (mantissa << 13); // 112 = 127 - 15
    } else {
      values[h] = sign ? -mantissa / TWO_POW_24 : mantissa / TWO_POW_24; // ±0 and subnormals: m·2^-24
    }
  }
  return table;
}

// values (Float32Array, n) -> bits (Uint16Array, n) rounded to nearest, ties to even, with
// subnormals; ±Infinity stays ±Infinity and NaN stays NaN. -> the index of the first finite
// value that rounds to ±Infinity (|x| >= 65520), or -1 when none does.
export function float32ToHalfInto(values, bits) {
  const n = values.length;
  const inBits = new Uint32Array(values.buffer, values.byteOffset, n);
  let overflow = -1;
  for (let i = 0; i < n; ++i) {
    const x = inBits[i];
    const sign = (x >>> 16) & 0x8000;
    const a = x & 0x7fffffff;
    if (a >= 0x477ff000) {
      // 65520 = 65504 + half an ulp and up: ±Infinity; NaN keeps its top mantissa bits
      if (a > 0x7f800000) bits[i] = sign | 0x7e00 | ((a >>> 13) & 0x3ff);
      else {
        bits[i] = sign | 0x7c00;
        if (a < 0x7f800000 && overflow < 0) overflow = i;
      }
    } else if (a >= 0x38800000) {
      // normal (2^-14 and up): rebias the exponent, round the 23-bit mantissa to 10 bits,
      // adding just under half an ulp, plus one more when the kept bit is odd (ties to even)
      bits[i] = sign | ((a + 0x0fff + ((a >>> 13) & 1) - 0x38000000) >>> 13);
    } else {
      // below 2^-14: a subnormal half m·2^-24, m = |x|·2^24 rounded half to even (m = 1024 is
      // the smallest normal, whose bits are exactly 0x0400)
      const scaled = Math.abs(values[i]) * TWO_POW_24; // exact in a double
      let m = Math.floor(scaled);
      const rest = scaled - m;
      if (rest > 0.5 || (rest === 0.5 && (m & 1) === 1)) m += 1;
      bits[i] = sign | m;
    }
  }
  return overflow;
}

// The index of the first finite value in values (Float32Array) that rounds to ±Infinity as a
// half (|x| >= 65520), or -1: float32ToHalfInto's overflow, found without writing anything.
function firstHalfOverflow(values) {
  const inBits = new Uint32Array(values.buffer, values.byteOffset, values.length);
  for (let i = 0; i < inBits.length; ++i) {
    const a = inBits[i] & 0x7fffffff;
    if (a >= 0x477ff000 && a < 0x7f800000) return i;
  }
  return -1;
}

// values (Float32Array, a result) -> the same values in `format` (FORMATS): a new array, or
// `into`, the bits of the caller's array for the result (a Uint16Array of values.length),
// written only once no value overflows. A finite value that overflows half precision is a
// RangeError naming it (where: the entry, name: the result); ±Infinity already in values
// (masked scores) carries over.
export function fromFloat32(values, format, where, name, into = null) {
  if (format.dtype === 'float32') return values;
  const bits = into ?? new Uint16Array(values.length);
  const i = into ? firstHalfOverflow(values) : float32ToHalfInto(values, bits);
  if (i >= 0) {
    throw new RangeError(
      `${where}: ${name}[${i}] is ${values[i]}, beyond float16's largest value ${HALF_MAX}: it would become ${values[i] > 0 ? '' : '-'}Infinity; pass float32 inputs for float32 results`,
    );
  }
  if (into) {
    float32ToHalfInto(values, into);
    return into;
  }
  return format.array === 'Float16Array' ? new F16(bits.buffer) : bits;
}
