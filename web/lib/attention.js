// The object createAttention() resolves to: scaled dot-product attention on matrices (here)
// and on heads (attention_options.js checks, heads_attention.js runs), KV caches
// (kv_cache.js), and the factory for multi-head attention layers, over one module instance.
import { attentionBackwardTrace, attentionTrace, heads4d, matrix, rotary, scoreMask } from './binding.js';
import {
  checkRotary,
  checkSinks,
  checkSoftcap,
  checkWindow,
  FORWARD_OPTIONS,
  HEADS_ONLY,
  parseHeadsAttention,
  resolveHeadsAttention,
} from './attention_options.js';
import { headsBackward, headsForward } from './heads_attention.js';
import { KvCache } from './kv_cache.js';
import { MultiHeadAttention } from './multi_head.js';
import { Runtime } from './runtime.js';
import {
  checkBoolean,
  checkOptions,
  checkOut,
  checkScale,
  checkTensor,
  checkWeightedSums,
  fitMask,
  readMask,
  showShape,
  tensor,
} from './tensor.js';

const TRACE_NAMES = ['scores', 'scaled', 'masked', 'weights'];
const BACKWARD_TRACE_NAMES = ['weights', 'dWeights', 'dScores'];

const Q_SHAPES = '[nQ,dK], [B,nQ,Hq·dK] or [B,Hq,nQ,dK]';
// a 2-D attentionBackward's options: attention()'s but out (it has several results)
const BACKWARD_2D_OPTIONS = FORWARD_OPTIONS.filter((name) => name !== 'out');
// attention()'s options that attentionBackward takes in no form (its 3-D and 4-D calls refuse
// them as unknown): a 2-D call says so, not that they need 3-D inputs.
const BACKWARD_REFUSES = ['pastKey', 'pastValue', 'cache', 'qkOutput'];

// q [nQ,dK] (a snapshot), k [nK,dK], v [nK,dV] that fit together -> their sizes and
// snapshots (every later step reads the snapshots, never the arguments again).
function checkQKV(where, q, kArg, vArg) {
  const k = checkTensor(where, 'k', kArg, [2], '[nK,dK]');
  const v = checkTensor(where, 'v', vArg, [2], '[nK,dV]');
  const [nQ, dK] = q.shape;
  const [nK, dV] = v.shape;
  if (k.shape[1] !== dK) {
    throw new RangeError(
      `${where}: k is ${showShape(k.shape)} but q is ${showShape(q.shape)}: k needs ${dK} columns, as many as q (dK)`,
    );
  }
  if (k.shape[0] !== nK) {
    throw new RangeError(
      `${where}: v is ${showShape(v.shape)} but k is ${showShape(k.shape)}: v needs ${k.shape[0]} rows, one per key (nK)`,
    );
  }
  return { nQ, nK, dK, dV, q, k, v };
}

// The checks attention() and attentionBackward() share: q, k, v and the options, read once
// (every getter of the caller's objects runs first; the values of an additive mask are
// checked after, v's in wasm memory by attentionInputs) -> a frozen { nQ, nK, dK, dV, q, k,
// v (snapshots), causal, trace, scale, keep, bias, left, right, softcap, rotary, sinks (a
// Float32Array of 1, or null), out (tensor.js checkOut, or null) }. backward:
// attentionBackward's options (no out).
function checkAttention(where, q, k, v, options, backward = false) {
  const sizes = checkQKV(where, q, k, v);
  const o = checkOptions(where, options, backward ? BACKWARD_2D_OPTIONS : FORWARD_OPTIONS);
  const headsOnly = HEADS_ONLY.find((name) => o[name] !== undefined);
  if (backward && BACKWARD_REFUSES.includes(headsOnly)) {
    throw new TypeError(
      `${where}: takes no ${headsOnly}, in any form: it differentiates attention over the k and v it is given${headsOnly === 'qkOutput' ? '' : ' (pass all the keys and values, past and new, as k and v)'}`,
    );
  }
  if (headsOnly) {
    throw new TypeError(
      `${where}: option "${headsOnly}" needs q, k, v as 3-D [B,S,H·D] or 4-D [B,H,S,D] tensors; 2-D calls take causal, mask, scale, trace, softcap, window, rotary, sinks${backward ? '' : ', out'}`,
    );
  }
  const read = {
    causal: checkBoolean(where, 'causal', o.causal),
    trace: checkBoolean(where, 'trace', o.trace),
    scale: checkScale(where, o.scale, sizes.dK),
    mask: readMask(where, o.mask),
    ...checkWindow(where, o.window),
    softcap: checkSoftcap(where, o.softcap),
    rotary: checkRotary(where, o.rotary, sizes.dK),
    sinks: checkSinks(where, o.sinks, 1),
  };
  const { keep, bias } = fitMask(where, read.mask, sizes.nQ, sizes.nK);
  const { nQ, dV } = sizes;
  const out = checkOut(where, o.out, {
    count: nQ * dV,
    format: sizes.q.format,
    input: 'q',
    what: `the output [${nQ},${dV}]`,
  });
  return Object.freeze({ ...sizes, ...read, keep, bias, out });
}

// The inputs attentionForward and attentionBackward share, copied into the call's scope s:
// q, k, v (the snapshots) as matrices, v's weighted sums checked (checkWeightedSums), q and k
// turned by rotary (row i at rotary.offset + i), and the mask.
function attentionInputs(rt, where, s, c) {
  const { nQ, nK, dK, dV, causal, keep, bias, left, right, softcap, q, k, v } = c;
  const [qAt, kAt, vAt] = [s.putFinite(q.data, 'q.data'), s.putFinite(k.data, 'k.data'), s.putFinite(v.data, 'v.data')];
  checkWeightedSums(where, rt.heap.maxAbs(vAt, nK * dV), nK);
  const inputs = {
    q: matrix(qAt, nQ, dK),
    k: matrix(kAt, nK, dK),
    v: matrix(vAt, nK, dV),
    mask: scoreMask({
      causal,
      keep: keep ? s.put(keep, 'mask') : 0,
      bias: bias ? s.put(bias, 'mask') : 0,
      left,
      right,
      softcap,
      ...(c.sinks && { sink: c.sinks[0] }),
    }),
    turn: c.rotary && rotary(c.rotary),
  };
  // a matrix is one head of one sequence: wa/rotary.h on (1,1,rows,dK)
  if (inputs.turn) {
    rt.call(where, 'rotaryForward', 1, 1, nQ, dK, heads4d(inputs.q.data, 1, nQ, dK), inputs.turn);
    rt.call(where, 'rotaryForward', 1, 1, nK, dK, heads4d(inputs.k.data, 1, nK, dK), inputs.turn);
  }
  return inputs;
}

export class Attention {
  #rt;

  constructor(module) {
    this.#rt = new Runtime(module, this);
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
  attention(qArg, k, v, options) {
    const where = 'attention';
    const rt = this.#rt;
    rt.checkAlive(where);
    const q = checkTensor(where, 'q', qArg, [2, 3, 4], Q_SHAPES);
    if (q.shape.length > 2) {
      const parsed = parseHeadsAttention(where, q, k, v, options);
      rt.checkAlive(where);
      return headsForward(rt, where, resolveHeadsAttention(rt, where, parsed));
    }
    const c = checkAttention(where, q, k, v, options);
    rt.checkAlive(where);
    const { nQ, nK, dV, scale, trace } = c;
    const { heap } = rt;
    return heap.scoped(where, (s) => {
      const inputs = attentionInputs(rt, where, s, c);
      const out = s.alloc(nQ * dV * 4, `the output [${nQ},${dV}]`);
      const traced = {};
      const names = c.softcap > 0 ? [...TRACE_NAMES, 'capped'] : TRACE_NAMES;
      if (trace) {
        for (const name of names) traced[name] = s.alloc(nQ * nK * 4, `the trace's ${name} [${nQ},${nK}]`);
      }
      rt.call(
        where,
        'attentionForward',
        inputs.q,
        inputs.k,
        inputs.v,
        matrix(out, nQ, dV),
        scale,
        inputs.mask,
        attentionTrace(traced),
      );
      // the output last: the caller's out is written only once nothing else can fail
      const traces = {};
      if (trace) {
        for (const name of names) traces[name] = tensor(heap.read(traced[name], nQ * nK), [nQ, nK]);
      }
      return { output: heap.readResult(out, [nQ, dV], c.q.format, where, 'output', c.out), ...traces };
    });
  }

  // The gradients of attention(q, k, v, options) for dOutput [nQ,dV] = ∂L/∂output:
  // -> { dq [nQ,dK], dk [nK,dK], dv [nK,dV] }, and dsinks [1] with sinks. Masked positions get
  // exactly zero gradient.
  // With trace: also weights (P), dWeights (dP = dOutput·vᵀ) and dScores (dS = ∂L/∂(q·kᵀ)),
  // each [nQ,nK].
  // 3-D and 4-D inputs take attention()'s options except pastKey, pastValue, cache, trace
  // and qkOutput, and give { dq, dk, dv } in q's, k's and v's shapes (kv heads' gradients
  // summed over the query heads that read them), and dsinks [Hq] with sinks.
  attentionBackward(qArg, k, v, dOutput, options) {
    const where = 'attentionBackward';
    const rt = this.#rt;
    rt.checkAlive(where);
    const q = checkTensor(where, 'q', qArg, [2, 3, 4], Q_SHAPES);
    if (q.shape.length > 2) {
      const c = parseHeadsAttention(where, q, k, v, options, true);
      const want = c.threeD ? [c.batch, c.nQ, c.qHeads * c.dV] : [c.batch, c.qHeads, c.nQ, c.dV];
      const dOut = checkTensor(where, 'dOutput', dOutput, [q.shape.length], showShape(want));
      if (showShape(dOut.shape) !== showShape(want)) {
        throw new RangeError(`${where}: dOutput is ${showShape(dOut.shape)} but the output is ${showShape(want)}`);
      }
      rt.checkAlive(where);
      return headsBackward(rt, where, resolveHeadsAttention(rt, where, c), dOut);
    }
    const c = checkAttention(where, q, k, v, options, true);
    const { nQ, nK, dK, dV, scale, trace } = c;
    const dOut = checkTensor(where, 'dOutput', dOutput, [2], `[nQ,dV] = [${nQ},${dV}]`);
    if (dOut.shape[0] !== nQ || dOut.shape[1] !== dV) {
      throw new RangeError(
        `${where}: dOutput is ${showShape(dOut.shape)} but the output of ` +
          `attention(q ${showShape(c.q.shape)}, v ${showShape(c.v.shape)}) is [${nQ},${dV}]`,
      );
    }
    rt.checkAlive(where);
    const { heap } = rt;
    return heap.scoped(where, (s) => {
      const inputs = attentionInputs(rt, where, s, c);
      const dOutM = matrix(s.putFinite(dOut.data, 'dOutput.data'), nQ, dV);
      const grads = { dq: s.alloc(nQ * dK * 4, 'dq'), dk: s.alloc(nK * dK * 4, 'dk'), dv: s.alloc(nK * dV * 4, 'dv') };
      const dsink = c.sinks ? s.alloc(4, 'dsinks') : 0;
      const traced = {};
      if (trace)
        for (const name of BACKWARD_TRACE_NAMES)
          traced[name] = s.alloc(nQ * nK * 4, `the trace's ${name} [${nQ},${nK}]`);
      rt.call(
        where,
        'attentionBackward',
        inputs.q,
        inputs.k,
        inputs.v,
        dOutM,
        matrix(grads.dq, nQ, dK),
        matrix(grads.dk, nK, dK),
        matrix(grads.dv, nK, dV),
        scale,
        inputs.mask,
        attentionBackwardTrace(traced),
        dsink,
      );
      // q and k were turned by rotary: dq and dk turned back (wa/rotary.h)
      if (inputs.turn) {
        rt.call(where, 'rotaryBackward', 1, 1, nQ, dK, heads4d(grads.dq, 1, nQ, dK), inputs.turn);
        rt.call(where, 'rotaryBackward', 1, 1, nK, dK, heads4d(grads.dk, 1, nK, dK), inputs.turn);
      }
      // each gradient in the format of the input it differentiates
      const read = (name, shape, format) => heap.readResult(grads[name], shape, format, where, name);
      const result = {
        dq: read('dq', [nQ, dK], c.q.format),
        dk: read('dk', [nK, dK], c.k.format),
        dv: read('dv', [nK, dV], c.v.format),
      };
      if (dsink) result.dsinks = tensor(heap.readFinite(dsink, 1, where, 'dsinks'), [1]);
      if (trace)
        for (const name of BACKWARD_TRACE_NAMES) result[name] = tensor(heap.read(traced[name], nQ * nK), [nQ, nK]);
      return result;
    });
  }

  // a [m,k], b [k,n] -> a·b [m,n]. transposeA: a is given as [k,m]; transposeB: b as [n,k].
  matmul(aArg, bArg, options) {
    const where = 'matmul';
    const rt = this.#rt;
    rt.checkAlive(where);
    const a = checkTensor(where, 'a', aArg, [2], '[m,k]');
    const b = checkTensor(where, 'b', bArg, [2], '[k,n]');
    const o = checkOptions(where, options, ['transposeA', 'transposeB', 'out']);
    const transposeA = checkBoolean(where, 'transposeA', o.transposeA);
    const transposeB = checkBoolean(where, 'transposeB', o.transposeB);
    rt.checkAlive(where);
    const [m, k] = transposeA ? [a.shape[1], a.shape[0]] : a.shape;
    const [kb, n] = transposeB ? [b.shape[1], b.shape[0]] : b.shape;
    if (kb !== k) {
      const aIs = `${showShape(a.shape)}${transposeA ? ' (transposed)' : ''}`;
      const bIs = `${showShape(b.shape)}${transposeB ? ' (transposed)' : ''}`;
      throw new RangeError(`${where}: a is ${aIs} and b is ${bIs}: the inner sizes ${k} and ${kb} must match`);
    }
    const out = checkOut(where, o.out, { count: m * n, format: a.format, input: 'a', what: `the product [${m},${n}]` });
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

  // A key/value cache in wasm memory for attention(q, k, v, { cache }); see KvCache.
  kvCache(config) {
    this.#rt.checkAlive('kvCache');
    return this.#rt.keepsOwnerAlive(new KvCache(this.#rt, config));
  }

  // A multi-head attention layer; see MultiHeadAttention.
  multiHeadAttention(config) {
    this.#rt.checkAlive('multiHeadAttention');
    return this.#rt.keepsOwnerAlive(new MultiHeadAttention(this.#rt, config));
  }

  // Stops the threads and lets the module go; every later call throws. Layers made by this
  // instance go with it. An instance dropped without dispose() gets the same once collected.
  dispose() {
    this.#rt.dispose();
  }
}
