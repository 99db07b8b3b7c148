// Every call into wasm-attention the page makes, each timed with performance.now().
//
//   loadLibrary() -> { attn, ms }
//   run(attn, input) -> { weights, single, multi, projectionSource, timings }
//
// input: x (n,d_model) tensor; heads h; dK = d_v per head; weights { wq, wk, wv, wo } or null
// (then the layer's seeded Xavier-uniform init, from seed); causal; scaling (false: scale 1);
// head: which head steps 2-7 follow.
//
// Steps 2-7 show one head h0 on its own:
//   Q (n,d_k) = X · W_Q[:, h0·d_k : (h0+1)·d_k], same for K and V    attn.matmul, when the package
//                                                                   has it; else the forward trace
//   scores, scaled, masked, weights (n,n), output (n,d_v)             attn.attention(Q, K, V, trace)
// Steps 8-11 show the whole layer:
//   per head: weights (n,n); concat (n,h·d_v); output (n,d_model)     mha.forward(X, trace)
import { createAttention, tensor } from '../lib/index.js';

// A list of { call, detail, ms } and a helper that runs fn() and records how long it took.
function stopwatch() {
  const timings = [];
  const time = (call, detail, fn) => {
    const t0 = performance.now();
    const result = fn();
    timings.push({ call, detail, ms: performance.now() - t0 });
    return result;
  };
  return { timings, time };
}

export async function loadLibrary() {
  const t0 = performance.now();
  const attn = await createAttention({ threads: 'auto' });
  return { attn, ms: performance.now() - t0 };
}

// Columns [c0, c0+width) of a (rows, stride) row-major matrix -> (rows, width).
export function columnSlice(m, c0, width) {
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

export function run(attn, { x, heads, dK, weights, seed, causal, scaling, head }) {
  const { timings, time } = stopwatch();
  const dModel = x.shape[1];
  const dV = dK;
  const scale = scaling ? 1 / Math.sqrt(dK) : 1;
  const options = { causal, scale, trace: true };
  const n = x.shape[0];

  const config = weights ? { dModel, heads, dK, dV, weights } : { dModel, heads, dK, dV, seed };
  const mha = time('attn.multiHeadAttention', `d_model ${dModel}, ${heads} head${heads > 1 ? 's' : ''}, d_k ${dK}${weights ? '' : `, seed ${seed}`}`,
    () => attn.multiHeadAttention(config));
  try {
    // W_Q, W_K, W_V (d_model, h·d_k), W_O (h·d_v, d_model): copies of what the layer holds.
    const w = time('mha.weights', 'copy W_Q, W_K, W_V, W_O out', () => mha.weights);
    const multi = time('mha.forward', `X ${n}\u00d7${dModel}, trace`, () => mha.forward(x, options));

    // Head `head`'s projections: W (d_model, d_k) and Q, K, V (n, d_k).
    const wq = columnSlice(w.wq, head * dK, dK);
    const wk = columnSlice(w.wk, head * dK, dK);
    const wv = columnSlice(w.wv, head * dV, dV);
    let q, k, v, projectionSource;
    if (typeof attn.matmul === 'function') {
      q = time('attn.matmul', `X\u00b7W_Q ${n}\u00d7${dModel} \u00b7 ${dModel}\u00d7${dK}`, () => attn.matmul(x, wq));
      k = time('attn.matmul', `X\u00b7W_K ${n}\u00d7${dModel} \u00b7 ${dModel}\u00d7${dK}`, () => attn.matmul(x, wk));
      v = time('attn.matmul', `X\u00b7W_V ${n}\u00d7${dModel} \u00b7 ${dModel}\u00d7${dV}`, () => attn.matmul(x, wv));
      projectionSource = 'attn.matmul';
    } else {
      ({ q, k, v } = multi.heads[head]);
      projectionSource = 'mha.forward';
    }
    const single = time('attn.attention', `head ${head + 1}: Q ${n}\u00d7${dK}, trace`, () => attn.attention(q, k, v, options));
    Object.assign(single, { q, k, v, wq, wk, wv });
    return { weights: w, single, multi, projectionSource, scale, timings };
  } finally {
    time('mha.dispose', 'free the layer', () => mha.dispose());
  }
}
