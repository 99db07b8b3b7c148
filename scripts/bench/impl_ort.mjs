// onnxruntime-web 1.30.0, wasm execution provider, in Node or a browser page (platform.mjs
// loads it). The thread count is global to the process (page) and fixed when the first
// session starts (env.wasm.numThreads), so each thread count needs a process of its own: 1
// thread runs in the bench's process, 2 in a child (in a browser: a frame each). Models come from onnx_graphs.mjs; inference only, so backward rows are n/a.
//
// Like ours, each run takes JS arrays (ORT copies the feeds into wasm memory) and returns
// JS arrays (the output tensor's data); weights and the causal mask are initializers.
import {
  attentionModel,
  decodeAttentionModel,
  decodeGqaModel,
  matmulModel,
  mhaModel,
  prefillAttentionModel,
  SCALE_PLACES,
} from './onnx_graphs.mjs';
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
  if (spec.oursOnly) throw new NotAvailable('n/a', `ours only: ${spec.oursOnly}`);
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
  } else if (spec.op === 'decode') {
    // each run feeds the past keys and values (ORT copies feeds into its wasm memory: that
    // is how a decoding loop over onnxruntime-web's wasm EP keeps its cache)
    const { batch, qHeads, kvHeads, d, past } = spec;
    const pastK = f32(x.pastK, [batch, kvHeads, past, d]),
      pastV = f32(x.pastV, [batch, kvHeads, past, d]);
    models = {
      'Attention (opset 23), past_key/past_value': () => decodeAttentionModel(spec),
      'GroupQueryAttention (com.microsoft)': () => decodeGqaModel(spec),
    };
    const feeds4 = {
      q: f32(x.q, [batch, qHeads, 1, d]),
      k: f32(x.k, [batch, kvHeads, 1, d]),
      v: f32(x.v, [batch, kvHeads, 1, d]),
      past_key: pastK,
      past_value: pastV,
    };
    const feeds3 = {
      q: f32(x.q, [batch, 1, qHeads * d]),
      k: f32(x.k, [batch, 1, kvHeads * d]),
      v: f32(x.v, [batch, 1, kvHeads * d]),
      past_key: pastK,
      past_value: pastV,
      seqlens_k: new ort.Tensor('int32', new Int32Array(batch).fill(past), [batch]),
      total_sequence_length: new ort.Tensor('int32', Int32Array.of(past + 1), []),
    };
    feeds = (name) => (name.startsWith('Group') ? feeds3 : feeds4);
  } else if (spec.op === 'prefill') {
    const { batch, qHeads, kvHeads, d, n } = spec;
    // GroupQueryAttention's prefill (prefillGqaModel) is left out: ~10× slower at n = 256
    models = { 'Attention (opset 23), is_causal': () => prefillAttentionModel(spec) };
    const feeds4 = {
      q: f32(x.q, [batch, qHeads, n, d]),
      k: f32(x.k, [batch, kvHeads, n, d]),
      v: f32(x.v, [batch, kvHeads, n, d]),
    };
    // [1,H,n,d] -> [1,n,H·d], once, untimed
    const to3d = (data, heads) => {
      const out = new Float32Array(data.length);
      for (let h = 0; h < heads; ++h)
        for (let i = 0; i < n; ++i) out.set(data.subarray((h * n + i) * d, (h * n + i + 1) * d), (i * heads + h) * d);
      return out;
    };
    const feeds3 = {
      q: f32(to3d(x.q, qHeads), [batch, n, qHeads * d]),
      k: f32(to3d(x.k, kvHeads), [batch, n, kvHeads * d]),
      v: f32(to3d(x.v, kvHeads), [batch, n, kvHeads * d]),
    };
    feeds = (name) => (name.startsWith('Group') ? feeds3 : feeds4);
  } else {
    throw new NotAvailable('n/a', `ort: unknown op ${spec.op}`);
  }
  const feedsOf = typeof feeds === 'function' ? feeds : () => feeds;
  const sessions = [];
  const variants = [];
  const failures = [];
  for (const [name, build] of Object.entries(models).slice(0, firstOnly ? 1 : undefined)) {
    // a formulation onnxruntime-web cannot run (an operator it lacks) is reported, not fatal,
    // while another one runs
    try {
      const session = await ort.InferenceSession.create(build(), sessionOptions);
      sessions.push(session);
      const f = feedsOf(name);
      if (spec.op === 'decode') await session.run(f); // fails here when a kernel is missing at run time
      variants.push({ name, run: async () => [(await session.run(f)).y.data] });
    } catch (e) {
      failures.push(
        `${name}: ${String(e?.message ?? e)
          .split('\n')[0]
          .replace(/^.*ERROR_MESSAGE: /, '')
          .slice(0, 300)}`,
      );
    }
  }
  const release = () => Promise.all(sessions.map((s) => s.release()));
  if (!variants.length) {
    await release();
    throw new Error(failures.join(' | '));
  }
  if (failures.length) variants.forEach((v) => (v.name += ` [failed: ${failures.join(' | ')}]`));
  return { variants, release };
}
