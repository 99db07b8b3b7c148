// The worker of createAttention({ worker: true }): one instance running the calls read on the
// calling side (worker_client.js), one at a time in the order sent (web/docs/loading.md#the-worker-form).
// { id, op: 'create' or a row's (operations.js), target?, args, hold? } -> { id, value or error }
import { runtimeOf } from './attention.js';
import { createAttentionWith } from './create.js';
import { glue } from './glue_static.js';
import { isNode, nodeBuiltin } from './host.js';
import { holdForward, layerOf } from './layer_state.js';
import { buffersOf, OPERATION } from './operations.js';
import { freshOut } from './validate.js';

let [attn, post, nextId] = [null, () => {}, 1]; // post(message, transfer), once listening
const objects = { layer: new Map(), cache: new Map() }; // the layers and caches, by id (nextId)

// Loads the instance (located: the calling side's locateFile() answers) -> its local values.
async function create({ threads, isa, located, wasmBinary }) {
  const locateFile = (file) => {
    if (file in located) return located[file];
    throw new Error(`createAttention: locateFile was not asked about ${file} before the worker started`);
  };
  const onThreadsStarting = () => {
    post({ progress: 'threads-starting' });
    return () => post({ progress: 'threads-started' });
  };
  const options = { threads, isa, locateFile: located && locateFile, wasmBinary };
  attn = await createAttentionWith(options, { glue, onThreadsStarting });
  return { backend: attn.backend };
}

function targetOf(on, target) {
  const object = on === 'attention' ? attn : objects[on].get(target);
  if (!object) throw new Error(`wasm-attention worker: no ${on} ${target}`);
  return object;
}

// A row's snapshot with a fresh out of the caller's out's format and length, and its cache.
function incoming(row, snapshot) {
  const [out, ref] = [row.out && snapshot.out, row.cacheOption && snapshot[row.cacheOption]];
  if (!out && !ref) return snapshot;
  const call = { ...snapshot };
  if (out) call.out = freshOut(out.format, out.count);
  if (ref) call[row.cacheOption] = targetOf('cache', ref.cacheId);
  return call;
}

// A row's request run on its target with its snapshot.
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
  if (!row.run) return object[row.name](...call);
  const value = row.run(row.on === 'layer' ? layerOf(object) : runtimeOf(object), row.where, call);
  if (row.makes) objects[row.makes].set(nextId, value); // its id, nextId, is the answer
  return row.makes ? nextId++ : value;
}

// A held request run -> { value, settle(keep) }; keep false undoes it: the cache it appended
// to cut back, a layer's forward undone by layer_state.js (holdForward).
function runHeld(row, target, call) {
  const cache = call[row.cacheOption];
  const length = cache?.length;
  const once = () => run(row, target, call);
  const held = row.on === 'layer' ? holdForward(targetOf('layer', target), once) : { value: once(), settle() {} };
  const settle = (keep) => {
    held.settle(keep);
    if (!keep && cache && cache.length > length) cache.truncate(length);
  };
  return { value: held.value, settle };
}

// Held requests waiting for their verdict, { verdict: id, keep }: id -> resolve(keep).
const verdicts = new Map();

async function handle({ id, op, target, args, hold }, reply) {
  let settle = null;
  try {
    let value;
    const row = OPERATION.get(op);
    if (op === 'create') value = await create(args);
    else if (!row) throw new Error(`wasm-attention worker: no operation ${op}`);
    else if (hold) ({ value, settle } = runHeld(row, target, incoming(row, args)));
    else value = run(row, target, incoming(row, args));
    reply({ id, value }, row?.returns === 'arrays' ? [...buffersOf(value)] : []);
  } catch (e) {
    const error = e instanceof Error ? { name: e.name, message: e.message } : { name: 'Error', message: String(e) };
    settle?.(false); // a held call whose answer could not be sent: the client gets an error
    reply({ id, error });
    return;
  }
  if (settle) settle(await new Promise((resolve) => verdicts.set(id, resolve)));
}

// One request at a time, in the order sent; verdicts go past the queue.
let queue = Promise.resolve();
const receive = (reply) => {
  post = reply;
  return (message) => {
    if (message?.verdict === undefined) queue = queue.then(() => handle(message, reply));
    else {
      verdicts.get(message.verdict)?.(message.keep === true);
      verdicts.delete(message.verdict);
    }
  };
};

// No top-level await (bundlers build worker scripts as classic scripts too); in Node, messages
// sent before the listener is attached wait in the port's queue.
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
