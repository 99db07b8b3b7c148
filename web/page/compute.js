// Every call into wasm-attention the page makes, each timed with performance.now().
//
//   loadLibrary() -> { attn, ms }
//   loadWorkerLibrary() -> { attn, ms }: the worker form (every call a Promise), for long inputs
//   runGen(attn, input) -> { weights, single, multi, scale, timings }
//
// Each computation is written once, as a generator that yields each library call as a function
// (runGen, runModelGen, runBackwardGen, sgdStepGen): drive(gen) runs it with the direct form, its
// calls returning their results; driveAsync(gen, { isCurrent }) with the worker form, awaiting
// each call's Promise, and abandons it (rejecting with a Superseded error, after the finally
// blocks' dispose calls) at the first call after isCurrent() turns false. sgdStep is
// drive(sgdStepGen).
//
// input: x (n,d_model) tensor; heads h; dK = d_v per head; weights { wq, wk, wv, wo } or null
// (then the layer's seeded Xavier-uniform init, from seed); causal; scaling (false: scale 1);
// head: which head the one-head steps (part 'one') follow.
//
// The one-head steps (part 'one', qkv to weighted) show one head h0 on its own:
//   Q (n,d_k) = X · W_Q[:, h0·d_k : (h0+1)·d_k], same for K and V    attn.matmul
//   scores, scaled, masked, weights (n,n), output (n,d_v)             attn.attention(Q, K, V, trace)
// The all-heads steps (part 'all') show the whole layer:
//   per head: weights (n,n); concat (n,h·d_v); output (n,d_model)     mha.forward(X, trace)
//
//   runModelGen(attn, layers, x) -> { hs: [X₁, X₂, H], heads, concats, timings }  the trained model's
//     residual stream: X₂ = X₁ + layer 1(X₁), H = X₂ + layer 2(X₂), causal; layers [{ heads, w: { wq, wk, wv, wo },
//     add }]: add (d_model), optional, a vector the layer adds at every token (a mean-ablated head's
//     mean output, model/knockout.js);
//     heads[L][k]: layer L's head k softmax weights (n,n) (the model view, head comparison);
//     concats[L] (n, h·d_v): layer L's heads' outputs side by side, before W_O (the attribution)
//   runBackwardGen(attn, forward, { x, heads, dK, causal, head, query, target })
//     -> { query, target, loss, lossRows, dOutput, dConcat, dZ, grads, layer, timings }
//   sgdStep(attn, { x, weights, heads, dK, causal, scale, query, target, learningRate })
//     -> { before, after, weights, timings }
//
// The backward steps (part 'back') go backward from the loss L = ½‖y_i − x_j‖² (y_i row `query` of the layer's output
// Y, x_j row `target` of X, held fixed like a label):
//   dY (n,d_model): row i = y_i − x_j, every other row 0                the page (the loss)
//   dC (n,h·d_v) = dY · W_Oᵀ                                            attn.matmul(dY, W_O, transposeB)
//   dZ (n,d_v) = head h0's columns of dC                                the page (slicing)
//   dQ, dK (n,d_k), dV (n,d_v); A, dA = dZ·Vᵀ, dS (n,n)                 attn.attentionBackward(Q, K, V, dZ, trace)
//   dW_Q, dW_K, dW_V (d_model,h·d_k), dW_O (h·d_v,d_model), dX (n,d_model)
//                                                                       mha.backward(dY) after
//                                                                       mha.forward(X) with the same weights
import { createAttention, tensor } from '../lib/index.js';

// A list of { call, detail, ms } and a helper, used as `yield* time(call, detail, fn)`, that has
// the driver run fn() and records how long it took (with the worker form: until its answer came).
function stopwatch() {
  const timings = [];
  function* time(call, detail, fn) {
    const t0 = performance.now();
    const result = yield fn;
    timings.push({ call, detail, ms: performance.now() - t0 });
    return result;
  }
  return { timings, time };
}

export function drive(gen) {
  let next = gen.next();
  while (!next.done) {
    let value;
    try {
      value = next.value();
    } catch (e) {
      next = gen.throw(e);
      continue;
    }
    next = gen.next(value);
  }
  return next.value;
}

export class Superseded extends Error {
  constructor() {
    super('a newer computation replaced this one');
    this.name = 'Superseded';
  }
}

export async function driveAsync(gen, { isCurrent = () => true } = {}) {
  let next = gen.next();
  let superseded = false;
  while (!next.done) {
    if (!superseded && !isCurrent()) {
      superseded = true;
      next = gen.throw(new Superseded());
      continue;
    }
    let value;
    try {
      value = await next.value();
    } catch (e) {
      next = gen.throw(e);
      continue;
    }
    next = gen.next(value);
  }
  return next.value;
}

export async function loadLibrary() {
  const t0 = performance.now();
  const attn = await createAttention({ threads: 'auto' });
  return { attn, ms: performance.now() - t0 };
}

export async function loadWorkerLibrary() {
  const t0 = performance.now();
  const attn = await createAttention({ worker: true, threads: 'auto' });
  return { attn, ms: performance.now() - t0 };
}

// Columns [c0, c0+width) of a (rows, stride) tensor -> (rows, width).
function columnSlice(m, c0, width) {
  const [rows, stride] = m.shape;
  const out = new Float32Array(rows * width);
  for (let r = 0; r < rows; ++r) out.set(m.data.subarray(r * stride + c0, r * stride + c0 + width), r * width);
  return tensor(out, [rows, width]);
}

// (n, n) identity.
export function identity(n) {
  const data = new Float32Array(n * n);
  for (let i = 0; i < n; ++i) data[i * n + i] = 1;
  return tensor(data, [n, n]);
}

export function* runGen(attn, { x, heads, dK, weights, seed, causal, scaling, head }) {
  const { timings, time } = stopwatch();
  const dModel = x.shape[1];
  const dV = dK;
  const scale = scaling ? 1 / Math.sqrt(dK) : 1;
  const options = { causal, scale, trace: true };
  const n = x.shape[0];

  const config = weights ? { dModel, heads, dK, dV, weights } : { dModel, heads, dK, dV, seed };
  const mha = yield* time(
    'attn.multiHeadAttention',
    `d_model ${dModel}, ${heads} head${heads > 1 ? 's' : ''}, d_k ${dK}${weights ? '' : `, seed ${seed}`}`,
    () => attn.multiHeadAttention(config),
  );
  try {
    // W_Q, W_K, W_V (d_model, h·d_k), W_O (h·d_v, d_model): copies of what the layer holds.
    const w = yield* time('mha.weights', 'copy W_Q, W_K, W_V, W_O out', () => mha.weights);
    const multi = yield* time('mha.forward', `X ${n}\u00d7${dModel}, trace`, () => mha.forward(x, options));

    // Head `head`'s projections: W (d_model, d_k) and Q, K, V (n, d_k).
    const wq = columnSlice(w.wq, head * dK, dK);
    const wk = columnSlice(w.wk, head * dK, dK);
    const wv = columnSlice(w.wv, head * dV, dV);
    const q = yield* time('attn.matmul', `X\u00b7W_Q ${n}\u00d7${dModel} \u00b7 ${dModel}\u00d7${dK}`, () =>
      attn.matmul(x, wq),
    );
    const k = yield* time('attn.matmul', `X\u00b7W_K ${n}\u00d7${dModel} \u00b7 ${dModel}\u00d7${dK}`, () =>
      attn.matmul(x, wk),
    );
    const v = yield* time('attn.matmul', `X\u00b7W_V ${n}\u00d7${dModel} \u00b7 ${dModel}\u00d7${dV}`, () =>
      attn.matmul(x, wv),
    );
    const single = yield* time('attn.attention', `head ${head + 1}: Q ${n}\u00d7${dK}, trace`, () =>
      attn.attention(q, k, v, options),
    );
    Object.assign(single, { q, k, v, wq, wk, wv });
    return { weights: w, single, multi, scale, timings };
  } finally {
    yield* time('mha.dispose', 'free the layer', () => mha.dispose());
  }
}

export function* runModelGen(attn, layers, x) {
  const { timings, time } = stopwatch();
  const [n, dModel] = x.shape;
  const hs = [x];
  const heads = [];
  const concats = [];
  for (const [L, weights] of layers.entries()) {
    const mha = yield* time('attn.multiHeadAttention', `trained layer ${L + 1}`, () =>
      attn.multiHeadAttention({ dModel, heads: weights.heads, weights: weights.w }),
    );
    try {
      const {
        output,
        heads: traced,
        concat,
      } = yield* time('mha.forward', `layer ${L + 1}: X ${n}\u00d7${dModel}, causal, trace`, () =>
        mha.forward(hs[L], { causal: true, trace: true }),
      );
      heads.push(traced.map((hd) => hd.weights));
      concats.push(concat);
      const next = new Float32Array(n * dModel);
      for (let k = 0; k < next.length; ++k) next[k] = hs[L].data[k] + output.data[k];
      if (weights.add) for (let k = 0; k < next.length; ++k) next[k] += weights.add[k % dModel];
      hs.push(tensor(next, [n, dModel]));
    } finally {
      yield* time('mha.dispose', 'free the layer', () => mha.dispose());
    }
  }
  return { hs, heads, concats, timings };
}

// The loss L = ½‖y_i − x_j‖² and its gradient dY = ∂L/∂Y (row i = y_i − x_j, other rows 0), with
// y (n,d) the layer's output and x (n,d) its input. The only arithmetic the page does itself.
export function targetLoss(y, x, i, j) {
  const [n, d] = y.shape;
  const dOutput = new Float32Array(n * d);
  let loss = 0;
  for (let c = 0; c < d; ++c) {
    const g = y.data[i * d + c] - x.data[j * d + c];
    dOutput[i * d + c] = g;
    loss += 0.5 * g * g;
  }
  return { loss, dOutput: tensor(dOutput, [n, d]) };
}

// Rows y_i, x_j and y_i − x_j as one (3,d) matrix, for the loss step.
function lossRows(y, x, dOutput, i, j) {
  const d = y.shape[1];
  const out = new Float32Array(3 * d);
  out.set(y.data.subarray(i * d, (i + 1) * d), 0);
  out.set(x.data.subarray(j * d, (j + 1) * d), d);
  out.set(dOutput.data.subarray(i * d, (i + 1) * d), 2 * d);
  return tensor(out, [3, d]);
}

export function* runBackwardGen(attn, forward, { x, heads, dK, causal, head, query, target }) {
  const { timings, time } = stopwatch();
  const dModel = x.shape[1];
  const dV = dK;
  const n = x.shape[0];
  const { scale, weights: w, single: s, multi } = forward;
  const { loss, dOutput } = targetLoss(multi.output, x, query, target);

  // Head h0: dC = dY·W_Oᵀ, then its columns; the attention backward on its Q, K, V.
  const dConcat = yield* time(
    'attn.matmul',
    `dY\u00b7W_O\u1d40 ${n}\u00d7${dModel} \u00b7 ${dModel}\u00d7${heads * dV}`,
    () => attn.matmul(dOutput, w.wo, { transposeB: true }),
  );
  const dZ = columnSlice(dConcat, head * dV, dV);
  const grads = yield* time('attn.attentionBackward', `head ${head + 1}: dZ ${n}\u00d7${dV}, trace`, () =>
    attn.attentionBackward(s.q, s.k, s.v, dZ, { causal, scale, trace: true }),
  );

  // The whole layer: a forward with the same weights, then its backward.
  const mha = yield* time(
    'attn.multiHeadAttention',
    `d_model ${dModel}, ${heads} head${heads > 1 ? 's' : ''}, d_k ${dK}, the weights above`,
    () => attn.multiHeadAttention({ dModel, heads, dK, dV, weights: w }),
  );
  let layer;
  try {
    yield* time('mha.forward', `X ${n}\u00d7${dModel} (kept for backward)`, () => mha.forward(x, { causal, scale }));
    layer = yield* time('mha.backward', `dY ${n}\u00d7${dModel}`, () => mha.backward(dOutput));
  } finally {
    yield* time('mha.dispose', 'free the layer', () => mha.dispose());
  }
  return {
    query,
    target,
    loss,
    lossRows: lossRows(multi.output, x, dOutput, query, target),
    dOutput,
    dConcat,
    dZ,
    grads,
    layer,
    timings,
  };
}

// One SGD step on the layer's weights for the same loss: forward, loss, backward, step, forward
// again. Returns the loss before and after and the new weights (copies).
export function* sgdStepGen(attn, { x, weights, heads, dK, causal, scale, query, target, learningRate }) {
  const { timings, time } = stopwatch();
  const dModel = x.shape[1];
  const n = x.shape[0];
  const mha = yield* time(
    'attn.multiHeadAttention',
    `d_model ${dModel}, ${heads} head${heads > 1 ? 's' : ''}, d_k ${dK}`,
    () => attn.multiHeadAttention({ dModel, heads, dK, dV: dK, weights }),
  );
  try {
    const f0 = yield* time('mha.forward', `X ${n}\u00d7${dModel}`, () => mha.forward(x, { causal, scale }));
    const { loss: before, dOutput } = targetLoss(f0.output, x, query, target);
    const grads = yield* time('mha.backward', `dY ${n}\u00d7${dModel}`, () => mha.backward(dOutput));
    yield* time('mha.step', `learning rate ${learningRate}`, () => mha.step(grads, learningRate));
    const f1 = yield* time('mha.forward', `X ${n}\u00d7${dModel}, new weights`, () =>
      mha.forward(x, { causal, scale }),
    );
    const { loss: after } = targetLoss(f1.output, x, query, target);
    const next = yield* time('mha.weights', 'copy the new weights out', () => mha.weights);
    return { before, after, weights: next, timings };
  } finally {
    yield* time('mha.dispose', 'free the layer', () => mha.dispose());
  }
}

export const sgdStep = (attn, options) => drive(sgdStepGen(attn, options));
