// createAttention({ worker: true }): the same API with every call returning a Promise,
// computed by a real instance in a dedicated Worker (browser) or worker_thread (Node) that
// runs worker_host.js. This file is the main side: proxy objects, request ids, errors rebuilt.
//
//   main thread                                   worker (worker_host.js)
//   attn.attention(q, k, v, o) -> { id, op, args } -> real.attention(q, k, v, o)
//   Promise resolves / rejects  <- { id, value } or { id, error: { name, message } }
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
import { STAND_IN } from './stand_in.js';
import { checkBoolean, isArray, isDetached, isRevoked, typedArrayLength, typedArrayName } from './validate.js';
import { VARIANTS } from './variants.js';

// The messages the synchronous form throws after dispose() (runtime.js, multi_head.js).
const instanceDisposed = (where) =>
  new TypeError(`${where}: this attention instance was disposed; create a new one with createAttention()`);
const layerDisposed = (where) => new TypeError(`${where}: this layer was disposed`);
const cacheDisposed = (where) => new TypeError(`${where}: this cache was disposed`);

// The files the loader may ask locateFile() about (variants.js). A function cannot cross
// postMessage, so the answers are asked here, up front, and sent over as a table.
const WASM_FILES = VARIANTS.flatMap((v) => v.files);

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

// A cache proxy of this form -> { channel, id, disposed }: what encode() sends for it.
const cacheRefs = new WeakMap();

// A value for postMessage to `channel`'s worker: objects and arrays copied, functions, symbols,
// revoked Proxies and typed arrays with no bytes left replaced by stand-ins, and cache proxies
// by references to their cache (worker_host.js turns each back into a function, a symbol, a
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
  const cache = cacheRefs.get(value);
  if (cache) return { [STAND_IN]: 'cache', id: cache.id, own: cache.channel === channel, disposed: cache.disposed };
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
// has its values copied into out and out as its data; a TypeError when out's buffer was
// detached or shrunk while the call ran (a held call is then undone in the worker).
const setValues = Object.getPrototypeOf(Uint8Array.prototype).set; // the engine's own
function acceptOut(where, out, mainOf) {
  return (value) => {
    const t = mainOf(value);
    if (typedArrayLength(out) !== typedArrayLength(t.data)) {
      throw new TypeError(`${where}: out's buffer was detached or shrunk while the call ran`);
    }
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

// Releases the worker's layer or cache (op 'disposeLayer' or 'disposeCache', target its id)
// when its proxy is garbage-collected without dispose().
const leftBehind = new FinalizationRegistry(({ channel, op, target }) => {
  if (!channel.closed) channel.send('dispose', op, [], { target }).catch(() => {});
});

// A layer in the worker, named by its id there.
class AsyncMultiHeadAttention {
  #channel;
  #id;
  #token = {};
  #disposed = false;

  constructor(channel, id, config) {
    this.#channel = channel;
    this.#id = id;
    this.config = Object.freeze(config);
    leftBehind.register(this, { channel, op: 'disposeLayer', target: id }, this.#token);
  }

  // The checks the synchronous layer makes first, then the request.
  // held: { out, accept, hold } for a call with out (Channel.send).
  #call(where, op, args, transfer, held = {}) {
    const stale = () => {
      if (this.#channel.closed) return instanceDisposed(where);
      return this.#disposed ? layerDisposed(where) : null;
    };
    return this.#channel.send(where, op, args, { target: this.#id, transfer, stale, ...held });
  }

  // options.cache: a cache of this form (AsyncKvCache), decoding as the synchronous layer does.
  forward(x, options) {
    const where = 'multiHeadAttention.forward';
    return promised(() => {
      const t = takeOptions(where, options);
      // a forward always replaces the saved forward (or appends to a cache): held
      const held = t.out ? { out: t.out, accept: acceptOut(where, t.out, (r) => r.output), hold: true } : {};
      return this.#call(where, 'forward', t.options === undefined ? [x] : [x, t.options], t.transfer, held);
    });
  }

  // backward(dOutput, { transfer }) and step(grads, learningRate, { transfer }): this form
  // alone has the options argument, for the transfer rule.
  backward(dOutput, options) {
    const where = 'multiHeadAttention.backward';
    return promised(() => this.#call(where, 'backward', [dOutput], takeOptions(where, options ?? {}).transfer));
  }

  step(grads, learningRate, options) {
    const where = 'multiHeadAttention.step';
    return promised(() => this.#call(where, 'step', [grads, learningRate], takeOptions(where, options ?? {}).transfer));
  }

  // A Promise of the current weights (copies).
  get weights() {
    return this.#call('multiHeadAttention.weights', 'weights', [], false);
  }

  async dispose() {
    if (this.#disposed) return;
    this.#disposed = true;
    leftBehind.unregister(this.#token);
    if (!this.#channel.closed)
      await this.#channel.send('multiHeadAttention.dispose', 'disposeLayer', [], { target: this.#id });
  }
}

// A key/value cache in the worker (kv_cache.js), named by its id there: the synchronous
// cache's members, length and the methods giving Promises. Passed as { cache } to this form's
// attention() and layers' forward(), it stands for its cache in the worker.
class AsyncKvCache {
  #channel;
  #ref; // { channel, id, disposed }, cacheRefs' entry
  #config;
  #token = {};

  constructor(channel, id, config) {
    this.#channel = channel;
    this.#ref = { channel, id, disposed: false };
    this.#config = Object.freeze(config);
    cacheRefs.set(this, this.#ref);
    leftBehind.register(this, { channel, op: 'disposeCache', target: id }, this.#token);
  }

  get capacity() {
    return this.#config.capacity;
  }
  get batch() {
    return this.#config.batch;
  }
  get kvHeads() {
    return this.#config.kvHeads;
  }
  get dK() {
    return this.#config.dK;
  }
  get dV() {
    return this.#config.dV;
  }
  get dtype() {
    return this.#config.dtype;
  }

  // The checks the synchronous cache makes first (disposed, then the instance), then the request.
  #call(what, op, args = []) {
    const where = `kvCache.${what}`;
    const stale = () => {
      if (this.#ref.disposed) return cacheDisposed(where);
      return this.#channel.closed ? instanceDisposed(where) : null;
    };
    return this.#channel.send(where, op, args, { target: this.#ref.id, stale });
  }

  // A Promise of the rows filled in each head once the calls made before it ran (0 once the
  // cache or its instance was disposed).
  get length() {
    const gone = this.#ref.disposed || this.#channel.closed;
    return gone ? Promise.resolve(0) : this.#call('length', 'cacheLength');
  }

  truncate(n) {
    return this.#call('truncate', 'truncate', [n]);
  }

  reset() {
    return this.#call('reset', 'reset');
  }

  // A Promise of { key, value }, the synchronous cache's read() once the calls made before it ran.
  read() {
    return this.#call('read', 'readCache');
  }

  // Frees the cache in the worker once the calls made before it ran; safe to call twice.
  async dispose() {
    if (this.#ref.disposed) return;
    this.#ref.disposed = true;
    leftBehind.unregister(this.#token);
    if (!this.#channel.closed)
      await this.#channel.send('kvCache.dispose', 'disposeCache', [], { target: this.#ref.id });
  }
}

// What createAttention({ worker: true }) resolves to.
class AsyncAttention {
  #channel;
  #backend;
  #finished = null;

  constructor(channel, backend) {
    this.#channel = channel;
    this.#backend = Object.freeze(backend);
  }

  // The worker's build, as the synchronous form's backend (known once the worker started).
  get backend() {
    if (this.#channel.closed) throw instanceDisposed('backend');
    return this.#backend;
  }

  // Sends where(...args, options) with options' transfer key taken out; with out, the
  // answer's main result (mainOf(answer)) goes into it.
  #call(where, args, options, mainOf = (answer) => answer) {
    const stale = () => (this.#channel.closed ? instanceDisposed(where) : null);
    return promised(() => {
      if (stale()) throw stale();
      const t = takeOptions(where, options);
      return this.#channel.send(where, where, t.options === undefined ? args : [...args, t.options], {
        transfer: t.transfer,
        stale,
        // held when it appends to a cache; other calls change nothing in the worker
        ...(t.out
          ? { out: t.out, accept: acceptOut(where, t.out, mainOf), hold: cacheRefs.has(t.options?.cache) }
          : {}),
      });
    });
  }

  attention(q, k, v, options) {
    return this.#call('attention', [q, k, v], options, (r) => r.output);
  }

  attentionBackward(q, k, v, dOutput, options) {
    return this.#call('attentionBackward', [q, k, v, dOutput], options);
  }

  matmul(a, b, options) {
    return this.#call('matmul', [a, b], options);
  }

  memory() {
    return this.#call('memory', []);
  }

  // A cache in the worker, for attention(q, k, v, { cache }) and layers' forward(x, { cache }).
  async kvCache(config) {
    const { id, config: cacheConfig } = await this.#call('kvCache', [config]);
    return new AsyncKvCache(this.#channel, id, cacheConfig);
  }

  // config may also say { transfer: true }, for its weights.
  async multiHeadAttention(config) {
    const { id, config: layerConfig } = await this.#call('multiHeadAttention', [], config);
    return new AsyncMultiHeadAttention(this.#channel, id, layerConfig);
  }

  // Lets the calls already made finish, disposes the worker's instance (and its layers) and
  // terminates the worker. Later calls reject; safe to call twice.
  dispose() {
    if (!this.#finished) {
      const channel = this.#channel;
      const done = channel.send('dispose', 'dispose', []);
      channel.closed = true;
      this.#finished = done.catch(() => {}).then(() => channel.terminate());
    }
    return this.#finished;
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
      const backend = await channel.send('createAttention', 'create', [{ threads, isa, located, wasmBinary }]);
      return new AsyncAttention(channel, backend);
    } catch (e) {
      await channel.terminate();
      if (!channel.stalled || attempt + 1 === START_ATTEMPTS) throw e;
    }
  }
}
