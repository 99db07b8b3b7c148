// createAttention({ worker: true }): the same API with every call returning a Promise,
// computed by a real instance in a dedicated Worker (browser) or worker_thread (Node) that
// runs worker_host.js. This file is the main side: proxy objects, request ids, errors rebuilt.
//
//   main thread                                   worker (worker_host.js)
//   attn.attention(q, k, v, o) -> { id, op, args } -> real.attention(q, k, v, o)
//   Promise resolves / rejects  <- { id, value } or { id, error: { name, message } }
//
// The classes' members are made from the table of operations (operations.js), one row per
// member of the direct form: what it sends, what it transfers, when it is held (below).
//
// The worker handles requests one at a time, in the order they were sent, so concurrent
// calls resolve as if made one after the other. Layers and caches live in the worker, named
// by id; a cache proxy among a call's arguments goes as a reference to its cache there.
//
// Transfer rule. Results always come back transferred (each result array is fresh, owned by
// nobody in the worker). Inputs are copied unless the call's options say { transfer: true }:
// then the ArrayBuffer behind every typed array among the call's arguments is transferred,
// and detached here (the whole buffer, also when the array is a view on part of it).
// SharedArrayBuffers are shared, never transferred.
//
// out (matmul, attention, a layer's forward): the caller's array stays here, never sent nor
// transferred. The worker gets a fresh array of its type and length in its place, checks it
// as the synchronous form checks out, and sends the result back in it (transferred); the
// result's values are then copied into the caller's array, which becomes the result's data.
// This keeps one surface with the synchronous form; it saves no allocation here. An out on a
// buffer that transfer: true would send is refused here, before anything is sent.
//
// Held requests. What only this side can check, once the worker answered (out still there,
// not detached or shrunk by the caller while the call ran), decides whether the call
// happened. A request with out that changes the worker's state (a layer's forward, a call
// over a cache) goes as { id, op, target, args, hold: true }: the worker runs it keeping what
// undoes it (the lengths of the caches it appends to; a layer's previous saved forward),
// answers, and runs nothing else until this side's verdict,
// { verdict: id, keep }, sent as soon as the answer was checked: keep, or undo it. Requests
// sent meanwhile wait in the worker's queue, so they see the call kept or undone, in order.
// An error answer needs no verdict: a failed call changed nothing.

import { isNode, nodeBuiltin, process } from './host.js';
import { OPERATIONS, operationsOn } from './operations.js';
import { STAND_IN } from './stand_in.js';
import {
  cacheForms,
  checkBoolean,
  isArray,
  isDetached,
  isRevoked,
  outChanged,
  typedArrayLength,
  typedArrayName,
} from './validate.js';
import { BUILDS } from './builds.js';

// The messages the synchronous form throws after dispose() (runtime.js, multi_head.js).
const instanceDisposed = (where) =>
  new TypeError(`${where}: this attention instance was disposed; create a new one with createAttention()`);
const layerDisposed = (where) => new TypeError(`${where}: this layer was disposed`);
const cacheDisposed = (where) => new TypeError(`${where}: this cache was disposed`);

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

// A value for postMessage to `channel`'s worker: objects and arrays copied, functions, symbols,
// revoked Proxies, typed arrays with no bytes left and caches of the direct form replaced by
// stand-ins, and cache proxies by references to their cache (worker_host.js turns each back into a function, a symbol, a
// revoked Proxy, an empty typed array or a cache, so that its checks throw the message they
// throw here). Typed arrays are kept, their ArrayBuffers added to `buffers` for transfer.
// Maps, Dates and the like go as structured cloning copies them; what it cannot copy (a
// WeakMap, a Promise, a DOM node: none of which the direct form reads but to refuse) goes as
// a stand-in named like it (describe() words it the same).
function encode(value, buffers, channel, depth = 0) {
  if (typeof value === 'function') return { [STAND_IN]: 'function' };
  if (typeof value === 'symbol') return { [STAND_IN]: 'symbol' };
  if (value === null || typeof value !== 'object' || depth > 8) return value;
  if (isRevoked(value)) return { [STAND_IN]: 'revoked' };
  const cache = sides.get(value);
  if (cache?.on === 'cache')
    return { [STAND_IN]: 'cache', id: cache.id, own: cache.channel === channel, disposed: cache.disposed };
  if (cacheForms.get(value) === 'direct') return { [STAND_IN]: 'directCache' }; // for its message
  if (ArrayBuffer.isView(value)) {
    // a typed array with no bytes left (its buffer detached, or shrunk under it) cannot be
    // cloned: the host makes an empty one, detached like it, for its checks to name
    const type = typedArrayName(value);
    if (type && typedArrayLength(value) === 0) return { [STAND_IN]: 'empty', type, detached: isDetached(value.buffer) };
    if (value.buffer instanceof ArrayBuffer && value.buffer.byteLength > 0) buffers.add(value.buffer);
    return value;
  }
  const lookalike = lookalikeType(value);
  if (lookalike) return { [STAND_IN]: 'lookalike', type: lookalike };
  if (isArray(value)) return value.map((v) => encode(v, buffers, channel, depth + 1));
  if (Object.prototype.toString.call(value) !== '[object Object]') return cloneable(value) ? value : opaque(value);
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, encode(v, buffers, channel, depth + 1)]));
}

// Whether structured cloning copies value (an object that is neither plain, an Array nor a
// typed array). ArrayBuffers always can; anything else is tried.
function cloneable(value) {
  if (value instanceof ArrayBuffer || value instanceof (globalThis.SharedArrayBuffer ?? ArrayBuffer)) return true;
  try {
    structuredClone(value);
    return true;
  } catch {
    return false;
  }
}

// The name of the typed array type an object only looks like (a Proxy of a typed array, or an
// object inheriting from a typed array's prototype), else undefined: structured cloning would
// copy it as a plain object, which the direct form's checks word otherwise.
const TypedArray = Object.getPrototypeOf(Uint8Array);
function lookalikeType(value) {
  try {
    if (!(value instanceof TypedArray)) return undefined;
    const name = Object.getPrototypeOf(value)?.constructor?.name;
    return typeof name === 'string' ? name : undefined;
  } catch {
    return undefined; // a trap that throws
  }
}

// The stand-in for an object structured cloning cannot copy: its constructor's name.
function opaque(value) {
  let name;
  try {
    name = value.constructor?.name;
  } catch {
    name = undefined; // a getter that throws
  }
  return { [STAND_IN]: 'opaque', name: typeof name === 'string' ? name : undefined };
}

// options -> { options without its transfer key (undefined when nothing else is left),
// transfer, out }. out: the caller's typed array for the result when options hold one with
// values, replaced in what is sent by a stand-in of its type and length (see out above);
// else null. Anything but an object is passed on untouched, for the worker's checks to report.
function takeOptions(where, options) {
  if (
    options === null ||
    typeof options !== 'object' ||
    isArray(options) ||
    isRevoked(options) ||
    !('transfer' in options || 'out' in options)
  ) {
    return { options, transfer: false, out: null };
  }
  const { transfer, ...rest } = options; // every getter runs once, here
  let out = null;
  const type = typedArrayName(rest.out);
  if (type && typedArrayLength(rest.out) > 0) {
    out = rest.out;
    rest.out = { [STAND_IN]: 'out', type, length: typedArrayLength(out) };
  }
  return {
    options: Object.keys(rest).length ? rest : undefined,
    transfer: checkBoolean(where, 'transfer', transfer),
    out,
  };
}

// The check of the answer to a call with out (Channel.send's accept; out: takeOptions'
// caller's array): its main result (mainOf(answer), a tensor of out's type and length, fresh)
// has its values copied into out and out as its data; a TypeError when out's length changed
// while the call ran: its buffer detached or shrunk, or a resizable one grown under a
// length-tracking out (a held call is then undone in the worker).
// A row's out column -> where its answer's main result is, whose values go into out.
const MAIN_OF = { output: (answer) => answer.output, answer: (answer) => answer };

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

// The ArrayBuffer or SharedArrayBuffer behind a typed array, by the engine's own getter.
const bufferGetter = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(Uint8Array.prototype), 'buffer').get;
const bufferOf = (array) => Reflect.apply(bufferGetter, array, []);

// The worker and its requests: send(where, op, args) -> Promise of the worker's answer.
// closed: dispose() was called; every later call rejects as the synchronous form throws.
// stalled: the worker's threads did not start within stallMs of its saying they were
// starting; every call rejects (createWorkerAttention starts a new worker).
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

  // where: the public entry, for errors; op: the worker's operation; target: the id of the
  // layer or cache it applies to; transfer: send the arguments' ArrayBuffers instead of copies;
  // stale(): the error the call gets when what it is about (the instance, the layer, the
  // cache) was disposed, else null, asked before the arguments are read and again once they
  // were sent: their getters (run by encode, and past its depth by postMessage's cloning) may
  // dispose it. Then the worker refuses the request, and its answer finds no one waiting.
  // out: the caller's array for the result (takeOptions), refused up front when transfer would
  // detach its buffer; accept(answer): with out, the call resolves to what it returns or
  // rejects with what it throws; hold: the call changes the worker's state, and is held (see
  // above): kept when accept returns, undone when it throws.
  // A Promise always: what the getters throw rejects it.
  send(
    where,
    op,
    args,
    { target, transfer = false, stale = () => null, out = null, accept = null, hold = false } = {},
  ) {
    const buffers = new Set();
    let encoded;
    try {
      const before = stale() ?? this.#broken;
      if (before) throw before;
      encoded = encode(args, buffers, this);
      if (out && transfer && buffers.has(bufferOf(out))) {
        throw new TypeError(
          `${where}: out shares its buffer with an argument that transfer: true sends to the worker, which would detach it: give out a buffer of its own, or leave transfer out`,
        );
      }
    } catch (e) {
      return Promise.reject(e);
    }
    const id = this.#nextId++;
    try {
      this.#worker.postMessage({ id, op, target, args: encoded, hold }, transfer ? [...buffers] : []);
    } catch (e) {
      return Promise.reject(new TypeError(`${where}: an argument cannot be sent to the worker: ${e.message}`));
    }
    const after = stale();
    if (after) {
      if (hold) this.#verdict(id, false); // in case the worker runs it after all
      return Promise.reject(after);
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
  // returns from `new Worker()` called in a worker (the first one after a page load, in about
  // 1 load of 100, any worker script): the worker's thread hangs there for good, and with it
  // the pool its threaded build starts. The pool's workers take milliseconds to start; a worker
  // whose threads did not start within stallMs is given up on.
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
    if (error) request.reject(rebuildError(error));
    else if (!request.accept) request.resolve(value);
    else {
      let accepted;
      try {
        accepted = request.accept(value);
      } catch (e) {
        if (request.hold) this.#verdict(id, false);
        request.reject(e);
        return;
      }
      if (request.hold) this.#verdict(id, true);
      request.resolve(accepted);
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

// Runs fn, turning what it throws into a rejected Promise: every call of this form rejects,
// never throws.
function promised(fn) {
  try {
    return fn();
  } catch (e) {
    return Promise.reject(e);
  }
}

// A proxy of this form -> its side: { on, channel, id (of its layer or cache in the worker;
// undefined for the instance), local (the values its 'local' rows read), disposed, token (its
// FinalizationRegistry entry), finished (the instance's dispose()) }.
const sides = new WeakMap();

// Each class's prefix for errors ('kvCache.read') and the error a call gets once what it is
// about was disposed, in the order the synchronous form checks (null: alive).
const KINDS = {
  attention: {
    where: '',
    stale: (side, where) => (side.channel.closed ? instanceDisposed(where) : null),
  },
  layer: {
    where: 'multiHeadAttention.',
    stale: (side, where) => {
      if (side.channel.closed) return instanceDisposed(where);
      return side.disposed ? layerDisposed(where) : null;
    },
  },
  cache: {
    where: 'kvCache.',
    stale: (side, where) => {
      if (side.disposed) return cacheDisposed(where);
      return side.channel.closed ? instanceDisposed(where) : null;
    },
  },
};

// Releases the worker's layer or cache (its dispose row's op, target its id) when its proxy is
// garbage-collected without dispose().
const leftBehind = new FinalizationRegistry(({ channel, op, target }) => {
  if (!channel.closed) channel.send('dispose', op, [], { target }).catch(() => {});
});

// The classes of this form; their members are made from the table (operations.js) below.

// What createAttention({ worker: true }) resolves to.
class AsyncAttention {}
// A layer in the worker, named by its id there.
class AsyncMultiHeadAttention {}
// A key/value cache in the worker (kv_cache.js), named by its id there. Passed as { cache } to
// this form's attention() and layers' forward(), it stands for its cache in the worker.
class AsyncKvCache {}
const CLASSES = { attention: AsyncAttention, layer: AsyncMultiHeadAttention, cache: AsyncKvCache };

// A new proxy of class `on` for the object `id` in channel's worker, with its local values.
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

// A 'method' row's call: the checks the synchronous form makes first, the arguments as the
// row says (options' transfer and out taken out), then the request; a Promise always.
function callOf(row, where, side, args) {
  const stale = () => KINDS[row.on].stale(side, where);
  const before = stale();
  if (before) throw before;
  const sent = Array.from({ length: row.args }, (_, i) => args[i]);
  let transfer = false;
  let held = {};
  if (row.options === 'transfer') {
    transfer = takeOptions(where, args[row.args] ?? {}).transfer;
  } else if (row.options === 'options') {
    const t = takeOptions(where, args[row.args]);
    transfer = t.transfer;
    if (t.options !== undefined) sent.push(t.options);
    if (t.out) {
      const mainOf = MAIN_OF[row.out];
      const overCache = row.hold === 'cache' && sides.get(t.options?.[row.cacheOption])?.on === 'cache';
      held = { out: t.out, accept: acceptOut(where, t.out, mainOf), hold: row.hold === 'always' || overCache };
    }
  }
  const answer = side.channel.send(where, row.op, sent, { target: side.id, transfer, stale, ...held });
  return row.makes ? answer.then(({ id, local }) => proxyOf(row.makes, side.channel, id, local)) : answer;
}

// A 'dispose' row. The instance's lets the calls already made finish, disposes the worker's
// instance (its layers and caches with it) and terminates the worker; a layer's or cache's
// frees its object in the worker once the calls made before it ran. Later calls reject; safe
// to call twice.
function disposeOf(row, where, side) {
  const channel = side.channel;
  if (row.on === 'attention') {
    if (!side.finished) {
      const done = channel.send(where, row.op, []);
      channel.closed = true;
      side.finished = done.catch(() => {}).then(() => channel.terminate());
    }
    return side.finished;
  }
  if (side.disposed) return Promise.resolve();
  side.disposed = true;
  leftBehind.unregister(side.token);
  return channel.closed ? Promise.resolve() : channel.send(where, row.op, [], { target: side.id }).then(() => {});
}

// Each row becomes a member of its class's prototype: a method returning a Promise, or a getter
// (a Promise, or a local value).
for (const row of OPERATIONS) {
  const where = KINDS[row.on].where + row.name;
  const prototype = CLASSES[row.on].prototype;
  if (row.own) continue; // set on each object by proxyOf
  if (row.form === 'local') {
    const get = function () {
      const side = sideOf(this, row.on, where);
      if (row.checks) {
        const stale = KINDS[row.on].stale(side, where);
        if (stale) throw stale;
      }
      return side.local[row.name];
    };
    Object.defineProperty(prototype, row.name, { get, configurable: true });
  } else if (row.form === 'getter') {
    const get = function () {
      return promised(() => {
        const side = sideOf(this, row.on, where);
        if (row.gone !== undefined && KINDS[row.on].stale(side, where)) return Promise.resolve(row.gone);
        return callOf(row, where, side, []);
      });
    };
    Object.defineProperty(prototype, row.name, { get, configurable: true });
  } else {
    const member = {
      [row.name](...args) {
        return promised(() => {
          const side = sideOf(this, row.on, where);
          return row.form === 'dispose' ? disposeOf(row, where, side) : callOf(row, where, side, args);
        });
      },
    }[row.name];
    // its length the parameters it takes, as the direct form's (and the trailing { transfer })
    const length = (row.args ?? 0) + (row.options ? 1 : 0);
    Object.defineProperty(member, 'length', { value: length, configurable: true });
    Object.defineProperty(prototype, row.name, { value: member, writable: true, configurable: true });
  }
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
      const local = await channel.send('createAttention', 'create', [{ threads, isa, located, wasmBinary }]);
      return proxyOf('attention', channel, undefined, local);
    } catch (e) {
      await channel.terminate();
      if (!channel.stalled || attempt + 1 === START_ATTEMPTS) throw e;
    }
  }
}
