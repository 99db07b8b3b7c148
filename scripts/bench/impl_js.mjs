// The plain JS baseline: Float32Array loops, no SIMD, no threads, no tricks beyond the loop
// order a careful programmer would pick (i-k-j for GEMM, so the inner loop walks both
// arrays contiguously): a speed baseline, its output checked like every row's against the
// float64 reference (compare.mjs). Rows that would take more than ~2 s per run are skipped (and
// say so): the time is estimated from the GFLOP/s of a small GEMM measured at start.
// columns(t, c0, width): the tensor helper the test suites share
import { columns } from '../lib/tensors.mjs';
import { tensor } from '../../web/lib/index.js';
import { forwardFlops } from './flops.mjs';
import { NotAvailable } from './not_available.mjs';

const LIMIT_MS = 2000;

// c[m,n] = a[m,k]·b[k,n]
export function matmul(a, b, m, k, n) {
  const c = new Float32Array(m * n);
  for (let i = 0; i < m; ++i) {
    const ci = i * n;
    for (let p = 0; p < k; ++p) {
      const aip = a[i * k + p];
      const bp = p * n;
      for (let j = 0; j < n; ++j) c[ci + j] += aip * b[bp + j];
    }
  }
  return c;
}

function transpose(a, rows, cols) {
  const t = new Float32Array(rows * cols);
  for (let r = 0; r < rows; ++r) for (let c = 0; c < cols; ++c) t[c * rows + r] = a[r * cols + c];
  return t;
}

// One row of softmax(scale·q_i·kᵀ) over keys [0, lim), into p; returns nothing.
function probabilities(q, k, i, lim, d, scale, p) {
  let max = -Infinity;
  for (let j = 0; j < lim; ++j) {
    let s = 0;
    for (let c = 0; c < d; ++c) s += q[i * d + c] * k[j * d + c];
    p[j] = s * scale;
    if (p[j] > max) max = p[j];
  }
  let sum = 0;
  for (let j = 0; j < lim; ++j) sum += p[j] = Math.exp(p[j] - max);
  for (let j = 0; j < lim; ++j) p[j] /= sum;
}

// Row by row, so memory stays O(n) however long the sequence.
export function attention(q, k, v, n, d, causal) {
  const scale = 1 / Math.sqrt(d);
  const out = new Float32Array(n * d);
  const p = new Float32Array(n);
  for (let i = 0; i < n; ++i) {
    const lim = causal ? i + 1 : n;
    probabilities(q, k, i, lim, d, scale, p);
    for (let j = 0; j < lim; ++j) {
      const pj = p[j];
      for (let c = 0; c < d; ++c) out[i * d + c] += pj * v[j * d + c];
    }
  }
  return out;
}

// dS = P ∘ (dP - rowsum(P ∘ dP)), dP = dO·vᵀ; dq = scale·dS·k, dk = scale·dSᵀ·q, dv = Pᵀ·dO
export function attentionBackward(q, k, v, dOut, n, d, causal) {
  const scale = 1 / Math.sqrt(d);
  const dq = new Float32Array(n * d),
    dk = new Float32Array(n * d),
    dv = new Float32Array(n * d);
  const p = new Float32Array(n),
    dp = new Float32Array(n);
  for (let i = 0; i < n; ++i) {
    const lim = causal ? i + 1 : n;
    probabilities(q, k, i, lim, d, scale, p);
    let rowDot = 0;
    for (let j = 0; j < lim; ++j) {
      let s = 0;
      for (let c = 0; c < d; ++c) s += dOut[i * d + c] * v[j * d + c];
      dp[j] = s;
      rowDot += p[j] * s;
    }
    for (let j = 0; j < lim; ++j) {
      const ds = p[j] * (dp[j] - rowDot) * scale;
      const pj = p[j];
      for (let c = 0; c < d; ++c) {
        dq[i * d + c] += ds * k[j * d + c];
        dk[j * d + c] += ds * q[i * d + c];
        dv[j * d + c] += pj * dOut[i * d + c];
      }
    }
  }
  return [dq, dk, dv];
}

// head h's columns [h·dk, (h+1)·dk) of an (n, dm) matrix, as an (n, dk) array, and the way back
const head = (M, n, dm, h, dk) => columns(tensor(M, [n, dm]), h * dk, dk).data;
function putHead(dst, src, n, dm, h, dk) {
  for (let r = 0; r < n; ++r) dst.set(src.subarray(r * dk, (r + 1) * dk), r * dm + h * dk);
}

function mhaForward(x, w, n, dm, heads, causal) {
  const dk = dm / heads;
  const Q = matmul(x, w.wq, n, dm, dm),
    K = matmul(x, w.wk, n, dm, dm),
    V = matmul(x, w.wv, n, dm, dm);
  const C = new Float32Array(n * dm);
  for (let h = 0; h < heads; ++h) {
    const o = attention(head(Q, n, dm, h, dk), head(K, n, dm, h, dk), head(V, n, dm, h, dk), n, dk, causal);
    putHead(C, o, n, dm, h, dk);
  }
  return { Q, K, V, C, y: matmul(C, w.wo, n, dm, dm) };
}

// -> dx (the weight gradients are computed too, as every implementation here does)
function mhaBackward(x, w, dOut, n, dm, heads, causal) {
  const dk = dm / heads;
  const { Q, K, V, C } = mhaForward(x, w, n, dm, heads, causal);
  const dC = matmul(dOut, transpose(w.wo, dm, dm), n, dm, dm);
  matmul(transpose(C, n, dm), dOut, dm, n, dm); // dWo
  const dQ = new Float32Array(n * dm),
    dK = new Float32Array(n * dm),
    dV = new Float32Array(n * dm);
  for (let h = 0; h < heads; ++h) {
    const cols = (M) => head(M, n, dm, h, dk);
    const [gq, gk, gv] = attentionBackward(cols(Q), cols(K), cols(V), cols(dC), n, dk, causal);
    putHead(dQ, gq, n, dm, h, dk);
    putHead(dK, gk, n, dm, h, dk);
    putHead(dV, gv, n, dm, h, dk);
  }
  const xT = transpose(x, n, dm);
  for (const g of [dQ, dK, dV]) matmul(xT, g, dm, n, dm); // dWq, dWk, dWv
  const dx = matmul(dQ, transpose(w.wq, dm, dm), n, dm, dm);
  for (const [g, wt] of [
    [dK, w.wk],
    [dV, w.wv],
  ]) {
    const part = matmul(g, transpose(wt, dm, dm), n, dm, dm);
    for (let i = 0; i < dx.length; ++i) dx[i] += part[i];
  }
  return dx;
}

// GFLOP/s of a 192³ GEMM, best of a few: the basis of the skip estimate.
function calibrate() {
  const s = 192,
    a = new Float32Array(s * s).fill(0.5),
    b = new Float32Array(s * s).fill(0.25);
  let best = Infinity;
  for (let i = 0; i < 6; ++i) {
    const t0 = performance.now();
    matmul(a, b, s, s, s);
    best = Math.min(best, performance.now() - t0);
  }
  return (2 * s * s * s) / best / 1e6;
}

export async function create() {
  const gflops = calibrate();
  return {
    key: 'js-1',
    name: 'plain JS',
    threads: 1,
    detail: 'Float32Array loops',
    wasmBytes: () => null,
    dispose() {},
    prepare(spec, x) {
      if (spec.oursOnly) throw new NotAvailable('n/a', `ours only: ${spec.oursOnly}`);
      if (spec.op === 'decode' || spec.op === 'prefill') throw new NotAvailable('n/a', 'no GQA loops in plain JS');
      // A backward here redoes the forward and then does twice its work: 3× the forward.
      const estimateMs = (forwardFlops(spec) * (spec.backward ? 3 : 1)) / gflops / 1e6;
      if (estimateMs > LIMIT_MS) {
        throw new NotAvailable(
          'skipped',
          `about ${(estimateMs / 1000).toFixed(1)} s per run at ${gflops.toFixed(2)} GFLOP/s (limit ${LIMIT_MS / 1000} s)`,
        );
      }
      const { n } = spec;
      if (spec.op === 'matmul')
        return { variants: [{ name: 'i-k-j loop', run: () => [matmul(x.a, x.b, spec.m, spec.k, spec.n)] }] };
      if (spec.op === 'attention') {
        const run = spec.backward
          ? () => attentionBackward(x.q, x.k, x.v, x.dOut, n, spec.d, spec.causal)
          : () => [attention(x.q, x.k, x.v, n, spec.d, spec.causal)];
        return { variants: [{ name: 'row by row', run }] };
      }
      if (spec.op === 'mha') {
        const run = spec.backward
          ? () => [mhaBackward(x.x, x, x.dOut, n, spec.dModel, spec.heads, spec.causal)]
          : () => [mhaForward(x.x, x, n, spec.dModel, spec.heads, spec.causal).y];
        return { variants: [{ name: 'loops', run }] };
      }
      throw new Error(`js: unknown op ${spec.op}`);
    },
  };
}
