// createAttention({ worker: true }): the same API with every call a Promise, run by a real
// instance in a Worker (browser) or worker_thread (Node) that runs worker_host.js. This side
// reads each call with the direct form's parser (the table of operations, operations.js), so
// its errors are thrown here as the direct form throws them, and posts the snapshot; the
// worker runs it and answers. Protocol, transfer rule and the undo of held calls:
// web/docs/loading.md#the-worker-form and worker_host.js.
import { BUILDS } from './builds.js';
import { isNode, nodeBuiltin, process } from './host.js';
import { buffersOf, OPERATIONS, operationsOn, SAVED_SHAPE } from './operations.js';
import {
  cacheForms,
  checkBoolean,
  checkCacheOption,
  DISPOSED,
  isArray,
  isRevoked,
  outChanged,
  typedArrayLength,
} from './validate.js';

// The files the loader may ask locateFile() about (builds.js). A function cannot cross
// postMessage, so the answers are asked here, up front, and sent over as a table.
const WASM_FILES = BUILDS.flatMap((v) => v.files);

// Error classes rebuilt by name; anything else arrives as a plain Error with the same message.
const ERROR_CLASSES = {
  Error,
  TypeError,
  RangeError,
  ReferenceError,
  SyntaxError,
  EvalError,
  URIError,
  RuntimeError: globalThis.WebAssembly?.RuntimeError,
};

// { name, message } from the worker -> an error of the same class and message, raised here.
function rebuildError({ name, message }) {
  const Class = ERROR_CLASSES[name] ?? Error;
  const error = new Class(message);
  if (!ERROR_CLASSES[name] && name) error.name = name;
  return error;
}

// The ArrayBuffer or SharedArrayBuffer behind a typed array, by the engine's own getter.
const bufferGetter = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(Uint8Array.prototype), 'buffer').get;
const bufferOf = (array) => Reflect.apply(bufferGetter, array, []);

// The worker and its requests. closed: dispose() was called; stalled: the worker's threads did
// not start within stallMs of its saying they were starting (createWorkerAttention starts a
// new worker).
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

  // -> a Promise of the worker's answer to op (a row's, or 'create') on target (the id of its
  // layer or cache) with args (plain data). transfer: args' ArrayBuffers; accept(answer): what
  // the call resolves to, or throws; hold: the call is held in the worker until accept decided.
  send(where, op, args, { target, transfer = false, accept = null, hold = false } = {}) {
    if (this.#broken) return Promise.reject(this.#broken);
    const id = this.#nextId++;
    try {
      this.#worker.postMessage({ id, op, target, args, hold }, transfer ? [...buffersOf(args)] : []);
    } catch (e) {
      return Promise.reject(new TypeError(`${where}: an argument cannot be sent to the worker: ${e.message}`));
    }
    if (isNode && this.#pending.size === 0) this.#worker.ref();
    return new Promise((resolve, reject) => this.#pending.set(id, { resolve, reject, accept, hold }));
  }

  // A held request's verdict (handled by the worker outside its queue of requests).
  #verdict(id, keep) {
    try {
      this.#worker.postMessage({ verdict: id, keep });
    } catch {
      // the worker is gone, and the call's effects with it
    }
  }

  #settle(id) {
    const request = this.#pending.get(id);
    this.#pending.delete(id);
    if (isNode && request && this.#pending.size === 0) this.#worker.unref();
    return request;
  }

  // Firefox (ESR 153) driven over WebDriver BiDi, as the tests drive it, sometimes never
  // returns from `new Worker()` called in a worker (in about 1 page load of 100): the worker
  // hangs for good, and with it its pool. A worker whose threads did not start within stallMs
  // is given up on.
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
    let accepted = value;
    try {
      if (request.accept) accepted = request.accept(value);
    } catch (e) {
      if (request.hold) this.#verdict(id, false);
      return request.reject(e);
    }
    if (request.hold) this.#verdict(id, true);
    request.resolve(accepted);
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

// A proxy of this form -> its side: { on, channel, id (of its layer or cache in the worker;
// undefined for the instance), local (its local values), disposed, token (its
// FinalizationRegistry entry), finished (the instance's dispose()) }.
const sides = new WeakMap();

// The error a call gets once what it is about was disposed, in the order the direct form
// checks (null: alive).
const STALE = {
  attention: (side, where) => (side.channel.closed ? DISPOSED.instance(where) : null),
  layer: (side, where) =>
    side.channel.closed ? DISPOSED.instance(where) : side.disposed ? DISPOSED.layer(where) : null,
  cache: (side, where) =>
    side.disposed ? DISPOSED.cache(where) : side.channel.closed ? DISPOSED.instance(where) : null,
};
function checkFresh(row, side) {
  const stale = STALE[row.on](side, row.where);
  if (stale) throw stale;
}

// Releases the worker's layer or cache when its proxy is garbage-collected without dispose().
const leftBehind = new FinalizationRegistry(({ channel, op, target }) => {
  if (!channel.closed) channel.send(op, op, [], { target }).catch(() => {});
});

// What createAttention({ worker: true }) resolves to, its layers and its caches, each named
// by its id in the worker; their members are made from the table of operations below.
class AsyncAttention {}
class AsyncMultiHeadAttention {}
class AsyncKvCache {}
const CLASSES = { attention: AsyncAttention, layer: AsyncMultiHeadAttention, cache: AsyncKvCache };

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

function sideOf(proxy, on, where) {
  const side = sides.get(proxy);
  if (side?.on !== on) throw new TypeError(`${where}: called on an object that is not a worker-form ${on}`);
  return side;
}

// options -> [options less its transfer key (undefined when nothing else is left), transfer].
// Anything but an object with a transfer key is passed on as it is, for parse to read.
function splitTransfer(where, options) {
  if (options === null || typeof options !== 'object' || isArray(options) || isRevoked(options)) return [options];
  if (!('transfer' in options)) return [options];
  const { transfer, ...rest } = options; // every getter runs once, here
  return [Object.keys(rest).length ? rest : undefined, checkBoolean(where, 'transfer', transfer)];
}

// A row's out column -> the result whose data is out's values.
const MAIN_OF = { output: (answer) => answer.output, answer: (answer) => answer };

// The answer to a call with out (out: the caller's array): its main result's values copied into
// out, which becomes its data; a TypeError when out's length changed while the call ran (a held
// call is then undone in the worker).
const setValues = Object.getPrototypeOf(Uint8Array.prototype).set; // the engine's own
function acceptOut(where, out, mainOf) {
  return (value) => {
    const t = mainOf(value);
    const count = typedArrayLength(t.data);
    const length = typedArrayLength(out);
    if (length !== count) throw outChanged(where, 'while the call ran', count, length);
    Reflect.apply(setValues, out, [t.data]);
    t.data = out;
    return value;
  };
}

// A 'method' row's call: read here by the row's parse, as the direct form reads it, then sent.
// out stays here (the worker fills a fresh array of its format, whose values come back into
// it); a cache of this form goes as its id in the worker.
function callOf(row, side, args) {
  const { where } = row;
  checkFresh(row, side);
  const given = Array.from({ length: row.args + (row.options === 'options' ? 1 : 0) }, (_, i) => args[i]);
  let transfer = false;
  if (row.options === 'options') [given[row.args], transfer = false] = splitTransfer(where, args[row.args]);
  if (row.options === 'transfer') transfer = splitTransfer(where, args[row.args] ?? {})[1] ?? false;
  const snapshot = row.parse ? row.parse(where, given, side.local) : given;
  checkFresh(row, side); // the arguments' getters may have disposed it
  const channel = side.channel;
  if (snapshot.refused) {
    // backward: the worker's saved forward words the error, or is the error
    const { refused } = snapshot;
    return channel.send(where, row.op, { refused: true }, { target: side.id }).then((shape) => {
      if (refused instanceof Error) refused.message = refused.message.replaceAll(SAVED_SHAPE, shape);
      throw refused;
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
    sent = { ...sent, out: { format: snapshot.out.format, count: typedArrayLength(snapshot.out.view) } };
    if (transfer && buffersOf(sent).has(bufferOf(out))) {
      throw new TypeError(
        `${where}: out shares its buffer with an argument that transfer: true sends to the worker, which would detach it: give out a buffer of its own, or leave transfer out`,
      );
    }
    const hold = row.hold === 'always' || (row.hold === 'cache' && cache !== undefined);
    held = { accept: acceptOut(where, out, MAIN_OF[row.out]), hold };
  }
  const answer = channel.send(where, row.op, sent, { target: side.id, transfer, ...held });
  return row.makes ? answer.then((id) => proxyOf(row.makes, channel, id, row.locals(snapshot))) : answer;
}

// A 'dispose' row. The instance's lets the calls already made finish, disposes the worker's
// instance (its layers and caches with it) and terminates the worker; a layer's or cache's
// frees its object in the worker once the calls made before it ran. Later calls reject; safe
// to call twice.
function disposeOf(row, side) {
  const channel = side.channel;
  if (row.on === 'attention') {
    if (!side.finished) {
      const done = channel.send(row.where, row.op, []);
      channel.closed = true;
      side.finished = done.catch(() => {}).then(() => channel.terminate());
    }
    return side.finished;
  }
  if (side.disposed) return Promise.resolve();
  side.disposed = true;
  leftBehind.unregister(side.token);
  return channel.closed ? Promise.resolve() : channel.send(row.where, row.op, [], { target: side.id }).then(() => {});
}

// Runs fn, turning what it throws into a rejected Promise: every call of this form rejects,
// never throws.
function promised(fn) {
  try {
    return fn();
  } catch (e) {
    return Promise.reject(e);
  }
}

// Each row becomes a member of its class's prototype: a method returning a Promise, or a getter
// (a Promise, or a local value).
for (const row of OPERATIONS) {
  const prototype = CLASSES[row.on].prototype;
  if (row.own) continue; // set on each object by proxyOf
  let member;
  if (row.form === 'local') {
    member = function () {
      const side = sideOf(this, row.on, row.where);
      if (row.checks) checkFresh(row, side);
      return side.local[row.name];
    };
  } else if (row.form === 'getter') {
    member = function () {
      return promised(() => {
        const side = sideOf(this, row.on, row.where);
        if (row.gone !== undefined && STALE[row.on](side, row.where)) return Promise.resolve(row.gone);
        return callOf(row, side, []);
      });
    };
  } else {
    const method = {
      [row.name](...args) {
        return promised(() => {
          const side = sideOf(this, row.on, row.where);
          return row.form === 'dispose' ? disposeOf(row, side) : callOf(row, side, args);
        });
      },
    }[row.name];
    // its length the parameters it takes, as the direct form's (and the trailing { transfer })
    const length = (row.args ?? 0) + (row.options ? 1 : 0);
    Object.defineProperty(method, 'length', { value: length, configurable: true });
    Object.defineProperty(prototype, row.name, { value: method, writable: true, configurable: true });
    continue;
  }
  Object.defineProperty(prototype, row.name, { get: member, configurable: true });
}

// This module's URL, for the worker's script in Node: new URL('./worker_host.js', here) is
// not the pattern bundlers follow (new Worker(new URL('<literal>', import.meta.url), <literal
// options>)), so they take no second worker from it. Options that are not literal stop Vite
// 5's build ("unable to parse the worker options"), and webpack takes a URL that is not
// literal for a folder's files (its "Critical dependency" warning).
const here = import.meta.url;

async function startWorker() {
  if (isNode) {
    const { Worker } = await nodeBuiltin('worker_threads');
    // The process's flags, less --input-type (for `node -e` code only; the worker is a file).
    const execArgv = process.execArgv.filter((flag) => !flag.startsWith('--input-type'));
    const script = new URL('./worker_host.js', here);
    try {
      return new Worker(script, { execArgv });
    } catch (e) {
      // Node refuses V8's flags in a worker's execArgv (--experimental-wasm-relaxed-simd among
      // them), naming them after the last ': '; they apply to the whole process, the worker
      // included, so the worker starts without them.
      if (e?.code !== 'ERR_WORKER_INVALID_EXEC_ARGV') throw e;
      const refused = new Set(String(e.message).split(': ').pop().split(/,\s*/));
      return new Worker(script, { execArgv: execArgv.filter((flag) => !refused.has(flag)) });
    }
  }
  // A literal URL and literal options with { type: 'module' }: the pattern bundlers follow,
  // building worker_host.js and its imports into the app as a worker script of its own.
  return new Worker(new URL('./worker_host.js', import.meta.url), { type: 'module' });
}

// A worker's first wait for its threads to start (Channel), and how many workers are tried.
const STALL_MS = 5000;
const START_ATTEMPTS = 3;

// options: createAttention's, checked already, with threads resolved to a number.
export async function createWorkerAttention({ threads, isa, locateFile, wasmBinary }) {
  // locateFile's answers as the worker must see them: in a browser absolute URLs (the worker
  // would resolve a relative one against worker_host.js), in Node paths as given. A name
  // locateFile refuses is left out: the worker asks only for the build it loads.
  const base = isNode ? undefined : (globalThis.document?.baseURI ?? globalThis.location?.href);
  const answer = (f) => {
    try {
      const where = String(locateFile(f));
      return [[f, base ? new URL(where, base).href : where]];
    } catch {
      return [];
    }
  };
  const located = locateFile ? Object.fromEntries(WASM_FILES.flatMap(answer)) : undefined;
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
