// The table of operations of both forms: one row per public member of Attention,
// MultiHeadAttention and KvCache, naming the direct form's parser (pure) and run, so that the
// worker form (worker_client.js, worker_host.js) reads each call on the calling side as the
// direct form does and runs it in its worker. See web/docs/loading.md#the-worker-form and
// web/docs/developing.md#adding-an-operation.
import { parseAttentionBackward, parseMatmul, runAttention, runAttentionBackward, runMatmul } from './attention.js';
import { parseAttention } from './attention_options.js';
import { KvCache, parseCacheConfig } from './kv_cache.js';
import { layerBackward, savedShape } from './layer_backward.js';
import { checkLayerConfig } from './layer_config.js';
import { parseForward } from './layer_forward.js';
import { layerStep, parseStep } from './layer_step.js';
import { MultiHeadAttention, runForward } from './multi_head.js';
import { checkInteger, packageCopies, readTensor, typedArrayLength } from './validate.js';

// The worker form reads dOutput before it knows the saved forward: its messages name the
// saved forward's shape by this, which the worker's answer replaces (backward's run).
export const SAVED_SHAPE = '\u0000the saved forward\u0000';

// What reading dOutput threw (refused), SAVED_SHAPE in its message replaced by shape; a value
// the caller's getter threw (frozen, a Proxy, not an Error) goes back untouched.
export function withSavedShape(refused, shape) {
  try {
    if (refused.message.includes(SAVED_SHAPE)) refused.message = refused.message.replaceAll(SAVED_SHAPE, shape);
  } catch {
    // not the package's error: the caller's own, as the direct form throws it
  }
  return refused;
}

// Each class's prefix of its members' names in messages ('kvCache.read').
const WHERE = { attention: '', layer: 'multiHeadAttention.', cache: 'kvCache.' };

// Columns:
//   on       the class: 'attention' (Attention), 'layer' (MultiHeadAttention), 'cache' (KvCache)
//   name     the member's name, the same in both forms
//   form     'method': a call, a Promise in the worker form; 'getter': a property read in the
//            worker, a Promise there; 'local': a value known on the calling side (checks: it
//            throws once the instance was disposed; own: an own property of each object);
//            'dispose': frees the object in the worker once the calls made before it ran
//   args     how many arguments parse takes as given
//   options  the argument after them: 'options' (the direct form's, less the worker form's
//            transfer key) or 'transfer' (the worker form's own { transfer }); absent: none
//   parse    (where, args, local) -> the call's snapshot (local: the object's local values);
//            absent: args as given
//   run      (state, where, snapshot) -> the result (state: the instance's runtime or the
//            layer's state); absent: the direct form's member, called with the snapshot
//   out      the result whose data goes into the options' out: 'output' or 'answer' (itself)
//   cacheOption  the snapshot's key that holds a KvCache (one of the worker form there)
//   hold     when a call with out is held in the worker (the undo protocol, worker_host.js):
//            'always' (a layer's forward), 'cache' (with a cache, which it appends to)
//   makes    the result is a new object ('layer' or 'cache'); locals(snapshot): its local values
//   returns  'arrays': the result's typed arrays are fresh, transferred back from the worker
//   gone     a getter's value once its object or instance was disposed, instead of an error
export const OPERATIONS = Object.freeze(
  [
    { on: 'attention', name: 'backend', form: 'local', checks: true },
    {
      on: 'attention',
      name: 'attention',
      form: 'method',
      args: 3,
      options: 'options',
      parse: (where, [q, k, v, o]) => parseAttention(where, q, k, v, o),
      run: runAttention,
      out: 'output',
      hold: 'cache',
      cacheOption: 'cache',
      returns: 'arrays',
    },
    {
      on: 'attention',
      name: 'attentionBackward',
      form: 'method',
      args: 4,
      options: 'options',
      parse: (where, [q, k, v, d, o]) => parseAttentionBackward(where, q, k, v, d, o),
      run: runAttentionBackward,
      returns: 'arrays',
    },
    {
      on: 'attention',
      name: 'matmul',
      form: 'method',
      args: 2,
      options: 'options',
      parse: (where, [a, b, o]) => parseMatmul(where, a, b, o),
      run: runMatmul,
      out: 'answer',
      returns: 'arrays',
    },
    { on: 'attention', name: 'memory', form: 'method', args: 0 },
    {
      on: 'attention',
      name: 'kvCache',
      form: 'method',
      args: 1,
      parse: (where, [config]) => parseCacheConfig(where, config),
      run: (rt, where, c) => rt.keepsOwnerAlive(new KvCache(rt, c)),
      makes: 'cache',
      locals: (c) => c,
    },
    // config is the options argument: it may say { transfer: true }, for its weights
    {
      on: 'attention',
      name: 'multiHeadAttention',
      form: 'method',
      args: 0,
      options: 'options',
      parse: (where, [config]) => checkLayerConfig(where, config),
      run: (rt, where, parsed) => rt.keepsOwnerAlive(new MultiHeadAttention(rt, parsed)),
      makes: 'layer',
      locals: ({ config, shapes }) => ({ config, shapes }),
    },
    { on: 'attention', name: 'dispose', form: 'dispose' },

    { on: 'layer', name: 'config', form: 'local', own: true },
    {
      on: 'layer',
      name: 'forward',
      form: 'method',
      args: 1,
      options: 'options',
      parse: (where, [x, o], local) => parseForward(local.config, where, x, o),
      run: runForward,
      out: 'output',
      hold: 'always',
      cacheOption: 'cache',
      returns: 'arrays',
    },
    {
      on: 'layer',
      name: 'backward',
      form: 'method',
      args: 1,
      options: 'transfer',
      // what reading dOutput throws comes after the saved forward's error (the direct form's
      // order): refused goes back to the caller once the worker found a saved forward
      parse: (where, [dOutput]) => {
        try {
          return { dOut: readTensor(where, 'dOutput', dOutput, SAVED_SHAPE) };
        } catch (refused) {
          return { refused };
        }
      },
      run: (layer, where, { dOut, refused }) =>
        refused ? savedShape(layer, where) : layerBackward(layer, where, dOut),
      returns: 'arrays',
    },
    {
      on: 'layer',
      name: 'step',
      form: 'method',
      args: 2,
      options: 'transfer',
      parse: (where, [grads, learningRate], local) => parseStep(local, where, grads, learningRate),
      run: layerStep,
    },
    { on: 'layer', name: 'weights', form: 'getter', returns: 'arrays' },
    { on: 'layer', name: 'dispose', form: 'dispose' },

    { on: 'cache', name: 'capacity', form: 'local' },
    { on: 'cache', name: 'batch', form: 'local' },
    { on: 'cache', name: 'kvHeads', form: 'local' },
    { on: 'cache', name: 'dK', form: 'local' },
    { on: 'cache', name: 'dV', form: 'local' },
    { on: 'cache', name: 'dtype', form: 'local' },
    { on: 'cache', name: 'length', form: 'getter', gone: 0 },
    { on: 'cache', name: 'read', form: 'method', args: 0, returns: 'arrays' },
    {
      on: 'cache',
      name: 'truncate',
      form: 'method',
      args: 1,
      // n's kind here; its range (the cache's length) where the cache is
      parse: (where, [n]) => [typeof n === 'number' ? n : checkInteger(where, 'n', n, 0)],
    },
    { on: 'cache', name: 'reset', form: 'method', args: 0 },
    { on: 'cache', name: 'dispose', form: 'dispose' },
  ].map((row) => Object.freeze({ ...row, op: `${row.on}.${row.name}`, where: `${WHERE[row.on]}${row.name}` })),
);

// Members of the direct form the worker form does not have, 'on.name' -> why. Empty: the
// worker form has every public member.
export const DIRECT_ONLY = Object.freeze({});

// op ('layer.forward') -> its row: what a request names.
export const OPERATION = new Map(OPERATIONS.map((row) => [row.op, row]));

// The rows of one class's members, in the table's order.
export const operationsOn = (on) => OPERATIONS.filter((row) => row.on === on);

// The ArrayBuffers behind the typed arrays in a snapshot or a result (plain objects and
// arrays), for transfer; SharedArrayBuffers are shared, never transferred.
export function buffersOf(value, into = new Set(), depth = 0) {
  if (value === null || typeof value !== 'object' || depth > 8) return into;
  if (ArrayBuffer.isView(value)) {
    if (value.buffer instanceof ArrayBuffer && value.buffer.byteLength > 0) into.add(value.buffer);
  } else {
    for (const v of Object.values(value)) buffersOf(v, into, depth + 1);
  }
  return into;
}

// A snapshot as it is posted: each typed array whose buffer the worker would see beyond the
// values it holds at the call replaced by a copy of them: one on a SharedArrayBuffer (the
// caller may write it while the call waits) and, unless transfer, one on part of a larger
// ArrayBuffer (a structured clone copies the whole buffer). Plain objects and arrays rebuilt.
const slice = Object.getPrototypeOf(Uint8Array.prototype).slice; // the engine's own
export function postable(value, transfer, depth = 0) {
  if (value === null || typeof value !== 'object' || depth > 8 || value instanceof DataView) return value;
  if (ArrayBuffer.isView(value)) {
    // inputs are never empty: none left means detached or shrunk since parse read it, which
    // the worker's run refuses as the direct form's does
    if (typedArrayLength(value) === 0) return new value.constructor(0);
    const partial = !transfer && value.byteLength !== value.buffer.byteLength;
    if (!partial && value.buffer instanceof ArrayBuffer) return value;
    const copy = Reflect.apply(slice, value, []);
    packageCopies.add(copy.buffer);
    return copy;
  }
  if (Array.isArray(value)) return value.map((v) => postable(v, transfer, depth + 1));
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, postable(v, transfer, depth + 1)]));
}
