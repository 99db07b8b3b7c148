// Picks a build of the wasm module (builds.js) and instantiates it. Two choices:
//
//   threads  true     pthreads: Node, Deno and Bun, and browsers where the page is cross-origin
//                     isolated; in all of them only where a shared WebAssembly.Memory can be
//                     made and posted to a worker (features.js). Where the threaded build
//                     fails to start, the loader falls back to one thread (and says why on
//                     the console).
//            false    one thread: everywhere else, and whenever one thread is asked for
//   isa      relaxed-simd  SIMD128 + relaxed SIMD's fused multiply-add in the GEMM kernel:
//                     where the engine validates it (features.js)
//            simd128  SIMD128 alone: everywhere else
//
// Its files are found next to this module, or wherever options.locateFile says: the .wasm, and
// with threads the pthread workers' script and the classic glue it loads. In a browser without
// locateFile the pthread workers start as module workers from the package's <base>.worker.mjs
// (builds.js), a file of the page's origin that a Content-Security-Policy of worker-src 'self'
// allows; where the package is served from another origin (a CDN), whose scripts no worker can
// start from, they run from blob: URLs made of the text the glue's module carries
// (scripts/build/wrap_esm.mjs). Either way the glue evaluates no string (CMakeLists.txt:
// DYNAMIC_EXECUTION=0 and cpp/bindings/embind_invoker.js), so 'wasm-unsafe-eval' is all the
// policy needs (web/docs/loading.md).

import { sharedMemoryAvailable } from './features.js';
import { isNode, nodeBuiltin, nodeWorker } from './host.js';
import { buildFor } from './builds.js';

// -> URL of the build's .wasm (builds.js), with a message a person can act on where the
// bundler left no import.meta.url (esbuild's default iife format replaces import.meta by {}).
function packagedWasm(build) {
  try {
    return build.wasm();
  } catch {
    throw new Error(
      `wasm-attention: cannot locate its files: import.meta.url is ${import.meta.url} here; ` +
        'bundle as an ES module (esbuild: --format=esm) or pass createAttention({ locateFile })',
    );
  }
}

// A build that failed to start, asked whether its .wasm at url came back as a web page (bytes
// starting '<', or a text/html answer): a server's fallback to index.html for a file it does
// not have, as Vite 5-7's dev server answers without optimizeDeps.exclude. bytes: what Node
// read; in a browser the URL is fetched again. -> an Error naming the URL and the fix, or null.
async function htmlForWasm(url, bytes) {
  let type = '';
  try {
    if (!bytes) {
      const answer = await fetch(url);
      type = answer.headers.get('content-type') ?? '';
      bytes = new Uint8Array(await answer.arrayBuffer());
    }
  } catch {
    return null;
  }
  if (bytes[0] !== 0x3c && !/text\/html/i.test(type)) return null;
  return new Error(
    `wasm-attention: ${url} came back as an HTML page, not the .wasm (its bytes start ${Array.from(bytes.subarray(0, 4), (b) => b.toString(16).padStart(2, '0')).join(' ')}${type ? `, content-type ${type}` : ''}): ` +
      "the server has no such file and answered with a page. With Vite 5-7's dev server, add optimizeDeps: { exclude: ['wasm-attention'] } to vite.config.js; " +
      "elsewhere serve the package's web/lib/wasm/ folder next to its module, or say where it is with createAttention({ locateFile })",
  );
}

// -> { failed, stop }: failed rejects when one of the pool's workers fails before the module
// is ready (its script or the glue it imports did not load, was blocked, or threw): the
// factory's own promise would wait forever. The glue's own handler (Module.onWorkerError,
// scripts/build/patch_glue.mjs) reports to it instead of rethrowing, which would kill a Node or Deno
// process. stop() takes the listeners off once the module is ready; a worker failing later is
// the glue's to report, as it always was.
// from: where the workers' scripts are: 'text' (blob: URLs), 'module' (the package's
// <base>.worker.mjs) or 'files' (<base>.worker.js and <base>.js, where locateFile or the folder says).
function watchWorkers(settings, base, from) {
  let fail;
  const failed = new Promise((_, reject) => {
    fail = (e) => {
      e?.preventDefault?.(); // a browser's error event: handled here, not reported as uncaught
      const where = isNode ? 'must be' : "must be served from the page's origin,";
      const need = {
        text: 'its script is a blob: URL, which a Content-Security-Policy must allow (worker-src and script-src blob:)',
        module:
          `its script is ${base}.worker.mjs, which must be served from the page's origin beside the .wasm ` +
          "and which a Content-Security-Policy must allow (worker-src 'self')",
        files: `${base}.worker.js and ${base}.js ${where} next to the .wasm or where locateFile says`,
      }[from];
      reject(
        new Error(
          `wasm-attention: a thread's worker failed to start (${e?.message || 'its script did not load'}): ${need}`,
        ),
      );
    };
  });
  settings.onWorkerError = fail;
  const workers = [...(settings.PThread?.unusedWorkers ?? [])];
  for (const worker of workers) {
    if (isNode) worker.on('error', fail);
    else worker.addEventListener('error', fail);
  }
  const stop = () => {
    delete settings.onWorkerError;
    for (const worker of workers) {
      if (isNode) worker.off('error', fail);
      else worker.removeEventListener('error', fail);
    }
  };
  return { failed, stop };
}

// Whether url is of the page's origin (a worker's, in a worker), so a worker can start from it.
function sameOrigin(url) {
  return url.origin === globalThis.location?.origin;
}

function threadsAvailable() {
  return (isNode || globalThis.crossOriginIsolated === true) && sharedMemoryAvailable();
}

// threads: 'auto': every core the platform reports, up to 16. A larger pool never slows a call
// down by its size: each call wakes only the threads its work feeds (threading.h: one per half a
// 64³ product's multiply-adds) and splits its work for that many (gemm_split, kTasksPerThread),
// so a small call on a 16-thread pool runs as it would on a smaller one.
export async function defaultThreads() {
  if (isNode) {
    const os = await nodeBuiltin('os');
    return Math.max(1, Math.min(16, os.availableParallelism?.() ?? os.cpus().length));
  }
  return Math.max(1, Math.min(16, globalThis.navigator?.hardwareConcurrency ?? 1));
}

// isa: 'relaxed-simd' or 'simd128', already checked against what the engine runs.
// -> { module } with the module's thread pool started: threads, or 1 without threads,
// or 1 where the threaded build failed to start (its workers, or the engine sending them the
// shared memory): then the single-thread build, unless wasmBinary (one build's bytes) was given.
// glue: base name -> () => Promise of the build's glue module (glue.js, glue_static.js).
// onThreadsStarting(started): where given, called just before the threaded build's factory
// starts the pool's workers, and started() once they all exist (the worker form's watch on
// Firefox's nested workers: worker_client.js).
export async function loadModule({ threads, isa, locateFile, wasmBinary, glue, onThreadsStarting }) {
  if (threads > 1 && threadsAvailable()) {
    try {
      return await loadBuild({ threads, isa, locateFile, wasmBinary, glue, onThreadsStarting, threaded: true });
    } catch (e) {
      if (wasmBinary) throw e;
      console.warn(`wasm-attention: the threaded build did not start, running on one thread: ${e.message}`);
    }
  }
  return loadBuild({ threads: 1, isa, locateFile, wasmBinary, glue, threaded: false });
}

async function loadBuild({ threads, isa, locateFile, wasmBinary, glue, onThreadsStarting, threaded }) {
  const build = buildFor(isa, threaded);
  const { base } = build;
  const { default: wrapped, scripts } = await glue[base]();

  const wasmUrl = locateFile ? undefined : packagedWasm(build);
  const settings = { threadPoolSize: threaded ? threads - 1 : 0 };
  let factory;
  let revokeScripts = () => {};
  if (isNode) {
    const [{ createRequire }, { readFile }, { fileURLToPath }, { dirname, join }] = await Promise.all(
      ['module', 'fs/promises', 'url', 'path'].map(nodeBuiltin),
    );
    const locate = locateFile ? (file) => locateFile(file) : (file) => join(dirname(fileURLToPath(wasmUrl)), file);
    // Node 20's fetch() cannot read a file path: hand the loader the bytes.
    settings.wasmBinary = wasmBinary ?? (await readFile(locate(`${base}.wasm`)));
    settings.locateFile = locate;
    if (threaded) {
      // the glue's pool makes its workers with it (scripts/build/patch_glue.mjs): the process's
      // flags, less those a worker refuses (host.js)
      const { Worker } = await nodeBuiltin('worker_threads');
      settings.pthreadWorker = () => nodeWorker(Worker, locate(`${base}.worker.js`));
    }
    factory = wrapped(createRequire(import.meta.url), dirname(locate(`${base}.js`)));
  } else {
    if (wasmBinary) settings.wasmBinary = wasmBinary;
    if (locateFile) {
      // locateFile's answers resolved against the page, as absolute URLs: a pthread worker
      // would resolve a relative one against its own script's URL instead.
      const page = globalThis.document?.baseURI ?? globalThis.location?.href;
      settings.locateFile = (file) => new URL(String(locateFile(file)), page).href;
      settings.mainScriptUrlOrBlob = settings.locateFile(`${base}.js`); // what pthread workers load
    } else {
      // the .wasm's URL as the bundler wrote it (a bundler may rename the file: Parcel hashes it)
      const located = { [`${base}.wasm`]: wasmUrl.href };
      settings.locateFile = (file) => located[file] ?? new URL(file, wasmUrl).href;
      if (build.worker && sameOrigin(wasmUrl)) {
        settings.pthreadWorker = build.worker; // the glue's pool makes its workers with it (scripts/build/patch_glue.mjs)
      } else if (scripts) {
        // A blob: URL's worker has the page's origin (a data: URL's would have an opaque one).
        const workerUrl = URL.createObjectURL(new Blob([scripts.worker], { type: 'text/javascript' }));
        revokeScripts = () => URL.revokeObjectURL(workerUrl);
        located[`${base}.worker.js`] = workerUrl;
        // what pthread workers load: a Blob, which each makes a blob: URL of in its own scope
        settings.mainScriptUrlOrBlob = new Blob([scripts.glue], { type: 'text/javascript' });
      }
    }
    factory = wrapped(undefined, undefined);
  }

  let module;
  try {
    const started = threaded ? onThreadsStarting?.() : undefined;
    let ready;
    try {
      ready = factory(settings); // the pool's workers exist once this returns
    } finally {
      started?.();
    }
    const from = isNode || locateFile ? 'files' : settings.pthreadWorker ? 'module' : 'text';
    const watch = watchWorkers(settings, base, from);
    module = await Promise.race([ready, watch.failed]);
    watch.stop();
  } catch (e) {
    // The factory's module object is `settings`: stop the workers it started, which would
    // otherwise keep a Node process alive. Their listeners stay: an error a failed worker
    // still reports (Chromium may dispatch one after the first) is handled, not rethrown.
    settings.PThread?.terminateAllThreads();
    throw (wasmBinary ? null : await htmlForWasm(settings.locateFile(`${base}.wasm`), settings.wasmBinary)) ?? e;
  } finally {
    revokeScripts(); // the pool's workers are all started by now
  }
  const error = module.setThreads(threaded ? threads : 1);
  if (error) {
    module.PThread?.terminateAllThreads();
    throw new Error(`wasm-attention: could not start threads: ${error}`);
  }
  if (isNode && module.PThread) {
    // Idle pool workers must not keep a Node process alive.
    for (const worker of [...module.PThread.unusedWorkers, ...module.PThread.runningWorkers]) worker.unref?.();
  }
  return { module };
}
