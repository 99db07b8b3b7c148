// Tensors: { data: Float32Array, shape: number[] }, row-major, or a half-precision one
// { data: Float16Array or Uint16Array (the bits), shape, dtype: 'float16' } (half.js), as the
// package takes and gives them. Their checks are validate.js's.
import { float32ToHalfInto, fromFloat32, halfToFloat32 } from './half.js';
import { tensorParts, typedArrayArgument } from './validate.js';

// data (a typed array, or an Array of numbers: copied into a Float32Array) and shape (1 to 4
// sizes, as many values as they need; validate.js tensorParts) -> { data, shape }; options:
// { dtype: 'float32' | 'float16' }, kept on the tensor when given.
export function tensor(data, shape, options) {
  const t = tensorParts(data, shape, options);
  return t.dtype === undefined ? { data: t.data, shape: t.shape } : t;
}

// A tensor the package made itself (a result, a trace, a cache read back: 0 rows may be
// among them), unchecked: { data, shape }.
export const plainTensor = (data, shape) => ({ data, shape });

// A result (a Float32Array of values) in `format`, the format of the input it follows (half.js
// FORMATS): float32 as it is, float16 rounded to nearest even, a RangeError naming a finite
// value beyond float16's range (where: the entry, name: the result).
export function resultTensor(values, shape, format, where, name) {
  return formatTensor(fromFloat32(values, format, where, name), shape, format);
}

// A result's data, already in `format` -> its tensor: { data, shape }, with dtype when half.
export function formatTensor(data, shape, format) {
  return format.dtype === 'float32' ? { data, shape } : { data, shape, dtype: format.dtype };
}

// Float16 bits for engines without Float16Array (Node 20), public: values (Float32Array, n)
// -> a new Uint16Array (n) of their IEEE binary16 bits, as a Float16Array would hold them:
// rounded to nearest, ties to even, subnormals kept, |x| >= 65520 to ±Infinity, NaN a NaN.
export function toFloat16Bits(values) {
  const view = typedArrayArgument('toFloat16Bits', 'values', values, 'Float32Array');
  const bits = new Uint16Array(view.length);
  float32ToHalfInto(view, bits);
  return bits;
}

// bits (Uint16Array, n halves) -> a new Float32Array (n) of their values, exact.
export function fromFloat16Bits(bits) {
  return halfToFloat32(typedArrayArgument('fromFloat16Bits', 'bits', bits, 'Uint16Array'));
}
