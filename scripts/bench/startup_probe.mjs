// Time to a ready module, measured inside a fresh child process (see startup.mjs), through
// each implementation's load(threads) -> { start() } (impl_*.mjs), the same path its rows take:
//   importMs  load(): loading the library's JS (for us, nothing else yet)
//   initMs    start(): from there to ready: compiling and instantiating the wasm, starting threads
//             ours:  await createAttention({ threads })
//             tfjs:  tf.setBackend('wasm'); await tf.ready()
//             ort:   the first InferenceSession.create() (a 2×2 MatMul model): ORT sets its
//                    wasm up on the first session
//   sinceProcessStartMs  ready, counted from the process's start (Node's own boot included)
import { IMPLS } from './impls.mjs';

export async function startupOf(impl, threads) {
  const { load } = await IMPLS[impl]();  // the bench's own module: not timed
  if (!load) throw new Error(`no startup probe for ${impl}`);
  const t0 = performance.now();
  const { start } = await load(threads);
  const t1 = performance.now();
  await start();
  const t2 = performance.now();
  return { importMs: t1 - t0, initMs: t2 - t1, totalMs: t2 - t0, sinceProcessStartMs: t2 };
}
