// The four builds' Emscripten glue, imported up front: glue.js's table for the worker form's
// script (worker_host.js), which must stay one file. Vite 5-7 build a worker's script in the
// iife format unless the app's config says otherwise, and Rollup cannot split an iife build
// into chunks: one dynamic import() in the worker's graph fails the app's build
// (https://github.com/vitejs/vite/issues/18585).
import * as relaxedSimd from './wasm/wasm_attention_relaxed_simd.mjs';
import * as relaxedSimdMt from './wasm/wasm_attention_relaxed_simd_mt.mjs';
import * as simd128 from './wasm/wasm_attention_simd128.mjs';
import * as simd128Mt from './wasm/wasm_attention_simd128_mt.mjs';

export const glue = {
  wasm_attention_simd128_mt: async () => simd128Mt,
  wasm_attention_simd128: async () => simd128,
  wasm_attention_relaxed_simd_mt: async () => relaxedSimdMt,
  wasm_attention_relaxed_simd: async () => relaxedSimd,
};
