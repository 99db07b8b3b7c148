// multiHeadAttention.step: one plain SGD step in place, w -= learningRate · dw, for every
// gradient given; all or nothing.
import { layerParameters } from './layer_config.js';
import { checkLayerAlive, releaseSaved } from './layer_state.js';
import { checkFinite, checkFiniteNumber, checkOptions, checkTensor, showShape, tensorValues } from './validate.js';

// grads (as backward() returns them; dx and dContext are ignored) and learningRate, read once
// -> a frozen { learningRate, given: [[name, Float32Array copy of d<name>]] }.
export function parseStep(layer, where, grads, learningRate) {
  checkFiniteNumber(where, 'learningRate', learningRate);
  const names = layerParameters(layer.config).map((p) => p.name);
  const g = checkOptions(where, grads, ['dx', 'dContext', ...names.map((n) => `d${n}`)]);
  const given = [];
  for (const name of names) {
    if (g[`d${name}`] === undefined) continue;
    const shape = layer.shapes[name];
    const grad = checkTensor(where, `grads.d${name}`, g[`d${name}`], [shape.length], showShape(shape));
    if (grad.shape.some((d, i) => d !== shape[i])) {
      throw new RangeError(`${where}: grads.d${name} is ${showShape(grad.shape)} but ${name} is ${showShape(shape)}`);
    }
    const data = tensorValues(grad).slice(); // small: copied (float16 widened) and checked here, in JS
    checkFinite(where, `grads.d${name}.data`, data);
    given.push(Object.freeze([name, data]));
  }
  return Object.freeze({ learningRate, given: Object.freeze(given) });
}

// Applies parseStep's step. The new weights are all computed (in float32, as stored) before
// any is written: a step that would overflow leaves every weight as it was. Clears the saved
// forward, whose gradients would no longer match the weights.
export function layerStep(layer, where, { learningRate, given }) {
  checkLayerAlive(layer, where);
  const { heap } = layer.rt;
  const updates = [];
  for (const [name, data] of given) {
    const next = heap.read(layer.ptrs[name], data.length);
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
  for (const [name, next] of updates) heap.f32(layer.ptrs[name], next.length).set(next);
  if (updates.length) layer.stepped = true;
  releaseSaved(layer);
}
