// A multi-head attention layer whose weights live in wasm memory until dispose().
//   Q = x·wq + bq [n,h·dK], K = context·wk + bk, V = context·wv + bv [nK,h·dV]
//   head i: attention over columns [i·dK,(i+1)·dK) of Q and K and [i·dV,(i+1)·dV) of V
//   output = concat(heads)·wo + bo [n,dModel]
import { random, xavierUniform } from './init.js';
import {
  checkBoolean, checkMask, checkOptions, checkPositiveInteger, checkScale, checkTensor,
  showShape, tensor,
} from './tensor.js';

const WEIGHT_NAMES = ['wq', 'wk', 'wv', 'wo'];
const BIAS_NAMES = ['bq', 'bk', 'bv', 'bo'];

// Frees the weights of a layer that was garbage-collected without dispose().
const leftBehind = new FinalizationRegistry(({ rt, ptrs }) => {
  if (!rt.disposed) for (const p of Object.values(ptrs)) rt.heap.free(p);
});

// rows·(columns [c0,c0+width) of a row-major matrix with `stride` columns), copied.
function columns(src, rows, stride, c0, width) {
  const out = new Float32Array(rows * width);
  for (let r = 0; r < rows; ++r) out.set(src.subarray(r * stride + c0, r * stride + c0 + width), r * width);
  return out;
}

export class MultiHeadAttention {
  #rt;
  #ptrs = {};  // weight name -> offset in wasm memory; null once disposed
  #shapes;
  #token = {};

  constructor(rt, config) {
    const where = 'multiHeadAttention';
    this.#rt = rt;
    const c = checkOptions(where, config, ['dModel', 'heads', 'dK', 'dV', 'bias', 'weights', 'seed']);
    checkPositiveInteger(where, 'dModel', c.dModel);
    checkPositiveInteger(where, 'heads', c.heads);
    if (c.dK === undefined && c.dModel % c.heads !== 0) {
      throw new RangeError(`${where}: heads (${c.heads}) does not divide dModel (${c.dModel}): pass dK (and dV) explicitly`);
    }
    const dK = c.dK ?? c.dModel / c.heads;
    checkPositiveInteger(where, 'dK', dK);
    const dV = c.dV ?? dK;
    checkPositiveInteger(where, 'dV', dV);
    const bias = checkBoolean(where, 'bias', c.bias);
    if (c.seed !== undefined && (!Number.isInteger(c.seed) || c.seed < 0 || c.seed > 0xffffffff)) {
      throw new RangeError(`${where}: seed must be an integer from 0 to 2^32-1, got ${c.seed}`);
    }
    const { dModel, heads } = c;
    this.config = Object.freeze({ dModel, heads, dK, dV, bias });

    const shapes = {
      wq: [dModel, heads * dK], wk: [dModel, heads * dK], wv: [dModel, heads * dV], wo: [heads * dV, dModel],
      bq: [heads * dK], bk: [heads * dK], bv: [heads * dV], bo: [dModel],
    };
    const values = {};
    if (c.weights !== undefined) {
      const w = checkOptions(`${where}: weights`, c.weights, [...WEIGHT_NAMES, ...BIAS_NAMES]);
      for (const name of [...WEIGHT_NAMES, ...(bias ? BIAS_NAMES : [])]) {
        if (w[name] === undefined && BIAS_NAMES.includes(name)) continue;  // a missing bias is zero
        checkTensor(where, `weights.${name}`, w[name], [shapes[name].length], showShape(shapes[name]));
        if (w[name].shape.some((d, i) => d !== shapes[name][i])) {
          throw new RangeError(`${where}: weights.${name} is ${showShape(w[name].shape)} but dModel ${dModel}, heads ${heads}, dK ${dK}, dV ${dV} need ${showShape(shapes[name])}`);
        }
        values[name] = w[name].data;
      }
      if (!bias && BIAS_NAMES.some((name) => w[name] !== undefined)) {
        throw new TypeError(`${where}: weights has biases but bias is not true; pass bias: true to use them`);
      }
    } else {
      // Xavier-uniform from the seed (default 0): wq, wk, wv, wo in that order.
      const next = random(c.seed ?? 0);
      for (const name of WEIGHT_NAMES) values[name] = xavierUniform(shapes[name][0], shapes[name][1], next);
    }
    if (bias) for (const name of BIAS_NAMES) values[name] ??= new Float32Array(shapes[name][0]);

    try {
      for (const [name, data] of Object.entries(values)) this.#ptrs[name] = rt.heap.put(data, `weights.${name}`);
    } catch (e) {
      for (const p of Object.values(this.#ptrs)) rt.heap.free(p);
      throw e;
    }
    this.#shapes = shapes;
    leftBehind.register(this, { rt, ptrs: this.#ptrs }, this.#token);
  }

  #checkAlive(where) {
    this.#rt.checkAlive(where);
    if (!this.#ptrs) throw new TypeError(`${where}: this layer was disposed`);
  }

  // x [n,dModel] or [batch,n,dModel] -> { output } of the same shape.
  // options: context (the keys' and values' sequence, same rank and batch as x), causal,
  // mask ([nQ,nK], shared by the batch and the heads), scale (1/sqrt(dK)), trace:
  //   heads: [{ q [n,dK], k [nK,dK], v [nK,dV], scores, scaled, masked, weights [n,nK], output [n,dV] }]
  //   concat [n,heads·dV]   (each with the leading batch size when x has one)
  forward(x, options) {
    const where = 'multiHeadAttention.forward';
    this.#checkAlive(where);
    const { dModel, heads, dK, dV, bias } = this.config;
    checkTensor(where, 'x', x, [2, 3], '[n,dModel] or [batch,n,dModel]');
    const rank = x.shape.length;
    const batch = rank === 3 ? x.shape[0] : 1;
    const nQ = x.shape[rank - 2];
    if (x.shape[rank - 1] !== dModel) {
      throw new RangeError(`${where}: x is ${showShape(x.shape)} but this layer has dModel ${dModel}: its last size must be ${dModel}`);
    }
    const o = checkOptions(where, options, ['context', 'causal', 'mask', 'scale', 'trace']);
    let nK = nQ;
    if (o.context !== undefined) {
      checkTensor(where, 'context', o.context, [rank], rank === 3 ? '[batch,nK,dModel]' : '[nK,dModel]');
      const cs = o.context.shape;
      if (cs[rank - 1] !== dModel || (rank === 3 && cs[0] !== batch)) {
        throw new RangeError(`${where}: context is ${showShape(cs)} but x is ${showShape(x.shape)}: context needs ${rank === 3 ? `batch ${batch} and ` : ''}last size dModel ${dModel}`);
      }
      nK = cs[rank - 2];
    }
    const causal = checkBoolean(where, 'causal', o.causal);
    const trace = checkBoolean(where, 'trace', o.trace);
    const scale = checkScale(where, o.scale, dK);
    const { keep, bias: additive } = checkMask(where, o.mask, nQ, nK);

    const rt = this.#rt;
    const { heap } = rt;
    const hk = heads * dK, hv = heads * dV, nn = nQ * nK;
    return heap.scoped((s) => {
      const p = this.#ptrs;
      const args = {
        batch, nQ, nK, dModel, heads, dK, dV,
        x: s.put(x.data, 'x'),
        context: o.context ? s.put(o.context.data, 'context') : 0,
        out: s.alloc(batch * nQ * dModel * 4, 'the output'),
        wq: p.wq, wk: p.wk, wv: p.wv, wo: p.wo,
        bq: bias ? p.bq : 0, bk: bias ? p.bk : 0, bv: bias ? p.bv : 0, bo: bias ? p.bo : 0,
        scale, causal,
        keep: keep ? s.put(keep, 'mask') : 0,
        bias: additive ? s.put(additive, 'mask') : 0,
        q: 0, k: 0, v: 0, scores: 0, scaled: 0, masked: 0, weights: 0, concat: 0,
      };
      const traceSizes = {
        q: batch * nQ * hk, k: batch * nK * hk, v: batch * nK * hv, concat: batch * nQ * hv,
        scores: batch * heads * nn, scaled: batch * heads * nn, masked: batch * heads * nn, weights: batch * heads * nn,
      };
      if (trace) for (const [name, size] of Object.entries(traceSizes)) args[name] = s.alloc(size * 4, `the trace's ${name}`);
      rt.call(where, 'mhaForward', args);

      const lead = rank === 3 ? [batch] : [];
      const result = { output: tensor(heap.read(args.out, batch * nQ * dModel), [...lead, nQ, dModel]) };
      if (!trace) return result;
      const all = Object.fromEntries(Object.keys(traceSizes).map((name) => [name, heap.read(args[name], traceSizes[name])]));
      // (batch, heads, nQ, nK) -> head h's (batch, nQ, nK)
      const perHead = (data, h) => {
        const out = new Float32Array(batch * nn);
        for (let b = 0; b < batch; ++b) out.set(data.subarray((b * heads + h) * nn, (b * heads + h + 1) * nn), b * nn);
        return out;
      };
      result.heads = Array.from({ length: heads }, (_, h) => ({
        q: tensor(columns(all.q, batch * nQ, hk, h * dK, dK), [...lead, nQ, dK]),
        k: tensor(columns(all.k, batch * nK, hk, h * dK, dK), [...lead, nK, dK]),
        v: tensor(columns(all.v, batch * nK, hv, h * dV, dV), [...lead, nK, dV]),
        scores: tensor(perHead(all.scores, h), [...lead, nQ, nK]),
        scaled: tensor(perHead(all.scaled, h), [...lead, nQ, nK]),
        masked: tensor(perHead(all.masked, h), [...lead, nQ, nK]),
        weights: tensor(perHead(all.weights, h), [...lead, nQ, nK]),
        output: tensor(columns(all.concat, batch * nQ, hv, h * dV, dV), [...lead, nQ, dV]),
      }));
      result.concat = tensor(all.concat, [...lead, nQ, hv]);
      return result;
    });
  }

  // The current weights as tensors (copies): wq, wk, wv, wo, and bq, bk, bv, bo with bias.
  get weights() {
    this.#checkAlive('multiHeadAttention.weights');
    return Object.fromEntries(Object.entries(this.#ptrs).map(([name, ptr]) => {
      const shape = this.#shapes[name];
      return [name, tensor(this.#rt.heap.read(ptr, shape.reduce((a, b) => a * b, 1)), [...shape])];
    }));
  }

  // Frees the weights; later calls throw. Safe to call twice.
  dispose() {
    if (!this.#ptrs) return;
    if (!this.#rt.disposed) for (const p of Object.values(this.#ptrs)) this.#rt.heap.free(p);
    this.#ptrs = null;
    leftBehind.unregister(this.#token);
  }
}
