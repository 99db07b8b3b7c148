// tfjs's gradients, for tf.grads in Node. tfjs-core's Node bundle (dist/tf-core.node.js)
// ships no gradient functions: the union package @tensorflow/tfjs registers them by
// importing '@tensorflow/tfjs-core/dist/register_all_gradients', an ES module file that
// Node cannot load as published (see tfjs_gradients_hooks.mjs). With the hooks, that file
// and what it imports load as a second, ESM copy of tfjs-core's sources; tfjs keeps its
// engine and its kernel and gradient registries on globalThis, so the gradients it
// registers are the ones the bundle's tf.grads finds. These are tfjs's own gradient
// formulas, unchanged.
import { register } from 'node:module';
import { peerUrl } from './peers.mjs';

let done = false;

export async function registerTfjsGradients() {
  if (done) return;
  register(new URL('./tfjs_gradients_hooks.mjs', import.meta.url));
  await import(peerUrl('@tensorflow/tfjs-core', 'dist', 'register_all_gradients.js'));
  done = true;
}
