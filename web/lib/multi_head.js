// A multi-head attention layer whose weights live in wasm memory until dispose().
//   Q = x·wq + bq [n,h·dK], K = context·wk + bk [nK,hKv·dK], V = context·wv + bv [nK,hKv·dV]
//   (hKv = kvHeads divides h: grouped-query attention; 1: multi-query attention)
//   rotary: Q's and K's heads turned to their positions (RoPE, wa/rotary.h)
//   head i: attention over columns [i·dK,(i+1)·dK) of Q and, g = ⌊i/(h/hKv)⌋, columns
//   [g·dK,(g+1)·dK) of K and [g·dV,(g+1)·dV) of V, with the layer's window and softcap
//   output = concat(heads)·wo + bo [n,dModel]
// forward(x, { cache }) decodes: x holds only the new tokens, whose K and V join the cache
// (wa::mha_forward_cached).
import { checkRotary, checkSoftcap, checkWindow } from './attention_options.js';
import { mhaGrads, mhaShape, mhaTrace, mhaWeights, rotary as rotaryStruct, scoreMask } from './binding.js';
import { random, xavierUniform } from './random.js';
import { cacheFor, checkCacheFits, stepOver } from './kv_cache.js';
import {
  checkBoolean,
  checkFinite,
  checkMask,
  checkOptions,
  checkPositiveInteger,
  checkScale,
  checkTensor,
  checkUint32,
  resultTensor,
  showShape,
  tensor,
} from './tensor.js';
import { FORMATS } from './half.js';

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
  #cachedLast = false; // the most recent forward ran over a cache (backward() says so)

  constructor(rt, config) {
    const where = 'multiHeadAttention';
    this.#rt = rt;
    const c = checkOptions(where, config, [
      'dModel',
      'heads',
      'kvHeads',
      'dK',
      'dV',
      'bias',
      'rotary',
      'window',
      'softcap',
      'weights',
      'seed',
    ]);
    checkPositiveInteger(where, 'dModel', c.dModel);
    checkPositiveInteger(where, 'heads', c.heads);
    const kvHeads = c.kvHeads ?? c.heads;
    checkPositiveInteger(where, 'kvHeads', kvHeads);
    if (c.heads % kvHeads !== 0) {
      throw new RangeError(
        `${where}: kvHeads (${kvHeads}) does not divide heads (${c.heads}): query head h reads kv head ⌊h/(heads/kvHeads)⌋`,
      );
    }
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
    const rotary = checkRotary(where, c.rotary, dK);
    const window = checkWindow(where, c.window);
    const softcap = checkSoftcap(where, c.softcap);
    const { dModel, heads } = c;
    this.config = Object.freeze({
      dModel,
      heads,
      kvHeads,
      dK,
      dV,
      bias,
      rotary: rotary && Object.freeze(rotary),
      window: Object.freeze(window),
      softcap,
    });

    const shapes = {
      wq: [dModel, heads * dK],
      wk: [dModel, kvHeads * dK],
      wv: [dModel, kvHeads * dV],
      wo: [heads * dV, dModel],
      bq: [heads * dK],
      bk: [kvHeads * dK],
      bv: [kvHeads * dV],
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
              `dModel ${dModel}, heads ${heads}, ${kvHeads === heads ? '' : `kvHeads ${kvHeads}, `}dK ${dK}, dV ${dV} need ${showShape(shapes[name])}`,
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

  // The layer's rotary, window and softcap with this call's causal and mask, as the core's
  // ScoreMask and Rotary (with `rotated`: whether there is one).
  #attentionArgs({ causal, keep, bias }) {
    const { rotary, window, softcap } = this.config;
    return {
      mask: scoreMask({ causal, keep, bias, left: window.left, right: window.right, softcap }),
      rotary: rotaryStruct(rotary ?? {}),
      rotated: rotary !== null,
    };
  }

  // x [n,dModel] or [batch,n,dModel] -> { output } of the same shape.
  // options: context (the keys' and values' sequence, same rank and batch as x), causal,
  // mask ([nQ,nK], shared by the batch and the heads), scale (1/sqrt(dK)), trace:
  //   heads: [{ q [n,dK], k [nK,dK], v [nK,dV], scores, scaled, masked, weights [n,nK], output [n,dV] }]
  //   (q and k rotated when the layer has rotary; head h's k and v are its kv head's)
  //   concat [n,heads·dV]   (each with the leading batch size when x has one)
  // cache (attn.kvCache({ batch, kvHeads, dK, dV, capacity })): x holds only the new tokens;
  // their keys and values join the cache and the new queries attend over all of it, causal
  // aligned bottom-right, rotary positions continuing from the cache's length; mask is then
  // [nQ, cache.length + nQ]. Not with context or trace; backward() does not follow it.
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
    const o = checkOptions(where, options, ['context', 'causal', 'mask', 'scale', 'trace', 'cache']);
    if (o.cache !== undefined) return this.#forwardCached(where, x, o, { batch, nQ });
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
    // Reading the options may have run the caller's code (a getter disposing the layer)
    this.#checkAlive(where);

    const { heap } = this.#rt;
    const { kvHeads } = this.config;
    const hk = heads * dK,
      hv = heads * dV;
    const savedSizes = {
      q: batch * nQ * hk,
      k: batch * nK * kvHeads * dK,
      v: batch * nK * kvHeads * dV,
      concat: batch * nQ * hv,
    };
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
      formats: { dx: x.format, dContext: context?.format }, // dx, dContext come back in these
    };
    this.#holder.saved = saved;
    try {
      return this.#forwardCall(where, saved, { batch, nQ, nK, rank, causal, scale, trace, savedSizes });
    } catch (e) {
      this.#releaseSaved(); // a failed forward leaves nothing to differentiate
      throw e;
    }
  }

  // forward(x, { cache, causal, mask, scale }): the new tokens through the layer over the cache.
  #forwardCached(where, x, o, { batch, nQ }) {
    const { dModel, heads, kvHeads, dK, dV } = this.config;
    for (const name of ['context', 'trace'])
      if (o[name] !== undefined && o[name] !== false)
        throw new TypeError(
          `${where}: ${name} cannot be used with a cache (a cache holds this layer's own keys and values, one token at a time)`,
        );
    const causal = checkBoolean(where, 'causal', o.causal);
    const scale = checkScale(where, o.scale, dK);
    const rt = this.#rt;
    const fits = checkCacheFits(where, o.cache, rt, { batch, kvHeads, dK, dV }, nQ, {
      misfit: (c) =>
        `${where}: the cache is [batch ${c.batch}, kvHeads ${c.kvHeads}, dK ${c.dK}, dV ${c.dV}] but this layer with x ${showShape(x.shape)} needs batch ${batch}, kvHeads ${kvHeads}, dK ${dK}, dV ${dV}`,
      overflow: (length, c) =>
        `${where}: x has ${nQ} new tokens but the cache holds ${length} of its capacity ${c.capacity}: ${length + nQ} do not fit`,
    });
    let cache = fits.cache;
    const past = fits.length;
    const { keep, bias: additive } = checkMask(where, o.mask, nQ, past + nQ);
    // Reading the options may have run the caller's code (a getter disposing or appending to
    // the cache): the cache must still be the one measured above.
    this.#checkAlive(where);
    cache = cacheFor(where, o.cache, rt);
    if (cache.length() !== past)
      throw new TypeError(`${where}: the cache changed while this call read its options; call forward() again`);
    this.#releaseSaved(); // the most recent forward is this one, which backward() does not follow
    this.#cachedLast = true;
    const { heap } = rt;
    return stepOver(cache, () =>
      heap.scoped(where, (s) => {
        const xPtr = s.putFinite(x.data, 'x.data');
        const out = s.alloc(4 * batch * nQ * dModel, 'the output');
        const args = this.#attentionArgs({
          causal,
          keep: keep ? s.put(keep, 'mask') : 0,
          bias: additive ? s.put(additive, 'mask') : 0,
        });
        rt.call(
          where,
          'mhaForwardCached',
          mhaShape({ batch, nQ, nK: nQ, dModel, heads, kvHeads, dK, dV }),
          mhaWeights(this.#ptrs),
          xPtr,
          cache.handle,
          out,
          scale,
          args.mask,
          args.rotary,
          args.rotated,
        );
        const output = heap.readFinite(out, batch * nQ * dModel, where, 'output');
        return { output: resultTensor(output, x.shape.slice(), x.format, where, 'output') };
      }),
    );
  }

  // The forward's wasm call over the saved buffers, and its results read back.
  #forwardCall(where, saved, { batch, nQ, nK, rank, causal, scale, trace, savedSizes }) {
    const { dModel, heads, kvHeads, dK, dV } = this.config;
    const rt = this.#rt;
    const { heap } = rt;
    const hk = heads * dK,
      hv = heads * dV,
      gk = kvHeads * dK,
      gv = kvHeads * dV,
      group = heads / kvHeads,
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
      const args = this.#attentionArgs({ causal, keep: saved.keep, bias: saved.bias });
      rt.call(
        where,
        'mhaForward',
        mhaShape({ batch, nQ, nK, dModel, heads, kvHeads, dK, dV }),
        mhaWeights(this.#ptrs),
        saved.x,
        saved.context,
        out,
        scale,
        args.mask,
        mhaTrace(traced),
        args.rotary,
        args.rotated,
      );

      const lead = rank === 3 ? [batch] : [];
      const output = heap.readFinite(out, batch * nQ * dModel, where, 'output');
      const format = this.#saved.formats.dx; // the output follows x, as dx does
      const result = { output: resultTensor(output, [...lead, nQ, dModel], format, where, 'output') };
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
        k: tensor(columns(all.k, batch * nK, gk, Math.floor(h / group) * dK, dK), [...lead, nK, dK]),
        v: tensor(columns(all.v, batch * nK, gv, Math.floor(h / group) * dV, dV), [...lead, nK, dV]),
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
    if (!saved && this.#cachedLast) {
      throw new TypeError(
        `${where}: the last forward ran over a cache, which backward() does not follow: call forward() without a cache to differentiate`,
      );
    }
    if (!saved) {
      throw new TypeError(
        `${where}: there is no forward to differentiate: call forward() first (step() and a failed forward clear it)`,
      );
    }
    const { dModel, heads, kvHeads, dK, dV, bias } = this.config;
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
      const args = this.#attentionArgs({ causal: saved.causal, keep, bias: additive });
      rt.call(
        where,
        'mhaBackward',
        mhaShape({ batch, nQ, nK, dModel, heads, kvHeads, dK, dV }),
        mhaWeights(this.#ptrs),
        x,
        context,
        mhaTrace({ q, k, v, concat }),
        dOutPtr,
        saved.scale,
        args.mask,
        mhaGrads(grads),
        args.rotary,
        args.rotated,
      );
      // dx and dContext in x's and context's formats; weight gradients float32, as the weights
      const result = {};
      for (const [name, shape] of Object.entries(sizes)) {
        if (!shape) continue;
        const values = heap.readFinite(
          grads[name],
          shape.reduce((a, b) => a * b, 1),
          where,
          name,
        );
        result[name] = resultTensor(values, [...shape], saved.formats[name] ?? FORMATS.float32, where, name);
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
    const names = Object.keys(this.#ptrs);
    const g = checkOptions(where, grads, ['dx', 'dContext', ...names.map((n) => `d${n}`)]);
    // Every gradient read and copied before any weight is: reading them may run the caller's
    // code (a getter disposing the layer)
    const given = [];
    for (const name of names) {
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
      given.push([name, data]);
    }
    this.#checkAlive(where);
    // The new weights, all computed (in float32, as stored) before any is written: a step
    // that would overflow leaves every weight as it was.
    const updates = [];
    for (const [name, data] of given) {
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
    this.#cachedLast = false;
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
