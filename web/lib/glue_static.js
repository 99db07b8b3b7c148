// The four builds' Emscripten glue, imported up front: glue.js's table for the worker form's
// script (worker_host.js), which must stay one file. Vite 5-7 build a worker's script in the
// iife format unless the app's config says otherwise, and Rollup cannot split an iife build
// into chunks: one dynamic import() in the worker's graph fails the app's build
// (https://github.com/vitejs/vite/issues/18585).
import * as mt from './wasm/wasm_attention_mt.mjs';
import * as relaxedMt from './wasm/wasm_attention_relaxed_mt.mjs';
import * as relaxedSt from './wasm/wasm_attention_relaxed_st.mjs';
import * as st from './wasm/wasm_attention_st.mjs';

export const glue = {
  wasm_attention_mt: async () => mt,
  wasm_attention_st: async () => st,
  wasm_attention_relaxed_mt: async () => relaxedMt,
  wasm_attention_relaxed_st: async () => relaxedSt,
};
