// The checks of attention() and attentionBackward() on heads: q, k, v as 3-D or 4-D tensors
// and the options of the ONNX Attention operator (opsets 23-25), read once into a plain
// description of the call. Letters: B sequences, Hq query heads, Hkv key/value heads,
// nQ queries, nNew new keys, nPast earlier keys (pastKey or a cache), nTotal = nPast + nNew.
//   4-D q [B,Hq,nQ,dK], k [B,Hkv,nNew,dK], v [B,Hkv,nNew,dV]
//   3-D q [B,nQ,Hq·dK], k [B,nNew,Hkv·dK], v [B,nNew,Hkv·dV] (heads: { q: Hq, kv: Hkv })
// Nothing here touches wasm memory; every later step reads what these functions return.
// A call is read in two steps: parseHeadsAttention runs every getter of the caller's objects,
// then (the instance checked alive) resolveHeadsAttention looks at the cache.
import { checkCacheFits } from './kv_cache.js';
import {
  checkBoolean,
  checkOptions,
  checkOut,
  checkScale,
  checkTensor,
  describe,
  fitHeadsMask,
  float32View,
  isArray,
  isRevoked,
  readHeadsMask,
  showShape,
  typedArrayCopy,
  typedArrayName,
} from './tensor.js';

// qkOutput -> the trace buffer it reads: ONNX qk_matmul_output_mode 0..3.
export const QK_OUTPUTS = Object.freeze({
  scaled: 'scaled',
  softcapped: 'capped',
  masked: 'masked',
  weights: 'weights',
});

// attention()'s options; a 2-D call is one head of one sequence and refuses HEADS_ONLY by name.
export const FORWARD_OPTIONS = [
  'causal',
  'mask',
  'scale',
  'trace',
  'softcap',
  'window',
  'heads',
  'pastKey',
  'pastValue',
  'kvLength',
  'qkOutput',
  'rotary',
  'cache',
  'sinks',
  'out',
];
export const HEADS_ONLY = ['heads', 'pastKey', 'pastValue', 'kvLength', 'qkOutput', 'cache'];
const BACKWARD_OPTIONS = ['causal', 'mask', 'scale', 'softcap', 'window', 'heads', 'kvLength', 'rotary', 'sinks'];

function integerAtLeast(where, name, value, min) {
  if (typeof value !== 'number') throw new TypeError(`${where}: ${name} must be a number, got ${describe(value)}`);
  if (!Number.isInteger(value) || value < min || value > 2 ** 31 - 1) {
    throw new RangeError(`${where}: ${name} must be an integer from ${min} up, got ${value}`);
  }
  return value;
}

function plainObject(where, name, value, allowed) {
  if (
    value === null ||
    typeof value !== 'object' ||
    isArray(value) ||
    isRevoked(value) ||
    typedArrayName(value) !== undefined
  ) {
    throw new TypeError(`${where}: ${name} must be an object, got ${describe(value)}`);
  }
  return checkOptions(`${where}: ${name}`, value, allowed);
}

// q, k, v (snapshots) in one layout and heads -> the sizes.
function checkLayout(where, q, kArg, vArg, headsArg) {
  const rank = q.shape.length;
  const names = rank === 4 ? ['[B,Hkv,nNew,dK]', '[B,Hkv,nNew,dV]'] : ['[B,nNew,Hkv·dK]', '[B,nNew,Hkv·dV]'];
  const k = checkTensor(where, 'k', kArg, [2, 3, 4], names[0]);
  const v = checkTensor(where, 'v', vArg, [2, 3, 4], names[1]);
  for (const [name, t] of [
    ['k', k],
    ['v', v],
  ]) {
    if (t.shape.length !== rank) {
      throw new RangeError(
        `${where}: q is ${showShape(q.shape)} (${rank}-D) but ${name} is ${showShape(t.shape)} (${t.shape.length}-D): q, k and v must share one layout`,
      );
    }
  }
  let heads = null;
  if (headsArg !== undefined) {
    const h = plainObject(where, 'heads', headsArg, ['q', 'kv']);
    heads = { q: integerAtLeast(where, 'heads.q', h.q, 1), kv: integerAtLeast(where, 'heads.kv', h.kv, 1) };
  }
  let s;
  if (rank === 4) {
    s = {
      batch: q.shape[0],
      qHeads: q.shape[1],
      nQ: q.shape[2],
      dK: q.shape[3],
      kvHeads: k.shape[1],
      nNew: k.shape[2],
      dV: v.shape[3],
    };
    if (k.shape[3] !== s.dK)
      throw new RangeError(
        `${where}: k is ${showShape(k.shape)} but q is ${showShape(q.shape)}: k needs dK = ${s.dK} columns`,
      );
    if (v.shape[1] !== s.kvHeads || v.shape[2] !== s.nNew) {
      throw new RangeError(
        `${where}: v is ${showShape(v.shape)} but k is ${showShape(k.shape)}: v needs the same batch, kv heads and rows [${k.shape[0]},${s.kvHeads},${s.nNew},dV]`,
      );
    }
    if (heads && (heads.q !== s.qHeads || heads.kv !== s.kvHeads)) {
      throw new RangeError(
        `${where}: heads is { q: ${heads.q}, kv: ${heads.kv} } but the 4-D q ${showShape(q.shape)} and k ${showShape(k.shape)} hold ${s.qHeads} and ${s.kvHeads}`,
      );
    }
  } else {
    if (!heads)
      throw new TypeError(`${where}: 3-D q ${showShape(q.shape)} needs heads: { q, kv } (q's last size is Hq·dK)`);
    s = { batch: q.shape[0], qHeads: heads.q, nQ: q.shape[1], kvHeads: heads.kv, nNew: k.shape[1] };
    if (q.shape[2] % heads.q !== 0)
      throw new RangeError(
        `${where}: q is ${showShape(q.shape)}: its last size ${q.shape[2]} is not a multiple of heads.q = ${heads.q}`,
      );
    s.dK = q.shape[2] / heads.q;
    if (k.shape[2] !== heads.kv * s.dK) {
      throw new RangeError(
        `${where}: k is ${showShape(k.shape)} but needs last size heads.kv·dK = ${heads.kv}·${s.dK} = ${heads.kv * s.dK}`,
      );
    }
    if (v.shape[1] !== s.nNew)
      throw new RangeError(
        `${where}: v is ${showShape(v.shape)} but k is ${showShape(k.shape)}: v needs ${s.nNew} rows, one per key`,
      );
    if (v.shape[2] % heads.kv !== 0)
      throw new RangeError(
        `${where}: v is ${showShape(v.shape)}: its last size ${v.shape[2]} is not a multiple of heads.kv = ${heads.kv}`,
      );
    s.dV = v.shape[2] / heads.kv;
  }
  if (k.shape[0] !== s.batch || v.shape[0] !== s.batch) {
    throw new RangeError(
      `${where}: q, k and v must have the same batch size, got q ${showShape(q.shape)}, k ${showShape(k.shape)}, v ${showShape(v.shape)}`,
    );
  }
  if (s.qHeads % s.kvHeads !== 0) {
    throw new RangeError(
      `${where}: ${s.qHeads} query heads do not divide into ${s.kvHeads} kv heads (Hq must be a multiple of Hkv)`,
    );
  }
  return { ...s, threeD: rank === 3, k, v };
}

// window { left, right }: each -1 or absent (unbounded) or a count of keys >= 0.
export function checkWindow(where, window) {
  if (window === undefined) return { left: -1, right: -1 };
  const w = plainObject(where, 'window', window, ['left', 'right']);
  const side = (name) => (w[name] === undefined ? -1 : integerAtLeast(where, `window.${name}`, w[name], -1));
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
    data = checkTensor(where, 'sinks', sinks, [1], `[Hq] = [${qHeads}]`).data;
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
function checkKvLength(where, kvLength, batch, nTotal) {
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
  const r = rotary === true ? {} : plainObject(where, 'rotary', rotary, ['offset', 'base', 'interleaved', 'dims']);
  const offset = r.offset === undefined ? 0 : integerAtLeast(where, 'rotary.offset', r.offset, 0);
  let base = 10000;
  if (r.base !== undefined) {
    if (typeof r.base !== 'number')
      throw new TypeError(`${where}: rotary.base must be a number, got ${describe(r.base)}`);
    if (!(r.base > 0) || !Number.isFinite(r.base))
      throw new RangeError(`${where}: rotary.base must be a positive finite number, got ${r.base}`);
    base = r.base;
  }
  const interleaved = checkBoolean(where, 'rotary.interleaved', r.interleaved);
  const dims = r.dims === undefined ? dK : integerAtLeast(where, 'rotary.dims', r.dims, 2);
  if (dims % 2 !== 0 || dims > dK)
    throw new RangeError(`${where}: rotary.dims is ${dims}: it must be even and at most dK = ${dK}`);
  if (dK % 2 !== 0 && r.dims === undefined)
    throw new RangeError(`${where}: rotary needs an even dK to turn pairs, got dK = ${dK}; pass rotary.dims`);
  return { offset, base, dims, interleaved };
}

function checkQkOutput(where, qkOutput) {
  if (qkOutput === undefined) return null;
  if (typeof qkOutput !== 'string')
    throw new TypeError(`${where}: qkOutput must be a string, got ${describe(qkOutput)}`);
  if (!Object.hasOwn(QK_OUTPUTS, qkOutput)) {
    throw new RangeError(
      `${where}: qkOutput "${qkOutput}" is not one of ${Object.keys(QK_OUTPUTS)
        .map((m) => `'${m}'`)
        .join(', ')}`,
    );
  }
  return qkOutput;
}

// pastKey [B,Hkv,nPast,dK], pastValue [B,Hkv,nPast,dV] -> { key, value, nPast } or null.
function checkPast(where, o, s) {
  if (o.pastKey === undefined && o.pastValue === undefined) return null;
  if (o.pastKey === undefined || o.pastValue === undefined)
    throw new TypeError(
      `${where}: pastKey and pastValue go together; got only ${o.pastKey === undefined ? 'pastValue' : 'pastKey'}`,
    );
  const key = checkTensor(where, 'pastKey', o.pastKey, [4], '[B,Hkv,nPast,dK]');
  const value = checkTensor(where, 'pastValue', o.pastValue, [4], '[B,Hkv,nPast,dV]');
  const nPast = key.shape[2];
  const wantK = [s.batch, s.kvHeads, nPast, s.dK],
    wantV = [s.batch, s.kvHeads, nPast, s.dV];
  if (showShape(key.shape) !== showShape(wantK))
    throw new RangeError(
      `${where}: pastKey is ${showShape(key.shape)} but must be [B,Hkv,nPast,dK] = ${showShape(wantK)}`,
    );
  if (showShape(value.shape) !== showShape(wantV))
    throw new RangeError(
      `${where}: pastValue is ${showShape(value.shape)} but must be [B,Hkv,nPast,dV] = ${showShape(wantV)}`,
    );
  return { key, value, nPast };
}

// q (a snapshot of 3 or 4 dimensions), k, v, options, read once (every getter of the
// caller's objects runs here) -> a frozen description of the call, its cache not yet looked
// at: cache is the caller's value (or undefined), mask read but not yet fit to the keys, out
// the caller's array for the output (tensor.js checkOut) or null.
// backward: attentionBackward's options (no past, cache, trace or qkOutput).
export function parseHeadsAttention(where, q, kArg, vArg, options, backward = false) {
  const o = checkOptions(where, options, backward ? BACKWARD_OPTIONS : FORWARD_OPTIONS);
  const s = checkLayout(where, q, kArg, vArg, o.heads);
  const past = backward ? null : checkPast(where, o, s);
  const cache = backward ? undefined : o.cache;
  if (cache !== undefined && past) throw new TypeError(`${where}: pass pastKey/pastValue or cache, not both`);
  let kvLength = null;
  if (o.kvLength !== undefined) {
    if (cache !== undefined) throw new TypeError(`${where}: kvLength (padded sequences) cannot be combined with cache`);
    kvLength = checkKvLength(where, o.kvLength, s.batch, (past ? past.nPast : 0) + s.nNew);
    if (past) throw new TypeError(`${where}: kvLength (padded sequences) cannot be combined with pastKey`);
  }
  const { left, right } = checkWindow(where, o.window);
  return Object.freeze({
    ...s,
    q,
    past,
    cache,
    kvLength,
    left,
    right,
    causal: checkBoolean(where, 'causal', o.causal),
    trace: checkBoolean(where, 'trace', o.trace),
    scale: checkScale(where, o.scale, s.dK),
    softcap: checkSoftcap(where, o.softcap),
    qkOutput: checkQkOutput(where, o.qkOutput),
    rotary: checkRotary(where, o.rotary, s.dK),
    mask: readHeadsMask(where, o.mask),
    sinks: checkSinks(where, o.sinks, s.qHeads),
    // last: no getter of the caller's runs after it
    out: checkOut(where, o.out, {
      count: s.batch * s.qHeads * s.nQ * s.dV,
      format: q.format,
      input: 'q',
      what: `the output ${showShape(s.threeD ? [s.batch, s.nQ, s.qHeads * s.dV] : [s.batch, s.qHeads, s.nQ, s.dV])}`,
    }),
  });
}

// parseHeadsAttention's call -> everything heads_attention.js needs: the cache (its state)
// looked up and measured now, after every argument was read, so the call acts on it as it is;
// nPast (pastKey's rows or the cache's length before this call appends), nTotal = nPast +
// nNew; the mask fit to [B,Hq,nQ,nTotal] (v's weighted sums are checked on its copy in wasm
// memory: heads_attention.js).
export function resolveHeadsAttention(rt, where, c) {
  let cache = null,
    nPast = c.past ? c.past.nPast : 0;
  if (c.cache !== undefined) {
    ({ cache, length: nPast } = checkCacheFits(where, c.cache, rt, c, c.nNew, {
      misfit: (cc) =>
        `${where}: the cache holds [batch,kvHeads,dK,dV] = ${showShape([cc.batch, cc.kvHeads, cc.dK, cc.dV])} but k and v are ${showShape([c.batch, c.kvHeads, c.dK, c.dV])}`,
      overflow: (length, cc) =>
        `${where}: the cache holds ${length} of ${cc.capacity} rows and ${c.nNew} new keys would overflow it; create it with a larger capacity or reset() it`,
    }));
  }
  const nTotal = nPast + c.nNew;
  return Object.freeze({ ...c, cache, nPast, nTotal, mask: fitHeadsMask(where, c.mask, c, nTotal) });
}
