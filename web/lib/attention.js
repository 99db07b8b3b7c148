// The object createAttention() resolves to: scaled dot-product attention, and the factory
// for multi-head attention layers, over one wasm module instance.
import { MultiHeadAttention } from './multi_head.js';
import { Runtime } from './runtime.js';
import {
  checkBoolean, checkMask, checkOptions, checkScale, checkTensor, showShape, tensor,
} from './tensor.js';

const TRACE_NAMES = ['scores', 'scaled', 'masked', 'weights'];

export class Attention {
  #rt;

  constructor(module, variant) {
    this.#rt = new Runtime(module, variant);
  }

  // Which build runs: { simd, threads, variant: 'simd-mt' | 'simd', isa }.
  get backend() {
    const { module, variant } = this.#rt;
    this.#rt.checkAlive('backend');
    return { simd: true, threads: module.threads(), variant, isa: module.simdIsa() };
  }

  // Bytes of wasm memory in all, and bytes currently allocated in it (for leak checks).
  memory() {
    this.#rt.checkAlive('memory');
    return { wasmBytes: this.#rt.heap.buffer().byteLength, allocatedBytes: this.#rt.module.allocatedBytes() };
  }

  // q [nQ,dK], k [nK,dK], v [nK,dV] -> { output [nQ,dV] }
  //   and with trace: scores = q·kᵀ, scaled = scores·scale, masked (the softmax input, -Infinity
  //   where masked) and weights = softmax(masked), each [nQ,nK].
  attention(q, k, v, options) {
    const where = 'attention';
    const rt = this.#rt;
    rt.checkAlive(where);
    checkTensor(where, 'q', q, [2], '[nQ,dK]');
    checkTensor(where, 'k', k, [2], '[nK,dK]');
    checkTensor(where, 'v', v, [2], '[nK,dV]');
    const [nQ, dK] = q.shape;
    const [nK, dV] = v.shape;
    if (k.shape[1] !== dK) {
      throw new RangeError(`${where}: k is ${showShape(k.shape)} but q is ${showShape(q.shape)}: k needs ${dK} columns, as many as q (dK)`);
    }
    if (k.shape[0] !== nK) {
      throw new RangeError(`${where}: v is ${showShape(v.shape)} but k is ${showShape(k.shape)}: v needs ${k.shape[0]} rows, one per key (nK)`);
    }
    const o = checkOptions(where, options, ['causal', 'mask', 'scale', 'trace']);
    const causal = checkBoolean(where, 'causal', o.causal);
    const trace = checkBoolean(where, 'trace', o.trace);
    const scale = checkScale(where, o.scale, dK);
    const { keep, bias } = checkMask(where, o.mask, nQ, nK);

    const { heap } = rt;
    return heap.scoped((s) => {
      const args = {
        q: s.put(q.data, 'q'), k: s.put(k.data, 'k'), v: s.put(v.data, 'v'),
        out: s.alloc(nQ * dV * 4, `the output [${nQ},${dV}]`),
        nQ, nK, dK, dV, scale, causal,
        keep: keep ? s.put(keep, 'mask') : 0,
        bias: bias ? s.put(bias, 'mask') : 0,
        scores: 0, scaled: 0, masked: 0, weights: 0,
      };
      if (trace) {
        for (const name of TRACE_NAMES) args[name] = s.alloc(nQ * nK * 4, `the trace's ${name} [${nQ},${nK}]`);
      }
      rt.call(where, 'attentionForward', args);
      const result = { output: tensor(heap.read(args.out, nQ * dV), [nQ, dV]) };
      if (trace) {
        for (const name of TRACE_NAMES) result[name] = tensor(heap.read(args[name], nQ * nK), [nQ, nK]);
      }
      return result;
    });
  }

  // A multi-head attention layer; see MultiHeadAttention.
  multiHeadAttention(config) {
    this.#rt.checkAlive('multiHeadAttention');
    return new MultiHeadAttention(this.#rt, config);
  }

  // Stops the threads and lets the module go; every later call throws. Layers made by this
  // instance go with it.
  dispose() {
    this.#rt.dispose();
  }
}
