// createAttention({ worker: true }): each call read here by the direct form's parser
// (operations.js), its errors thrown here as there, and its snapshot run by worker_host.js in
// a Worker. The transfer rule and the undo of held calls: web/docs/loading.md#the-worker-form.
import { BUILDS } from './builds.js';
import { isNode, nodeBuiltin, nodeWorker } from './host.js';
import { buffersOf, OPERATIONS, operationsOn, postable, withSavedShape } from './operations.js';
import { cacheForms, checkBoolean, checkCacheOption, disposedError, isArray, isRevoked } from './validate.js';
import { outChanged, packageCopies, typedArrayLength as lengthOf } from './validate.js';

// { name, message } -> an error of that class (Error's native subclasses, WebAssembly's) here.
function rebuildError({ name, message }) {
  const named = globalThis[name] ?? globalThis.WebAssembly?.[name];
  const Class = named === Error || (named && Object.getPrototypeOf(named) === Error) ? named : Error;
  const error = new Class(message);
  if (Class === Error && name) error.name = name;
  return error;
}

// The worker and its requests. closed: dispose() was called; stalled: its threads hung (#progress).
class Channel {
  #worker;
  #pending = new Map(); // request id -> { resolve, reject, accept, hold }
  #nextId = 1;
  #broken = null; // the Error every call gets once the worker died
  #stallMs;
  #stallTimer;
  closed = false;
  stalled = false;

  constructor(worker, { stallMs }) {
    this.#worker = worker;
    this.#stallMs = stallMs;
    const onMessage = (message) => (message?.progress ? this.#progress(message.progress) : this.#answer(message));
    const onFailure = (why) => this.#fail(new Error(`wasm-attention: the worker stopped: ${why}`));
    if (isNode) {
      worker.on('message', onMessage);
      worker.on('error', (e) => onFailure(e?.message ?? e));
      worker.on('messageerror', () => onFailure('a message could not be read'));
      worker.on('exit', (code) => onFailure(`it exited with code ${code}`));
      worker.unref(); // an idle worker never keeps Node running; a pending call refs it
    } else {
      worker.addEventListener('message', (e) => onMessage(e.data));
      worker.addEventListener('error', (e) => {
        e.preventDefault();
        onFailure(e.message || 'its script failed to load');
      });
      worker.addEventListener('messageerror', () => onFailure('a message could not be read'));
    }
  }

  // -> the answer to op on target (a layer's or cache's id); accept(answer) -> result, or throws.
  send(where, op, args, { target, transfer = false, accept = null, hold = false } = {}) {
    if (this.#broken) return Promise.reject(this.#broken);
    const id = this.#nextId++;
    const moved = [...buffersOf(args)].filter((b) => transfer || packageCopies.has(b)); // its own copies: always
    try {
      this.#worker.postMessage({ id, op, target, args, hold }, moved);
    } catch (e) {
      return Promise.reject(new TypeError(`${where}: an argument cannot be sent to the worker: ${e.message}`));
    }
    if (isNode && this.#pending.size === 0) this.#worker.ref();
    return new Promise((resolve, reject) => this.#pending.set(id, { resolve, reject, accept, hold }));
  }

  // A held request's verdict; a worker that is gone took the call's effects with it.
  #verdict(id, keep) {
    if (!this.#broken) this.#worker.postMessage({ verdict: id, keep });
  }

  #settle(id) {
    const request = this.#pending.get(id);
    this.#pending.delete(id);
    if (isNode && request && this.#pending.size === 0) this.#worker.unref();
    return request;
  }

  // Firefox over WebDriver BiDi can hang for good in a worker's `new Worker()` (its pool's).
  #progress(stage) {
    clearTimeout(this.#stallTimer);
    if (stage !== 'threads-starting') return;
    this.#stallTimer = setTimeout(() => {
      this.stalled = true;
      this.#fail(new Error(`wasm-attention: the worker's threads did not start within ${this.#stallMs} ms`));
    }, this.#stallMs);
    this.#stallTimer.unref?.(); // Node: a pending request keeps the worker, and so the process, alive
  }

  #answer({ id, value, error }) {
    clearTimeout(this.#stallTimer);
    const request = this.#settle(id);
    if (!request) return;
    if (error) return request.reject(rebuildError(error));
    try {
      const accepted = request.accept ? request.accept(value) : value;
      if (request.hold) this.#verdict(id, true);
      request.resolve(accepted);
    } catch (e) {
      if (request.hold) this.#verdict(id, false);
      request.reject(e);
    }
  }

  #fail(error) {
    clearTimeout(this.#stallTimer);
    if (this.#broken) return;
    this.#broken = error;
    for (const id of [...this.#pending.keys()]) this.#settle(id).reject(error);
  }

  async terminate() {
    this.#broken ??= new Error('wasm-attention: the worker was terminated');
    await this.#worker.terminate();
  }
}

// proxy -> { on, channel, id (in the worker), local (values), disposed, token, finished }.
const sides = new WeakMap();
// The error of a call on what was disposed (null: alive), as the direct form's.
const stale = (row, side) => disposedError(row.on, row.where, side.channel.closed, side.disposed);
function checkFresh(row, side) {
  const error = stale(row, side);
  if (error) throw error;
}

// Releases the worker's layer or cache when its proxy is garbage-collected without dispose().
const leftBehind = new FinalizationRegistry(({ channel, op, target }) => {
  if (!channel.closed) channel.send(op, op, [], { target }).catch(() => {});
});

// The instance, its layers and its caches, named by id in the worker; members from the table.
const CLASSES = { attention: class AsyncAttention {}, layer: class AsyncMultiHeadAttention {} };
CLASSES.cache = class AsyncKvCache {};

function proxyOf(on, channel, id, local) {
  const proxy = new CLASSES[on]();
  const frozen = Object.fromEntries(Object.entries(local).map(([k, v]) => [k, Object.freeze(v)]));
  const side = { on, channel, id, local: frozen, disposed: false, token: {}, finished: null };
  sides.set(proxy, side);
  if (on === 'cache') cacheForms.set(proxy, 'worker');
  for (const row of operationsOn(on)) if (row.own) proxy[row.name] = frozen[row.name];
  if (id !== undefined) {
    const { op } = operationsOn(on).find((row) => row.form === 'dispose');
    leftBehind.register(proxy, { channel, op, target: id }, side.token);
  }
  return proxy;
}

// options -> [options less its transfer key (undefined when nothing else is left), transfer].
function splitTransfer(where, options) {
  const object = options !== null && typeof options === 'object' && !isArray(options) && !isRevoked(options);
  if (!object || !Object.keys(options).includes('transfer')) return [options, false]; // its keys as parse reads them
  const { transfer, ...rest } = options; // every getter runs once, here
  return [Object.keys(rest).length ? rest : undefined, checkBoolean(where, 'transfer', transfer)];
}

// The answer to a call with out: its main result's values copied into out, its data then; a
// TypeError when out's length changed while the call ran (a held call is then undone there).
const setValues = Object.getPrototypeOf(Uint8Array.prototype).set; // the engine's own
function acceptOut(where, out, main) {
  return (value) => {
    const t = main === 'output' ? value.output : value;
    const count = lengthOf(t.data);
    const length = lengthOf(out);
    if (length !== count) throw outChanged(where, 'while the call ran', count, length);
    Reflect.apply(setValues, out, [t.data]);
    t.data = out;
    return value;
  };
}

// A 'method' row's call, read here by its parse, then sent: out stays here (the worker fills a
// fresh array whose values come back into it); a cache of this form goes as its id.
function callOf(row, side, args) {
  const { where } = row;
  checkFresh(row, side);
  const given = args.slice(0, row.args); // parse reads a hole as undefined
  const [options, transfer = false] = row.options ? splitTransfer(where, args[row.args]) : [];
  if (row.options === 'options') given[row.args] = options;
  const snapshot = row.parse ? row.parse(where, given, side.local) : given;
  checkFresh(row, side); // the arguments' getters may have disposed it
  const channel = side.channel;
  if (snapshot.refused) {
    const { refused } = snapshot;
    return channel.send(where, row.op, { refused: true }, { target: side.id }).then((shape) => {
      throw withSavedShape(refused, shape);
    });
  }
  let sent = snapshot;
  const cache = row.cacheOption ? snapshot[row.cacheOption] : undefined;
  if (cache !== undefined) {
    const s = sides.get(cache)?.on === 'cache' ? sides.get(cache) : undefined;
    checkCacheOption(where, cache, s, s?.channel === channel);
    sent = { ...sent, [row.cacheOption]: { cacheId: s.id } };
  }
  let held = {};
  const out = row.out ? snapshot.out?.array : undefined;
  if (out) {
    sent = { ...sent, out: { format: snapshot.out.format, count: lengthOf(snapshot.out.view) } };
    if (transfer && buffersOf(sent).has(snapshot.out.view.buffer)) {
      throw new TypeError(
        `${where}: out shares its buffer with an argument that transfer: true sends to the worker, which would detach it: give out a buffer of its own, or leave transfer out`,
      );
    }
    const hold = row.hold === 'always' || (row.hold === 'cache' && cache !== undefined);
    held = { accept: acceptOut(where, out, row.out), hold };
  }
  const answer = channel.send(where, row.op, postable(sent, transfer), { target: side.id, transfer, ...held });
  return row.makes ? answer.then((id) => proxyOf(row.makes, channel, id, row.locals(snapshot))) : answer;
}

// A 'dispose' row, safe twice; the instance's ends the worker once the calls made before it ran.
function disposeOf(row, side) {
  const { channel } = side;
  if (row.on === 'attention') {
    if (!channel.closed) {
      channel.closed = true;
      side.finished = channel
        .send(row.where, row.op, [])
        .catch(() => {})
        .then(() => channel.terminate());
    }
    return side.finished;
  }
  if (side.disposed) return Promise.resolve();
  side.disposed = true;
  leftBehind.unregister(side.token);
  return channel.closed ? Promise.resolve() : channel.send(row.where, row.op, [], { target: side.id }).then(() => {});
}

// fn() -> its Promise, or a rejected one with what it throws: this form's calls never throw.
function promised(fn) {
  try {
    return fn();
  } catch (e) {
    return Promise.reject(e);
  }
}

// Each row becomes a member of its class: a method, or a getter (a Promise, or a local value).
for (const row of OPERATIONS) {
  if (row.own) continue; // set on each object by proxyOf
  const sideIn = (proxy) => {
    if (sides.get(proxy)?.on === row.on) return sides.get(proxy);
    throw new TypeError(`${row.where}: called on an object that is not a worker-form ${row.on}`);
  };
  const getters = {
    local() {
      const side = sideIn(this);
      if (row.checks) checkFresh(row, side);
      return side.local[row.name];
    },
    getter() {
      return promised(() => {
        const side = sideIn(this);
        return row.gone !== undefined && stale(row, side) ? Promise.resolve(row.gone) : callOf(row, side, []);
      });
    },
  };
  const method = {
    [row.name](...args) {
      return promised(() => (row.form === 'dispose' ? disposeOf : callOf)(row, sideIn(this), args));
    },
  }[row.name];
  // its length the parameters it takes, as the direct form's (and the trailing { transfer })
  Object.defineProperty(method, 'length', { value: (row.args ?? 0) + (row.options ? 1 : 0) });
  const member = getters[row.form] ? { get: getters[row.form] } : { value: method, writable: true };
  Object.defineProperty(CLASSES[row.on].prototype, row.name, { ...member, configurable: true });
}

// new URL('./worker_host.js', here) in Node's branch is not the pattern bundlers follow, so
// they take no second worker from it.
const here = import.meta.url;

async function startWorker() {
  if (isNode) {
    const { Worker } = await nodeBuiltin('worker_threads');
    return nodeWorker(Worker, new URL('./worker_host.js', here));
  }
  // Literal URL and options: the pattern bundlers follow, building worker_host.js as a worker.
  return new Worker(new URL('./worker_host.js', import.meta.url), { type: 'module' });
}

// A worker's first wait for its threads to start (Channel), and how many workers are tried.
const STALL_MS = 5000;
const START_ATTEMPTS = 3;

// options: createAttention's, checked already, with threads resolved to a number.
export async function createWorkerAttention({ threads, isa, locateFile, wasmBinary }) {
  // locateFile's answers, absolute in a browser (the worker resolves against its script); a
  // name it refuses is left out (the worker asks only for the build it loads).
  const base = isNode ? undefined : (globalThis.document?.baseURI ?? globalThis.location?.href);
  const answer = (f) => {
    try {
      const where = String(locateFile(f));
      return [[f, base ? new URL(where, base).href : where]];
    } catch {
      return [];
    }
  };
  const files = BUILDS.flatMap((build) => build.files); // asked here: a function cannot be posted
  const located = locateFile ? Object.fromEntries(files.flatMap(answer)) : undefined;
  // A worker whose threads stalled (Channel) is replaced by a new one, given twice as long.
  for (let attempt = 0; ; attempt++) {
    const channel = new Channel(await startWorker(), { stallMs: STALL_MS * 2 ** attempt });
    try {
      const local = await channel.send('createAttention', 'create', { threads, isa, located, wasmBinary });
      return proxyOf('attention', channel, undefined, local);
    } catch (e) {
      await channel.terminate();
      if (!channel.stalled || attempt + 1 === START_ATTEMPTS) throw e;
    }
  }
}
