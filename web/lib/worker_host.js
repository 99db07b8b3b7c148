// The worker side of createAttention({ worker: true }): a message loop over one real instance.
// Started by worker_client.js as a module Worker (browser) or a worker_thread (Node); not
// meant to be imported. The calling side has read each call (operations.js); this side runs it.
//   { id, op, target?, args, hold? } -> { id, value } or { id, error: { name, message } }
// op: 'create' (the first request: loads the instance; meanwhile { progress: 'threads-starting' }
//   and { progress: 'threads-started' }), else a row's op, run as its row says on target (the
//   id of a layer or cache) with args (the row's snapshot).
// hold: after a value, nothing else runs until { verdict: id, keep }; keep false undoes the
//   call (the cache it appended to cut back, a layer's previous saved forward restored).
import { runtimeOf } from './attention.js';
import { createAttentionWith } from './create.js';
import { glue } from './glue_static.js';
import { isNode, nodeBuiltin } from './host.js';
import { holdForward, layerOf } from './layer_state.js';
import { buffersOf, OPERATION } from './operations.js';
import { freshOut } from './validate.js';

let attn = null;
let post = () => {}; // (message, transfer) -> posts to the main side, once listening
let nextId = 1; // of layers and caches
const objects = { layer: new Map(), cache: new Map() }; // the layers and caches, by id

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
  return { backend: attn.backend };
}

// The object a row's request is about: the instance, or its layer or cache `target`.
function targetOf(on, target) {
  if (on === 'attention') return attn;
  const object = objects[on].get(target);
  if (!object) throw new Error(`wasm-attention worker: no ${on} ${target}`);
  return object;
}

// A row's snapshot as the direct form's run takes it: a fresh out of the caller's out's format
// and length, and the cache its id names.
function incoming(row, snapshot) {
  const ref = row.cacheOption ? snapshot[row.cacheOption] : undefined;
  const cache = ref === undefined ? null : targetOf('cache', ref.cacheId);
  if (!cache && !(row.out && snapshot.out)) return { call: snapshot, cache };
  const call = { ...snapshot };
  if (cache) call[row.cacheOption] = cache;
  if (row.out && snapshot.out) call.out = freshOut(snapshot.out.format, snapshot.out.count);
  return { call, cache };
}

// A row's request run on its target with its snapshot.
function run(row, target, snapshot) {
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
  if (!row.run) return object[row.name](...snapshot);
  const value = row.run(row.on === 'layer' ? layerOf(object) : runtimeOf(object), row.where, snapshot);
  if (!row.makes) return value;
  objects[row.makes].set(nextId, value);
  return nextId++;
}

// A held request's call run -> { value, settle(keep) }: keep, or undo the call: the cache it
// appends to cut back to its length before it (only appends can have changed it), and a
// layer's forward undone by layer_state.js (holdForward).
function runHeld(row, target, call, cache) {
  const length = cache?.length;
  const once = () => run(row, target, call);
  const { value, settle } =
    row.on === 'layer' ? holdForward(targetOf('layer', target), once) : { value: once(), settle() {} };
  return {
    value,
    settle(keep) {
      settle(keep);
      if (!keep && cache && cache.length > length) cache.truncate(length);
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
    let value;
    const row = OPERATION.get(op);
    if (op === 'create') value = await create(args);
    else if (!row) throw new Error(`wasm-attention worker: no operation ${op}`);
    else {
      const { call, cache } = incoming(row, args);
      if (hold) ({ value, settle: held } = runHeld(row, target, call, cache));
      else value = run(row, target, call);
    }
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
