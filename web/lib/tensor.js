// Tensors: { data: Float32Array, shape: number[] }, row-major, or a half-precision one
// { data: Float16Array or Uint16Array (the bits), shape, dtype: 'float16' } (half.js), as the
// package takes and gives them. Their checks are validate.js's.
import { fromFloat32 } from './half.js';

// options: { dtype: 'float32' | 'float16' }, kept on the tensor when given.
export function tensor(data, shape, options) {
  return options?.dtype === undefined ? { data, shape } : { data, shape, dtype: options.dtype };
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
