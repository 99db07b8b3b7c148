// The wasm module's side of every call, in one place: the core's argument structs (those of
// cpp/include/wa/: ScoreMask in score_mask.h, HeadsShape and HeadsMask in attention_heads.h,
// Rotary in rotary.h, the others in attention.h), one builder per struct, how a call writes
// them into wasm memory (StructWriter, at the offsets cpp/bindings/embind.cpp reports), and
// the Status every call returns.
//
// Pointer fields are byte offsets into wasm memory; a field left out is 0, a null pointer.
// A new field of a core struct is added here once, in its list, and once in embind.cpp's
// struct_layouts(); a module whose layouts differ from these lists is refused as it loads.

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

// A builder's record: { [STRUCT]: the struct's name in embind.cpp's layouts, values: its
// fields' values in its list's order }. StructWriter writes it; structFields shows it.
const STRUCT = Symbol('wasm-attention struct');
// Each struct's fields in its builder's order: StructWriter holds a module's layouts to them.
const FIELDS = {};

// A record -> { field: value } (for tests and debugging).
export const structFields = (record) => Object.fromEntries(FIELDS[record[STRUCT]].map((f, i) => [f, record.values[i]]));

// A builder for the struct `name` with these fields: given an object with some of them,
// returns a record of all of them, 0 (or false) for those left out. A key that is not a field
// is a bug in this package, so it throws.
function struct(name, fields, defaults = {}) {
  FIELDS[name] = fields;
  const known = new Set(fields);
  const zeros = fields.map((f) => defaults[f] ?? 0);
  return (given = {}) => {
    const values = new Array(fields.length);
    let present = 0;
    for (let i = 0; i < fields.length; ++i) {
      const g = given[fields[i]];
      if (g !== undefined) ++present;
      values[i] = g ?? zeros[i];
    }
    // every key a field: the walk over given's keys only when their count says one is not
    if (present !== Object.keys(given).length) {
      for (const key in given) if (!known.has(key)) throw new Error(`wasm-attention: ${name} has no field "${key}"`);
    }
    return { [STRUCT]: name, values };
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

// wa::HeadTensor (its const and mutable forms alike): heads at offset data, element t of
// row i of head h in sequence b at data + 4·(b·batchStride + h·headStride + i·rowStride + t).
//   4-D [B,heads,rows,d]: heads4d;   3-D [B,rows,heads·d]: heads3d   (wa::heads_4d, heads_3d)
FIELDS.HeadTensor = ['data', 'batchStride', 'headStride', 'rowStride'];
export const heads4d = (data, heads, rows, d) => ({
  [STRUCT]: 'HeadTensor',
  values: [data, heads * rows * d, rows * d, d],
});
export const heads3d = (data, heads, rows, d) => ({
  [STRUCT]: 'HeadTensor',
  values: [data, rows * heads * d, d, heads * d],
});

// A HeadTensor's or a matrix's data offset (the first field of both).
export const dataOf = (record) => record.values[0];

// wa::ConstMatrix and wa::Matrix: a dense (rows,cols) row-major matrix at offset data.
FIELDS.Matrix = ['data', 'rows', 'cols', 'ld'];
export const matrix = (data, rows, cols) => ({ [STRUCT]: 'Matrix', values: [data, rows, cols, cols] });

// Bytes of wasm memory a runtime keeps for one call's struct arguments: the most any call
// passes (a layer's backward) is about 230.
const ARENA_BYTES = 1024;
// A field's kind (embind.cpp's kind_of), by its index in the plans: [name, least, greatest value]
const KINDS = [
  ['u8', 0, 1],
  ['i32', -(2 ** 31), 2 ** 31 - 1],
  ['u32', 0, 2 ** 32 - 1],
  ['f32', -Infinity, Infinity],
  ['f64', -Infinity, Infinity],
];
const kindIndex = (kind) => KINDS.findIndex(([name]) => name === kind);

// Writes a call's struct arguments into a block of wasm memory kept for them, one after
// another, and gives each one's address: embind.cpp reads them there (its arg<T>). One per
// runtime; calls do not nest, so each call starts the block over (begin).
export class StructWriter {
  #heap;
  #plans = {}; // name -> { size, offsets, kinds (KINDS' index, or a struct's name) }
  #arena;
  #at = 0;
  #buffer = null;
  #u8;
  #i32;
  #u32;
  #f32;
  #f64;

  // module: its structLayouts() (JSON, embind.cpp) held to this file's builders
  constructor(module, heap) {
    this.#heap = heap;
    const layouts = JSON.parse(module.structLayouts());
    for (const [name, fields] of Object.entries(FIELDS)) {
      const layout = layouts[name];
      const theirs = layout ? Object.keys(layout.fields).sort().join() : '(none)';
      if (theirs !== [...fields].sort().join())
        throw new Error(`wasm-attention: the module's ${name} has fields ${theirs}, binding.js's ${fields.join()}`);
      const at = fields.map((f) => layout.fields[f]);
      this.#plans[name] = {
        size: layout.size,
        offsets: at.map(([offset]) => offset),
        kinds: at.map(([, kind]) => (kindIndex(kind) >= 0 ? kindIndex(kind) : kind)),
      };
    }
    this.#arena = heap.alloc(ARENA_BYTES, "the calls' struct arguments");
  }

  begin() {
    this.#at = 0;
    const buffer = this.#heap.buffer();
    if (this.#buffer === buffer) return;
    this.#buffer = buffer;
    this.#u8 = new Uint8Array(buffer);
    this.#i32 = new Int32Array(buffer);
    this.#u32 = new Uint32Array(buffer);
    this.#f32 = new Float32Array(buffer);
    this.#f64 = new Float64Array(buffer);
  }

  // a builder's record -> the address of its bytes (8-aligned)
  write(record) {
    const plan = this.#plans[record[STRUCT]];
    if (!plan) throw new Error(`wasm-attention: a call's argument is not a struct: ${String(record)}`);
    const at = this.#arena + this.#at;
    this.#at += (plan.size + 7) & ~7;
    if (this.#at > ARENA_BYTES) throw new Error('wasm-attention: a call passes more struct bytes than its arena holds');
    this.#fill(at, plan, record);
    return at;
  }

  #fill(address, plan, record) {
    const { offsets, kinds } = plan;
    const values = record.values;
    for (let i = 0; i < kinds.length; ++i) {
      const kind = kinds[i],
        v = values[i],
        at = address + offsets[i];
      if (typeof kind === 'string') {
        this.#fill(at, this.#plans[kind], v); // a struct held inline
        continue;
      }
      const x = typeof v === 'boolean' ? +v : v;
      const [name, least, greatest] = KINDS[kind];
      if (typeof x !== 'number' || !(x >= least && x <= greatest))
        throw new Error(
          `wasm-attention: ${record[STRUCT]}.${FIELDS[record[STRUCT]][i]} is ${String(v)}, not a ${name}`,
        );
      if (kind === 0) this.#u8[at] = x;
      else if (kind === 1) this.#i32[at >> 2] = x;
      else if (kind === 2) this.#u32[at >> 2] = x;
      else if (kind === 3) this.#f32[at >> 2] = x;
      else this.#f64[at >> 3] = x;
    }
  }
}
