// multiHeadAttention.forward: its arguments read once, and the forward without a cache, whose
// Q, K, V and concat stay in wasm memory for backward() (layer_backward.js), with the trace
// read back per head. The forward over a cache is layer_forward_cached.js.
import { mhaShape, mhaSaved, mhaWeights } from './binding.js';
import { attentionArgs, blameWeights, checkLayerAlive, releaseSaved } from './layer_state.js';
import {
  checkBoolean,
  checkOptions,
  checkOut,
  checkScale,
  checkTensor,
  fitMask,
  readMask,
  showShape,
} from './validate.js';
import { plainTensor as tensor } from './tensor.js';

// rows·(columns [c0,c0+width) of a row-major matrix with `stride` columns), copied.
export function columns(src, rows, stride, c0, width) {
  const out = new Float32Array(rows * width);
  for (let r = 0; r < rows; ++r) out.set(src.subarray(r * stride + c0, r * stride + c0 + width), r * width);
  return out;
}

// forward(x, options)'s arguments, read once (every getter of the caller's objects runs here,
// before the layer is looked at again) -> a frozen description of the call:
//   x (a snapshot), rank, batch, nQ, causal, scale, out (the caller's array for the output,
//   validate.js checkOut, or null), and
//   without a cache: context (a snapshot or undefined), nK, trace, keep, bias (the mask, fit to [nQ,nK])
//   with one: cache (the caller's value, looked up by layer_forward_cached.js), mask (read, not yet fit)
export function parseForward(config, where, xArg, options) {
  const { dModel, dK } = config;
  const x = checkTensor(where, 'x', xArg, [2, 3], '[n,dModel] or [batch,n,dModel]');
  const rank = x.shape.length;
  const batch = rank === 3 ? x.shape[0] : 1;
  const nQ = x.shape[rank - 2];
  if (x.shape[rank - 1] !== dModel) {
    throw new RangeError(
      `${where}: x is ${showShape(x.shape)} but this layer has dModel ${dModel}: its last size must be ${dModel}`,
    );
  }
  const o = checkOptions(where, options, ['context', 'causal', 'mask', 'scale', 'trace', 'cache', 'out']);
  // read last of the arguments: no getter of the caller's runs after it
  const readOut = () =>
    checkOut(where, o.out, {
      count: x.data.length,
      format: x.format,
      input: 'x',
      what: `the output ${showShape(x.shape)}`,
    });
  if (o.cache !== undefined) {
    for (const name of ['context', 'trace'])
      if (o[name] !== undefined && o[name] !== false)
        throw new TypeError(
          `${where}: ${name} cannot be used with a cache (a cache holds this layer's own keys and values, one token at a time)`,
        );
    return Object.freeze({
      x,
      rank,
      batch,
      nQ,
      cache: o.cache,
      causal: checkBoolean(where, 'causal', o.causal),
      scale: checkScale(where, o.scale, dK),
      mask: readMask(where, o.mask, true),
      out: readOut(),
    });
  }
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
  const mask = fitMask(where, readMask(where, o.mask, true), { batch: 1, qHeads: 1, nQ, twoD: true }, nK);
  const [keep, bias] = [mask?.keep ?? null, mask?.bias ?? null];
  return Object.freeze({ x, rank, batch, nQ, nK, context, causal, trace, scale, keep, bias, out: readOut() });
}

// The forward without a cache, for parseForward's call c -> { output, and with trace heads, concat }.
export function layerForward(layer, where, c) {
  checkLayerAlive(layer, where);
  const { heads, kvHeads, dK, dV } = layer.config;
  const { batch, nQ, nK, x, context, keep, bias } = c;
  const { heap } = layer.rt;
  const savedSizes = {
    q: batch * nQ * heads * dK,
    k: batch * nK * kvHeads * dK,
    v: batch * nK * kvHeads * dV,
    concat: batch * nQ * heads * dV,
  };
  for (const [name, size] of Object.entries(savedSizes)) heap.checkFits(4 * size, `${where}: ${name}`);
  // the previous forward stays saved until this one succeeds: a failed forward changes nothing
  const { owned } = layer;
  const saved = {};
  try {
    saved.x = owned.putFinite(x.data, where, 'x.data');
    saved.context = context ? owned.putFinite(context.data, where, 'context.data') : 0;
    saved.keep = keep ? owned.put(keep, `${where}: mask`) : 0;
    saved.bias = bias ? owned.put(bias, `${where}: mask`) : 0;
    for (const [name, size] of Object.entries(savedSizes)) saved[name] = owned.alloc(4 * size, `${where}: ${name}`);
    const result = forwardCall(layer, where, c, saved, savedSizes);
    releaseSaved(layer);
    layer.saved = {
      ptrs: saved,
      batch,
      nQ,
      nK,
      rank: c.rank,
      causal: c.causal,
      scale: c.scale,
      xShape: x.shape,
      contextShape: context ? context.shape : null,
      formats: { dx: x.format, dContext: context?.format }, // the output, dx and dContext follow these
    };
    return result;
  } catch (e) {
    for (const p of Object.values(saved)) owned.free(p);
    throw e;
  }
}

// The forward's wasm call over the saved buffers, and its results read back.
function forwardCall(layer, where, { x, batch, nQ, nK, rank, causal, scale, trace, out: into }, saved, savedSizes) {
  const { dModel, heads, kvHeads, dK, dV } = layer.config;
  const { rt } = layer;
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
    const args = attentionArgs(layer, { causal, keep: saved.keep, bias: saved.bias });
    rt.call(
      where,
      'mhaForward',
      mhaShape({ batch, nQ, nK, dModel, heads, kvHeads, dK, dV }),
      mhaWeights(layer.ptrs),
      saved.x,
      saved.context,
      out,
      scale,
      args.mask,
      mhaSaved(traced),
      args.rotary,
      args.rotated,
    );

    const lead = rank === 3 ? [batch] : [];
    // the output last: the caller's out (into) is written only once nothing else can fail
    const blame = blameWeights(layer, x.data);
    const readOutput = () => heap.readResult(out, [...lead, nQ, dModel], x.format, where, 'output', into, blame);
    if (!trace) return { output: readOutput() };
    const result = { output: null };
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
    result.output = readOutput();
    return result;
  });
}
