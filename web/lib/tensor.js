// Tensors, and the checks every public entry runs before it touches wasm memory.
// A tensor is { data: Float32Array, shape: number[] }, row-major. Checks throw TypeError for
// a wrong kind of value and RangeError for a wrong size or value, saying what to fix.

export function tensor(data, shape) {
  return { data, shape };
}

export const showShape = (shape) => `[${shape.join(',')}]`;

function describe(value) {
  if (value === null) return 'null';
  if (value === undefined) return 'undefined';
  if (Array.isArray(value)) return 'an Array';
  if (typeof value === 'object') {
    const name = value.constructor?.name ?? 'object';
    return `${/^[aeiou]/i.test(name) ? 'an' : 'a'} ${name}`;
  }
  return typeof value === 'number' ? `the number ${value}` : `a ${typeof value}`;
}

// ranks: the ranks allowed, e.g. [2] or [2, 3]; shapes named like "[n,dModel]" for messages.
export function checkTensor(where, name, t, ranks, shapeNames) {
  const expected = shapeNames ? ` ${shapeNames}` : '';
  if (t === null || typeof t !== 'object' || ArrayBuffer.isView(t) || Array.isArray(t)) {
    throw new TypeError(`${where}: ${name} must be a tensor { data: Float32Array, shape: number[] }${expected}, got ${describe(t)}`);
  }
  if (!(t.data instanceof Float32Array)) {
    throw new TypeError(`${where}: ${name}.data must be a Float32Array, got ${describe(t.data)}`);
  }
  if (!Array.isArray(t.shape)) {
    throw new TypeError(`${where}: ${name}.shape must be an array of sizes, got ${describe(t.shape)}`);
  }
  if (!ranks.includes(t.shape.length)) {
    throw new RangeError(`${where}: ${name} must have ${ranks.join(' or ')} dimensions${expected}, got shape ${showShape(t.shape)}`);
  }
  for (const d of t.shape) {
    if (!Number.isInteger(d) || d < 1) {
      throw new RangeError(`${where}: ${name} has shape ${showShape(t.shape)}: every size must be a positive integer`);
    }
  }
  const count = t.shape.reduce((a, b) => a * b, 1);
  if (t.data.length !== count) {
    throw new RangeError(`${where}: ${name}.data has ${t.data.length} values but shape ${showShape(t.shape)} needs ${count}`);
  }
  // The values' finiteness is checked in wasm once they are copied there (Heap.putFinite).
}

export function checkFinite(where, name, data) {
  for (let i = 0; i < data.length; ++i) {
    if (!Number.isFinite(data[i])) {
      throw new RangeError(`${where}: ${name}[${i}] is ${data[i]}: inputs must be finite numbers`);
    }
  }
}

export function checkPositiveInteger(where, name, value) {
  if (typeof value !== 'number') throw new TypeError(`${where}: ${name} must be a number, got ${describe(value)}`);
  if (!Number.isInteger(value) || value < 1) throw new RangeError(`${where}: ${name} must be a positive integer, got ${value}`);
}

export function checkOptions(where, options, allowed) {
  if (options === undefined) return {};
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new TypeError(`${where}: options must be an object, got ${describe(options)}`);
  }
  for (const key of Object.keys(options)) {
    if (!allowed.includes(key)) {
      throw new TypeError(`${where}: unknown option "${key}" (known: ${allowed.join(', ')})`);
    }
  }
  return options;
}

export function checkBoolean(where, name, value) {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') throw new TypeError(`${where}: ${name} must be true or false, got ${describe(value)}`);
  return value;
}

// scale: a number finite also as a float32 (wasm computes in float32), 1/sqrt(dK) when left out.
export function checkScale(where, scale, dK) {
  if (scale === undefined) return 1 / Math.sqrt(dK);
  if (typeof scale !== 'number') throw new TypeError(`${where}: scale must be a number, got ${describe(scale)}`);
  if (!Number.isFinite(scale)) throw new RangeError(`${where}: scale must be finite, got ${scale}`);
  if (!Number.isFinite(Math.fround(scale))) {
    throw new RangeError(`${where}: scale must be finite as a 32-bit float (|scale| < 3.4e38), got ${scale}`);
  }
  return scale;
}

// mask, for nQ queries and nK keys: a keep mask (Uint8Array, 1 = keep) or an additive one
// (Float32Array, -Infinity masks), either as a tensor of shape [nQ,nK] or a bare typed array
// of nQ·nK values. -> { keep, bias } with at most one set.
export function checkMask(where, mask, nQ, nK) {
  if (mask === undefined || mask === null) return { keep: null, bias: null };
  const data = ArrayBuffer.isView(mask) ? mask : mask?.data;
  const shape = ArrayBuffer.isView(mask) ? null : mask?.shape;
  if (!(data instanceof Uint8Array) && !(data instanceof Float32Array)) {
    const isTensor = typeof mask === 'object' && !ArrayBuffer.isView(mask) && !Array.isArray(mask);
    const got = isTensor ? `mask.data is ${describe(mask.data)}` : `got ${describe(mask)}`;
    throw new TypeError(`${where}: mask must be { data: Uint8Array (1 = keep) or Float32Array (added to the scores), shape: [nQ,nK] } or a bare typed array; ${got}`);
  }
  if (shape !== null && shape !== undefined && !Array.isArray(shape)) {
    throw new TypeError(`${where}: mask.shape must be an array [nQ,nK], got ${describe(shape)}`);
  }
  if (shape && (shape.length !== 2 || shape[0] !== nQ || shape[1] !== nK)) {
    throw new RangeError(`${where}: mask has shape ${showShape(shape)} but the scores are [${nQ},${nK}] (nQ queries by nK keys)`);
  }
  if (data.length !== nQ * nK) {
    throw new RangeError(`${where}: mask has ${data.length} values but the scores [${nQ},${nK}] need ${nQ * nK}`);
  }
  if (data instanceof Uint8Array) return { keep: data, bias: null };
  for (let i = 0; i < data.length; ++i) {
    if (Number.isNaN(data[i]) || data[i] === Infinity) {
      throw new RangeError(`${where}: mask[${i}] is ${data[i]}: an additive mask takes finite values, or -Infinity to mask`);
    }
  }
  return { keep: null, bias: data };
}
