// The four builds' Emscripten glue, each imported when first run: base name -> () => Promise
// of its module (scripts/build/wrap_esm.mjs: default export load(require, __dirname) -> the module
// factory; a threaded build's also exports scripts, the text its pthread workers run in a
// browser). Literal specifiers, so that bundlers include every build, each in a chunk of its
// own that only the apps running it fetch. The package's entry (index.js) loads through this
// table.
export const glue = {
  wasm_attention_simd128_mt: () => import('./wasm/wasm_attention_simd128_mt.mjs'),
  wasm_attention_simd128: () => import('./wasm/wasm_attention_simd128.mjs'),
  wasm_attention_relaxed_simd_mt: () => import('./wasm/wasm_attention_relaxed_simd_mt.mjs'),
  wasm_attention_relaxed_simd: () => import('./wasm/wasm_attention_relaxed_simd.mjs'),
};
