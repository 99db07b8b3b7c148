// Small tensor helpers for computing in Node what the page shows (the page tests) and for the bench.
import { tensor } from '../../web/lib/index.js';
import { columns as copyColumns } from '../../web/lib/internal.js';

// The n×n identity.
export const eye = (n) =>
  tensor(
    Float32Array.from({ length: n * n }, (_, k) => (k % (n + 1) === 0 ? 1 : 0)),
    [n, n],
  );

// Columns [c0, c0+width) of a (rows, stride) tensor, as a (rows, width) tensor (the package's copy).
export function columns(t, c0, width) {
  const [rows, stride] = t.shape;
  return tensor(copyColumns(t.data, rows, stride, c0, width), [rows, width]);
}
