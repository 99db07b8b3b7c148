// multiHeadAttention.backward: the gradients of the most recent forward (layer_forward.js),
// from what it saved in wasm memory (wa::mha_backward recomputes the attention weights).
import { mhaGrads, mhaShape, mhaSaved, mhaWeights } from './binding.js';
import { layerParameters } from './layer_config.js';
import { attentionArgs, checkLayerAlive } from './layer_state.js';
import { FORMATS } from './half.js';
import { fitTensor, readTensor, showShape, tensorValues } from './validate.js';

// The saved forward, or a TypeError saying why there is none.
function savedForward(layer, where) {
  if (!layer.saved && layer.cachedLast) {
    throw new TypeError(
      `${where}: the last forward ran over a cache, which backward() does not follow: call forward() without a cache to differentiate`,
    );
  }
  if (!layer.saved) {
    throw new TypeError(`${where}: there is no forward to differentiate: call forward() first (step() clears it)`);
  }
  return layer.saved;
}

// The saved forward's output shape, for messages ('[3,4]'), or savedForward's TypeError.
export const savedShape = (layer, where) => showShape(savedForward(layer, where).xShape);

// dOutput (a tensor), read once (no getter of it runs later) -> its snapshot; its sizes are
// held to the saved forward by layerBackward. The forward saved now words the messages.
export function parseBackward(layer, where, dOutput) {
  return readTensor(where, 'dOutput', dOutput, savedShape(layer, where));
}

// dOut: parseBackward's snapshot -> { dx, dContext, dw…, db… }. Differentiates the forward
// saved now, after dOutput was read.
export function layerBackward(layer, where, dOut) {
  checkLayerAlive(layer, where);
  const saved = savedForward(layer, where);
  const { dModel, heads, kvHeads, dK, dV } = layer.config;
  const { batch, nQ, nK, rank } = saved;
  const outShape = [...saved.xShape];
  fitTensor(where, 'dOutput', dOut, [rank], showShape(outShape));
  if (dOut.shape.some((d, i) => d !== outShape[i])) {
    throw new RangeError(
      `${where}: dOutput is ${showShape(dOut.shape)} but the last forward's output is ${showShape(outShape)}`,
    );
  }
  const { rt } = layer;
  const { heap } = rt;
  // gradient name -> its shape (dContext only for cross-attention)
  const sizes = { dx: saved.xShape };
  if (saved.contextShape) sizes.dContext = saved.contextShape;
  for (const { name } of layerParameters(layer.config)) sizes[`d${name}`] = layer.shapes[name];
  return heap.scoped(where, (s) => {
    const dOutPtr = s.putFinite(tensorValues(dOut), 'dOutput.data'); // float16 widened here, in both forms
    const grads = {};
    for (const [name, shape] of Object.entries(sizes))
      grads[name] = s.alloc(4 * shape.reduce((a, b) => a * b, 1), `the gradient ${name}`);
    const { x, context, keep, bias, q, k, v, concat } = saved.ptrs;
    const args = attentionArgs(layer, { causal: saved.causal, keep, bias });
    rt.call(
      where,
      'mhaBackward',
      mhaShape({ batch, nQ, nK, dModel, heads, kvHeads, dK, dV }),
      mhaWeights(layer.ptrs),
      x,
      context,
      mhaSaved({ q, k, v, concat }),
      dOutPtr,
      saved.scale,
      args.mask,
      mhaGrads(grads),
      args.rotary,
      args.rotated,
    );
    // dx and dContext in x's and context's formats; weight gradients float32, as the weights
    const result = {};
    for (const [name, shape] of Object.entries(sizes))
      result[name] = heap.readResult(grads[name], [...shape], saved.formats[name] ?? FORMATS.float32, where, name);
    return result;
  });
}
