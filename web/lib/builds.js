// The builds of the wasm module, one row each, as CMakeLists.txt makes them (its wa_module
// calls; tests/js/package/builds.test.mjs holds the two equal).
//
//   base     the stem of the build's file names: wasm_attention_<isa>[_mt], the isa with '_' for
//            '-', and _mt with threads
//   isa      'simd128': SIMD128 alone; 'relaxed-simd': plus relaxed SIMD's fused multiply-add
//   threads  true: pthreads; false: one thread
//   files    every file locateFile() may be asked about: the .wasm, the classic glue .js, and
//            with threads the pthread workers' script .worker.js
//   wasm     () -> URL of the .wasm, which the build fetches in a browser. A literal
//            new URL('./wasm/<file>', import.meta.url): the form Vite, webpack 5, Parcel 2 and
//            Rollup (with @web/rollup-plugin-import-meta-assets) follow, copying the file into
//            the app's build and rewriting the URL. A folder URL joined to a file name would be
//            invisible to them. esbuild leaves these URLs as they are: its users copy the wasm/
//            folder next to their bundle.
//   worker   (threaded builds) () -> a new pthread worker, a module worker running the package's
//            <base>.worker.mjs (scripts/build/wrap_esm.mjs): what a browser's loader starts where the
//            package is served from the page's origin. A literal new Worker(new URL('./wasm/
//            <file>', import.meta.url), { type: 'module' }), the form Vite, webpack 5 and Parcel 2
//            build as a worker of its own; Rollup's importMetaAssets and esbuild's users copy the
//            file, which imports nothing.

const files = (base, threads) => [`${base}.wasm`, `${base}.js`, ...(threads ? [`${base}.worker.js`] : [])];

export const BUILDS = [
  {
    base: 'wasm_attention_simd128_mt',
    isa: 'simd128',
    threads: true,
    files: files('wasm_attention_simd128_mt', true),
    wasm: () => new URL('./wasm/wasm_attention_simd128_mt.wasm', import.meta.url),
    worker: () =>
      new Worker(new URL('./wasm/wasm_attention_simd128_mt.worker.mjs', import.meta.url), { type: 'module' }),
  },
  {
    base: 'wasm_attention_simd128',
    isa: 'simd128',
    threads: false,
    files: files('wasm_attention_simd128', false),
    wasm: () => new URL('./wasm/wasm_attention_simd128.wasm', import.meta.url),
  },
  {
    base: 'wasm_attention_relaxed_simd_mt',
    isa: 'relaxed-simd',
    threads: true,
    files: files('wasm_attention_relaxed_simd_mt', true),
    wasm: () => new URL('./wasm/wasm_attention_relaxed_simd_mt.wasm', import.meta.url),
    worker: () =>
      new Worker(new URL('./wasm/wasm_attention_relaxed_simd_mt.worker.mjs', import.meta.url), { type: 'module' }),
  },
  {
    base: 'wasm_attention_relaxed_simd',
    isa: 'relaxed-simd',
    threads: false,
    files: files('wasm_attention_relaxed_simd', false),
    wasm: () => new URL('./wasm/wasm_attention_relaxed_simd.wasm', import.meta.url),
  },
];

// -> the row of the build with isa ('simd128' or 'relaxed-simd') and threads (a boolean)
export function buildFor(isa, threads) {
  return BUILDS.find((v) => v.isa === isa && v.threads === threads);
}
