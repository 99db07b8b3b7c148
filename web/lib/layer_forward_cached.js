// multiHeadAttention.forward(x, { cache }): the new tokens through the layer over a kv cache
// (wa::mha_forward_cached): their keys and values join the cache, and the new queries attend
// over all of it. A step that fails leaves the cache (kv_cache.js, stepOver) and the saved
// forward as they were.
import { mhaShape, mhaWeights } from './binding.js';
import { checkCacheFits, stepOver } from './kv_cache.js';
import { attentionArgs, blameWeights, checkLayerAlive, releaseSaved } from './layer_state.js';
import { fitMask, showShape } from './validate.js';

// c: parseForward's call with a cache. The cache is looked up and measured here, after every
// argument was read: the call acts on it as it is now.
export function layerForwardCached(layer, where, c) {
  checkLayerAlive(layer, where);
  const { dModel, heads, kvHeads, dK, dV } = layer.config;
  const { x, batch, nQ, causal, scale } = c;
  const { rt } = layer;
  const { cache, length: past } = checkCacheFits(where, c.cache, rt, { batch, kvHeads, dK, dV }, nQ, {
    misfit: (cc) =>
      `${where}: the cache is [batch ${cc.batch}, kvHeads ${cc.kvHeads}, dK ${cc.dK}, dV ${cc.dV}] but this layer with x ${showShape(x.shape)} needs batch ${batch}, kvHeads ${kvHeads}, dK ${dK}, dV ${dV}`,
    overflow: (length, cc) =>
      `${where}: x has ${nQ} new tokens but the cache holds ${length} of its capacity ${cc.capacity}: ${length + nQ} do not fit`,
  });
  // the mask [nQ,nK] of the layer's every sequence and head
  const mask = fitMask(where, c.mask, { batch: 1, qHeads: 1, nQ, twoD: true }, past + nQ);
  const [keep, bias] = [mask?.keep ?? null, mask?.bias ?? null];
  const { heap } = rt;
  const result = stepOver(cache, () =>
    heap.scoped(where, (s) => {
      const xPtr = s.putFinite(x.data, 'x.data');
      const out = s.alloc(4 * batch * nQ * dModel, 'the output');
      const args = attentionArgs(layer, {
        causal,
        keep: keep ? s.put(keep, 'mask') : 0,
        bias: bias ? s.put(bias, 'mask') : 0,
      });
      rt.call(
        where,
        'mhaForwardCached',
        mhaShape({ batch, nQ, nK: nQ, dModel, heads, kvHeads, dK, dV }),
        mhaWeights(layer.ptrs),
        xPtr,
        cache.handle,
        out,
        scale,
        args.mask,
        args.rotary,
        args.rotated,
      );
      const blame = blameWeights(layer, x.data);
      return { output: heap.readResult(out, x.shape.slice(), x.format, where, 'output', c.out, blame) };
    }),
  );
  // the most recent forward is this one, which backward() does not follow (a failed one
  // changed nothing)
  releaseSaved(layer);
  layer.cachedLast = true;
  return result;
}
