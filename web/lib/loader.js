// Picks a build of the wasm module and instantiates it. Two choices, each a variant:
//
//   threads  simd-mt  pthreads: Node, and browsers where the page is cross-origin isolated
//                     (SharedArrayBuffer exists only there)
//            simd     one thread: everywhere else, and whenever one thread is asked for
//   isa      relaxed-simd  SIMD128 + relaxed SIMD's fused multiply-add in the GEMM kernel:
//                     where the engine validates it (features.js)
//            simd128  SIMD128 alone: everywhere else
//
// The .wasm files are found next to this module (new URL(..., import.meta.url), which
// bundlers follow), or wherever options.locateFile says.

const isNode = typeof process === 'object' && typeof process.versions?.node === 'string' &&
  typeof window === 'undefined';

const wasmFolder = new URL('./wasm/', import.meta.url);

// Node's built-in modules, fetched so that bundlers for the browser never see an import.
async function nodeBuiltin(name) {
  if (process.getBuiltinModule) return process.getBuiltinModule(name);
  const specifier = `node:${name}`;
  return import(/* @vite-ignore */ /* webpackIgnore: true */ specifier);
}

export function threadsAvailable() {
  return isNode || (globalThis.crossOriginIsolated === true && typeof SharedArrayBuffer === 'function');
}

export async function defaultThreads() {
  if (isNode) {
    const os = await nodeBuiltin('os');
    return Math.max(1, Math.min(16, os.availableParallelism?.() ?? os.cpus().length));
  }
  return Math.max(1, Math.min(16, globalThis.navigator?.hardwareConcurrency ?? 1));
}

// isa: 'relaxed-simd' or 'simd128', already checked against what the engine runs.
// -> { module, variant } with the module's thread pool started (threads, or 1 without threads)
export async function loadModule({ threads, isa, locateFile, wasmBinary }) {
  const variant = threads > 1 && threadsAvailable() ? 'simd-mt' : 'simd';
  const base = `wasm_attention_${isa === 'relaxed-simd' ? 'relaxed_' : ''}${variant === 'simd-mt' ? 'mt' : 'st'}`;
  // Literal specifiers, so that bundlers include every build.
  const { default: wrapped } = await {
    wasm_attention_mt: () => import('./wasm/wasm_attention_mt.mjs'),
    wasm_attention_st: () => import('./wasm/wasm_attention_st.mjs'),
    wasm_attention_relaxed_mt: () => import('./wasm/wasm_attention_relaxed_mt.mjs'),
    wasm_attention_relaxed_st: () => import('./wasm/wasm_attention_relaxed_st.mjs'),
  }[base]();

  const settings = { threadPoolSize: variant === 'simd-mt' ? threads - 1 : 0 };
  let factory;
  if (isNode) {
    const [{ createRequire }, { readFile }, { fileURLToPath }, { dirname }] = await Promise.all(
      ['module', 'fs/promises', 'url', 'path'].map(nodeBuiltin));
    const locate = (file) => (locateFile ? locateFile(file) : fileURLToPath(new URL(file, wasmFolder)));
    // Node 20's fetch() cannot read a file path: hand the loader the bytes.
    settings.wasmBinary = wasmBinary ?? await readFile(locate(`${base}.wasm`));
    settings.locateFile = locate;
    factory = wrapped(createRequire(import.meta.url), dirname(locate(`${base}.js`)));
  } else {
    const locate = (file) => (locateFile ? locateFile(file) : new URL(file, wasmFolder).href);
    if (wasmBinary) settings.wasmBinary = wasmBinary;
    settings.locateFile = locate;
    settings.mainScriptUrlOrBlob = locate(`${base}.js`);  // what pthread workers load
    factory = wrapped(undefined, undefined);
  }

  let module;
  try {
    module = await factory(settings);
  } catch (e) {
    // The factory's module object is `settings`: stop the workers it started, which would
    // otherwise keep a Node process alive.
    settings.PThread?.terminateAllThreads();
    throw e;
  }
  const error = module.setThreads(variant === 'simd-mt' ? threads : 1);
  if (error) {
    module.PThread?.terminateAllThreads();
    throw new Error(`wasm-attention: could not start threads: ${error}`);
  }
  if (isNode && module.PThread) {
    // Idle pool workers must not keep a Node process alive.
    for (const worker of [...module.PThread.unusedWorkers, ...module.PThread.runningWorkers]) worker.unref?.();
  }
  return { module, variant };
}
