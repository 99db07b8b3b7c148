// The argument checks of every public entry, run before it touches wasm memory: the one value
// describer of messages, the engine's typed-array accessors (heap.js copies through them too),
// tensors, options objects, numbers and their ranges, out, masks, and the options attention()
// and a layer share (window, softcap, sinks, rotary). Checks throw TypeError for a wrong kind of
// value and RangeError for a wrong size or value, naming the call and the argument, what was
// given and what is needed. Every argument is read once: its getters run once, into a snapshot
// the call reads from then on. Where the sizes to check against are known only after the
// call's other arguments were read (a cache's length, the saved forward), a check comes in two
// halves: read* runs the caller's getters once into a snapshot, fit* holds the snapshot to the
// sizes.
import { DTYPES, FORMATS, fromFloat32, halfToFloat32 } from './half.js';

export const showShape = (shape) => `[${shape.join(',')}]`;

// The engine's own typed-array accessors, taken once when this module loads. A caller's
// object cannot change what they return: a Float32Array subclass overriding length or
// byteLength, a Proxy, or an object that merely inherits from Float32Array.prototype gets
// the truth (or undefined for the tag) instead of what its own properties claim.
const TypedArrayPrototype = Object.getPrototypeOf(Float32Array.prototype);
const getter = (object, key) => Object.getOwnPropertyDescriptor(object, key).get;
const apply = Reflect.apply;
const F32 = Float32Array;
const U8 = Uint8Array;
const intrinsic = {
  tag: getter(TypedArrayPrototype, Symbol.toStringTag), // 'Float32Array', or undefined
  buffer: getter(TypedArrayPrototype, 'buffer'),
  byteOffset: getter(TypedArrayPrototype, 'byteOffset'),
  byteLength: getter(TypedArrayPrototype, 'byteLength'),
  length: getter(TypedArrayPrototype, 'length'),
};
// The intrinsic name of a real typed array ('Float32Array', 'Uint8Array', ...), else undefined.
export const typedArrayName = (value) => apply(intrinsic.tag, value, []);
// A real typed array's elements, as the engine counts them (0 once its buffer is detached).
export const typedArrayLength = (value) => apply(intrinsic.length, value, []);
// A real typed array -> a Uint8Array over exactly its bytes, as the engine sees them (none
// once its buffer is detached).
export function typedArrayBytes(value) {
  const byteLength = apply(intrinsic.byteLength, value, []);
  if (byteLength === 0) return new U8(0);
  return new U8(apply(intrinsic.buffer, value, []), apply(intrinsic.byteOffset, value, []), byteLength);
}

// Array.isArray, false for a revoked Proxy (on which it throws): the checks of what such a
// value is not refuse it, describe() saying 'a revoked Proxy'.
export function isArray(value) {
  try {
    return Array.isArray(value);
  } catch {
    return false;
  }
}

// Whether value is a revoked Proxy, whose properties cannot be read.
export function isRevoked(value) {
  try {
    Array.isArray(value);
    return false;
  } catch {
    return true;
  }
}

// What a wrong value is, for messages: 'null', 'an Array', 'a Float32Array', 'the number 3',
// 'a string ("…")', 'an Object', …
export function describe(value) {
  if (value === null) return 'null';
  if (value === undefined) return 'undefined';
  if (typeof value === 'object' || typeof value === 'function') {
    if (isRevoked(value)) return 'a revoked Proxy';
    let name;
    try {
      if (Array.isArray(value)) return 'an Array';
      name = typedArrayName(value) ?? value.constructor?.name ?? 'object';
    } catch {
      name = 'object'; // a revoked Proxy, or a getter that throws
    }
    if (typeof value === 'function') name = 'function';
    return `${/^([aeio]|u(?!int))/i.test(name) ? 'an' : 'a'} ${name}`; // a Uint8Array, an Int32Array
  }
  if (typeof value === 'string') return `a string (${JSON.stringify(value.slice(0, 20))})`;
  if (typeof value === 'bigint') return `a bigint (${value}n)`;
  return typeof value === 'number' ? `the number ${value}` : `a ${typeof value}`;
}

// value: a typed array named `type` ('Float32Array', 'Uint8Array', or 'Uint16Array' or
// 'Float16Array', both read as their bits), checked by the engine's own tag -> a fresh view of
// the same memory, made here, of the length the engine reports. Everything after reads this
// view only. null when value is not such a typed array.
const VIEWS = { Float32Array: F32, Uint8Array: U8, Uint16Array: Uint16Array, Float16Array: Uint16Array };
function ownView(value, type) {
  if (typedArrayName(value) !== type) return null;
  const buffer = apply(intrinsic.buffer, value, []);
  const length = apply(intrinsic.length, value, []); // 0 once the buffer is detached
  if (length === 0 && isDetached(buffer)) return 'detached';
  const byteOffset = apply(intrinsic.byteOffset, value, []);
  return new VIEWS[type](buffer, byteOffset, length);
}

// The TypeError of an argument `name` (a typed array) whose buffer is detached.
function detachedError(where, name, value) {
  return new TypeError(
    `${where}: ${name}'s buffer is detached (transferred or released); pass ${describe(value)} whose memory is still there`,
  );
}

// value: a real typed array of type Type (Uint8Array, Int32Array) -> a copy of its values, as
// the engine counts them (none once its buffer was shrunk under it), or a TypeError naming
// `name` when its buffer is detached.
function typedArrayCopy(where, name, value, Type) {
  if (isDetached(apply(intrinsic.buffer, value, []))) {
    throw detachedError(where, name, value);
  }
  return new Type(typedArrayBytes(value).slice().buffer);
}

// Whether an ArrayBuffer was detached (transferred or released).
export function isDetached(buffer) {
  try {
    new U8(buffer, 0, 0);
    return false;
  } catch {
    return true;
  }
}

// A typed array argument of `type` ('Float32Array', 'Uint16Array') -> its own view (ownView),
// or a TypeError naming it (detached, or not one).
export function typedArrayArgument(where, name, value, type) {
  const view = ownView(value, type);
  if (view === 'detached') throw detachedError(where, name, value);
  if (view === null)
    throw new TypeError(`${where}: ${name} must be a ${type}, got ${describeNot(value, globalThis[type])}`);
  return view;
}

// name: the argument's name in messages (e.g. "q.data") -> its own Float32Array view.
function float32View(where, name, value) {
  const view = ownView(value, 'Float32Array');
  if (view === 'detached') {
    throw detachedError(where, name, value);
  }
  if (view === null) throw new TypeError(`${where}: ${name} must be a Float32Array, got ${describeNot(value, F32)}`);
  return view;
}

// describe(value), for a value that is not a real typed array of Type: one that only looks like
// one (a Proxy of one, or an object inheriting from Type.prototype) is said to be so.
function describeNot(value, Type) {
  let looksLikeOne = false;
  try {
    looksLikeOne =
      typeof Type === 'function' &&
      typeof value === 'object' &&
      value !== null &&
      typedArrayName(value) === undefined &&
      value instanceof Type;
  } catch {
    /* a revoked Proxy */
  }
  return looksLikeOne
    ? `an object that only looks like one (a Proxy, or an object inheriting from ${Type.name}.prototype); pass the ${Type.name} itself`
    : describe(value);
}

// The constructors of the arrays a result may go into (Float16Array: undefined where the
// engine has none), taken once when this module loads.
const OUT_TYPES = { Float32Array: F32, Uint16Array, Float16Array: globalThis.Float16Array };

// out (an option of matmul, attention and a layer's forward): the caller's typed array that
// receives the call's main result instead of a fresh one, and is then the result's data. Read
// last of a call's arguments (no getter of the caller's runs after it) -> null (left out or
// null) or a frozen { array: out itself, view: this module's own view of its memory (a
// Float32Array, or a Uint16Array of a half result's bits), format }.
//   count: the result's values; format: the result's (half.js FORMATS), which follows the
//   input named `input`; what: the result in messages, e.g. "the output [4,3]".
// A TypeError when out is not the typed array the result is (a Float32Array, or a Float16Array
// or Uint16Array of bits as the input's data is) or its buffer is detached; a RangeError when
// it holds another number of values.
export function checkOut(where, out, { count, format, input, what }) {
  if (out === undefined || out === null) return null;
  const type = format.array;
  const view = ownView(out, type);
  if (view === 'detached') {
    throw detachedError(where, 'out', out);
  }
  if (view === null) {
    const why = format.dtype === 'float32' ? '' : ` (the format of ${input}.data)`;
    const got = describeNot(out, OUT_TYPES[type]);
    throw new TypeError(`${where}: out must be a ${type} for ${what}${why}, got ${got}`);
  }
  if (view.length !== count) {
    throw new RangeError(`${where}: out has ${view.length} values but ${what} has ${count}`);
  }
  return Object.freeze({ array: out, view, format });
}

// A result's values (a Float32Array, e.g. a view of wasm memory) -> written into out
// (checkOut's), float32 as they are, half rounded to nearest even (half.js: a value beyond
// float16's range is a RangeError before anything is written) -> out's array.
export function writeOut(where, name, values, out) {
  const length = typedArrayLength(out.view);
  if (length !== values.length) throw outChanged(where, 'after it was checked', values.length, length);
  if (out.format.dtype === 'float32') out.view.set(values);
  else fromFloat32(values, out.format, where, name, out.view);
  return out.array;
}

// Which form made a cache: 'direct' (attn.kvCache(), kv_cache.js) or 'worker' (the worker
// form's kvCache(), worker_client.js), by the cache object; looked up without reading any of
// the caller's properties.
export const cacheForms = new WeakMap();

// The TypeError of a cache option that is not a live cache of this form (where: the call);
// a cache of the other form is said to be one.
export function notACache(where, value) {
  const form = typeof value === 'object' && value !== null ? cacheForms.get(value) : undefined;
  if (form === 'worker') {
    return new TypeError(
      `${where}: cache is a cache of the worker form (the kvCache() of createAttention({ worker: true })), which lives in its worker; this instance takes a cache from its own attn.kvCache()`,
    );
  }
  if (form === 'direct') {
    return new TypeError(
      `${where}: cache is a cache of the direct form (attn.kvCache() of an instance made without worker: true); the worker form takes a cache from its own kvCache(), which lives in its worker`,
    );
  }
  return new TypeError(`${where}: cache must be a cache from attn.kvCache({ batch, kvHeads, dK, dV, capacity })`);
}

// The error of a call on an object of kind `on` ('attention', 'layer' or 'cache') once it
// (disposed) or its instance (instanceDisposed) was disposed, in the order both forms check;
// null while both are alive. where: the call, e.g. 'kvCache.read'.
export function disposedError(on, where, instanceDisposed, disposed = false) {
  if (on === 'cache' && disposed) return new TypeError(`${where}: this cache was disposed`);
  if (instanceDisposed)
    return new TypeError(`${where}: this attention instance was disposed; create a new one with createAttention()`);
  return disposed ? new TypeError(`${where}: this layer was disposed`) : null;
}

// A cache option (value) in either form -> state, or the TypeError of one that is not a cache
// of this form (state undefined), was disposed, or is another instance's (mine false).
export function checkCacheOption(where, value, state, mine) {
  if (state === undefined) throw notACache(where, value);
  if (state.disposed) throw new TypeError(`${where}: the cache was disposed`);
  if (!mine) throw new TypeError(`${where}: the cache belongs to another attention instance`);
  return state;
}

// checkOut's snapshot of a fresh array for `count` values of `format` (the worker form's out
// in the worker: the result goes back in it, and its values into the caller's out).
export function freshOut(format, count) {
  const array = new OUT_TYPES[format.array](count);
  return Object.freeze({ array, view: ownView(array, format.array), format });
}

// The TypeError of an out whose length changed from `count`, the result's values, to `length`
// (when: e.g. 'while the call ran'): its buffer was detached or shrunk (fewer values), or it
// is a length-tracking view of a resizable ArrayBuffer that grew (more).
export function outChanged(where, when, count, length) {
  if (length > count) {
    return new TypeError(
      `${where}: out grew from ${count} to ${length} values ${when} (its resizable ArrayBuffer was resized); the result has ${count}: pass an out of fixed length`,
    );
  }
  return new TypeError(`${where}: out's buffer was detached or shrunk ${when}`);
}

// shape (an Array of sizes), read once -> a frozen Array of plain integers.
// label: the shape in messages (name.shape unless given).
function shapeSnapshot(where, name, shape, label = `${name}.shape`) {
  if (!isArray(shape)) {
    throw new TypeError(`${where}: ${label} must be an array of sizes, got ${describe(shape)}`);
  }
  const length = shape.length;
  if (typeof length !== 'number' || !Number.isInteger(length) || length < 0 || length > 8) {
    throw new RangeError(`${where}: ${label} has ${length} dimensions; tensors here have at most 4`);
  }
  const sizes = [];
  for (let i = 0; i < length; ++i) {
    const d = shape[i];
    if (typeof d !== 'number') {
      throw new TypeError(`${where}: ${label}[${i}] is ${describe(d)}: sizes must be numbers`);
    }
    sizes.push(d);
  }
  return Object.freeze(sizes);
}

// tensor(data, shape, options)'s arguments, each read once -> { data, shape, dtype }: shape
// 1 to 4 positive integers (a fresh Array); data as many values as they need: a Float32Array,
// an Array of numbers (copied into a new Float32Array), for dtype 'float16' a Float16Array or
// a Uint16Array of the bits, or a keep mask's Uint8Array or boolean[]; dtype the option, or
// undefined. A TypeError for a wrong kind, a RangeError for a wrong size, naming it.
const TENSOR_DATA =
  "a Float32Array or an Array of numbers (float16: a Float16Array, or a Uint16Array of bits with { dtype: 'float16' }; a keep mask: a Uint8Array or boolean[])";
export function tensorParts(rawData, rawShape, options) {
  const where = 'tensor';
  const { dtype } = checkOptions(where, options, ['dtype']);
  if (dtype !== undefined) checkOneOf(where, 'dtype', dtype, DTYPES);
  const shape = shapeSnapshot(where, 'tensor', rawShape, 'shape');
  if (shape.length < 1 || shape.length > 4) {
    throw new RangeError(
      `${where}: shape ${showShape(shape)} has ${shape.length} dimensions; tensors here have 1 to 4`,
    );
  }
  for (const d of shape) {
    if (!Number.isInteger(d) || d < 1)
      throw new RangeError(`${where}: shape ${showShape(shape)}: every size must be a positive integer`);
  }
  const type = typedArrayName(rawData);
  const allowed = {
    float16: ['Float16Array', 'Uint16Array'],
    float32: ['Float32Array'],
    undefined: ['Float32Array', 'Float16Array', 'Uint8Array'],
  }[dtype];
  let data = rawData;
  let length;
  if (type !== undefined) {
    if (!allowed.includes(type)) {
      const hint = type === 'Uint16Array' ? ": if it holds half-precision bits, pass { dtype: 'float16' }" : '';
      throw new TypeError(
        `${where}: data must be ${TENSOR_DATA}, got ${describe(rawData)}${dtype ? ` for dtype '${dtype}'` : ''}${hint}`,
      );
    }
    if (ownView(rawData, type) === 'detached') throw detachedError(where, 'data', rawData);
    length = typedArrayLength(rawData);
  } else if (isArray(rawData) && dtype !== 'float16') {
    const values = Array.from(rawData); // the caller's elements, read once
    const numbers = values.every((v) => typeof v === 'number');
    if (!numbers && !values.every((v) => typeof v === 'boolean')) {
      const i = values.findIndex((v) => typeof v !== typeof values[0]);
      const at = typeof values[0] === 'number' || typeof values[0] === 'boolean' ? i : 0;
      throw new TypeError(
        `${where}: data[${at}] is ${describe(values[at])}: an Array of data must hold numbers only (or booleans only, a keep mask)`,
      );
    }
    data = numbers ? new F32(values) : values;
    length = values.length;
  } else {
    throw new TypeError(`${where}: data must be ${TENSOR_DATA}, got ${describe(rawData)}`);
  }
  const count = shape.reduce((a, b) => a * b, 1);
  if (length !== count) {
    throw new RangeError(`${where}: data has ${length} values but shape ${showShape(shape)} needs ${count}`);
  }
  return { data, shape: [...shape], dtype };
}

// A tensor's data and dtype (read once) -> { format (half.js FORMATS), view }: its own
// Float32Array view, or for float16 its own view of the bits (a Uint16Array).
function tensorData(where, name, rawData, dtype) {
  if (dtype !== undefined) checkOneOf(where, `${name}.dtype`, dtype, DTYPES);
  const type = typedArrayName(rawData);
  const half = type === 'Float16Array' || type === 'Uint16Array';
  if (dtype === 'float16' && !half) {
    throw new TypeError(
      `${where}: ${name}.data must be a Float16Array, or a Uint16Array holding the bits, for dtype 'float16'; got ${describe(rawData)}`,
    );
  }
  if (!half || dtype === 'float32')
    return { format: FORMATS.float32, view: float32View(where, `${name}.data`, rawData) };
  if (type === 'Uint16Array' && dtype === undefined) {
    throw new TypeError(
      `${where}: ${name}.data is a Uint16Array: if it holds half-precision bits, give the tensor dtype: 'float16' (tensor(data, shape, { dtype: 'float16' })); else pass a Float32Array`,
    );
  }
  const view = ownView(rawData, type);
  if (view === 'detached') {
    throw detachedError(where, `${name}.data`, rawData);
  }
  return { format: type === 'Float16Array' ? FORMATS.float16 : FORMATS.float16Bits, view };
}

// A tensor argument, read once: { data: its own Float32Array view (float16 data: a copy of its
// bits, a Uint16Array, widened by the run: widenHalves), shape: frozen integers, format: the
// input's (half.js FORMATS) }, validated.
// Callers use what this returns, never the argument again.
// ranks: the ranks allowed, e.g. [2] or [2, 3]; shapes named like "[n,dModel]" for messages.
export function checkTensor(where, name, t, ranks, shapeNames) {
  return fitTensor(where, name, readTensor(where, name, t, shapeNames), ranks, shapeNames);
}

// checkTensor's first half: the argument read (its getters run once) and its kinds checked ->
// a frozen { data: its own Float32Array view, or a copy of float16 data's bits (a Uint16Array:
// half the bytes to post to the worker form's worker, widened there), shape: frozen numbers,
// format }, sizes not yet checked.
export function readTensor(where, name, t, shapeNames) {
  const expected = shapeNames ? ` ${shapeNames}` : '';
  if (!isObjectArgument(t) || ArrayBuffer.isView(t)) {
    throw new TypeError(
      `${where}: ${name} must be a tensor { data: Float32Array, shape: number[] }${expected}, got ${describe(t)}`,
    );
  }
  const rawData = t.data;
  const rawShape = t.shape;
  const rawDtype = t.dtype;
  // the shape's elements first: their getters may detach or shrink the data's buffer
  const shape = shapeSnapshot(where, name, rawShape);
  const { format, view } = tensorData(where, name, rawData, rawDtype);
  // the bits copied: a getter read later in the call cannot change the values the call uses
  const data = format.dtype === 'float16' ? new Uint16Array(typedArrayBytes(view).slice().buffer) : view;
  if (data !== view) packageCopies.add(data.buffer);
  return Object.freeze({ data, shape, format });
}

// The ArrayBuffers of copies the package made of an argument's values (readTensor's float16
// bits, operations.js's postable's): no caller holds them, so the worker form moves them to its
// worker instead of copying them again.
export const packageCopies = new WeakSet();

// A tensor snapshot's values: its Float32Array, or its float16 bits widened into a new one
// (exact; a half ±Infinity or NaN widens to the same float32 at the same index, which
// Heap.putFinite names as it would the float32 input).
export const tensorValues = (t) => (isHalfSnapshot(t) ? halfToFloat32(t.data) : t.data);
const isHalfSnapshot = (t) => t.format?.dtype === 'float16' && typedArrayName(t.data) === 'Uint16Array';

// A call's snapshot (parse's, or its structured clone in the worker form's worker) -> the same
// with every tensor snapshot holding float16 bits replaced by one holding their float32 values
// (tensorValues): the first step of each run that computes on tensors, in both forms. Plain
// objects and arrays are rebuilt only where something changed; anything else is kept as it is.
export const widenHalves = (call) => (hasHalves(call, 0) ? widen(call, 0) : call);

// Whether a snapshot holds a tensor of float16 bits: walked without allocating, since most calls
// have none and this runs on every call.
function hasHalves(value, depth) {
  if (value === null || typeof value !== 'object' || depth > 8 || ArrayBuffer.isView(value)) return false;
  if (isArray(value)) {
    for (let i = 0; i < value.length; i++) if (hasHalves(value[i], depth + 1)) return true;
    return false;
  }
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return false;
  // a tensor snapshot ({ data, shape, format }) is one or the other: no need to walk into it
  if (value.format !== undefined && value.data !== undefined) return isHalfSnapshot(value);
  for (const k in value) if (hasHalves(value[k], depth + 1)) return true;
  return false;
}

function widen(value, depth) {
  if (value === null || typeof value !== 'object' || depth > 8 || ArrayBuffer.isView(value)) return value;
  if (isArray(value)) {
    const items = value.map((v) => widen(v, depth + 1));
    return items.some((v, i) => v !== value[i]) ? items : value;
  }
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return value;
  if (isHalfSnapshot(value)) return Object.freeze({ ...value, data: tensorValues(value) });
  const entries = Object.entries(value).map(([k, v]) => [k, widen(v, depth + 1)]);
  if (entries.every(([k, v]) => v === value[k])) return value;
  const widened = Object.fromEntries(entries);
  return Object.isFrozen(value) ? Object.freeze(widened) : widened;
}

// checkTensor's second half, on readTensor's snapshot: its rank one of ranks, its sizes
// positive integers, and as many values as they need -> the snapshot.
export function fitTensor(where, name, t, ranks, shapeNames) {
  const { data, shape } = t;
  const expected = shapeNames ? ` ${shapeNames}` : '';
  if (!ranks.includes(shape.length)) {
    throw new RangeError(
      `${where}: ${name} must have ${ranks.join(' or ')} dimensions${expected}, got shape ${showShape(shape)}`,
    );
  }
  for (const d of shape) {
    if (!Number.isInteger(d) || d < 1) {
      throw new RangeError(`${where}: ${name} has shape ${showShape(shape)}: every size must be a positive integer`);
    }
  }
  const count = shape.reduce((a, b) => a * b, 1);
  if (data.length !== count) {
    throw new RangeError(
      `${where}: ${name}.data has ${data.length} values but shape ${showShape(shape)} needs ${count}`,
    );
  }
  // The values' finiteness is checked in wasm once they are copied there (Heap.putFinite).
  return t;
}

export function checkFinite(where, name, data) {
  for (let i = 0; i < data.length; ++i) {
    if (!Number.isFinite(data[i])) {
      throw new RangeError(`${where}: ${name}[${i}] is ${data[i]}: inputs must be finite numbers`);
    }
  }
}

// An integer from min to max (a size, a count, a position; the core holds it as an int32) ->
// value. says: the range in messages, "an integer from min to max" unless given.
export function checkInteger(where, name, value, min, max = 2 ** 31 - 1, says = undefined) {
  if (typeof value !== 'number') throw new TypeError(`${where}: ${name} must be a number, got ${describe(value)}`);
  if (!Number.isInteger(value) || value < min || value > max) {
    const range = says ?? `an integer from ${min} to ${max === 2 ** 31 - 1 ? '2^31-1 (2147483647)' : max}`;
    throw new RangeError(`${where}: ${name} must be ${range}, got ${value}`);
  }
  return value;
}

// A size or count of 1 or more (no upper bound here: what it needs is sized where it is used).
export const checkPositiveInteger = (where, name, value) =>
  checkInteger(where, name, value, 1, Infinity, 'a positive integer');

// One of a few strings (allowed): a TypeError for a non-string, a RangeError naming them otherwise.
export function checkOneOf(where, name, value, allowed) {
  if (typeof value !== 'string')
    throw new TypeError(`${where}: ${name} must be one of ${allowed.join(', ')}, got ${describe(value)}`);
  if (!allowed.includes(value))
    throw new RangeError(`${where}: ${name} must be one of ${allowed.join(', ')}, got '${value}'`);
}

// An integer from 0 to 2^32-1 (a seed).
export const checkUint32 = (where, name, value) =>
  checkInteger(where, name, value, 0, 0xffffffff, 'an integer from 0 to 2^32-1');

// Whether value is an object whose properties can be read as named arguments: not null, an
// Array, a typed array or a revoked Proxy.
function isObjectArgument(value) {
  return (
    value !== null &&
    typeof value === 'object' &&
    !isArray(value) &&
    !isRevoked(value) &&
    typedArrayName(value) === undefined
  );
}

// options (or the option object `name` within them: window, rotary, heads, a layer's weights),
// read once -> a plain object holding the allowed keys' values (getters run once); {} when left
// out.
export function checkOptions(where, options, allowed, name = 'options') {
  if (options === undefined) return {};
  if (!isObjectArgument(options)) throw new TypeError(`${where}: ${name} must be an object, got ${describe(options)}`);
  const keys = Object.keys(options);
  for (const key of keys) {
    if (!allowed.includes(key)) {
      const at = name === 'options' ? where : `${where}: ${name}`;
      throw new TypeError(`${at}: unknown option "${key}" (known: ${allowed.join(', ')})`);
    }
  }
  const snapshot = {};
  for (const key of keys) snapshot[key] = options[key];
  return snapshot;
}

export function checkBoolean(where, name, value) {
  if (value === undefined) return false;
  if (typeof value !== 'boolean')
    throw new TypeError(`${where}: ${name} must be true or false, got ${describe(value)}`);
  return value;
}

// A finite number -> value.
export function checkFiniteNumber(where, name, value) {
  if (typeof value !== 'number') throw new TypeError(`${where}: ${name} must be a number, got ${describe(value)}`);
  if (!Number.isFinite(value)) throw new RangeError(`${where}: ${name} must be finite, got ${value}`);
  return value;
}

// scale: a number finite also as a float32 (wasm computes in float32), 1/sqrt(dK) when left out.
export function checkScale(where, scale, dK) {
  if (scale === undefined) return 1 / Math.sqrt(dK);
  checkFiniteNumber(where, 'scale', scale);
  if (!Number.isFinite(Math.fround(scale))) {
    throw new RangeError(`${where}: scale must be finite as a 32-bit float (|scale| < 3.4e38), got ${scale}`);
  }
  return scale;
}

// The mask of attention() in every form, and of a layer's forward, for scores [B,Hq,nQ,nTotal]:
// a keep mask (Uint8Array or boolean[], 1 or true = keep) or an additive one (Float32Array, or
// float16 values widened; -Infinity masks) as a tensor { data, shape, dtype? }. On heads its
// shape has rank 1-4, right-aligned against the scores: each leading size 1 (broadcast) or
// full, the last at most nTotal (keys past it are masked). A 2-D mask (twoD: a 2-D call, B =
// Hq = 1, or a layer's) is [nQ,nK]: a tensor of that shape, one without shape, or a bare typed
// array of nQ·nK values. Read in two steps, nTotal being known only once a cache is looked at.
const MASK_DATA =
  "Uint8Array or boolean[] (true = keep), Float32Array or Float16Array (added to the scores; or Uint16Array bits with dtype: 'float16')";

// The first: the mask read (its getters, and a boolean[]'s elements, run once) -> null (no
// mask) or a frozen { data: a copy (a typed array's, before the shape's getters run: they may
// detach or shrink the caller's buffer; a boolean[]'s as a Uint8Array, see readBooleans),
// length: the values the caller's data holds, type ('Uint8Array', 'Float32Array', 'float16': the bits of one, or 'Array'),
// bad: the first element of a boolean[] that is not a boolean ({ index, what }) or null,
// shape: the sizes (numbers), or null (a 2-D mask of nQ·nK values) }.
export function readMask(where, mask, twoD) {
  if (mask === undefined || mask === null) return null;
  const bare = typedArrayName(mask) !== undefined;
  const isTensor = isObjectArgument(mask);
  const kinds = twoD
    ? `{ data: ${MASK_DATA}, shape: [nQ,nK] } or a bare typed array of nQ·nK values`
    : `a tensor { data: ${MASK_DATA}, shape } for 3-D or 4-D inputs`;
  if (!isTensor && !(bare && twoD)) throw new TypeError(`${where}: mask must be ${kinds}; got ${describe(mask)}`);
  const rawData = bare ? mask : mask.data;
  const rawShape = bare ? undefined : mask.shape;
  const name = bare ? 'mask' : 'mask.data';
  const dtype = bare ? undefined : mask.dtype;
  if (dtype !== undefined) checkOneOf(where, 'mask.dtype', dtype, DTYPES);
  let type = typedArrayName(rawData);
  let data = halfMask(where, name, rawData, dtype); // float16 values added: a copy of their bits
  if (data) type = 'float16';
  else if (type === 'Uint8Array') data = typedArrayCopy(where, name, rawData, U8);
  else if (type === 'Float32Array') data = typedArrayCopy(where, name, rawData, F32);
  else if (isArray(rawData)) type = 'Array';
  else throw new TypeError(`${where}: mask must be ${kinds}; ${bare ? 'got' : 'mask.data is'} ${describe(rawData)}`);
  let shape = null;
  if (rawShape !== undefined && rawShape !== null) {
    if (!isArray(rawShape)) {
      throw new TypeError(
        `${where}: mask.shape must be an array ${twoD ? '[nQ,nK]' : 'of 1 to 4 sizes'}, got ${describe(rawShape)}`,
      );
    }
    shape = shapeSnapshot(where, 'mask', rawShape);
  } else if (!twoD || type === 'Array') {
    throw new TypeError(
      `${where}: mask.shape must be an array ${twoD ? '[nQ,nK] for a boolean[] mask' : 'of 1 to 4 sizes'}, got ${describe(rawShape)}`,
    );
  }
  if (!twoD && (shape.length < 1 || shape.length > 4))
    throw new RangeError(`${where}: mask has shape ${showShape(shape)}: it needs 1 to 4 dimensions`);
  let length,
    bad = null;
  if (type === 'Array')
    ({ data, length, bad } = readBooleans(
      rawData,
      shape.reduce((a, b) => a * b, 1),
    ));
  return Object.freeze({ data, length: length ?? data.length, type, bad, shape });
}

// A mask's data when it holds half-precision values added to the scores (a Float16Array, or a
// Uint16Array of bits with dtype 'float16') -> a copy of their bits, which fitMask widens where
// the call runs (the worker form's worker: half the bytes posted), as tensors' are; else null.
function halfMask(where, name, rawData, dtype) {
  const type = typedArrayName(rawData);
  if (dtype === 'float16' && type !== 'Float16Array' && type !== 'Uint16Array') {
    throw new TypeError(
      `${where}: mask.data must be a Float16Array, or a Uint16Array holding the bits, for dtype 'float16'; got ${describe(rawData)}`,
    );
  }
  if (type !== 'Float16Array' && !(type === 'Uint16Array' && dtype === 'float16')) return null;
  const bits = typedArrayCopy(where, name, rawData, Uint16Array);
  packageCopies.add(bits.buffer);
  return bits;
}

// A boolean[] (its length read once) -> { data: its elements, each read once, as a Uint8Array
// (true = 1, keep), length, bad: the first that is not a boolean ({ index, what }; data null)
// or null }. At most `count` elements are read, the values the mask's shape needs (an Array
// of another length is refused by its length alone): an Array whose length claims billions of
// elements (sparse, or a Proxy) costs no more than its shape.
function readBooleans(array, count) {
  const length = array.length;
  const keep = [];
  for (let i = 0; i < Math.min(length, count); ++i) {
    const b = array[i];
    if (typeof b !== 'boolean') return { data: null, length, bad: { index: i, what: describe(b) } };
    keep.push(b ? 1 : 0);
  }
  return { data: Uint8Array.from(keep), length, bad: null };
}

// The second, on readMask's snapshot, for s: { batch, qHeads, nQ, twoD } and nTotal keys ->
// null (no mask) or { keep, bias } (one set, the snapshot's copy; bias's values checked here,
// on the copy wasm gets) and the strides, in elements, as wa::HeadsMask reads them.
export function fitMask(where, mask, s, nTotal) {
  if (mask === null) return null;
  const { shape, type } = mask;
  const full = [s.batch, s.qHeads, s.nQ, nTotal];
  const dims = [1, 1, 1, 1];
  if (s.twoD) {
    if (shape !== null && (shape.length !== 2 || shape[0] !== s.nQ || shape[1] !== nTotal)) {
      throw new RangeError(
        `${where}: mask has shape ${showShape(shape)} but the scores are [${s.nQ},${nTotal}] (nQ queries by nK keys)`,
      );
    }
    [dims[2], dims[3]] = [s.nQ, nTotal];
  } else {
    shape.forEach((d, i) => {
      dims[4 - shape.length + i] = d;
    });
    for (let axis = 0; axis < 4; ++axis) {
      const d = dims[axis];
      const fits = axis === 3 ? Number.isInteger(d) && d >= 1 && d <= nTotal : d === 1 || d === full[axis];
      if (!fits) {
        const rule =
          axis === 3 ? `its last size must be 1 to nTotal = ${nTotal}` : 'each size must be 1 or the full size';
        throw new RangeError(
          `${where}: mask has shape ${showShape(shape)} but the scores are [${full.join(',')}] [B,Hq,nQ,nTotal]: ${rule}`,
        );
      }
    }
  }
  if (mask.bad) {
    const { index, what } = mask.bad;
    throw new TypeError(`${where}: mask.data[${index}] is ${what}: a boolean[] mask holds true (keep) or false`);
  }
  const count = dims[0] * dims[1] * dims[2] * dims[3];
  if (s.twoD && mask.length !== count)
    throw new RangeError(`${where}: mask has ${mask.length} values but the scores [${s.nQ},${nTotal}] need ${count}`);
  if (mask.length !== count)
    throw new RangeError(`${where}: mask.data has ${mask.length} values but shape ${showShape(shape)} needs ${count}`);
  const additive = type === 'Float32Array' || type === 'float16';
  const keep = additive ? null : mask.data;
  // float16 values widened here, exactly (a half NaN or ±Infinity to the same float32)
  const bias = additive ? checkAdditiveMask(where, type === 'float16' ? halfToFloat32(mask.data) : mask.data) : null;
  const cols = dims[3];
  return {
    keep,
    bias,
    maskCols: cols,
    maskLd: dims[2] === 1 ? 0 : cols,
    headStride: dims[1] === 1 ? 0 : dims[2] * cols,
    batchStride: dims[0] === 1 ? 0 : dims[1] * dims[2] * cols,
  };
}

// An additive mask's values (a snapshot): each finite, or -Infinity to mask; NaN and +Infinity
// are refused. The one check of every additive mask.
function checkAdditiveMask(where, bias) {
  for (let i = 0; i < bias.length; ++i) {
    if (Number.isNaN(bias[i]) || bias[i] === Infinity) {
      throw new RangeError(
        `${where}: mask[${i}] is ${bias[i]}: an additive mask takes finite values, or -Infinity to mask`,
      );
    }
  }
  return bias;
}

// v (nK rows), about to be averaged with softmax weights: every output is a weighted sum of nK
// rows, which the fused path accumulates before it divides by the weights' sum. Refused
// (the same with and without trace) when nK·max|v| reaches float32's range, where that sum
// could overflow although the average would not. maxAbs: max|v| over v's copy in wasm memory,
// whose values were found finite (Heap.maxAbs, a SIMD pass there rather than a loop in JS).
const FLOAT32_MAX = 3.4028234663852886e38;
export function checkWeightedSums(where, maxAbs, nK) {
  if (maxAbs * nK >= FLOAT32_MAX / 2) {
    throw new RangeError(
      `${where}: v has values up to ${maxAbs.toPrecision(3)} and there are ${nK} keys: sums of nK·|v| must stay below 1.7e38 (half of 32-bit floats' range) for the output to be computed; scale v down`,
    );
  }
}

// A result found non-finite at index i (Heap.readFinite) -> its RangeError: why, the call's
// own reason (scaleBlame, weightsBlame), or else the inputs'.
export function nonFiniteResult(where, name, i, value, why) {
  const reason =
    why ?? 'the inputs are so large that their products overflow 32-bit floats (above 3.4e38); scale them down';
  return new RangeError(`${where}: ${name}[${i}] came out ${value}: ${reason}`);
}

// Largest |x| of an array of numbers (0 for none): for the reasons below, on a failed call only.
export function largest(values) {
  let m = 0;
  for (let i = 0; i < values.length; ++i) m = Math.max(m, Math.abs(values[i]));
  return m;
}

// The reason of a non-finite attention result when the scale made it: q·kᵀ's bound
// dK·max|q|·max|k| fits in float32 and times |scale| does not -> the reason; else undefined.
export function scaleBlame(scale, dK, maxQ, maxK) {
  const bound = dK * maxQ * maxK;
  if (!(bound < FLOAT32_MAX) || Math.abs(scale) * bound < FLOAT32_MAX) return undefined;
  return `scale ${scale} times q·kᵀ (up to ${bound.toPrecision(3)}) overflows 32-bit floats (above 3.4e38); use a smaller scale (the default is 1/√dK = ${(1 / Math.sqrt(dK)).toPrecision(3)})`;
}

// The reason of a non-finite result of a layer when its weights made it: their largest |w| at
// least x's largest |x|. stepped: step() has changed them (training diverged: the learning
// rate); else the weights given. -> the reason, or undefined (the inputs').
export function weightsBlame(maxW, maxX, stepped) {
  if (!(maxW >= maxX)) return undefined;
  const grown = `the layer's weights reach |w| = ${maxW.toPrecision(3)} (x's largest |x| is ${maxX.toPrecision(3)})`;
  return stepped
    ? `${grown}: step() made them so large, its training diverged; lower the learning rate (and start again from weights that were finite)`
    : `${grown}, so large that their products overflow 32-bit floats (above 3.4e38); scale them down`;
}

// window { left, right }: each -1 or absent (unbounded) or a count of keys >= 0.
export function checkWindow(where, window) {
  if (window === undefined) return { left: -1, right: -1 };
  const w = checkOptions(where, window, ['left', 'right'], 'window');
  const side = (name) => (w[name] === undefined ? -1 : checkInteger(where, `window.${name}`, w[name], -1));
  return { left: side('left'), right: side('right') };
}

export function checkSoftcap(where, softcap) {
  if (softcap === undefined) return 0;
  if (typeof softcap !== 'number') throw new TypeError(`${where}: softcap must be a number, got ${describe(softcap)}`);
  if (!(softcap >= 0) || !Number.isFinite(Math.fround(softcap)))
    throw new RangeError(`${where}: softcap must be 0 (none) or a positive finite number, got ${softcap}`);
  // the core holds it as a float32, where 0 means none: a cap too small for float32 is refused
  if (softcap > 0 && Math.fround(softcap) === 0) {
    throw new RangeError(
      `${where}: softcap ${softcap} rounds to 0 in float32, which means no softcap; give 0 for none or at least 1.4e-45`,
    );
  }
  return softcap;
}

// sinks: one logit per query head that joins every row's softmax denominator with no value
// (wa/score_mask.h), as a Float32Array of Hq values or a tensor { data, shape: [Hq] }; each
// finite, or -Infinity for none (as an additive mask's values). -> a Float32Array copy, or
// null when left out.
export function checkSinks(where, sinks, qHeads) {
  if (sinks === undefined || sinks === null) return null;
  let data;
  if (typedArrayName(sinks) !== undefined) data = float32View(where, 'sinks', sinks);
  else if (typeof sinks === 'object' && !Array.isArray(sinks))
    data = tensorValues(checkTensor(where, 'sinks', sinks, [1], `[Hq] = [${qHeads}]`));
  else
    throw new TypeError(
      `${where}: sinks must be a Float32Array of Hq = ${qHeads} values, one per query head, got ${describe(sinks)}`,
    );
  if (data.length !== qHeads)
    throw new RangeError(
      `${where}: sinks has ${data.length} values but there ${qHeads === 1 ? 'is 1 query head' : `are ${qHeads} query heads`} (Hq): one sink per query head`,
    );
  const copy = new Float32Array(data);
  copy.forEach((x, h) => {
    if (Number.isNaN(x) || x === Infinity)
      throw new RangeError(`${where}: sinks[${h}] is ${x}: a sink is a finite logit, or -Infinity for none`);
  });
  return copy;
}

// kvLength: number[] or Int32Array, one per sequence, each in [0, nTotal] -> an Int32Array copy.
export function checkKvLength(where, kvLength, batch, nTotal) {
  if (kvLength === undefined) return null;
  let lengths;
  if (typedArrayName(kvLength) === 'Int32Array') lengths = typedArrayCopy(where, 'kvLength', kvLength, Int32Array);
  else if (isArray(kvLength)) {
    lengths = new Int32Array(kvLength.length);
    for (let b = 0; b < lengths.length; ++b) {
      const n = kvLength[b];
      if (typeof n !== 'number') throw new TypeError(`${where}: kvLength[${b}] must be a number, got ${describe(n)}`);
      if (!Number.isInteger(n) || n < 0 || n > nTotal)
        throw new RangeError(`${where}: kvLength[${b}] is ${n}: each must be an integer from 0 to the ${nTotal} keys`);
      lengths[b] = n;
    }
  } else
    throw new TypeError(
      `${where}: kvLength must be a number[] or Int32Array (one length per sequence), got ${describe(kvLength)}`,
    );
  if (lengths.length !== batch)
    throw new RangeError(`${where}: kvLength has ${lengths.length} values but there are ${batch} sequences (B)`);
  lengths.forEach((n, b) => {
    if (n < 0 || n > nTotal)
      throw new RangeError(`${where}: kvLength[${b}] is ${n}: each must be an integer from 0 to the ${nTotal} keys`);
  });
  return lengths;
}

// rotary: true or { offset = 0, base = 10000, interleaved = false, dims = dK } -> wa::Rotary
// fields (dims 0 = all), offset before the earlier keys are added.
export function checkRotary(where, rotary, dK) {
  if (rotary === undefined || rotary === false) return null;
  const r = rotary === true ? {} : checkOptions(where, rotary, ['offset', 'base', 'interleaved', 'dims'], 'rotary');
  const offset = r.offset === undefined ? 0 : checkInteger(where, 'rotary.offset', r.offset, 0);
  let base = 10000;
  if (r.base !== undefined) {
    if (typeof r.base !== 'number')
      throw new TypeError(`${where}: rotary.base must be a number, got ${describe(r.base)}`);
    if (!(r.base > 0) || !Number.isFinite(r.base))
      throw new RangeError(`${where}: rotary.base must be a positive finite number, got ${r.base}`);
    base = r.base;
  }
  const interleaved = checkBoolean(where, 'rotary.interleaved', r.interleaved);
  const dims = r.dims === undefined ? dK : checkInteger(where, 'rotary.dims', r.dims, 2);
  if (dims % 2 !== 0 || dims > dK)
    throw new RangeError(`${where}: rotary.dims is ${dims}: it must be even and at most dK = ${dK}`);
  if (dK % 2 !== 0 && r.dims === undefined)
    throw new RangeError(`${where}: rotary needs an even dK to turn pairs, got dK = ${dK}; pass rotary.dims`);
  return { offset, base, dims, interleaved };
}
