// The positions the tutorial page and its trained model add to the token embeddings. Plain ES
// module, no dependencies.

/**
 * Sinusoidal positional encodings (Vaswani et al. 2017), row-major n x dim:
 *   PE(pos, 2i) = sin(pos / 10000^(2i/dim)),  PE(pos, 2i+1) = cos(pos / 10000^(2i/dim)).
 * For odd dim the last column is a sin column.
 */
export function sinusoidalPositions(n, dim) {
  const out = new Float32Array(n * dim);
  for (let pos = 0; pos < n; pos++) {
    for (let j = 0; j < dim; j += 2) {
      const angle = pos / Math.pow(10000, j / dim);
      out[pos * dim + j] = Math.sin(angle);
      if (j + 1 < dim) out[pos * dim + j + 1] = Math.cos(angle);
    }
  }
  return out;
}
