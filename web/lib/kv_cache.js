// A key/value cache in wasm memory (wa::KvCache, cpp/include/wa/kv_cache.h), for decoding a
// few tokens at a time: keys [B,Hkv,capacity,dK] and values [B,Hkv,capacity,dV], of which
// rows [0, length) of each head are filled, kept in the panels attention reads (so attending
// never copies the cache). attention(q, k, v, { cache }) appends k and v (only the new rows
// are written) and attends over all of it.
//
// dtype: what each kept key and value is; NaN and ±Infinity are refused (RangeError).
//   'float32': every finite float, 24 significant bits.
//   'float16': IEEE binary16 rounded to nearest even, half the bytes: |x| <= 65504 (beyond, a
//     RangeError naming the 'float16' cache), 11 significant bits (error <= 2^-11·|x|) from
//     2^-14 ≈ 6.1e-5 up; below, subnormals in steps of 2^-24 ≈ 6e-8 (fewer bits the smaller:
//     1e-6 keeps about 4), and |x| <= 2^-25 ≈ 3e-8 becomes 0.
//   'int8': each row in blocks of 32 along d, a block stored as int8 steps of its scale
//     max|x|/127 rounded up to a bfloat16 (llama.cpp's q8_0 with float32's exponent range in
//     the scale), 0.27× the bytes: every finite x, error <= max|x|/252 of its block (+ 2^-134
//     for blocks below 127·2^-126 ≈ 1.5e-36, whose scale is subnormal).
// The kernels read either in place (widening in registers); reads give float32.
//
// Ownership: the cache owns its wasm memory until dispose(); a cache collected without
// dispose() gets the same from a finalizer. It keeps the instance that made it alive.
import { ErrorKind, heads4d, throwIfFailed } from './binding.js';
import { formatBytes } from './heap.js';
import { Owned } from './owned.js';
import {
  cacheForms,
  checkCacheOption,
  checkInteger,
  checkOneOf,
  checkOptions,
  checkPositiveInteger,
  disposedError,
} from './validate.js';
import { plainTensor as tensor } from './tensor.js';

// The cache element types, one row each in wa::KvType's order (the index is what the core
// takes; tests/js/package/kv_dtypes.test.mjs holds the table to the core): the dtype, and the
// bytes it keeps per row of d values, its panels' padding aside (int8: with its 2-byte scales,
// one per 32): what a step reads per token. What a cache holds in all is cacheBytes().
const KV_TYPES = [
  { dtype: 'float32', rowBytes: (d) => 4 * d },
  { dtype: 'int8', rowBytes: (d) => d + 2 * Math.ceil(d / 32) },
  { dtype: 'float16', rowBytes: (d) => 2 * d },
];
export const KV_DTYPES = KV_TYPES.map((t) => t.dtype);
// dtype (one of KV_DTYPES) -> its wa::KvType value
export const kvTypeIndex = (dtype) => KV_DTYPES.indexOf(dtype);
export const rowBytes = (dtype, d) => KV_TYPES[kvTypeIndex(dtype)].rowBytes(d);

// The largest size the core takes (its sizes are uint32).
const MAX_SIZE = 2 ** 32 - 1;

// Bytes a cache of these sizes keeps in wasm memory, padding and scales included: the core's
// own count per (sequence, kv head), wa::KvCache::head_bytes, times batch · kvHeads. Infinity
// when one head alone passes wasm32's 4 GB.
function cacheBytes(module, { batch, kvHeads, dK, dV, capacity, dtype }) {
  if (Math.max(capacity, dK, dV) > MAX_SIZE) return Infinity;
  const head = module.kvCacheHeadBytes(capacity, dK, dV, kvTypeIndex(dtype));
  return head < 0 ? Infinity : head * batch * kvHeads;
}

const internals = new WeakMap(); // KvCache -> its state, for attention() (cacheInternals)

// config { batch, kvHeads, dK, dV, capacity }, each a positive integer, and dtype (KV_DTYPES,
// 'float32' when left out), read once -> { batch, kvHeads, dK, dV, capacity, dtype }.
export function parseCacheConfig(where, config) {
  if (config === undefined) throw new TypeError(`${where}: needs { batch, kvHeads, dK, dV, capacity }`);
  const o = checkOptions(where, config, ['batch', 'kvHeads', 'dK', 'dV', 'capacity', 'dtype']);
  for (const name of ['batch', 'kvHeads', 'dK', 'dV', 'capacity']) checkPositiveInteger(where, name, o[name]);
  const { batch, kvHeads, dK, dV, capacity, dtype = 'float32' } = o;
  checkOneOf(where, 'dtype', dtype, KV_DTYPES);
  return { batch, kvHeads, dK, dV, capacity, dtype };
}

export class KvCache {
  #state;

  // c: parseCacheConfig's, on a live runtime rt.
  constructor(rt, c) {
    const where = 'kvCache';
    const { batch, kvHeads, dK, dV, capacity, dtype } = c;
    // Refused before the core allocates: a block larger than what wasm memory has left fails
    // there too, with a message that cannot say what did not fit.
    const what = `${where}: keys [${batch},${kvHeads},${capacity},${dK}] and values [${batch},${kvHeads},${capacity},${dV}]`;
    const bytes = cacheBytes(rt.module, { batch, kvHeads, dK, dV, capacity, dtype });
    if (bytes === Infinity) throw new RangeError(`${what} needs more than 4 GB, more than wasm memory can hold (2 GB)`);
    // (a batch or kvHeads past the core's uint32 is past 2 GB: every head takes bytes)
    rt.heap.checkRoom(bytes, what);
    const handle = rt.heap.scoped(where, (s) => {
      const out = s.alloc(4, 'the handle');
      const status = rt.module.kvCacheCreate(batch, kvHeads, dK, dV, capacity, kvTypeIndex(dtype), out);
      // under room() yet not one free block that large
      if (status.kind === ErrorKind.outOfMemory)
        throw new RangeError(`${what} needs ${formatBytes(bytes)} and wasm memory has no room left for it`);
      throwIfFailed(where, status);
      return new Uint32Array(rt.heap.buffer(), out, 1)[0];
    });
    const module = rt.module;
    const owned = new Owned(this, rt);
    owned.onRelease(() => module.kvCacheDestroy(handle));
    this.#state = {
      rt,
      owned,
      handle,
      batch,
      kvHeads,
      dK,
      dV,
      capacity,
      dtype,
      get disposed() {
        return owned.released;
      },
      length: () => module.kvCacheLength(handle),
    };
    internals.set(this, this.#state);
    cacheForms.set(this, 'direct');
  }

  // Rows filled in each head (0 once disposed, or once its instance was: its memory went with it).
  get length() {
    const s = this.#state;
    return s.disposed || s.rt.disposed ? 0 : s.length();
  }

  get capacity() {
    return this.#state.capacity;
  }
  get batch() {
    return this.#state.batch;
  }
  get kvHeads() {
    return this.#state.kvHeads;
  }
  get dK() {
    return this.#state.dK;
  }
  get dV() {
    return this.#state.dV;
  }
  get dtype() {
    return this.#state.dtype;
  }

  // Keeps the first n rows (n <= length): undoes appends, e.g. of a rejected draft.
  truncate(n) {
    const s = this.#check('truncate');
    const length = s.length();
    checkInteger('kvCache.truncate', 'n', n, 0, length, `an integer from 0 to the cache's length ${length}`);
    s.rt.call('kvCache.truncate', 'kvCacheTruncate', s.handle, n);
  }

  // -> { key [batch,kvHeads,length,dK], value [batch,kvHeads,length,dV] }: fresh float32
  // tensors of the rows filled, as the cache keeps them (float16 widened, exact; int8 times
  // its block scales). Keys and values go through wasm memory one after the other: a block
  // of the read's size each, freed before it returns.
  read() {
    const where = 'kvCache.read';
    const s = this.#check('read');
    const { rt, batch, kvHeads } = s;
    const n = s.length();
    const none = heads4d(0, kvHeads, n, 0); // data 0: not wanted
    // the keys (d = dK) or the values (dV), as a tensor
    const readRows = (keys, d) => {
      const shape = [batch, kvHeads, n, d];
      const count = batch * kvHeads * n * d;
      return rt.heap.scoped(where, (scope) => {
        const at = scope.alloc(4 * count, `${keys ? 'keys' : 'values'} ${JSON.stringify(shape)}`);
        const rows = heads4d(at, kvHeads, n, d);
        rt.call(where, 'kvCacheRead', s.handle, keys ? rows : none, keys ? none : rows);
        return tensor(rt.heap.read(at, count), shape);
      });
    };
    return { key: readRows(true, s.dK), value: readRows(false, s.dV) };
  }

  // Empties the cache (its memory stays, for the next sequence).
  reset() {
    const s = this.#check('reset');
    s.rt.call('kvCache.reset', 'kvCacheTruncate', s.handle, 0);
  }

  // Frees the cache's wasm memory; safe to call twice. Any later use throws.
  dispose() {
    this.#state.owned.release();
  }

  #check(what) {
    const s = this.#state;
    const error = disposedError('cache', `kvCache.${what}`, s.rt.disposed, s.disposed);
    if (error) throw error;
    return s;
  }
}

// A cache passed to attention() -> its state, or a TypeError (not a cache, one of the worker
// form, disposed, or made by another instance).
function cacheFor(where, value, rt) {
  const s = typeof value === 'object' && value !== null ? internals.get(value) : undefined;
  return checkCacheOption(where, value, s, s?.rt === rt);
}

// One step over a cache, the one place a failed step is undone: step() appends the new rows
// and attends over the cache (one or more calls into the core) and reads the results back;
// if any part of it throws (the core refusing, an output that is not finite), the cache is cut
// back to the length it had, so it is as it was. cache: the state cacheFor() returned.
export function stepOver(cache, step) {
  const length = cache.length();
  try {
    return step();
  } catch (e) {
    if (!cache.disposed && !cache.rt.disposed && cache.length() > length)
      cache.rt.module.kvCacheTruncate(cache.handle, length);
    throw e;
  }
}

// The cache a call appends nNew rows to, for keys and values of sizes { batch, kvHeads, dK,
// dV } -> { cache: its state, length: its rows now }. Throws cacheFor's TypeErrors, a
// RangeError misfit(cache) when its sizes are not those, or overflow(length, cache) when nNew more
// rows do not fit its capacity: the caller words both, for what it appends (k and v, or a
// layer's tokens).
export function checkCacheFits(where, value, rt, sizes, nNew, { misfit, overflow }) {
  const cache = cacheFor(where, value, rt);
  if (['batch', 'kvHeads', 'dK', 'dV'].some((name) => cache[name] !== sizes[name])) throw new RangeError(misfit(cache));
  const length = cache.length();
  if (nNew > cache.capacity - length) throw new RangeError(overflow(length, cache));
  return { cache, length };
}
