// The worker side of createAttention({ worker: true }): a message loop over one real instance
// (see worker_client.js for the protocol and the transfer rule). Started by worker_client.js
// as a module Worker (browser) or a worker_thread (Node); not meant to be imported.
//
//   { id, op, target?, args, hold? } -> { id, value } or { id, error: { name, message } }
// op: 'create' (the first request: loads the instance), else a row's op of the table of
//   operations (operations.js: 'attention.matmul', 'layer.forward', 'cache.read'), run as the
//   row says; a row that returns 'arrays' has value's ArrayBuffers transferred.
// target: the id of the layer or cache a layer's or cache's operation applies to.
// hold: after a value, nothing else runs until { verdict: id, keep }; keep false undoes the
//   call (its caches cut back, a layer's previous saved forward restored).
//   while create starts the pool's workers: { progress: 'threads-starting' }, then
//                             { progress: 'threads-started' } once they exist
import { createAttentionWith } from './create.js';
import { glue } from './glue_static.js';
import { isNode, nodeBuiltin } from './host.js';
import { cacheStandIn } from './kv_cache.js';
import { holdForward } from './layer_state.js';
import { OPERATION, operationsOn } from './operations.js';
import { STAND_IN } from './stand_in.js';

let attn = null;
let post = () => {}; // (message, transfer) -> posts to the main side, once listening
let nextId = 1; // of layers and caches

// A cache reference from the client -> the cache, or what the synchronous form's checks
// reject as a disposed cache or another instance's (`own`: made by this worker).
function cacheOf({ id, own, disposed }) {
  if (disposed) return cacheStandIn({ disposed: true });
  if (!own) return cacheStandIn({ disposed: false });
  return objects.cache.get(id) ?? cacheStandIn({ disposed: true });
}

// A revoked Proxy, the stand-in for one.
function revoked() {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  return proxy;
}

// A fresh typed array of type ('Float32Array', …) and length, zeros: with length 0 and
// `detached`, its buffer detached, the stand-in for one with no bytes left; with a length, the
// stand-in for a caller's out (worker_client.js), which the result is written into and sent
// back in.
const TypedArray = Object.getPrototypeOf(Uint8Array); // every typed array's constructor's prototype
function freshArray({ type, length = 0, detached = false }) {
  const Type = Object.getPrototypeOf(globalThis[type] ?? {}) === TypedArray ? globalThis[type] : Uint8Array;
  const view = new Type(length);
  if (detached) structuredClone(view.buffer, { transfer: [view.buffer] });
  return view;
}

// The client's stand-ins back into a function, a symbol, a revoked Proxy, a typed array (empty,
// or an out's fresh one), a cache or an object of a constructor's name, in place (args is our
// own copy). The live caches met are added to the Set `found`.
function decode(value, found, depth = 0) {
  if (value === null || typeof value !== 'object' || ArrayBuffer.isView(value) || depth > 8) return value;
  if (STAND_IN in value) {
    const kind = value[STAND_IN];
    if (kind === 'cache') {
      const cache = cacheOf(value);
      if (objects.cache.get(value.id) === cache) found.add(cache);
      return cache;
    }
    if (kind === 'directCache') return cacheStandIn({ form: 'direct' });
    if (kind === 'revoked') return revoked();
    if (kind === 'empty' || kind === 'out') return freshArray(value);
    if (kind === 'lookalike') {
      // an object inheriting from the type's prototype: what the direct form's checks call one
      // that only looks like a typed array
      const Type = globalThis[value.type];
      return Object.create(Object.getPrototypeOf(Type ?? {}) === TypedArray ? Type.prototype : null);
    }
    if (kind === 'opaque')
      return value.name === undefined ? Object.create(null) : Object.create({ constructor: { name: value.name } });
    return kind === 'function' ? function standIn() {} : Symbol('stand-in');
  }
  for (const key of Object.keys(value)) value[key] = decode(value[key], found, depth + 1);
  return value;
}

// The ArrayBuffers behind a result's typed arrays, for transfer: each is a fresh copy out of
// wasm memory that nobody here keeps.
function buffersOf(value, into = new Set(), depth = 0) {
  if (value === null || typeof value !== 'object' || depth > 8) return into;
  if (ArrayBuffer.isView(value)) {
    if (value.buffer instanceof ArrayBuffer) into.add(value.buffer);
  } else {
    for (const v of Object.values(value)) buffersOf(v, into, depth + 1);
  }
  return into;
}

// The worker's layers and caches, by id: each made by a row of the table that makes one.
const objects = { layer: new Map(), cache: new Map() };

// The object a row's request is about: the instance, or its layer or cache `target`.
function targetOf(on, target) {
  if (on === 'attention') return attn;
  const object = objects[on].get(target);
  if (!object) throw new Error(`wasm-attention worker: no ${on} ${target}`);
  return object;
}

// An object's values its class's 'local' rows read on the main side.
const localsOf = (on, object) =>
  Object.fromEntries(operationsOn(on).flatMap((row) => (row.form === 'local' ? [[row.name, object[row.name]]] : [])));

// create: the bootstrap, before there is an instance; located: file name -> URL or path,
// the main side's locateFile() answers. -> the instance's local values (its backend).
async function create({ threads, isa, located, wasmBinary }) {
  const locateFile =
    located &&
    ((file) => {
      if (!(file in located))
        throw new Error(`createAttention: locateFile was not asked about ${file} before the worker started`);
      return located[file];
    });
  const onThreadsStarting = () => {
    post({ progress: 'threads-starting' });
    return () => post({ progress: 'threads-started' });
  };
  attn = await createAttentionWith({ threads, isa, locateFile, wasmBinary }, { glue, onThreadsStarting });
  return localsOf('attention', attn);
}

// A row's request (operations.js) run on its target with the call's arguments.
function run(row, target, call) {
  if (row.form === 'dispose') {
    if (row.on === 'attention') {
      attn?.dispose(); // its layers and caches go with it
      for (const map of Object.values(objects)) map.clear();
    } else {
      objects[row.on].get(target)?.dispose();
      objects[row.on].delete(target);
    }
    return undefined;
  }
  const object = targetOf(row.on, target);
  if (row.form === 'getter') return object[row.name];
  const value = object[row.name](...call);
  if (!row.makes) return value;
  const id = nextId++;
  objects[row.makes].set(id, value);
  return { id, local: localsOf(row.makes, value) };
}

// A held request's call run -> { value, settle(keep) }: keep, or undo the call: the caches
// among its arguments cut back to their lengths before it (only appends can have changed
// them), and a layer's forward undone by layer_state.js (holdForward).
function runHeld(row, target, call, found) {
  const lengths = [...found].map((cache) => [cache, cache.length]);
  const once = () => run(row, target, call);
  const { value, settle } =
    row.on === 'layer' ? holdForward(targetOf('layer', target), once) : { value: once(), settle() {} };
  return {
    value,
    settle(keep) {
      settle(keep);
      if (!keep) for (const [cache, length] of lengths) if (cache.length > length) cache.truncate(length);
    },
  };
}

// Verdicts on held requests: request id -> the waiting request's resolve, or the verdict
// itself when it came first (the client gave up on a request before the worker ran it).
const verdicts = new Map();
function verdictOf(id) {
  if (verdicts.has(id)) {
    const keep = verdicts.get(id);
    verdicts.delete(id);
    return Promise.resolve(keep);
  }
  return new Promise((resolve) => verdicts.set(id, resolve));
}
function receiveVerdict({ verdict: id, keep }) {
  const waiting = verdicts.get(id);
  if (typeof waiting === 'function') {
    verdicts.delete(id);
    waiting(keep === true);
  } else {
    verdicts.set(id, keep === true);
  }
}

async function handle({ id, op, target, args, hold }, reply) {
  let held = null;
  try {
    const found = new Set();
    const call = decode(args, found);
    let value;
    const row = OPERATION.get(op);
    if (op === 'create') value = await create(...call);
    else if (!row) throw new Error(`wasm-attention worker: no operation ${op}`);
    else if (hold) ({ value, settle: held } = runHeld(row, target, call, found));
    else value = run(row, target, call);
    reply({ id, value }, row?.returns === 'arrays' ? [...buffersOf(value)] : []);
  } catch (e) {
    const error = e instanceof Error ? { name: e.name, message: e.message } : { name: 'Error', message: String(e) };
    held?.(false); // a held call whose answer could not be sent: the client gets an error
    verdicts.delete(id);
    reply({ id, error });
    return;
  }
  if (held) held(await verdictOf(id));
}

// One request at a time, in the order sent; verdicts go past the queue, to the request that
// holds it.
let queue = Promise.resolve();
const receive = (reply) => {
  post = reply;
  return (message) => {
    if (message !== null && typeof message === 'object' && 'verdict' in message) receiveVerdict(message);
    else queue = queue.then(() => handle(message, reply));
  };
};

// No top-level await: bundlers build worker scripts as classic (iife) scripts too (Vite does).
// In Node, messages sent before the listener is attached wait in the port's queue.
if (isNode) {
  nodeBuiltin('worker_threads').then(({ parentPort }) => {
    parentPort.on(
      'message',
      receive((message, transfer) => parentPort.postMessage(message, transfer)),
    );
  });
} else {
  const onMessage = receive((message, transfer) => self.postMessage(message, transfer));
  self.addEventListener('message', (e) => onMessage(e.data));
}
