// attention() and attentionBackward() in every form (a 2-D call is one head of one sequence):
// one call of the core's attention_heads_forward/backward (wa/attention_heads.h), with rotary
// (wa/rotary.h) on copies of q and k, and earlier keys from pastKey/pastValue or a cache
// (wa/kv_cache.h). A 2-D backward with trace calls the core's 2-D attention_backward
// (wa/attention.h), the one entry that keeps the backward's intermediates. The call's
// description comes from attention_options.js; letters as there.
import {
  attentionBackwardTrace,
  attentionTrace,
  dataOf,
  heads3d,
  heads4d,
  headsMask,
  headsShape,
  matrix,
  rotary,
  scoreMask,
} from './binding.js';
import { QK_OUTPUTS, shapeOf } from './attention_options.js';
import { kvTypeIndex, stepOver } from './kv_cache.js';
import { checkWeightedSums, largest, scaleBlame, showShape } from './validate.js';
import { plainTensor as tensor, resultTensor } from './tensor.js';

const TRACE_NAMES = ['scores', 'scaled', 'masked', 'weights'];
const BACKWARD_TRACE_NAMES = ['weights', 'dWeights', 'dScores'];

// a 2-D tensor [rows,d] lies as the one head of [1,1,rows,d]
const layout = (c) => (c.threeD ? heads3d : heads4d);

// q, k, v copied into scope s, v's weighted sums over nTotal keys checked (checkWeightedSums),
// q and k rotated to their positions: row r of q and of k stands at rotary.offset + nPast + r.
function putRotated(rt, where, s, c) {
  const lay = layout(c);
  const q = lay(s.putFinite(c.q.data, 'q.data'), c.qHeads, c.nQ, c.dK);
  const k = lay(s.putFinite(c.k.data, 'k.data'), c.kvHeads, c.nNew, c.dK);
  const vAt = s.putFinite(c.v.data, 'v.data');
  checkWeightedSums(where, rt.heap.maxAbs(vAt, c.batch * c.kvHeads * c.nNew * c.dV), c.nTotal);
  const v = lay(vAt, c.kvHeads, c.nNew, c.dV);
  const r = c.rotary;
  const turn = r && rotary({ offset: r.offset + c.nPast, base: r.base, dims: r.dims, interleaved: r.interleaved });
  if (turn) {
    rt.call(where, 'rotaryForward', c.batch, c.qHeads, c.nQ, c.dK, q, turn);
    rt.call(where, 'rotaryForward', c.batch, c.kvHeads, c.nNew, c.dK, k, turn);
  }
  return { q, k, v, turn };
}

// The mask, window and softcap, in scope s, as a wa::ScoreMask (binding.js scoreMask: a field
// left undefined takes its default); offset: key position of query 0; sink: one logit in every
// row's softmax denominator (undefined: none).
function putScoreMask(s, c, offset, sink) {
  const m = c.mask;
  return scoreMask({
    causal: c.causal,
    keep: m?.keep ? s.put(m.keep, 'mask') : 0,
    bias: m?.bias ? s.put(m.bias, 'mask') : 0,
    offset,
    left: c.left,
    right: c.right,
    maskLd: m?.maskLd,
    maskCols: m?.maskCols,
    softcap: c.softcap,
    sink,
  });
}

// putScoreMask's, with kvLength and sinks, as wa::HeadsMask.
function putMask(s, c, offset) {
  const m = c.mask;
  return headsMask({
    mask: putScoreMask(s, c, offset),
    batchStride: m ? m.batchStride : 0,
    headStride: m ? m.headStride : 0,
    kvLength: c.kvLength ? s.put(c.kvLength, 'kvLength') : 0,
    sinks: c.sinks ? s.put(c.sinks, 'sinks') : 0,
  });
}

// A float32 wa::KvCache made for this call only: past rows then the new ones, 4-D; its rows
// are exactly presentKey and presentValue. Destroyed by the caller (module.kvCacheDestroy).
function concatenatePast(rt, where, s, c, k, v) {
  const { heap, module } = rt;
  const n = c.nTotal;
  const out = s.alloc(4, 'the handle');
  rt.call(where, 'kvCacheCreate', c.batch, c.kvHeads, c.dK, c.dV, n, kvTypeIndex('float32'), out);
  const handle = new Uint32Array(heap.buffer(), out, 1)[0];
  try {
    const pastK = heads4d(s.putFinite(c.past.key.data, 'pastKey.data'), c.kvHeads, c.nPast, c.dK);
    const pastV = heads4d(s.putFinite(c.past.value.data, 'pastValue.data'), c.kvHeads, c.nPast, c.dV);
    rt.call(where, 'kvCacheAppend', handle, c.nPast, pastK, pastV);
    rt.call(where, 'kvCacheAppend', handle, c.nNew, k, v);
  } catch (e) {
    module.kvCacheDestroy(handle);
    throw e;
  }
  return handle;
}

// -> { output (q's layout, dV), presentKey?, presentValue?, qk?, trace intermediates? }
export function headsForward(rt, where, c) {
  return c.cache ? stepOver(c.cache, () => headsForwardOnce(rt, where, c)) : headsForwardOnce(rt, where, c);
}

function headsForwardOnce(rt, where, c) {
  const { heap, module } = rt;
  return heap.scoped(where, (s) => {
    const { q, k, v } = putRotated(rt, where, s, c);
    let offset = 0,
      handle = 0;
    const n = c.nTotal;
    if (c.past) {
      handle = concatenatePast(rt, where, s, c, k, v);
      offset = c.nPast;
    } else if (c.cache) {
      rt.call(where, 'kvCacheAppend', c.cache.handle, c.nNew, k, v);
      handle = c.cache.handle;
      offset = n - c.nQ; // the new queries are the cache's last tokens: bottom-right
    }
    try {
      const outShape = shapeOf(c, c.qHeads, c.nQ, c.dV);
      const out = s.alloc(4 * c.batch * c.qHeads * c.nQ * c.dV, `the output ${JSON.stringify(outShape)}`);
      const traceCount = c.batch * c.qHeads * c.nQ * n;
      const qkShape = c.twoD ? [c.nQ, n] : [c.batch, c.qHeads, c.nQ, n];
      const traced = {};
      if (c.trace || c.qkOutput) {
        const names = c.softcap > 0 ? [...TRACE_NAMES, 'capped'] : TRACE_NAMES;
        for (const name of names) traced[name] = s.alloc(4 * traceCount, `the trace's ${name} ${showShape(qkShape)}`);
      }
      const shape = headsShape({
        batch: c.batch,
        qHeads: c.qHeads,
        kvHeads: c.kvHeads,
        nQ: c.nQ,
        nK: n,
        dK: c.dK,
        dV: c.dV,
      });
      const outHeads = layout(c)(out, c.qHeads, c.nQ, c.dV);
      const mask = putMask(s, c, offset);
      // over a cache (the caller's, or one made for pastKey/pastValue): the cache's own entry
      if (handle)
        rt.call(
          where,
          'attentionHeadsForwardCached',
          shape,
          q,
          handle,
          outHeads,
          c.scale,
          mask,
          attentionTrace(traced),
        );
      else rt.call(where, 'attentionHeadsForward', shape, q, k, v, outHeads, c.scale, mask, attentionTrace(traced));
      // output and qk in q's format (ONNX's T1), presentKey and presentValue in pastKey's and
      // pastValue's (T2); trace intermediates float32. The output is read last: the caller's
      // out (c.out) is written only once nothing else can fail.
      const result = { output: null };
      // without softcap, cap() is the identity: 'capped' reads the scaled scores; each
      // tensor its own shape array
      const readTrace = (name) => tensor(heap.read(traced[name] ?? traced.scaled, traceCount), qkShape.slice());
      if (c.trace) {
        for (const name of TRACE_NAMES) result[name] = readTrace(name);
        if (c.softcap > 0) result.capped = readTrace('capped');
      }
      if (c.qkOutput) {
        const qk = heap.read(traced[QK_OUTPUTS[c.qkOutput]] ?? traced.scaled, traceCount);
        result.qk = resultTensor(qk, qkShape.slice(), c.q.format, where, 'qk');
      }
      if (c.past) {
        const presentShape = (d) => [c.batch, c.kvHeads, n, d];
        const keys = s.alloc(4 * c.batch * c.kvHeads * n * c.dK, `presentKey ${JSON.stringify(presentShape(c.dK))}`);
        const values = s.alloc(
          4 * c.batch * c.kvHeads * n * c.dV,
          `presentValue ${JSON.stringify(presentShape(c.dV))}`,
        );
        rt.call(where, 'kvCacheRead', handle, heads4d(keys, c.kvHeads, n, c.dK), heads4d(values, c.kvHeads, n, c.dV));
        const present = (name, ptr, d, format) =>
          resultTensor(heap.read(ptr, c.batch * c.kvHeads * n * d), presentShape(d), format, where, name);
        result.presentKey = present('presentKey', keys, c.dK, c.past.key.format);
        result.presentValue = present('presentValue', values, c.dV, c.past.value.format);
      }
      const blame = () => scaleBlame(c.scale, c.dK, largest(c.q.data), largest(c.k.data));
      result.output = heap.readResult(out, outShape, c.q.format, where, 'output', c.out, blame);
      return result;
    } finally {
      if (c.past) module.kvCacheDestroy(handle);
    }
  });
}

// dOutput (a snapshot, the output's shape) -> { dq, dk, dv } in q's, k's and v's shapes: the
// gradients of the inputs before rotation (rotary_backward turns dq and dk back); with sinks,
// also dsinks [Hq], each summed over every sequence's queries; with trace (2-D only), also
// weights (P), dWeights (dP = dOutput·vᵀ) and dScores (dS = ∂L/∂(q·kᵀ)), each [nQ,nK].
export function headsBackward(rt, where, c, dOut) {
  const { heap } = rt;
  return heap.scoped(where, (s) => {
    const lay = layout(c);
    const { q, k, v, turn } = putRotated(rt, where, s, c);
    const dOutput = lay(s.putFinite(dOut.data, 'dOutput.data'), c.qHeads, c.nQ, c.dV);
    const sizes = { dq: c.q.data.length, dk: c.k.data.length, dv: c.v.data.length };
    const at = Object.fromEntries(Object.entries(sizes).map(([name, count]) => [name, s.alloc(4 * count, name)]));
    const dq = lay(at.dq, c.qHeads, c.nQ, c.dK),
      dk = lay(at.dk, c.kvHeads, c.nNew, c.dK);
    const dv = lay(at.dv, c.kvHeads, c.nNew, c.dV);
    const dsinks = c.sinks ? s.alloc(4 * c.qHeads, 'dsinks') : 0;
    const traced = {};
    if (c.trace) {
      // q [nQ,dK], k [nK,dK], v [nK,dV] as matrices: wa::attention_backward with its trace
      const { nQ, nNew: nK, dK, dV } = c;
      for (const name of BACKWARD_TRACE_NAMES) traced[name] = s.alloc(4 * nQ * nK, `the trace's ${name} [${nQ},${nK}]`);
      const mask = putScoreMask(s, c, 0, c.sinks?.[0]);
      const m = (head, rows, cols) => matrix(dataOf(head), rows, cols);
      rt.call(
        where,
        'attentionBackward',
        m(q, nQ, dK),
        m(k, nK, dK),
        m(v, nK, dV),
        m(dOutput, nQ, dV),
        m(dq, nQ, dK),
        m(dk, nK, dK),
        m(dv, nK, dV),
        c.scale,
        mask,
        attentionBackwardTrace(traced),
        dsinks,
      );
    } else {
      const shape = headsShape({
        batch: c.batch,
        qHeads: c.qHeads,
        kvHeads: c.kvHeads,
        nQ: c.nQ,
        nK: c.nNew,
        dK: c.dK,
        dV: c.dV,
      });
      rt.call(where, 'attentionHeadsBackward', shape, q, k, v, dOutput, dq, dk, dv, c.scale, putMask(s, c, 0), dsinks);
    }
    if (turn) {
      rt.call(where, 'rotaryBackward', c.batch, c.qHeads, c.nQ, c.dK, dq, turn);
      rt.call(where, 'rotaryBackward', c.batch, c.kvHeads, c.nNew, c.dK, dk, turn);
    }
    // each gradient in the format of the input it differentiates
    const blame = () => scaleBlame(c.scale, c.dK, largest(c.q.data), largest(c.k.data));
    const read = (name, input) =>
      heap.readResult(at[name], input.shape.slice(), input.format, where, name, null, blame);
    const result = { dq: read('dq', c.q), dk: read('dk', c.k), dv: read('dv', c.v) };
    // dsinks: float32, as sinks are
    if (dsinks) result.dsinks = tensor(heap.readFinite(dsinks, c.qHeads, where, 'dsinks'), [c.qHeads]);
    for (const name of Object.keys(traced))
      result[name] = tensor(heap.read(traced[name], c.nQ * c.nNew), [c.nQ, c.nNew]);
    return result;
  });
}
