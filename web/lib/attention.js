// The object createAttention() resolves to: scaled dot-product attention in every form
// (attention_options.js reads a call, attention_heads.js runs it), KV caches
// (kv_cache.js), and the factory for multi-head attention layers, over one module instance.
import { checkDOutput, parseAttention, resolveAttention } from './attention_options.js';
import { headsBackward, headsForward } from './attention_heads.js';
import { KvCache, parseCacheConfig } from './kv_cache.js';
import { checkLayerConfig } from './layer_config.js';
import { MultiHeadAttention } from './multi_head.js';
import { Runtime } from './runtime.js';
import { checkBoolean, checkOptions, checkOut, checkTensor, showShape, widenHalves } from './validate.js';

// Each call is read by a parse* function (pure: no wasm memory, no module) into a snapshot and
// run by a run* function on the runtime: the direct form calls both, the worker form the first
// on the calling side and the second in its worker (operations.js).

// An Attention -> its runtime, for the worker form's host (worker_host.js).
const runtimes = new WeakMap();
export const runtimeOf = (attn) => runtimes.get(attn);

export class Attention {
  #rt;

  constructor(module) {
    this.#rt = new Runtime(module, this);
    runtimes.set(this, this.#rt);
  }

  // Which build runs: { threads, isa, gemmKernel }: the threads in use (more than 1 only on the
  // threaded build), the vector instruction set ('simd128', or 'relaxed-simd' with fused
  // multiply-adds) and the matrix-product micro-kernel chosen for this engine.
  get backend() {
    const { module } = this.#rt;
    this.#rt.checkAlive('backend');
    return { threads: module.threads(), isa: module.simdIsa(), gemmKernel: module.gemmKernel() };
  }

  // Bytes of wasm memory in all, and bytes currently allocated in it (for leak checks).
  memory() {
    this.#rt.checkAlive('memory');
    return { wasmBytes: this.#rt.heap.buffer().byteLength, allocatedBytes: this.#rt.module.allocatedBytes() };
  }

  // q [nQ,dK], k [nK,dK], v [nK,dV] -> { output [nQ,dV] }: one head of one sequence, with
  //   causal, mask, scale, softcap, window and rotary as on heads (the core's heads path runs it)
  //   and with trace: scores = q·kᵀ, scaled = scores·scale, capped (with softcap), masked (the
  //   softmax input, -Infinity where masked) and weights = softmax(masked), each [nQ,nK].
  //
  // 3-D q [B,nQ,Hq·dK] or 4-D [B,Hq,nQ,dK] (and k, v likewise with Hkv heads): the ONNX
  // Attention operator's options (index.d.ts, AttentionOptions) -> { output (q's layout),
  // presentKey?, presentValue?, qk?, trace intermediates [B,Hq,nQ,nTotal]? }.
  attention(q, k, v, options) {
    const where = 'attention';
    const rt = this.#rt;
    rt.checkAlive(where);
    const parsed = parseAttention(where, q, k, v, options);
    rt.checkAlive(where);
    return runAttention(rt, where, parsed);
  }

  // The gradients of attention(q, k, v, options) for dOutput [nQ,dV] = ∂L/∂output:
  // -> { dq [nQ,dK], dk [nK,dK], dv [nK,dV] }, and dsinks [1] with sinks. Masked positions get
  // exactly zero gradient.
  // With trace: also weights (P), dWeights (dP = dOutput·vᵀ) and dScores (dS = ∂L/∂(q·kᵀ)),
  // each [nQ,nK].
  // 3-D and 4-D inputs take attention()'s options except pastKey, pastValue, cache, trace
  // and qkOutput, and give { dq, dk, dv } in q's, k's and v's shapes (kv heads' gradients
  // summed over the query heads that read them), and dsinks [Hq] with sinks.
  attentionBackward(q, k, v, dOutput, options) {
    const where = 'attentionBackward';
    const rt = this.#rt;
    rt.checkAlive(where);
    const parsed = parseAttentionBackward(where, q, k, v, dOutput, options);
    rt.checkAlive(where);
    return runAttentionBackward(rt, where, parsed);
  }

  // a [m,k], b [k,n] -> a·b [m,n]. transposeA: a is given as [k,m]; transposeB: b as [n,k].
  matmul(aArg, bArg, options) {
    const where = 'matmul';
    const rt = this.#rt;
    rt.checkAlive(where);
    const parsed = parseMatmul(where, aArg, bArg, options);
    rt.checkAlive(where);
    return runMatmul(rt, where, parsed);
  }

  // A key/value cache in wasm memory for attention(q, k, v, { cache }); see KvCache.
  kvCache(config) {
    const rt = this.#rt;
    rt.checkAlive('kvCache');
    const parsed = parseCacheConfig('kvCache', config);
    rt.checkAlive('kvCache'); // config's getters have run
    return rt.keepsOwnerAlive(new KvCache(rt, parsed));
  }

  // A multi-head attention layer; see MultiHeadAttention.
  multiHeadAttention(config) {
    const rt = this.#rt;
    rt.checkAlive('multiHeadAttention');
    const parsed = checkLayerConfig('multiHeadAttention', config);
    rt.checkAlive('multiHeadAttention'); // config's getters have run
    return rt.keepsOwnerAlive(new MultiHeadAttention(rt, parsed));
  }

  // Stops the threads and lets the module go; every later call throws. Layers made by this
  // instance go with it. An instance dropped without dispose() gets the same once collected.
  dispose() {
    this.#rt.dispose();
  }
}

// Each run* first widens the snapshot's float16 inputs (widenHalves), in the direct form's
// call and in the worker form's worker alike.
export const runAttention = (rt, where, c) => headsForward(rt, where, resolveAttention(rt, where, widenHalves(c)));

// attentionBackward's arguments -> { c (parseAttention's call), dOut (dOutput's snapshot) }.
export function parseAttentionBackward(where, q, k, v, dOutput, options) {
  const c = parseAttention(where, q, k, v, options, true);
  return { c, dOut: checkDOutput(where, c, dOutput) };
}

export function runAttentionBackward(rt, where, call) {
  const { c, dOut } = widenHalves(call);
  return headsBackward(rt, where, resolveAttention(rt, where, c), dOut);
}

// matmul's arguments -> { a, b (snapshots), transposeA, transposeB, m, n, k, out }.
export function parseMatmul(where, aArg, bArg, options) {
  const a = checkTensor(where, 'a', aArg, [2], '[m,k]');
  const b = checkTensor(where, 'b', bArg, [2], '[k,n]');
  const o = checkOptions(where, options, ['transposeA', 'transposeB', 'out']);
  const transposeA = checkBoolean(where, 'transposeA', o.transposeA);
  const transposeB = checkBoolean(where, 'transposeB', o.transposeB);
  const [m, k] = transposeA ? [a.shape[1], a.shape[0]] : a.shape;
  const [kb, n] = transposeB ? [b.shape[1], b.shape[0]] : b.shape;
  if (kb !== k) {
    const aIs = `${showShape(a.shape)}${transposeA ? ' (transposed)' : ''}`;
    const bIs = `${showShape(b.shape)}${transposeB ? ' (transposed)' : ''}`;
    throw new RangeError(`${where}: a is ${aIs} and b is ${bIs}: the inner sizes ${k} and ${kb} must match`);
  }
  const out = checkOut(where, o.out, { count: m * n, format: a.format, input: 'a', what: `the product [${m},${n}]` });
  return { a, b, transposeA, transposeB, m, n, k, out };
}

export function runMatmul(rt, where, call) {
  const { a, b, transposeA, transposeB, m, n, k, out } = widenHalves(call);
  const { heap } = rt;
  return heap.scoped(where, (s) => {
    const pa = s.putFinite(a.data, 'a.data'),
      pb = s.putFinite(b.data, 'b.data');
    const pc = s.alloc(m * n * 4, `the product [${m},${n}]`);
    // wa::gemm: c (m,n) = op(a)·op(b), each dense: row strides a.shape[1], b.shape[1], n
    rt.call(where, 'gemm', transposeA, transposeB, m, n, k, pa, a.shape[1], pb, b.shape[1], pc, n);
    return heap.readResult(pc, [m, n], a.format, where, 'the product', out);
  });
}
