// The wasm module's side of every call, in one place: the core's argument structs as the
// module binds them (cpp/bindings/embind.cpp, value objects of the structs of cpp/include/wa/:
// ScoreMask in score_mask.h, HeadsShape and HeadsMask in attention_heads.h, Rotary in rotary.h,
// the others in attention.h), one builder per struct, and the Status every call returns.
//
// Pointer fields are byte offsets into wasm memory; a field left out is 0, a null pointer.
// A new field of a core struct is added here once, in its list, and once in embind.cpp.

// Status.kind, as embind.cpp's ErrorKind.
export const ErrorKind = Object.freeze({ ok: 0, invalidArgument: 1, outOfMemory: 2, other: 3, outOfRange: 4 });

// Throws a call's failed Status as an Error prefixed with the public entry's name: a
// RangeError when wasm memory ran out or values left float32's range (the caller can shrink
// or scale the inputs), else an Error (the core refused arguments this package should never
// have passed).
export function throwIfFailed(where, status) {
  if (status.kind === ErrorKind.ok) return;
  const range = status.kind === ErrorKind.outOfMemory || status.kind === ErrorKind.outOfRange;
  const ErrorClass = range ? RangeError : Error;
  throw new ErrorClass(`${where}: ${status.message}`);
}

// A builder for the struct `name` with these fields: given an object with some of them,
// returns one with all of them, 0 (or false) for those left out. A key that is not a field
// is a bug in this package, so it throws.
function struct(name, fields, defaults = {}) {
  return (given = {}) => {
    for (const key in given) {
      if (!fields.includes(key)) throw new Error(`wasm-attention: ${name} has no field "${key}"`);
    }
    const value = {};
    for (const f of fields) value[f] = given[f] ?? defaults[f] ?? 0;
    return value;
  };
}

// wa::size_t(-1) (wa::kAllKeys, as wasm32 sees it): no key limit; mask rows nK apart.
const ALL_KEYS = 2 ** 32 - 1;
// wa::ScoreMask: causal, keep (Uint8Array) or bias (Float32Array) offsets read at row
// i·maskLd (0: one row for all) with maskCols columns, offset (key position of query 0), the
// window left/right (-1 unbounded), keyLimit, softcap (0: none) and sink (a logit in every
// row's softmax denominator, -Infinity: none); see wa/score_mask.h.
export const scoreMask = struct(
  'ScoreMask',
  ['causal', 'keep', 'bias', 'offset', 'left', 'right', 'keyLimit', 'maskLd', 'maskCols', 'softcap', 'sink'],
  {
    causal: false,
    left: -1,
    right: -1,
    keyLimit: ALL_KEYS,
    maskLd: ALL_KEYS,
    maskCols: ALL_KEYS,
    sink: -Infinity,
  },
);
// wa::AttentionTrace: the forward's (nQ,nK) intermediates; all 0 = no trace; capped optional.
export const attentionTrace = struct('AttentionTrace', ['scores', 'scaled', 'masked', 'weights', 'capped']);
// wa::AttentionBackwardTrace: P, dP, dS (nQ,nK); all 0 = no trace.
export const attentionBackwardTrace = struct('AttentionBackwardTrace', ['weights', 'dWeights', 'dScores']);
// wa::MhaShape; kvHeads 0 = heads.
export const mhaShape = struct('MhaShape', ['batch', 'nQ', 'nK', 'dModel', 'heads', 'dK', 'dV', 'kvHeads']);
// wa::MhaWeights: wq, wk, wv, wo, the biases and sinks (Float32Array (h); 0 = none).
export const mhaWeights = struct('MhaWeights', ['wq', 'wk', 'wv', 'wo', 'bq', 'bk', 'bv', 'bo', 'sinks']);
// wa::MhaSaved: the forward's outputs q, k, v, concat (what the backward reads back) and the
// per-head (batch,h,nQ,nK) intermediates; all 0 = no trace.
export const mhaSaved = struct('MhaSaved', ['q', 'k', 'v', 'scores', 'scaled', 'masked', 'weights', 'concat']);
// wa::MhaGrads: where mha_backward writes each gradient (0 for those a layer does not have).
export const mhaGrads = struct('MhaGrads', [
  'dx',
  'dContext',
  'dwq',
  'dwk',
  'dwv',
  'dwo',
  'dbq',
  'dbk',
  'dbv',
  'dbo',
  'dsinks',
]);

// wa::HeadsShape (wa/attention_heads.h).
export const headsShape = struct('HeadsShape', ['batch', 'qHeads', 'kvHeads', 'nQ', 'nK', 'dK', 'dV']);
// wa::HeadsMask: a ScoreMask moved by b·batchStride + h·headStride per sequence and query
// head (0 broadcasts), kvLength (Int32Array (batch) offset, 0 = every key real) and sinks
// (Float32Array (Hq) offset, 0 = the mask's sink for every head).
export const headsMask = struct('HeadsMask', ['mask', 'batchStride', 'headStride', 'kvLength', 'sinks'], {
  mask: scoreMask(),
});
// wa::Rotary (wa/rotary.h): offset (position of row 0), base, dims (0 = all), interleaved.
export const rotary = struct('Rotary', ['offset', 'base', 'dims', 'interleaved'], { base: 10000, interleaved: false });

// wa::HeadTensor (ConstHeadTensor and HeadTensor alike): heads at offset data, element t of
// row i of head h in sequence b at data + 4·(b·batchStride + h·headStride + i·rowStride + t).
//   4-D [B,heads,rows,d]: heads4d;   3-D [B,rows,heads·d]: heads3d   (wa::heads_4d, heads_3d)
export const heads4d = (data, heads, rows, d) => ({
  data,
  batchStride: heads * rows * d,
  headStride: rows * d,
  rowStride: d,
});
export const heads3d = (data, heads, rows, d) => ({
  data,
  batchStride: rows * heads * d,
  headStride: d,
  rowStride: heads * d,
});

// wa::ConstMatrix and wa::Matrix: a dense (rows,cols) row-major matrix at offset data.
export const matrix = (data, rows, cols) => ({ data, rows, cols, ld: cols });
