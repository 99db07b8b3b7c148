// What the loading tests compare of a backend (Attention.backend): all of it but gemmKernel,
// the matrix-product micro-kernel chosen for the engine, which is only checked to be one of its
// isa's kernels (which one is the engine's: gemm_select.cpp).
import assert from 'node:assert/strict';

export function buildOf(backend) {
  const { gemmKernel, ...build } = backend;
  assert.match(gemmKernel, backend.isa === 'relaxed-simd' ? /^f32_gemm_\w+_relaxed_simd$/ : /^f32_gemm_\w+_simd128$/);
  return build;
}
