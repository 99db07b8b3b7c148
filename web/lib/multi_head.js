// A multi-head attention layer whose weights live in wasm memory until dispose().
//   Q = x·wq + bq [n,h·dK], K = context·wk + bk [nK,hKv·dK], V = context·wv + bv [nK,hKv·dV]
//   (hKv = kvHeads divides h: grouped-query attention; 1: multi-query attention)
//   rotary: Q's and K's heads turned to their positions (RoPE, wa/rotary.h)
//   head i: attention over columns [i·dK,(i+1)·dK) of Q and, g = ⌊i/(h/hKv)⌋, columns
//   [g·dK,(g+1)·dK) of K and [g·dV,(g+1)·dV) of V, with the layer's window, softcap and
//   sink (sinks[i], a learned logit in every row's softmax denominator)
//   output = concat(heads)·wo + bo [n,dModel]
// forward(x, { cache }) decodes: x holds only the new tokens, whose K and V join the cache
// (wa::mha_forward_cached).
//
// The public surface; each job is a module: the config and parameters (layer_config.js), what
// the layer holds (layer_state.js), forward (layer_forward.js), forward over a cache
// (layer_forward_cached.js), backward (layer_backward.js), the SGD step (layer_step.js).
// Every call checks the layer is alive, then reads its arguments once (parse*), then touches wasm
// memory; attn.multiHeadAttention() reads the config (checkLayerConfig) before it checks the
// instance is alive again and makes the layer.
import { layerBackward, parseBackward } from './layer_backward.js';
import { layerForward, parseForward } from './layer_forward.js';
import { layerForwardCached } from './layer_forward_cached.js';
import { checkLayerAlive, createLayer, disposeLayer, readWeights } from './layer_state.js';
import { layerStep, parseStep } from './layer_step.js';
import { widenHalves } from './validate.js';

export class MultiHeadAttention {
  #layer; // layer_state.js

  // parsed: checkLayerConfig's, on a live runtime rt.
  constructor(rt, parsed) {
    this.#layer = createLayer(rt, this, 'multiHeadAttention', parsed);
    this.config = parsed.config;
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
  forward(x, options) {
    const where = 'multiHeadAttention.forward';
    const layer = this.#layer;
    checkLayerAlive(layer, where);
    return runForward(layer, where, parseForward(layer.config, where, x, options));
  }

  // Gradients of the most recent forward: dOutput (the output's shape) = ∂L/∂output ->
  // { dx, dContext (cross-attention only), dwq, dwk, dwv, dwo, and dbq, dbk, dbv, dbo with bias,
  // dsinks with sinks }, each the shape of what it differentiates; weight gradients are summed
  // over the batch.
  backward(dOutput) {
    const where = 'multiHeadAttention.backward';
    const layer = this.#layer;
    checkLayerAlive(layer, where);
    return layerBackward(layer, where, parseBackward(layer, where, dOutput));
  }

  // One plain SGD step, in place: w -= learningRate · dw for every gradient given (dwq..dwo,
  // dbq..dbo, dsinks, as backward() returns them; dx and dContext are ignored). Clears the saved
  // forward, whose gradients would no longer match the weights.
  step(grads, learningRate) {
    const where = 'multiHeadAttention.step';
    const layer = this.#layer;
    checkLayerAlive(layer, where);
    layerStep(layer, where, parseStep(layer, where, grads, learningRate));
  }

  // The current weights as tensors (copies): wq, wk, wv, wo, and bq, bk, bv, bo with bias,
  // sinks [heads] with sinks.
  get weights() {
    checkLayerAlive(this.#layer, 'multiHeadAttention.weights');
    return readWeights(this.#layer);
  }

  // Frees the weights; later calls throw. Safe to call twice.
  dispose() {
    disposeLayer(this.#layer);
  }
}

// parseForward's call c on the layer's state -> its result, over a cache or not.
// Its float16 inputs widened first (widenHalves), in both forms.
export function runForward(layer, where, call) {
  const c = widenHalves(call);
  return c.cache !== undefined ? layerForwardCached(layer, where, c) : layerForward(layer, where, c);
}
