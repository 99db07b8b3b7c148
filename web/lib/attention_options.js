// The checks of attention() and attentionBackward() in every form, read once into a plain
// description of the call: the one parser of the three forms, a 2-D call being heads with
// B = Hq = Hkv = 1. Letters: B sequences, Hq query heads, Hkv key/value heads, nQ queries,
// nNew new keys, nPast earlier keys (pastKey or a cache), nTotal = nPast + nNew.
//   2-D q [nQ,dK], k [nNew,dK], v [nNew,dV] (one head of one sequence; results 2-D)
//   4-D q [B,Hq,nQ,dK], k [B,Hkv,nNew,dK], v [B,Hkv,nNew,dV]
//   3-D q [B,nQ,Hq·dK], k [B,nNew,Hkv·dK], v [B,nNew,Hkv·dV] (heads: { q: Hq, kv: Hkv })
// Nothing here touches wasm memory; every later step reads what these functions return.
// A call is read in two steps: parseAttention runs every getter of the caller's objects,
// then (the instance checked alive) resolveAttention looks at the cache and fits the mask.
import { checkCacheFits } from './kv_cache.js';
import {
  checkBoolean,
  checkInteger,
  checkKvLength,
  checkOneOf,
  checkOptions,
  checkOut,
  checkRotary,
  checkScale,
  checkSinks,
  checkSoftcap,
  checkTensor,
  checkWindow,
  fitMask,
  readMask,
  showShape,
} from './validate.js';

// qkOutput -> the trace buffer it reads: ONNX qk_matmul_output_mode 0..3.
export const QK_OUTPUTS = Object.freeze({
  scaled: 'scaled',
  softcapped: 'capped',
  masked: 'masked',
  weights: 'weights',
});

// attention()'s options. A 2-D call is one head of one sequence and refuses HEADS_ONLY by name.
const FORWARD_OPTIONS = [
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
const HEADS_ONLY = ['heads', 'pastKey', 'pastValue', 'kvLength', 'qkOutput', 'cache'];
// attentionBackward's options: attention()'s but out (it has several results). It refuses
// BACKWARD_REFUSES by name in every form, and trace on heads (the core's heads backward keeps
// no intermediates).
const BACKWARD_OPTIONS = FORWARD_OPTIONS.filter((name) => name !== 'out');
const BACKWARD_REFUSES = ['pastKey', 'pastValue', 'cache', 'qkOutput'];

// q's shapes, for messages.
const Q_SHAPES = '[nQ,dK], [B,nQ,Hq·dK] or [B,Hq,nQ,dK]';

// The names of k's and v's shapes in the layout of a q of `rank` dimensions, for messages.
const KV_SHAPES = {
  2: ['[nK,dK]', '[nK,dV]'],
  3: ['[B,nNew,Hkv·dK]', '[B,nNew,Hkv·dV]'],
  4: ['[B,Hkv,nNew,dK]', '[B,Hkv,nNew,dV]'],
};

// q, k, v (snapshots) in one layout, and heads -> the sizes (a 2-D call: B = Hq = Hkv = 1).
function checkLayout(where, q, k, v, headsArg) {
  const rank = q.shape.length;
  if (rank === 2) {
    const [nQ, dK] = q.shape;
    const [nNew, dV] = v.shape;
    if (k.shape[1] !== dK) {
      throw new RangeError(
        `${where}: k is ${showShape(k.shape)} but q is ${showShape(q.shape)}: k needs ${dK} columns, as many as q (dK)`,
      );
    }
    if (k.shape[0] !== nNew) {
      throw new RangeError(
        `${where}: v is ${showShape(v.shape)} but k is ${showShape(k.shape)}: v needs ${k.shape[0]} rows, one per key (nK)`,
      );
    }
    return { batch: 1, qHeads: 1, kvHeads: 1, nQ, dK, nNew, dV, twoD: true, threeD: false, k, v };
  }
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
    const h = checkOptions(where, headsArg, ['q', 'kv'], 'heads');
    heads = { q: checkInteger(where, 'heads.q', h.q, 1), kv: checkInteger(where, 'heads.kv', h.kv, 1) };
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
  s.twoD = false;
  s.threeD = rank === 3;
  s.k = k;
  s.v = v;
  return s;
}

function checkQkOutput(where, qkOutput) {
  if (qkOutput === undefined) return null;
  checkOneOf(where, 'qkOutput', qkOutput, Object.keys(QK_OUTPUTS));
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

// The shape of a tensor of `heads` heads of `rows` rows of d, in the call's layout.
export const shapeOf = (c, heads, rows, d) =>
  c.twoD ? [rows, d] : c.threeD ? [c.batch, rows, heads * d] : [c.batch, heads, rows, d];

// The options a call's form and direction refuse by name, each with its reason.
function refuseOptions(where, o, twoD, backward) {
  const given = (names) => names.find((name) => o[name] !== undefined);
  const refused = backward && given(BACKWARD_REFUSES);
  if (refused) {
    throw new TypeError(
      `${where}: takes no ${refused}, in any form: it differentiates attention over the k and v it is given${refused === 'qkOutput' ? '' : ' (pass all the keys and values, past and new, as k and v)'}`,
    );
  }
  const headsOnly = twoD && given(HEADS_ONLY);
  if (headsOnly) {
    throw new TypeError(
      `${where}: option "${headsOnly}" needs q, k, v as 3-D [B,S,H·D] or 4-D [B,H,S,D] tensors; 2-D calls take causal, mask, scale, trace, softcap, window, rotary, sinks${backward ? '' : ', out'}`,
    );
  }
}

// q, k, v, options of attention() (backward: of attentionBackward()) in any form, read once
// (every getter of the caller's objects runs here) -> a plain description of the call, its
// cache not yet looked at: q, k, v (snapshots), the sizes, twoD and threeD (the layout), cache
// (the caller's value, or undefined), mask read but not yet fit to the keys, out (the caller's
// array for the output, checkOut) or null.
export function parseAttention(where, qArg, kArg, vArg, options, backward = false) {
  // the arguments in their order: q, k, v, then the options; the mask first of those, so that
  // no later getter of the caller's reaches what it copied
  const q = checkTensor(where, 'q', qArg, [2, 3, 4], Q_SHAPES);
  const twoD = q.shape.length === 2;
  const [kNames, vNames] = KV_SHAPES[q.shape.length];
  const ranks = twoD ? [2] : [2, 3, 4];
  const [k, v] = [checkTensor(where, 'k', kArg, ranks, kNames), checkTensor(where, 'v', vArg, ranks, vNames)];
  const o = checkOptions(where, options, backward ? BACKWARD_OPTIONS : FORWARD_OPTIONS);
  refuseOptions(where, o, twoD, backward);
  const mask = readMask(where, o.mask, twoD);
  const s = checkLayout(where, q, k, v, o.heads);
  const past = checkPast(where, o, s);
  const cache = o.cache;
  if (cache !== undefined && past) throw new TypeError(`${where}: pass pastKey/pastValue or cache, not both`);
  let kvLength = null;
  if (o.kvLength !== undefined) {
    if (cache !== undefined) throw new TypeError(`${where}: kvLength (padded sequences) cannot be combined with cache`);
    kvLength = checkKvLength(where, o.kvLength, s.batch, (past ? past.nPast : 0) + s.nNew);
    if (past) throw new TypeError(`${where}: kvLength (padded sequences) cannot be combined with pastKey`);
  }
  const trace = checkBoolean(where, 'trace', o.trace);
  if (backward && trace && !twoD) {
    throw new TypeError(`${where}: trace needs 2-D q, k, v: the backward on heads (3-D or 4-D) keeps no intermediates`);
  }
  const { left, right } = checkWindow(where, o.window);
  // every field written out, in one order for every form (a spread here costs more than the
  // whole call at small sizes)
  return {
    batch: s.batch,
    qHeads: s.qHeads,
    kvHeads: s.kvHeads,
    nQ: s.nQ,
    nNew: s.nNew,
    dK: s.dK,
    dV: s.dV,
    twoD: s.twoD,
    threeD: s.threeD,
    k: s.k,
    v: s.v,
    q,
    past,
    cache,
    kvLength,
    left,
    right,
    causal: checkBoolean(where, 'causal', o.causal),
    trace,
    scale: checkScale(where, o.scale, s.dK),
    softcap: checkSoftcap(where, o.softcap),
    qkOutput: checkQkOutput(where, o.qkOutput),
    rotary: checkRotary(where, o.rotary, s.dK),
    mask,
    sinks: checkSinks(where, o.sinks, s.qHeads),
    // last: no getter of the caller's runs after it
    out:
      o.out === undefined
        ? null
        : checkOut(where, o.out, {
            count: s.batch * s.qHeads * s.nQ * s.dV,
            format: q.format,
            input: 'q',
            what: `the output ${showShape(shapeOf(s, s.qHeads, s.nQ, s.dV))}`,
          }),
    // resolveAttention's
    nPast: 0,
    nTotal: 0,
  };
}

// dOutput = ∂L/∂output of attentionBackward, for parseAttention's call c -> its snapshot,
// in the output's shape.
export function checkDOutput(where, c, dOutput) {
  const want = shapeOf(c, c.qHeads, c.nQ, c.dV);
  const letters = { 2: '[nQ,dV]', 3: '[B,nQ,Hq·dV]', 4: '[B,Hq,nQ,dV]' }[want.length];
  const dOut = checkTensor(where, 'dOutput', dOutput, [want.length], `${letters} = ${showShape(want)}`);
  if (showShape(dOut.shape) !== showShape(want)) {
    throw new RangeError(
      `${where}: dOutput is ${showShape(dOut.shape)} but the output of attention(q ${showShape(c.q.shape)}, v ${showShape(c.v.shape)}) is ${showShape(want)}`,
    );
  }
  return dOut;
}

// parseAttention's call, completed in place -> everything attention_heads.js needs: the
// cache (its state) looked up and measured now, after every argument was read, so the call
// acts on it as it is; nPast (pastKey's rows or the cache's length before this call appends),
// nTotal = nPast + nNew; the mask fit to [B,Hq,nQ,nTotal], [nQ,nK] for a 2-D call (v's
// weighted sums are checked on its copy in wasm memory: attention_heads.js).
export function resolveAttention(rt, where, c) {
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
  c.mask = fitMask(where, c.mask, c, nTotal);
  c.cache = cache;
  c.nPast = nPast;
  c.nTotal = nTotal;
  return c;
}
