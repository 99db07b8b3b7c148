// tfjs-backend-wasm 4.22.0 on @tensorflow/tfjs-core 4.22.0 (XNNPACK inside).
//   threads 1: its SIMD binary, what tfjs picks in Node by itself;
//   threads 2: its threaded SIMD binary, which only runs in Node with the workarounds of
//              tfjs_node_threads.mjs, so only in a child process of its own.
// Every op is built from tfjs's own ops (it has no fused attention), in each formulation
// worth trying; the bench keeps the fastest and reports which. Why several: tfjs's matMul
// with a transposed operand (transposeA/transposeB) leaves XNNPACK for a slow generic path,
// so q·kᵀ as matMul(q, transpose(k)) can beat matMul(q, k, false, true), and the gradients
// tf.grads builds for matMul use exactly those transposed forms, hence a customGrad
// variant whose gradients transpose explicitly. Likewise tfjs's batched (3D) matMul is
// slower than its 2D one, so a multi-head layer is tried both batched and head by head.
// The gradients are tfjs's own (see tfjs_gradients.mjs for how they get loaded in Node).
// The same code runs in a browser page; platform.mjs loads tfjs for either.
//
// Like ours, each run takes JS arrays (tf.tensor copies them into wasm memory) and returns
// JS arrays (dataSync); layer weights and the causal mask are made once, as constants of
// the model would be.
import { causalMask } from './inputs.mjs';
import { NotAvailable } from './not_available.mjs';
import { importTfjs, IN_NODE, registerGradients } from './platform.mjs';

// tfjs-core and its wasm backend, set for `threads` -> { tf, start() }: start() is
// tf.setBackend('wasm') + tf.ready() (compiles the wasm, starts the threads) and checks the
// thread count. The rows and the startup probe both come through here.
export async function load(threads) {
  const { tf, backend } = await importTfjs(threads);
  if (threads > 1 && IN_NODE) tf.env().set('WASM_HAS_MULTITHREAD_SUPPORT', true);
  backend.setThreadsCount(threads);
  const start = async () => {
    if (!(await tf.setBackend('wasm'))) throw new Error('tf.setBackend("wasm") failed (see the messages above)');
    await tf.ready();
    const actual = backend.getThreadsCount();
    if (actual !== threads) throw new Error(`tfjs-wasm runs ${actual} thread(s), not ${threads}`);
  };
  return { tf, start };
}

export async function create({ threads }) {
  const { tf, start } = await load(threads);
  await start();
  const simd = await tf.env().getAsync('WASM_HAS_SIMD_SUPPORT');
  const wasm = tf.backend().wasm;
  const ops = formulations(tf);

  return {
    key: `tfjs-${threads}`,
    name: 'tfjs-wasm 4.22',
    threads,
    detail:
      threads > 1
        ? `threaded SIMD binary${IN_NODE ? ' (patched for Node)' : ''}`
        : simd
          ? 'SIMD binary'
          : 'plain binary',
    wasmBytes: () => (wasm.wasmMemory ?? wasm.HEAPU8).buffer.byteLength,
    dispose: () => {},
    prepare: (spec, x, options) => prepare(tf, ops, spec, x, options),
  };
}

// Runs fn inside tf.tidy and returns its output tensor(s) as JS arrays.
function readOut(tf, fn) {
  const result = tf.tidy(fn);
  const list = Array.isArray(result) ? result : [result];
  const out = list.map((t) => t.dataSync());
  for (const t of list) t.dispose();
  return out;
}

function formulations(tf) {
  // matMul whose gradients transpose explicitly, so they stay on XNNPACK's fast path.
  const lastTwo = (t) => (t.rank === 3 ? tf.transpose(t, [0, 2, 1]) : tf.transpose(t));
  const matMulFastGrad = tf.customGrad((a, b, save) => {
    save([a, b]);
    return {
      value: tf.matMul(a, b),
      gradFunc: (dy, [sa, sb]) => [tf.matMul(dy, lastTwo(sb)), tf.matMul(lastTwo(sa), dy)],
    };
  });
  return {
    mm: { plain: (a, b) => tf.matMul(a, b), fastGrad: (a, b) => matMulFastGrad(a, b) },
    // q·kᵀ·scale three ways; q and k are [n,d] or [h,n,d]. The first is tried first and is
    // the only one tried for long sequences: the one that wins at n=512.
    scores: {
      'matMul(q·scale, transpose(k))': (mm, q, k, scale) => mm(tf.mul(q, scale), lastTwo(k)),
      'matMul(q, transpose(k))·scale': (mm, q, k, scale) => tf.mul(mm(q, lastTwo(k)), scale),
      'matMul(q, k, false, true)·scale': (mm, q, k, scale) => tf.mul(tf.matMul(q, k, false, true), scale),
    },
    // how a multi-head layer gets its heads: 2D matMuls per head (tf.split by columns, then
    // tf.concat), or one batched matMul over [h,n,dk] (reshape + transpose)
    heads: {
      'per head (split/concat), 2D matMuls': perHead,
      'batched over heads (reshape/transpose), 3D matMuls': batched,
    },
  };

  function perHead(mm, attend, n, dm, heads) {
    return (x, wq, wk, wv, wo) => {
      const [qs, ks, vs] = [wq, wk, wv].map((w) => tf.split(mm(x, w), heads, 1)); // h × [n,dk]
      const outs = qs.map((q, h) => attend(q, ks[h], vs[h]));
      return mm(tf.concat(outs, 1), wo);
    };
  }

  function batched(mm, attend, n, dm, heads) {
    const dk = dm / heads;
    const split = (t) => tf.transpose(tf.reshape(t, [n, heads, dk]), [1, 0, 2]); // [h,n,dk]
    return (x, wq, wk, wv, wo) => {
      const o = attend(split(mm(x, wq)), split(mm(x, wk)), split(mm(x, wv))); // [h,n,dk]
      return mm(tf.reshape(tf.transpose(o, [1, 0, 2]), [n, dm]), wo);
    };
  }
}

function attentionFn(tf, mm, scores, mask) {
  return (q, k, v) => {
    let s = scores(mm, q, k, 1 / Math.sqrt(q.shape[q.rank - 1]));
    if (mask) s = tf.add(s, mask);
    return mm(tf.softmax(s), v);
  };
}

// The formulations worth trying for a case: { name, mm, scores, heads? }, the likely
// fastest first (slow ones are then dropped after one look).
function combos(ops, spec) {
  const [explicit, , flag] = Object.keys(ops.scores);
  const fast = 'customGrad matMul (explicit transposes)';
  if (spec.op === 'attention') {
    const list = Object.keys(ops.scores).map((s) => ({ name: s, mm: 'plain', scores: s }));
    if (spec.backward) list.unshift({ name: `${fast}, ${explicit}`, mm: 'fastGrad', scores: explicit });
    return list;
  }
  const list = [];
  for (const h of Object.keys(ops.heads)) {
    if (spec.backward) list.push({ name: `${h}, ${fast}, ${explicit}`, mm: 'fastGrad', scores: explicit, heads: h });
    for (const s of [explicit, flag]) list.push({ name: `${h}, ${s}`, mm: 'plain', scores: s, heads: h });
  }
  return list;
}

// options.firstOnly: try the first formulation only (the long-sequence rows).
async function prepare(tf, ops, spec, x, { firstOnly = false } = {}) {
  if (spec.backwardOnly) throw new NotAvailable('n/a', 'ours only: our backward() alone');
  if (spec.backward) await registerGradients();
  const constants = [];
  const keep = (t) => (constants.push(t), t);
  const release = () => constants.forEach((t) => t.dispose());

  if (spec.op === 'matmul') {
    const { m, k, n } = spec;
    return {
      release,
      variants: [
        {
          name: 'tf.matMul(a, b)',
          run: () => readOut(tf, () => tf.matMul(tf.tensor2d(x.a, [m, k]), tf.tensor2d(x.b, [k, n]))),
        },
      ],
    };
  }
  const mask = spec.causal ? keep(tf.tensor2d(causalMask(spec.n), [spec.n, spec.n])) : null;
  const list = combos(ops, spec).slice(0, firstOnly ? 1 : undefined);
  const grads = spec.backward ? 'tf.grads, ' : '';
  if (spec.op === 'attention') {
    const shape = [spec.n, spec.d];
    const variants = list.map((c) => {
      const f = attentionFn(tf, ops.mm[c.mm], ops.scores[c.scores], mask);
      const inputs = () => [tf.tensor2d(x.q, shape), tf.tensor2d(x.k, shape), tf.tensor2d(x.v, shape)];
      const run = spec.backward
        ? () => readOut(tf, () => tf.grads(f)(inputs(), tf.tensor2d(x.dOut, shape)))
        : () => readOut(tf, () => f(...inputs()));
      return { name: grads + c.name, run };
    });
    return { release, variants };
  }
  if (spec.op === 'mha') {
    const { n, dModel: dm, heads } = spec;
    const w = ['wq', 'wk', 'wv', 'wo'].map((name) => keep(tf.tensor2d(x[name], [dm, dm])));
    const variants = list.map((c) => {
      const mm = ops.mm[c.mm];
      const f = ops.heads[c.heads](mm, attentionFn(tf, mm, ops.scores[c.scores], mask), n, dm, heads);
      const run = spec.backward
        ? // gradients for x and the four weights, as a layer's backward computes; dx is kept
          () =>
            readOut(tf, () => tf.grads(f)([tf.tensor2d(x.x, [n, dm]), ...w], tf.tensor2d(x.dOut, [n, dm]))).slice(0, 1)
        : () => readOut(tf, () => f(tf.tensor2d(x.x, [n, dm]), ...w));
      return { name: grads + c.name, run };
    });
    return { release, variants };
  }
  release();
  throw new NotAvailable('n/a', `tfjs: unknown op ${spec.op}`);
}
