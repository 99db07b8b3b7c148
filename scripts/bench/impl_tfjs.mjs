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
  if (spec.oursOnly) throw new NotAvailable('n/a', `ours only: ${spec.oursOnly}`);
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
  if (spec.op === 'decode') return { release, variants: decodeVariants(tf, spec, x, keep) };
  if (spec.op === 'prefill') return { release, variants: prefillVariants(tf, spec, x, keep) };
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

// Decode, tfjs's best: the cache's keys and values resident as tensors [Hkv, past+1, d] (made
// once, untimed: no per-token upload or concat is charged), the group's query heads as the
// rows of one batched matMul per kv head: q [Hkv, Hq/Hkv, d] -> scores [Hkv, group, past+1].
function decodeVariants(tf, { qHeads, kvHeads, d, past }, x, keep) {
  const group = qHeads / kvHeads,
    total = past + 1;
  const withNew = (pastData, newData) => {
    const out = new Float32Array(kvHeads * total * d);
    for (let g = 0; g < kvHeads; ++g) {
      out.set(pastData.subarray(g * past * d, (g + 1) * past * d), g * total * d);
      out.set(newData.subarray(g * d, (g + 1) * d), (g * total + past) * d);
    }
    return out;
  };
  const K = keep(tf.tensor3d(withNew(x.pastK, x.k), [kvHeads, total, d]));
  const V = keep(tf.tensor3d(withNew(x.pastV, x.v), [kvHeads, total, d]));
  const scale = 1 / Math.sqrt(d);
  const scores = {
    'matMul(q·scale, K, false, true), K resident': (q) => tf.matMul(tf.mul(q, scale), K, false, true),
    'matMul(q, K, false, true)·scale, K resident': (q) => tf.mul(tf.matMul(q, K, false, true), scale),
  };
  return Object.entries(scores).map(([name, s]) => ({
    name,
    run: () => readOut(tf, () => tf.matMul(tf.softmax(s(tf.tensor3d(x.q, [kvHeads, group, d]))), V)),
  }));
}

// Causal GQA prefill: the group's query heads stacked as rows over their kv head, q
// [Hkv, group·n, d]; the causal mask [n, n] added to scores viewed as [Hkv, group, n, n].
// Per kv head (8 scores of [group·n, n]); all at once ([Hkv, group·n, n]) needs 8× the
// memory and is not tried (a single run takes tens of seconds either way).
function prefillVariants(tf, { qHeads, kvHeads, d, n }, x, keep) {
  const group = qHeads / kvHeads,
    scale = 1 / Math.sqrt(d);
  const mask = keep(tf.tensor2d(causalMask(n), [n, n]));
  const attend = (q, k, v) => {
    // q [b, group·n, d], k, v [b, n, d] -> [b, group·n, d]
    const b = q.shape[0];
    const s = tf.reshape(tf.matMul(tf.mul(q, scale), k, false, true), [b, group, n, n]);
    const p = tf.reshape(tf.softmax(tf.add(s, mask)), [b, group * n, n]);
    return tf.matMul(p, v);
  };
  const inputs = () => [
    tf.tensor3d(x.q, [kvHeads, group * n, d]),
    tf.tensor3d(x.k, [kvHeads, n, d]),
    tf.tensor3d(x.v, [kvHeads, n, d]),
  ];
  return [
    {
      name: 'per kv head: matMul(q·scale, k, false, true) over [group·n, n] + mask',
      run: () =>
        readOut(tf, () => {
          const [q, k, v] = inputs().map((t) => tf.split(t, kvHeads, 0));
          return tf.concat(
            q.map((qg, g) => attend(qg, k[g], v[g])),
            0,
          );
        }),
    },
  ];
}
