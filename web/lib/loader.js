// Picks a build of the wasm module and instantiates it. Two choices, each a variant:
//
//   threads  simd-mt  pthreads: Node, and browsers where the page is cross-origin isolated
//                     (SharedArrayBuffer exists only there)
//            simd     one thread: everywhere else, and whenever one thread is asked for
//   isa      relaxed-simd  SIMD128 + relaxed SIMD's fused multiply-add in the GEMM kernel:
//                     where the engine validates it (features.js)
//            simd128  SIMD128 alone: everywhere else
//
// Its files are found next to this module, or wherever options.locateFile says: in a browser
// the .wasm, and for simd-mt the pthread worker's script and the classic glue it loads.

const isNode =
  typeof process === 'object' && typeof process.versions?.node === 'string' && typeof window === 'undefined';

// file name -> URL, for every file a variant loads at run time. Each is a literal
// new URL('./wasm/<file>', import.meta.url): the form Vite, webpack 5 and Rollup (with
// @web/rollup-plugin-import-meta-assets) follow, copying the file into the app's build and
// rewriting the URL. A folder URL joined to a file name would be invisible to them. esbuild
// leaves these URLs as they are: its users copy the wasm/ folder next to their bundle.
const files = {
  wasm_attention_mt: () => ({
    'wasm_attention_mt.wasm': new URL('./wasm/wasm_attention_mt.wasm', import.meta.url),
    // the pthread workers' script: Emscripten's glue asks locateFile() for it by this name
    'wasm_attention_mt.worker.js': new URL('./wasm/wasm_attention_mt.worker.js', import.meta.url),
    // the classic glue each worker loads with importScripts() (Module.mainScriptUrlOrBlob)
    'wasm_attention_mt.js': new URL('./wasm/wasm_attention_mt.js', import.meta.url),
  }),
  wasm_attention_st: () => ({
    'wasm_attention_st.wasm': new URL('./wasm/wasm_attention_st.wasm', import.meta.url),
  }),
  wasm_attention_relaxed_mt: () => ({
    'wasm_attention_relaxed_mt.wasm': new URL('./wasm/wasm_attention_relaxed_mt.wasm', import.meta.url),
    'wasm_attention_relaxed_mt.worker.js': new URL('./wasm/wasm_attention_relaxed_mt.worker.js', import.meta.url),
    'wasm_attention_relaxed_mt.js': new URL('./wasm/wasm_attention_relaxed_mt.js', import.meta.url),
  }),
  wasm_attention_relaxed_st: () => ({
    'wasm_attention_relaxed_st.wasm': new URL('./wasm/wasm_attention_relaxed_st.wasm', import.meta.url),
  }),
};

// Node's built-in modules, fetched so that bundlers for the browser never see an import.
async function nodeBuiltin(name) {
  if (process.getBuiltinModule) return process.getBuiltinModule(name);
  const specifier = `node:${name}`;
  return import(/* @vite-ignore */ /* webpackIgnore: true */ specifier);
}

// file name -> blob: URL, for each script of urls that a bundler inlined as a data: URL
// (Vite inlines files under 4 KiB, the pthread worker's among them). A worker started from a
// data: URL has an opaque origin, which may not load the glue nor share the module's memory;
// one started from a blob: URL has the page's.
async function sameOriginScripts(urls) {
  const scripts = {};
  for (const [file, url] of Object.entries(urls)) {
    if (url.protocol === 'data:' && file.endsWith('.js')) {
      const bytes = await (await fetch(url)).arrayBuffer();
      scripts[file] = URL.createObjectURL(new Blob([bytes], { type: 'text/javascript' }));
    }
  }
  return scripts;
}

// -> file name -> URL of the build's files (base: its name, as in files), with a message a
// person can act on where the bundler left no import.meta.url (esbuild's default iife format
// replaces import.meta by {}).
function packagedFiles(base) {
  try {
    return files[base]();
  } catch {
    throw new Error(
      `wasm-attention: cannot locate its files: import.meta.url is ${import.meta.url} here; ` +
        'bundle as an ES module (esbuild: --format=esm) or pass createAttention({ locateFile })',
    );
  }
}

// Rejects when one of the pool's workers fails before the module is ready (its script or the
// glue it imports did not load, or was blocked): the factory's own promise would wait forever.
function workerFailure(settings, base) {
  return new Promise((_, reject) => {
    for (const worker of settings.PThread?.unusedWorkers ?? []) {
      worker.addEventListener(
        'error',
        (e) =>
          reject(
            new Error(
              `wasm-attention: a thread's worker failed to start (${e.message || 'its script did not load'}): ` +
                `${base}.worker.js and ${base}.js must be served from the page's origin, ` +
                'next to the .wasm or where locateFile says',
            ),
          ),
        { once: true },
      );
    }
  });
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
// glue: base name -> () => Promise of the build's glue module (glue.js, glue_static.js).
// -> { module, variant } with the module's thread pool started (threads, or 1 without threads)
export async function loadModule({ threads, isa, locateFile, wasmBinary, glue }) {
  const variant = threads > 1 && threadsAvailable() ? 'simd-mt' : 'simd';
  const base = `wasm_attention_${isa === 'relaxed-simd' ? 'relaxed_' : ''}${variant === 'simd-mt' ? 'mt' : 'st'}`;
  const { default: wrapped } = await glue[base]();

  const urls = locateFile ? {} : packagedFiles(base);
  const settings = { threadPoolSize: variant === 'simd-mt' ? threads - 1 : 0 };
  let factory;
  let revokeScripts = () => {};
  if (isNode) {
    const [{ createRequire }, { readFile }, { fileURLToPath }, { dirname, join }] = await Promise.all(
      ['module', 'fs/promises', 'url', 'path'].map(nodeBuiltin),
    );
    const locate = locateFile
      ? (file) => locateFile(file)
      : (file) => join(dirname(fileURLToPath(urls[`${base}.wasm`])), file);
    // Node 20's fetch() cannot read a file path: hand the loader the bytes.
    settings.wasmBinary = wasmBinary ?? (await readFile(locate(`${base}.wasm`)));
    settings.locateFile = locate;
    factory = wrapped(createRequire(import.meta.url), dirname(locate(`${base}.js`)));
  } else {
    const scripts = await sameOriginScripts(urls);
    revokeScripts = () => Object.values(scripts).forEach((url) => URL.revokeObjectURL(url));
    // locateFile's answers resolved against the page, as absolute URLs: a pthread worker would
    // resolve a relative one against its own script's URL instead.
    const locate = locateFile
      ? (file) => new URL(String(locateFile(file)), globalThis.document?.baseURI ?? globalThis.location?.href).href
      : (file) => scripts[file] ?? (urls[file] ?? new URL(file, urls[`${base}.wasm`])).href;
    if (wasmBinary) settings.wasmBinary = wasmBinary;
    settings.locateFile = locate;
    settings.mainScriptUrlOrBlob = locate(`${base}.js`); // what pthread workers load
    factory = wrapped(undefined, undefined);
  }

  let module;
  try {
    const ready = factory(settings); // the pool's workers exist once this returns
    module = await (isNode ? ready : Promise.race([ready, workerFailure(settings, base)]));
  } catch (e) {
    // The factory's module object is `settings`: stop the workers it started, which would
    // otherwise keep a Node process alive.
    settings.PThread?.terminateAllThreads();
    throw e;
  } finally {
    revokeScripts(); // the pool's workers are all started by now
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
