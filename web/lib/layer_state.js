// What a multi-head attention layer holds, and what its operations (layer_forward.js,
// layer_forward_cached.js, layer_backward.js, layer_step.js) share: its parameters in wasm
// memory (an Owned, freed at dispose() or by the finalizer), the forward saved for backward(),
// and the layer's attention options as the core's structs.
import { rotary as rotaryStruct, scoreMask } from './binding.js';
import { firstValues } from './layer_config.js';
import { Owned } from './owned.js';
import { plainTensor as tensor } from './tensor.js';
import { disposedError, largest, weightsBlame } from './validate.js';

// A layer of runtime rt, owned by `owner` (the public object), from checkLayerConfig's
// { config, shapes, given, seed } (its first values: firstValues) -> its state:
//   rt, config, shapes (name -> sizes), owned (the parameters and saved buffers),
//   ptrs: parameter name -> offset in wasm memory, in PARAMETERS' order; null once disposed
//   saved: what the most recent forward left for backward(): offsets of x, context, mask, and
//     of Q, K, V and concat (O(n·dModel) floats; the backward recomputes the attention
//     weights), with the call's sizes and options. Null before a forward, after step() and dispose().
//   cachedLast: the most recent forward ran over a cache (backward() says so)
//   stepped: step() has changed its weights (a non-finite result then blames the learning rate)
//   held: null, or while a forward may still be undone (holdForward), what it replaced
export function createLayer(rt, owner, where, parsed) {
  const { config, shapes } = parsed;
  const values = firstValues(parsed);
  const owned = new Owned(owner, rt);
  const ptrs = {};
  try {
    for (const [name, data] of Object.entries(values))
      ptrs[name] = owned.putFinite(data, where, `weights.${name}.data`);
  } catch (e) {
    owned.release();
    throw e;
  }
  const layer = { rt, config, shapes, owned, ptrs, saved: null, cachedLast: false, stepped: false, held: null };
  layers.set(owner, layer);
  return layer;
}

// The public layer (MultiHeadAttention) -> its state, for holdForward and the worker form's
// host (worker_host.js: layerOf).
const layers = new WeakMap();
export const layerOf = (owner) => layers.get(owner);

export function checkLayerAlive(layer, where) {
  const error = disposedError('layer', where, layer.rt.disposed, !layer.ptrs);
  if (error) throw error;
}

// The layer's rotary, window and softcap with a call's causal and mask, as the core's
// ScoreMask and Rotary (with `rotated`: whether there is one).
export function attentionArgs(layer, { causal, keep, bias }) {
  const { rotary, window, softcap } = layer.config;
  return {
    mask: scoreMask({ causal, keep, bias, left: window.left, right: window.right, softcap }),
    rotary: rotaryStruct(rotary ?? {}),
    rotated: rotary !== null,
  };
}

// Frees the saved forward (step(), dispose() and a forward over a cache leave none). While a
// forward is held (holdForward), the first saved forward it replaces is kept aside instead.
export function releaseSaved(layer) {
  if (layer.held && !layer.held.replaced) {
    layer.held.replaced = { saved: layer.saved, cachedLast: layer.cachedLast };
  } else if (layer.saved) {
    for (const p of Object.values(layer.saved.ptrs)) layer.owned.free(p);
  }
  layer.saved = null;
  layer.cachedLast = false;
}

// The worker form's undo of a layer's forward (worker_host.js; not public): run fn (one
// forward of the public layer `owner`) keeping the saved forward it replaces -> fn's result,
// or what fn throws (a failed forward has changed nothing, or is undone). After a result,
// settle(keep) must be called before anything else uses the layer: keep frees what the
// forward replaced; drop (keep false) frees the forward's own saved buffers and restores
// what it replaced, as if the forward had not run.
export function holdForward(owner, fn) {
  const layer = layers.get(owner);
  layer.held = { replaced: null };
  try {
    return { value: fn(), settle: (keep) => settleForward(layer, keep) };
  } catch (e) {
    settleForward(layer, false);
    throw e;
  }
}

function settleForward(layer, keep) {
  const { replaced } = layer.held;
  layer.held = null;
  if (!replaced) return;
  if (keep) {
    if (replaced.saved) for (const p of Object.values(replaced.saved.ptrs)) layer.owned.free(p);
    return;
  }
  releaseSaved(layer);
  layer.saved = replaced.saved;
  layer.cachedLast = replaced.cachedLast;
}

// The current parameters as tensors (copies).
export function readWeights(layer) {
  const { heap } = layer.rt;
  return Object.fromEntries(
    Object.entries(layer.ptrs).map(([name, ptr]) => {
      const shape = layer.shapes[name];
      return [
        name,
        tensor(
          heap.read(
            ptr,
            shape.reduce((a, b) => a * b, 1),
          ),
          [...shape],
        ),
      ];
    }),
  );
}

// The blame of readResult (heap.js) for a result of a forward or backward on x (its values,
// a Float32Array): the layer's weights when their largest |w| is at least x's largest |x|
// (validate.js weightsBlame), asked only on failure.
export function blameWeights(layer, x) {
  return () => {
    const { heap } = layer.rt;
    let maxW = 0;
    for (const [name, ptr] of Object.entries(layer.ptrs)) {
      maxW = Math.max(
        maxW,
        heap.maxAbs(
          ptr,
          layer.shapes[name].reduce((a, b) => a * b, 1),
        ),
      );
    }
    return weightsBlame(maxW, largest(x), layer.stepped);
  };
}

export function disposeLayer(layer) {
  if (!layer.ptrs) return;
  releaseSaved(layer);
  layer.owned.release();
  layer.ptrs = null;
}
