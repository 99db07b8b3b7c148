// Ownership of wasm memory, in one place.
//
// Every buffer the package puts in the wasm heap is malloc'd here and freed here: call
// buffers live in a scope that frees them when the call returns or throws; layer weights
// live until their owner's dispose(). Views into the heap are re-taken on every access,
// because memory growth (here or on a worker thread) detaches the old ArrayBuffer.
import { nonFiniteResult, typedArrayBytes, typedArrayLength, writeOut } from './validate.js';
import { formatTensor, resultTensor } from './tensor.js';

// wasm32 with Emscripten's 2 GB maximum: no single buffer can be larger.
const MAX_BYTES = 2 ** 31;

// A typed array -> a Uint8Array over exactly its bytes, as the engine sees them (validate.js's
// accessors). Inputs are never empty (every size is at least 1), so no bytes means the buffer
// was detached, or shrunk under this fixed-length view, after it was checked: a TypeError
// naming `what`.
function bytesOf(data, what) {
  const bytes = typedArrayBytes(data);
  if (bytes.length === 0) throw new TypeError(`${what}: its buffer was detached or shrunk after it was checked`);
  return bytes;
}

export class Heap {
  #module;

  constructor(module) {
    this.#module = module;
  }

  // The heap's current buffer (a SharedArrayBuffer in the threaded build).
  buffer() {
    const m = this.#module;
    return m.wasmMemory ? m.wasmMemory.buffer : m.HEAPU8.buffer;
  }

  // A RangeError naming `what` when a block of `bytes` could never fit in wasm memory.
  checkFits(bytes, what) {
    if (bytes > MAX_BYTES) {
      throw new RangeError(`${what} needs ${formatBytes(bytes)}, more than wasm memory can hold (2 GB)`);
    }
  }

  // The largest block wasm memory could still give, at most (embind.cpp heap_room): what it
  // may grow by before its 2 GB, plus what malloc holds free. A larger malloc fails without
  // growing memory (Emscripten's heap refuses a size past its maximum before growing), so a
  // call refused here or there leaves memory as it was; memory that grew never shrinks.
  room() {
    return this.#module.heapRoom();
  }

  // checkFits(), then a RangeError naming `what` when a block of `bytes` is larger than room():
  // for a block the caller wants refused with its own words before the core allocates it.
  checkRoom(bytes, what) {
    this.checkFits(bytes, what);
    const room = this.room();
    if (bytes > room) {
      throw new RangeError(
        `${what} needs ${bytes} bytes (${formatBytes(bytes)}), and wasm memory has ${room} bytes (${formatBytes(room)}) left of its 2 GB`,
      );
    }
  }

  // Byte offset of a fresh block of `bytes`, or a RangeError naming `what` when it cannot fit.
  alloc(bytes, what) {
    this.checkFits(bytes, what);
    const ptr = this.#module._malloc(Math.max(bytes, 1));
    if (!ptr) {
      throw new RangeError(`${what} needs ${formatBytes(bytes)} and wasm memory has no room left for it`);
    }
    return ptr;
  }

  free(ptr) {
    if (ptr) this.#module._free(ptr);
  }

  f32(ptr, length) {
    return new Float32Array(this.buffer(), ptr, length);
  }

  // Copies a typed array into a new block; returns its offset. Sizes and bytes come from the
  // engine's own accessors (bytesOf), never from the object's properties, which a subclass or
  // a Proxy could make lie about how much to allocate or copy.
  put(data, what) {
    const bytes = bytesOf(data, what);
    const ptr = this.alloc(bytes.length, what);
    new Uint8Array(this.buffer(), ptr, bytes.length).set(bytes);
    return ptr;
  }

  // A fresh Float32Array copy of `length` floats at ptr: never a view the caller could hold
  // past a memory growth or a free. slice(): its cost is the new pages, not the copy
  // (scripts/LAB.md, "Copies and conversions in the small").
  read(ptr, length) {
    return this.f32(ptr, length).slice();
  }

  // put() for a Float32Array whose values must be finite: the check runs in wasm (SIMD) on
  // the copy, so it holds for what wasm reads even if the source changes meanwhile (a
  // SharedArrayBuffer); a RangeError names the first NaN or ±Infinity, and the copy is freed.
  putFinite(data, where, name) {
    const ptr = this.put(data, `${where}: ${name}`);
    const length = typedArrayLength(data);
    const i = this.#module.firstNonFinite(ptr, length);
    if (i >= 0) {
      const value = this.f32(ptr + 4 * i, 1)[0];
      this.free(ptr);
      throw new RangeError(`${where}: ${name}[${i}] is ${value}: inputs must be finite numbers`);
    }
    return ptr;
  }

  // read() into out, the caller's array for this result (validate.js checkOut), instead of a
  // fresh one: no new pages, only the copy (half results rounded as they go in) -> out's array.
  readInto(ptr, length, out, where, name) {
    return writeOut(where, name, this.f32(ptr, length), out);
  }

  // The largest |x| of `length` floats at ptr, found finite (putFinite): one SIMD pass in wasm.
  maxAbs(ptr, length) {
    return this.#module.maxAbs(ptr, length);
  }

  // read() for results, which come out non-finite only when a product overflowed float32:
  // then a RangeError says so (validate.js nonFiniteResult), before anything is copied.
  // out: readInto's destination, or null for a fresh copy. blame: () -> the call's own reason
  // (its scale, a layer's weights) or undefined for the inputs', asked only on failure.
  readFinite(ptr, length, where, name, out = null, blame = null) {
    const i = this.#module.firstNonFinite(ptr, length);
    if (i >= 0) throw nonFiniteResult(where, name, i, this.f32(ptr + 4 * i, 1)[0], blame?.());
    return out ? this.readInto(ptr, length, out, where, name) : this.read(ptr, length);
  }

  // readFinite() as a result tensor of `shape` in `format`, the format of the input it follows
  // (tensor.js resultTensor); out: the caller's array for it (validate.js checkOut), which then
  // is the tensor's data, or null for a fresh one; blame: readFinite's.
  readResult(ptr, shape, format, where, name, out = null, blame = null) {
    const length = shape.reduce((a, b) => a * b, 1);
    if (out) return formatTensor(this.readFinite(ptr, length, where, name, out, blame), shape, format);
    return resultTensor(this.readFinite(ptr, length, where, name, null, blame), shape, format, where, name);
  }

  // Runs fn(scope) and frees everything scope.alloc/put allocated, whatever happens.
  // where: the public entry's name, which prefixes the messages of allocation errors.
  scoped(where, fn) {
    const owned = [];
    const scope = {
      alloc: (bytes, what) => {
        const p = this.alloc(bytes, `${where}: ${what}`);
        owned.push(p);
        return p;
      },
      put: (data, what) => {
        const p = this.put(data, `${where}: ${what}`);
        owned.push(p);
        return p;
      },
      putFinite: (data, name) => {
        const p = this.putFinite(data, where, name);
        owned.push(p);
        return p;
      },
    };
    try {
      return fn(scope);
    } finally {
      for (const p of owned) this.free(p);
    }
  }
}

export function formatBytes(bytes) {
  if (bytes >= 2 ** 30) return `${(bytes / 2 ** 30).toFixed(1)} GB`;
  if (bytes >= 2 ** 20) return `${(bytes / 2 ** 20).toFixed(1)} MB`;
  if (bytes >= 2 ** 10) return `${(bytes / 2 ** 10).toFixed(1)} KB`;
  return `${bytes} bytes`;
}
