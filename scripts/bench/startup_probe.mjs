// Time to a ready module, measured inside a fresh child process (see startup.mjs):
//   importMs  loading the library's JS (and for us, nothing else yet)
//   initMs    from there to ready: compiling and instantiating the wasm, starting threads
//             ours:  await createAttention({ threads })
//             tfjs:  tf.setBackend('wasm'); await tf.ready()
//             ort:   the first InferenceSession.create() (a 2×2 MatMul model): ORT sets its
//                    wasm up on the first session
//   sinceProcessStartMs  ready, counted from the process's start (Node's own boot included)
import { matmulModel } from './onnx_graphs.mjs';
import { peerFile, peerRequire } from './peers.mjs';

export async function startupOf(impl, threads) {
  const t0 = performance.now();
  let t1;
  if (impl === 'ours') {
    const { createAttention } = await import('../../web/lib/index.js');
    t1 = performance.now();
    await createAttention({ threads });
  } else if (impl === 'tfjs') {
    if (threads > 1) {
      const { enableThreadedTfjs } = await import('./tfjs_node_threads.mjs');
      enableThreadedTfjs({ threads, bundlePath: peerFile('@tensorflow/tfjs-backend-wasm', 'dist', 'tf-backend-wasm.node.js') });
    }
    const tf = peerRequire('@tensorflow/tfjs-core');
    const backend = peerRequire('@tensorflow/tfjs-backend-wasm');
    if (threads > 1) tf.env().set('WASM_HAS_MULTITHREAD_SUPPORT', true);
    backend.setThreadsCount(threads);
    t1 = performance.now();
    if (!(await tf.setBackend('wasm'))) throw new Error('tf.setBackend("wasm") failed');
    await tf.ready();
    if (backend.getThreadsCount() !== threads) throw new Error(`tfjs-wasm runs ${backend.getThreadsCount()} thread(s), not ${threads}`);
  } else if (impl === 'ort') {
    const { loadOrt, sessionOptions } = await import('./impl_ort.mjs');
    const ort = await loadOrt();
    ort.env.wasm.numThreads = threads;
    t1 = performance.now();
    await ort.InferenceSession.create(matmulModel({ m: 2, k: 2, n: 2 }), sessionOptions());
  } else {
    throw new Error(`no startup probe for ${impl}`);
  }
  const t2 = performance.now();
  return { importMs: t1 - t0, initMs: t2 - t1, totalMs: t2 - t0, sinceProcessStartMs: t2 };
}
