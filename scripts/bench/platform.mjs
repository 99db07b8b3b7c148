// Where the bench runs, and how the peers' libraries are loaded there. Every other module of
// the cases, implementations, timing and report runs unchanged in Node and in a browser page
// (web/bench.html, `npm run bench -- --browser`); only what differs lives here, behind
// dynamic imports so that a page never loads a Node-only module:
//   Node     the peers from build/bench-peers/ (peers.mjs): onnxruntime-web's Node build,
//            tfjs's CommonJS bundles (+ the threads workarounds and gradient loading)
//   browser  what scripts/serve.mjs serves under /vendor/: onnxruntime-web's ES module build,
//            tfjs-core + tfjs-backend-wasm + gradients bundled (browser_bundles.mjs)
export const IN_NODE =
  typeof process === 'object' && typeof process.versions?.node === 'string' && typeof window === 'undefined';

// The URL of a file under /vendor/ of the page's server, absolute (a pthread worker started
// from a blob: URL cannot resolve a path against its own URL).
const vendor = (path) => new URL(`/vendor/${path}`, globalThis.location.href).href;

// -> the onnxruntime-web module (wasm execution provider only)
export async function importOrt() {
  if (!IN_NODE) return import(/* @vite-ignore */ vendor('onnxruntime-web/ort.wasm.min.mjs'));
  const { peerUrl } = await import('./peers.mjs');
  return import(peerUrl('onnxruntime-web', 'dist', 'ort.node.min.mjs'));
}

// -> { tf, backend } (tfjs-core, tfjs-backend-wasm), set up for `threads` before the backend starts
export async function importTfjs(threads) {
  if (!IN_NODE) {
    // tfjs-backend-wasm sizes its pthread pool to min(4, navigator.hardwareConcurrency / 2)
    // (it assumes two hyper-threads per core): 1 on a 2-core machine. Asked for more, this
    // page (a frame of its own: bench.html runs each thread count in its own frame) reports
    // twice the cores to it, as the Node run does with os.cpus() (tfjs_node_threads.mjs).
    const cores = navigator.hardwareConcurrency || 1;
    if (threads > Math.floor(cores / 2)) {
      Object.defineProperty(navigator, 'hardwareConcurrency', { value: Math.max(2 * threads, 2 * cores) });
    }
    const { tf, tfWasm } = await import(/* @vite-ignore */ vendor('tfjs.mjs')); // gradients included
    tfWasm.setWasmPaths(vendor('tfjs-backend-wasm/'));
    return { tf, backend: tfWasm };
  }
  const { peerFile, peerRequire } = await import('./peers.mjs');
  if (threads > 1) {
    const { enableThreadedTfjs } = await import('./tfjs_node_threads.mjs');
    enableThreadedTfjs({
      threads,
      bundlePath: peerFile('@tensorflow/tfjs-backend-wasm', 'dist', 'tf-backend-wasm.node.js'),
    });
  }
  const tf = peerRequire('@tensorflow/tfjs-core');
  const backend = peerRequire('@tensorflow/tfjs-backend-wasm');
  return { tf, backend };
}

// tf.grads needs tfjs-core's gradient functions, which its Node bundle leaves out
// (tfjs_gradients.mjs); the browser bundle has them.
export async function registerGradients() {
  if (!IN_NODE) return;
  const { registerTfjsGradients } = await import('./tfjs_gradients.mjs');
  await registerTfjsGradients();
}

// The implementations this environment runs: the plain JS loops only in Node (their module
// shares the test suites' tensor helpers, which the page does not serve).
export const IMPLS_HERE = IN_NODE ? ['ours', 'tfjs', 'ort', 'js'] : ['ours', 'tfjs', 'ort'];
