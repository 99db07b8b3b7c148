// Tensors: { data: Float32Array, shape: number[] }, row-major, or a half-precision one
// { data: Float16Array or Uint16Array (the bits), shape, dtype: 'float16' } (half.js), as the
// package takes and gives them. Their checks are validate.js's.
import { fromFloat32 } from './half.js';
import { tensorParts } from './validate.js';

// data (a typed array, or an Array of numbers: copied into a Float32Array) and shape (1 to 4
// sizes, as many values as they need; validate.js tensorParts) -> { data, shape }; options:
// { dtype: 'float32' | 'float16' }, kept on the tensor when given.
export function tensor(data, shape, options) {
  const t = tensorParts(data, shape, options);
  return t.dtype === undefined ? { data: t.data, shape: t.shape } : t;
}

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
