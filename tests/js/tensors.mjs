// Small tensor helpers for computing in Node what the page shows.
import { tensor } from '../../web/lib/index.js';

// The n×n identity.
export const eye = (n) => tensor(Float32Array.from({ length: n * n }, (_, k) => (k % (n + 1) === 0 ? 1 : 0)), [n, n]);

// Columns [c0, c0+width) of a (rows, stride) tensor, as a (rows, width) tensor.
export function columns(t, c0, width) {
  const [rows, stride] = t.shape;
  const out = new Float32Array(rows * width);
  for (let r = 0; r < rows; ++r) out.set(t.data.subarray(r * stride + c0, r * stride + c0 + width), r * width);
  return tensor(out, [rows, width]);
}
