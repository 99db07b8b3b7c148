// onnxruntime-web 1.30.0, wasm execution provider, in Node or a browser page (platform.mjs
// loads it). The thread count is global to the process (page) and fixed when the first
// session starts (env.wasm.numThreads), so each thread count needs a process of its own: 1
// thread runs in the bench's process, 2 in a child (in a browser: a frame each). Models come from onnx_graphs.mjs; inference only, so backward rows are n/a.
//
// Like ours, each run takes JS arrays (ORT copies the feeds into wasm memory) and returns
// JS arrays (the output tensor's data); weights and the causal mask are initializers.
import { attentionModel, matmulModel, mhaModel, SCALE_PLACES } from './onnx_graphs.mjs';
import { NotAvailable } from './not_available.mjs';
import { importOrt } from './platform.mjs';

const sessionOptions = { executionProviders: ['wasm'], graphOptimizationLevel: 'all' };

// onnxruntime-web, set for `threads` -> { ort, start() }: start() creates a first session (a
// 2×2 MatMul model), which is when ORT compiles its wasm and starts its threads. The rows
// and the startup probe both come through here.
export async function load(threads) {
  const ort = await importOrt();
  ort.env.wasm.numThreads = threads;
  ort.env.logLevel = 'error';
  const start = async () => {
    const session = await ort.InferenceSession.create(matmulModel({ m: 2, k: 2, n: 2 }), sessionOptions);
    await session.release();
  };
  return { ort, start };
}

export async function create({ threads }) {
  const { ort, start } = await load(threads);
  // the thread pool starts with the first session: a failure to start threads shows here,
  // not in the first row
  await start();

  return {
    key: `ort-${threads}`,
    name: 'onnxruntime-web 1.30',
    threads: ort.env.wasm.numThreads,
    detail: 'wasm EP, SIMD' + (threads > 1 ? ' + threads' : ''),
    wasmBytes: () => null, // ORT does not expose its wasm memory
    dispose: () => {},
    prepare: (spec, x, options) => prepare(ort, spec, x, options),
  };
}

// options.firstOnly: build the first variant only (the long-sequence rows: one model of
// up to a GB is enough).
async function prepare(ort, spec, x, { firstOnly = false } = {}) {
  if (spec.backwardOnly) throw new NotAvailable('n/a', 'ours only: our backward() alone');
  if (spec.backward) throw new NotAvailable('n/a', 'onnxruntime-web runs inference only (no gradients)');
  const f32 = (data, dims) => new ort.Tensor('float32', data, dims);
  let models, feeds; // models: name -> () => bytes, built only when used
  if (spec.op === 'matmul') {
    models = { 'MatMul(a, b)': () => matmulModel(spec) };
    feeds = { a: f32(x.a, [spec.m, spec.k]), b: f32(x.b, [spec.k, spec.n]) };
  } else if (spec.op === 'attention') {
    models = Object.fromEntries(
      Object.entries(SCALE_PLACES).map(([at, name]) => [name, () => attentionModel(spec, at)]),
    );
    const shape = [spec.n, spec.d];
    feeds = { q: f32(x.q, shape), k: f32(x.k, shape), v: f32(x.v, shape) };
  } else if (spec.op === 'mha') {
    models = Object.fromEntries(
      Object.entries(SCALE_PLACES).map(([at, name]) => [
        `heads by Reshape/Transpose, ${name}`,
        () => mhaModel(spec, x, at),
      ]),
    );
    feeds = { x: f32(x.x, [spec.n, spec.dModel]) };
  } else {
    throw new NotAvailable('n/a', `ort: unknown op ${spec.op}`);
  }
  const sessions = [];
  const variants = [];
  try {
    for (const [name, build] of Object.entries(models).slice(0, firstOnly ? 1 : undefined)) {
      const session = await ort.InferenceSession.create(build(), sessionOptions);
      sessions.push(session);
      variants.push({ name, run: async () => [(await session.run(feeds)).y.data] });
    }
  } catch (e) {
    await Promise.all(sessions.map((s) => s.release()));
    throw e;
  }
  return { variants, release: () => Promise.all(sessions.map((s) => s.release())) };
}
