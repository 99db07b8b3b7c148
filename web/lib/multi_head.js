// A multi-head attention layer whose weights live in wasm memory until dispose().
//   Q = x·wq + bq [n,h·dK], K = context·wk + bk, V = context·wv + bv [nK,h·dV]
//   head i: attention over columns [i·dK,(i+1)·dK) of Q and K and [i·dV,(i+1)·dV) of V
//   output = concat(heads)·wo + bo [n,dModel]
import { mhaGrads, mhaShape, mhaTrace, mhaWeights, scoreMask } from './binding.js';
import { random, xavierUniform } from './init.js';
import {
  checkBoolean,
  checkFinite,
  checkMask,
  checkOptions,
  checkPositiveInteger,
  checkScale,
  checkTensor,
  checkUint32,
  showShape,
  tensor,
} from './tensor.js';

const WEIGHT_NAMES = ['wq', 'wk', 'wv', 'wo'];
const BIAS_NAMES = ['bq', 'bk', 'bv', 'bo'];

// Frees what a layer garbage-collected without dispose() still held: its weights and the
// buffers its last forward saved (holder.saved, kept current by the layer).
const leftBehind = new FinalizationRegistry(({ rt, ptrs, holder }) => {
  if (rt.disposed) return;
  for (const p of Object.values(ptrs)) rt.heap.free(p);
  for (const p of Object.values(holder.saved ?? {})) rt.heap.free(p);
});

// rows·(columns [c0,c0+width) of a row-major matrix with `stride` columns), copied.
export function columns(src, rows, stride, c0, width) {
  const out = new Float32Array(rows * width);
  for (let r = 0; r < rows; ++r) out.set(src.subarray(r * stride + c0, r * stride + c0 + width), r * width);
  return out;
}

// A RangeError naming the size at fault when the layer's weights could not fit in wasm
// memory: checked from the sizes alone, before any array is made for them.
function checkLayerFits(where, { dModel, heads, dK, dV, bias }, shapes) {
  const LIMIT = 2 ** 31; // wasm memory's maximum, in bytes
  let total = 0;
  for (const [name, shape] of Object.entries(shapes)) {
    if (!bias && name.startsWith('b')) continue;
    const bytes = 4 * shape.reduce((a, b) => a * b, 1);
    total += bytes;
    if (bytes > LIMIT || total > LIMIT) {
      const big =
        dModel >= Math.max(heads * dK, heads * dV)
          ? `dModel ${dModel}`
          : `heads·dK ${heads * dK} or heads·dV ${heads * dV}`;
      throw new RangeError(
        `${where}: dModel ${dModel}, heads ${heads}, dK ${dK}, dV ${dV} need ${name} ${showShape(shape)} (${(bytes / 2 ** 30).toFixed(1)} GB; ${(total / 2 ** 30).toFixed(1)} GB for the weights so far), more than wasm memory holds (2 GB): ${big} is too large`,
      );
    }
  }
}

export class MultiHeadAttention {
  #rt;
  #ptrs = {}; // weight name -> offset in wasm memory; null once disposed
  #shapes;
  #token = {};
  // What the most recent forward left for backward(): offsets of x, context, mask, and of
  // Q, K, V and concat (O(n·dModel) floats; the backward recomputes the attention weights),
  // with the call's sizes and options. Null before a forward, after step() and dispose().
  #saved = null;
  #holder = { saved: null }; // #saved's offsets, for the finalizer (which cannot see #saved)

  constructor(rt, config) {
    const where = 'multiHeadAttention';
    this.#rt = rt;
    const c = checkOptions(where, config, ['dModel', 'heads', 'dK', 'dV', 'bias', 'weights', 'seed']);
    checkPositiveInteger(where, 'dModel', c.dModel);
    checkPositiveInteger(where, 'heads', c.heads);
    if (c.dK === undefined && c.dModel % c.heads !== 0) {
      throw new RangeError(
        `${where}: heads (${c.heads}) does not divide dModel (${c.dModel}): pass dK (and dV) explicitly`,
      );
    }
    const dK = c.dK ?? c.dModel / c.heads;
    checkPositiveInteger(where, 'dK', dK);
    const dV = c.dV ?? dK;
    checkPositiveInteger(where, 'dV', dV);
    const bias = checkBoolean(where, 'bias', c.bias);
    if (c.seed !== undefined) checkUint32(where, 'seed', c.seed);
    const { dModel, heads } = c;
    this.config = Object.freeze({ dModel, heads, dK, dV, bias });

    const shapes = {
      wq: [dModel, heads * dK],
      wk: [dModel, heads * dK],
      wv: [dModel, heads * dV],
      wo: [heads * dV, dModel],
      bq: [heads * dK],
      bk: [heads * dK],
      bv: [heads * dV],
      bo: [dModel],
    };
    checkLayerFits(where, this.config, shapes); // before any array is made
    const values = {};
    if (c.weights !== undefined) {
      const w = checkOptions(`${where}: weights`, c.weights, [...WEIGHT_NAMES, ...BIAS_NAMES]);
      for (const name of [...WEIGHT_NAMES, ...(bias ? BIAS_NAMES : [])]) {
        if (w[name] === undefined && BIAS_NAMES.includes(name)) continue; // a missing bias is zero
        const given = checkTensor(where, `weights.${name}`, w[name], [shapes[name].length], showShape(shapes[name]));
        if (given.shape.some((d, i) => d !== shapes[name][i])) {
          throw new RangeError(
            `${where}: weights.${name} is ${showShape(given.shape)} but ` +
              `dModel ${dModel}, heads ${heads}, dK ${dK}, dV ${dV} need ${showShape(shapes[name])}`,
          );
        }
        values[name] = given.data;
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
      for (const [name, data] of Object.entries(values))
        this.#ptrs[name] = rt.heap.putFinite(data, where, `weights.${name}.data`);
    } catch (e) {
      for (const p of Object.values(this.#ptrs)) rt.heap.free(p);
      throw e;
    }
    this.#shapes = shapes;
    leftBehind.register(this, { rt, ptrs: this.#ptrs, holder: this.#holder }, this.#token);
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
  forward(xArg, options) {
    const where = 'multiHeadAttention.forward';
    this.#checkAlive(where);
    const { dModel, heads, dK, dV } = this.config;
    const x = checkTensor(where, 'x', xArg, [2, 3], '[n,dModel] or [batch,n,dModel]');
    const rank = x.shape.length;
    const batch = rank === 3 ? x.shape[0] : 1;
    const nQ = x.shape[rank - 2];
    if (x.shape[rank - 1] !== dModel) {
      throw new RangeError(
        `${where}: x is ${showShape(x.shape)} but this layer has dModel ${dModel}: its last size must be ${dModel}`,
      );
    }
    const o = checkOptions(where, options, ['context', 'causal', 'mask', 'scale', 'trace']);
    let nK = nQ;
    const context =
      o.context === undefined
        ? undefined
        : checkTensor(where, 'context', o.context, [rank], rank === 3 ? '[batch,nK,dModel]' : '[nK,dModel]');
    if (context !== undefined) {
      const cs = context.shape;
      if (cs[rank - 1] !== dModel || (rank === 3 && cs[0] !== batch)) {
        const needs = `${rank === 3 ? `batch ${batch} and ` : ''}last size dModel ${dModel}`;
        throw new RangeError(
          `${where}: context is ${showShape(cs)} but x is ${showShape(x.shape)}: context needs ${needs}`,
        );
      }
      nK = cs[rank - 2];
    }
    const causal = checkBoolean(where, 'causal', o.causal);
    const trace = checkBoolean(where, 'trace', o.trace);
    const scale = checkScale(where, o.scale, dK);
    const { keep, bias: additive } = checkMask(where, o.mask, nQ, nK);

    const { heap } = this.#rt;
    const hk = heads * dK,
      hv = heads * dV;
    const savedSizes = { q: batch * nQ * hk, k: batch * nK * hk, v: batch * nK * hv, concat: batch * nQ * hv };
    for (const [name, size] of Object.entries(savedSizes)) heap.checkFits(4 * size, `${where}: ${name}`);
    this.#releaseSaved();
    const saved = {};
    try {
      saved.x = heap.putFinite(x.data, where, 'x.data');
      saved.context = context ? heap.putFinite(context.data, where, 'context.data') : 0;
      saved.keep = keep ? heap.put(keep, `${where}: mask`) : 0;
      saved.bias = additive ? heap.put(additive, `${where}: mask`) : 0;
      for (const [name, size] of Object.entries(savedSizes)) saved[name] = heap.alloc(4 * size, `${where}: ${name}`);
    } catch (e) {
      for (const p of Object.values(saved)) heap.free(p);
      throw e;
    }
    this.#saved = {
      ptrs: saved,
      batch,
      nQ,
      nK,
      rank,
      causal,
      scale,
      xShape: [...x.shape],
      contextShape: context ? [...context.shape] : null,
    };
    this.#holder.saved = saved;
    try {
      return this.#forwardCall(where, saved, { batch, nQ, nK, rank, causal, scale, trace, savedSizes });
    } catch (e) {
      this.#releaseSaved(); // a failed forward leaves nothing to differentiate
      throw e;
    }
  }

  // The forward's wasm call over the saved buffers, and its results read back.
  #forwardCall(where, saved, { batch, nQ, nK, rank, causal, scale, trace, savedSizes }) {
    const { dModel, heads, dK, dV } = this.config;
    const rt = this.#rt;
    const { heap } = rt;
    const hk = heads * dK,
      hv = heads * dV,
      nn = nQ * nK;
    return heap.scoped(where, (s) => {
      const out = s.alloc(batch * nQ * dModel * 4, 'the output');
      // q, k, v, concat into the saved buffers (the backward reads them); scores..weights only with trace
      const traced = { q: saved.q, k: saved.k, v: saved.v, concat: saved.concat };
      const scoreSizes = {
        scores: batch * heads * nn,
        scaled: batch * heads * nn,
        masked: batch * heads * nn,
        weights: batch * heads * nn,
      };
      if (trace)
        for (const [name, size] of Object.entries(scoreSizes)) traced[name] = s.alloc(size * 4, `the trace's ${name}`);
      const traceSizes = { ...savedSizes, ...scoreSizes };
      rt.call(
        where,
        'mhaForward',
        mhaShape({ batch, nQ, nK, dModel, heads, dK, dV }),
        mhaWeights(this.#ptrs),
        saved.x,
        saved.context,
        out,
        scale,
        scoreMask({ causal, keep: saved.keep, bias: saved.bias }),
        mhaTrace(traced),
      );

      const lead = rank === 3 ? [batch] : [];
      const result = {
        output: tensor(heap.readFinite(out, batch * nQ * dModel, where, 'output'), [...lead, nQ, dModel]),
      };
      if (!trace) return result;
      const all = Object.fromEntries(
        Object.keys(traceSizes).map((name) => [name, heap.read(traced[name], traceSizes[name])]),
      );
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

  // Gradients of the most recent forward: dOutput (the output's shape) = ∂L/∂output ->
  // { dx, dContext (cross-attention only), dwq, dwk, dwv, dwo, and dbq, dbk, dbv, dbo with bias },
  // each the shape of what it differentiates; weight gradients are summed over the batch.
  backward(dOutput) {
    const where = 'multiHeadAttention.backward';
    this.#checkAlive(where);
    const saved = this.#saved;
    if (!saved) {
      throw new TypeError(
        `${where}: there is no forward to differentiate: call forward() first (step() and a failed forward clear it)`,
      );
    }
    const { dModel, heads, dK, dV, bias } = this.config;
    const { batch, nQ, nK, rank } = saved;
    const outShape = [...saved.xShape];
    const dOut = checkTensor(where, 'dOutput', dOutput, [rank], showShape(outShape));
    if (dOut.shape.some((d, i) => d !== outShape[i])) {
      throw new RangeError(
        `${where}: dOutput is ${showShape(dOut.shape)} but the last forward's output is ${showShape(outShape)}`,
      );
    }
    // Reading dOutput may have run the caller's code (a getter calling step(), forward() or
    // dispose()): the saved forward read below must be the one measured above.
    this.#checkAlive(where);
    if (this.#saved !== saved) {
      throw new TypeError(`${where}: the layer ran or changed while this call read dOutput; call backward() again`);
    }
    const rt = this.#rt;
    const { heap } = rt;
    const sizes = {
      dx: saved.xShape,
      dContext: saved.contextShape,
      dwq: this.#shapes.wq,
      dwk: this.#shapes.wk,
      dwv: this.#shapes.wv,
      dwo: this.#shapes.wo,
      dbq: bias ? this.#shapes.bq : null,
      dbk: bias ? this.#shapes.bk : null,
      dbv: bias ? this.#shapes.bv : null,
      dbo: bias ? this.#shapes.bo : null,
    };
    return heap.scoped(where, (s) => {
      const dOutPtr = s.putFinite(dOut.data, 'dOutput.data');
      const grads = {};
      for (const [name, shape] of Object.entries(sizes)) {
        if (shape) grads[name] = s.alloc(4 * shape.reduce((a, b) => a * b, 1), `the gradient ${name}`);
      }
      const { x, context, keep, bias: additive, q, k, v, concat } = saved.ptrs;
      rt.call(
        where,
        'mhaBackward',
        mhaShape({ batch, nQ, nK, dModel, heads, dK, dV }),
        mhaWeights(this.#ptrs),
        x,
        context,
        mhaTrace({ q, k, v, concat }),
        dOutPtr,
        saved.scale,
        scoreMask({ causal: saved.causal, keep, bias: additive }),
        mhaGrads(grads),
      );
      const result = {};
      for (const [name, shape] of Object.entries(sizes)) {
        if (shape)
          result[name] = tensor(
            heap.readFinite(
              grads[name],
              shape.reduce((a, b) => a * b, 1),
              where,
              name,
            ),
            [...shape],
          );
      }
      return result;
    });
  }

  // One plain SGD step, in place: w -= learningRate · dw for every gradient given (dwq..dwo,
  // dbq..dbo, as backward() returns them; dx and dContext are ignored). Clears the saved
  // forward, whose gradients would no longer match the weights.
  step(grads, learningRate) {
    const where = 'multiHeadAttention.step';
    this.#checkAlive(where);
    if (typeof learningRate !== 'number')
      throw new TypeError(`${where}: learningRate must be a number, got ${typeof learningRate}`);
    if (!Number.isFinite(learningRate))
      throw new RangeError(`${where}: learningRate must be finite, got ${learningRate}`);
    const g = checkOptions(where, grads, ['dx', 'dContext', ...Object.keys(this.#ptrs).map((n) => `d${n}`)]);
    const updates = [];
    for (const name of Object.keys(this.#ptrs)) {
      if (g[`d${name}`] === undefined) continue;
      const grad = checkTensor(
        where,
        `grads.d${name}`,
        g[`d${name}`],
        [this.#shapes[name].length],
        showShape(this.#shapes[name]),
      );
      if (grad.shape.some((d, i) => d !== this.#shapes[name][i])) {
        throw new RangeError(
          `${where}: grads.d${name} is ${showShape(grad.shape)} but ${name} is ${showShape(this.#shapes[name])}`,
        );
      }
      const data = grad.data.slice(); // small: copied and checked here, in JS
      checkFinite(where, `grads.d${name}.data`, data);
      // The new weights, all computed (in float32, as stored) before any is written: a step
      // that would overflow leaves every weight as it was.
      const next = this.#rt.heap.read(this.#ptrs[name], data.length);
      for (let i = 0; i < data.length; ++i) {
        next[i] -= learningRate * data[i];
        if (!Number.isFinite(next[i])) {
          throw new RangeError(
            `${where}: ${name}[${i}] would become ${next[i]} (learningRate ${learningRate} times grads.d${name}[${i}] = ${data[i]}): the step overflows 32-bit floats; no weight was changed`,
          );
        }
      }
      updates.push([name, next]);
    }
    for (const [name, next] of updates) this.#rt.heap.f32(this.#ptrs[name], next.length).set(next);
    this.#releaseSaved();
  }

  #releaseSaved() {
    if (this.#saved && !this.#rt.disposed) for (const p of Object.values(this.#saved.ptrs)) this.#rt.heap.free(p);
    this.#saved = null;
    this.#holder.saved = null;
  }

  // The current weights as tensors (copies): wq, wk, wv, wo, and bq, bk, bv, bo with bias.
  get weights() {
    this.#checkAlive('multiHeadAttention.weights');
    return Object.fromEntries(
      Object.entries(this.#ptrs).map(([name, ptr]) => {
        const shape = this.#shapes[name];
        return [
          name,
          tensor(
            this.#rt.heap.read(
              ptr,
              shape.reduce((a, b) => a * b, 1),
            ),
            [...shape],
          ),
        ];
      }),
    );
  }

  // Frees the weights; later calls throw. Safe to call twice.
  dispose() {
    if (!this.#ptrs) return;
    this.#releaseSaved();
    if (!this.#rt.disposed) for (const p of Object.values(this.#ptrs)) this.#rt.heap.free(p);
    this.#ptrs = null;
    leftBehind.unregister(this.#token);
  }
}
