// createAttention's checks and the instance it makes, given the glue table to load builds
// through: index.js (the package's entry) passes glue.js's and the worker form's starter;
// worker_host.js (the worker form's instance) passes glue_static.js's and no starter.
import { Attention } from './attention.js';
import { relaxedSimdAvailable } from './features.js';
import { defaultThreads, loadModule } from './loader.js';
import { checkBoolean, checkOneOf, checkOptions, isDetached } from './validate.js';
import { warmUp } from './warm_up.js';

// Each thread is a worker with its own stack and a share of the work: past 64 they cost
// memory and start-up time and give nothing back on any machine this runs on.
const MAX_THREADS = 64;

// options.threads: an integer from 1 to MAX_THREADS or 'auto' (the default: the cores the
// platform reports, up to 16). Without cross-origin isolation a browser gets one thread,
// without error.
// options.locateFile(name): where to find the package's .wasm/.js files, if not next to it.
// options.wasmBinary: the .wasm bytes, if already at hand.
// options.worker: true gives the same API computed in a Worker, every call returning a
// Promise (worker_client.js).
// options.isa: 'auto' (the default: relaxed SIMD where the engine runs it, else SIMD128;
// SIMD128 when wasmBinary is given, the bytes of the builds that came before), 'relaxed-simd'
// or 'simd128'.
//
// glue: base name -> () => Promise of the build's glue module (glue.js).
// startWorker(options checked, threads resolved) -> Promise of the worker form.
// onThreadsStarting: loadModule's (loader.js), for the worker form's instance.
export async function createAttentionWith(options, { glue, startWorker, onThreadsStarting }) {
  const where = 'createAttention';
  const o = checkOptions(where, options, ['threads', 'locateFile', 'wasmBinary', 'worker', 'isa']);
  let threads = o.threads ?? 'auto';
  if (threads === 'auto') threads = await defaultThreads();
  else if (typeof threads !== 'number')
    throw new TypeError(
      `${where}: threads must be an integer from 1 to ${MAX_THREADS} or 'auto', got ${typeof threads}`,
    );
  else if (!Number.isInteger(threads) || threads < 1 || threads > MAX_THREADS) {
    throw new RangeError(`${where}: threads must be an integer from 1 to ${MAX_THREADS} or 'auto', got ${threads}`);
  }
  if (o.locateFile !== undefined && typeof o.locateFile !== 'function') {
    throw new TypeError(`${where}: locateFile must be a function (fileName) => url or path`);
  }
  if (o.wasmBinary !== undefined && !(o.wasmBinary instanceof ArrayBuffer || ArrayBuffer.isView(o.wasmBinary))) {
    throw new TypeError(`${where}: wasmBinary must be an ArrayBuffer or Uint8Array`);
  }
  if (o.wasmBinary !== undefined) checkBytes(where, o.wasmBinary);
  const isa = chooseIsa(where, o.isa ?? 'auto', o.wasmBinary !== undefined);
  if (checkBoolean(where, 'worker', o.worker)) {
    return startWorker({ threads, isa: o.isa, locateFile: o.locateFile, wasmBinary: o.wasmBinary });
  }
  const { module } = await loadModule({
    threads,
    isa,
    locateFile: o.locateFile,
    wasmBinary: o.wasmBinary,
    glue,
    onThreadsStarting,
  });
  const attention = new Attention(module);
  try {
    warmUp(attention); // the first call's one-time costs, paid here (why: warm_up.js)
  } catch (e) {
    attention.dispose();
    throw e;
  }
  return attention;
}

// wasmBinary (an ArrayBuffer or a view) must hold bytes: the loader aborts on none (a detached
// or an empty buffer) with the engine's message.
function checkBytes(where, wasmBinary) {
  const buffer = ArrayBuffer.isView(wasmBinary) ? wasmBinary.buffer : wasmBinary;
  if (isDetached(buffer)) {
    throw new TypeError(
      `${where}: wasmBinary's buffer is detached (transferred or released); pass the .wasm file's bytes`,
    );
  }
  if (wasmBinary.byteLength === 0) throw new RangeError(`${where}: wasmBinary is empty; pass the .wasm file's bytes`);
}

const ISAS = ['auto', 'relaxed-simd', 'simd128'];

// options.isa -> the instruction set to load, 'relaxed-simd' or 'simd128'
function chooseIsa(where, isa, haveBinary) {
  checkOneOf(where, 'isa', isa, ISAS);
  if (isa === 'auto') return relaxedSimdAvailable() && !haveBinary ? 'relaxed-simd' : 'simd128';
  if (isa === 'relaxed-simd' && !relaxedSimdAvailable()) {
    throw new RangeError(
      `${where}: isa 'relaxed-simd' is not supported by this WebAssembly engine ` +
        '(Node 20 needs --experimental-wasm-relaxed-simd; Chromium has it since 114)',
    );
  }
  return isa;
}
