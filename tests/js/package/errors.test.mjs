// Every error of the JS API: its class (TypeError for a wrong kind of value, RangeError for a
// wrong size or value) and its message, which names the entry, the argument and the shapes.
// After each error the instance keeps working, and nothing leaks in wasm memory.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { createAttention, seededRandom, tensor as checkedTensor, xavierUniform } from '../../../web/lib/index.js';
import { rawTensor as tensor, rejectsWith, throwsWith } from '../helpers/assertions.mjs';
import { attentionRef, maxAbsDiff, mhaRef, randomTensor, rng } from '../../../scripts/lib/reference.mjs';
import { garbageCollector } from '../helpers/runtime.mjs';

const TOL = 1e-5;

const f32 = (n, value = 0.25) => new Float32Array(n).fill(value);
const t2 = (rows, cols, value) => tensor(f32(rows * cols, value), [rows, cols]);

// A correct call right after an error gives the right numbers.
const probe = (() => {
  const next = rng(99);
  const q = randomTensor(next, [37, 6]);
  const k = randomTensor(next, [41, 6]);
  const v = randomTensor(next, [41, 5]);
  const x = randomTensor(next, [2, 7, 8]);
  return { q, k, v, x, ref: attentionRef(q, k, v, { causal: true }).output };
})();

function stillWorks(attn, layer) {
  const { output, weights } = attn.attention(probe.q, probe.k, probe.v, { causal: true, trace: true });
  const d = maxAbsDiff(output.data, probe.ref);
  assert.ok(d <= TOL, `attention after an error: max abs diff ${d}`);
  assert.equal(weights.shape[1], 41);
  if (layer) {
    const r = layer.forward(probe.x, { causal: true });
    const ref = mhaRef(probe.x, layer.weights, { batch: 2, nQ: 7, dModel: 8, heads: 2, causal: true });
    const dm = maxAbsDiff(r.output.data, ref.output);
    assert.ok(dm <= TOL, `multi-head attention after an error: max abs diff ${dm}`);
  }
}

// Counts, from now until stop(), what a call that must refuse at once would do before refusing.
// bigFloat32Arrays: the lengths of Float32Arrays of over 1M floats made (by the global
// constructor, which the package's modules use); wasmCompiles: WebAssembly modules compiled
// or instantiated. stop() restores the globals and returns what was seen.
function bigFloat32Arrays() {
  const original = globalThis.Float32Array;
  const lengths = [];
  globalThis.Float32Array = new Proxy(original, {
    construct(target, args) {
      if (typeof args[0] === 'number' && args[0] > 2 ** 20) lengths.push(args[0]);
      return Reflect.construct(target, args);
    },
  });
  return {
    stop() {
      globalThis.Float32Array = original;
      return lengths;
    },
  };
}
function wasmCompiles() {
  const names = ['compile', 'compileStreaming', 'instantiate', 'instantiateStreaming'];
  const originals = Object.fromEntries(names.map((name) => [name, WebAssembly[name]]));
  let count = 0;
  for (const name of names)
    WebAssembly[name] = (...args) => {
      ++count;
      return originals[name].apply(WebAssembly, args);
    };
  return {
    stop() {
      Object.assign(WebAssembly, originals);
      return count;
    },
  };
}

describe('errors', () => {
  let attn, layer;
  before(async () => {
    attn = await createAttention({ threads: 2 });
    layer = attn.multiHeadAttention({ dModel: 8, heads: 2, bias: true, seed: 5 });
  });
  after(() => attn.dispose());

  // A test that fn throws Class with a message matching re, and that a correct call follows.
  function run(title, fn, Class, re) {
    test(title, () => {
      throwsWith(() => fn(), Class, re);
      stillWorks(attn, layer);
    });
  }

  describe('attention: wrong types', () => {
    const k = t2(5, 2),
      v = t2(5, 3);
    run(
      'q as a plain array',
      () =>
        attn.attention(
          [
            [1, 2],
            [3, 4],
          ],
          k,
          v,
        ),
      TypeError,
      /^attention: q must be a tensor \{ data: Float32Array, shape: number\[\] \} \[nQ,dK\], \[B,nQ,Hq·dK\] or \[B,Hq,nQ,dK\], got an Array$/,
    );
    run(
      'q as a bare Float32Array',
      () => attn.attention(f32(4), k, v),
      TypeError,
      /^attention: q must be a tensor .* \[nQ,dK\], \[B,nQ,Hq·dK\] or \[B,Hq,nQ,dK\], got a Float32Array$/,
    );
    run(
      'k missing',
      () => attn.attention(t2(4, 2), undefined, v),
      TypeError,
      /^attention: k must be a tensor .* \[nK,dK\], got undefined$/,
    );
    run(
      'v null',
      () => attn.attention(t2(4, 2), k, null),
      TypeError,
      /^attention: v must be a tensor .* \[nK,dV\], got null$/,
    );
    run(
      'q.data as Float64Array',
      () => attn.attention(tensor(new Float64Array(8), [4, 2]), k, v),
      TypeError,
      /^attention: q\.data must be a Float32Array, got a Float64Array$/,
    );
    run(
      'k.data as a plain array',
      () => attn.attention(t2(4, 2), tensor(new Array(10).fill(0), [5, 2]), v),
      TypeError,
      /^attention: k\.data must be a Float32Array, got an Array$/,
    );
    run(
      'q.shape not an array',
      () => attn.attention(tensor(f32(8), '4,2'), k, v),
      TypeError,
      /^attention: q\.shape must be an array of sizes, got a string \("4,2"\)$/,
    );
    run(
      'v.shape missing',
      () => attn.attention(t2(4, 2), k, { data: f32(15) }),
      TypeError,
      /^attention: v\.shape must be an array of sizes, got undefined$/,
    );
    run(
      'options not an object',
      () => attn.attention(t2(4, 2), k, v, true),
      TypeError,
      /^attention: options must be an object, got a boolean$/,
    );
    run(
      'unknown option casual',
      () => attn.attention(t2(4, 2), k, v, { casual: true }),
      TypeError,
      /^attention: unknown option "casual" \(known: causal, mask, scale, trace, softcap, window, heads, pastKey, pastValue, kvLength, qkOutput, rotary, cache, sinks, out\)$/,
    );
    run(
      'causal not a boolean',
      () => attn.attention(t2(4, 2), k, v, { causal: 'yes' }),
      TypeError,
      /^attention: causal must be true or false, got a string \("yes"\)$/,
    );
    run(
      'trace not a boolean',
      () => attn.attention(t2(4, 2), k, v, { trace: 1 }),
      TypeError,
      /^attention: trace must be true or false, got the number 1$/,
    );
    run(
      'scale not a number',
      () => attn.attention(t2(4, 2), k, v, { scale: '0.5' }),
      TypeError,
      /^attention: scale must be a number, got a string \("0\.5"\)$/,
    );
    run(
      'mask as Float64Array',
      () => attn.attention(t2(4, 2), k, v, { mask: new Float64Array(20) }),
      TypeError,
      /^attention: mask must be \{ data: Uint8Array or boolean\[\] \(true = keep\), Float32Array or Float16Array \(added to the scores; or Uint16Array bits with dtype: 'float16'\), shape: \[nQ,nK\] \} or a bare typed array of nQ·nK values; got a Float64Array$/,
    );
    run(
      'mask as a plain array',
      () => attn.attention(t2(4, 2), k, v, { mask: new Array(20).fill(1) }),
      TypeError,
      /^attention: mask must be .*got an Array$/,
    );
    run(
      'mask tensor with Int32Array data',
      () => attn.attention(t2(4, 2), k, v, { mask: tensor(new Int32Array(20), [4, 5]) }),
      TypeError,
      /^attention: mask must be .*; mask\.data is an Int32Array$/,
    );
  });

  describe('attention: shapes', () => {
    run(
      'k columns != q columns',
      () => attn.attention(t2(4, 2), t2(5, 3), t2(5, 3)),
      RangeError,
      /^attention: k is \[5,3\] but q is \[4,2\]: k needs 2 columns, as many as q \(dK\)$/,
    );
    run(
      'v rows != k rows',
      () => attn.attention(t2(4, 2), t2(5, 2), t2(4, 3)),
      RangeError,
      /^attention: v is \[4,3\] but k is \[5,2\]: v needs 5 rows, one per key \(nK\)$/,
    );
    run(
      'q of rank 3 with 2-D k',
      () => attn.attention(tensor(f32(8), [2, 2, 2]), t2(5, 2), t2(5, 3)),
      RangeError,
      /^attention: q is \[2,2,2\] \(3-D\) but k is \[5,2\] \(2-D\): q, k and v must share one layout$/,
    );
    run(
      'q of rank 5',
      () => attn.attention(tensor(f32(32), [2, 2, 2, 2, 2]), t2(5, 2), t2(5, 3)),
      RangeError,
      /^attention: q must have 2 or 3 or 4 dimensions \[nQ,dK\], \[B,nQ,Hq·dK\] or \[B,Hq,nQ,dK\], got shape \[2,2,2,2,2\]$/,
    );
    run(
      'k of rank 1',
      () => attn.attention(t2(4, 2), tensor(f32(10), [10]), t2(5, 3)),
      RangeError,
      /^attention: k must have 2 dimensions \[nK,dK\], got shape \[10\]$/,
    );
    run(
      'keep mask tensor of the wrong shape',
      () => attn.attention(t2(4, 2), t2(5, 2), t2(5, 3), { mask: tensor(new Uint8Array(20), [5, 4]) }),
      RangeError,
      /^attention: mask has shape \[5,4\] but the scores are \[4,5\] \(nQ queries by nK keys\)$/,
    );
    run(
      'additive mask tensor of the wrong rank',
      () => attn.attention(t2(4, 2), t2(5, 2), t2(5, 3), { mask: tensor(f32(20), [20]) }),
      RangeError,
      /^attention: mask has shape \[20\] but the scores are \[4,5\]/,
    );
    run(
      'bare keep mask of the wrong length',
      () => attn.attention(t2(4, 2), t2(5, 2), t2(5, 3), { mask: new Uint8Array(19) }),
      RangeError,
      /^attention: mask has 19 values but the scores \[4,5\] need 20$/,
    );
    run(
      'mask tensor whose data does not match its shape',
      () => attn.attention(t2(4, 2), t2(5, 2), t2(5, 3), { mask: tensor(f32(21), [4, 5]) }),
      RangeError,
      /^attention: mask has 21 values but the scores \[4,5\] need 20$/,
    );
    for (const [label, shape] of [
      ['zero', [0, 2]],
      ['negative', [-4, 2]],
      ['non-integer', [4, 0.5]],
      ['NaN', [NaN, 2]],
    ]) {
      run(
        `q with a ${label} dimension`,
        () => attn.attention(tensor(f32(8), shape), t2(5, 2), t2(5, 3)),
        RangeError,
        new RegExp(
          `^attention: q has shape \\[${shape.join(',').replace('.', '\\.')}\\]: every size must be a positive integer$`,
        ),
      );
    }
    // Sizes of another type are a wrong kind of value: a TypeError naming the element's type.
    run(
      'q with string sizes',
      () => attn.attention(tensor(f32(8), ['4', '2']), t2(5, 2), t2(5, 3)),
      TypeError,
      /^attention: q\.shape\[0\] is a string \("4"\): sizes must be numbers$/,
    );
    run(
      'k with BigInt sizes',
      () => attn.attention(t2(4, 2), tensor(f32(10), [5n, 2n]), t2(5, 3)),
      TypeError,
      /^attention: k\.shape\[0\] is a bigint \(5n\): sizes must be numbers$/,
    );
    run(
      'v with a zero dimension',
      () => attn.attention(t2(4, 2), t2(5, 2), tensor(new Float32Array(0), [5, 0])),
      RangeError,
      /^attention: v has shape \[5,0\]: every size must be a positive integer$/,
    );
    run(
      'q.data shorter than its shape',
      () => attn.attention(tensor(f32(7), [4, 2]), t2(5, 2), t2(5, 3)),
      RangeError,
      /^attention: q\.data has 7 values but shape \[4,2\] needs 8$/,
    );
    run(
      'v.data longer than its shape',
      () => attn.attention(t2(4, 2), t2(5, 2), tensor(f32(16), [5, 3])),
      RangeError,
      /^attention: v\.data has 16 values but shape \[5,3\] needs 15$/,
    );
  });

  describe('attention: values', () => {
    const withAt = (n, i, x) => {
      const d = f32(n);
      d[i] = x;
      return d;
    };
    run(
      'NaN in q',
      () => attn.attention(tensor(withAt(8, 3, NaN), [4, 2]), t2(5, 2), t2(5, 3)),
      RangeError,
      /^attention: q\.data\[3\] is NaN: inputs must be finite numbers$/,
    );
    run(
      'Infinity in k',
      () => attn.attention(t2(4, 2), tensor(withAt(10, 9, Infinity), [5, 2]), t2(5, 3)),
      RangeError,
      /^attention: k\.data\[9\] is Infinity: inputs must be finite numbers$/,
    );
    run(
      '-Infinity in v',
      () => attn.attention(t2(4, 2), t2(5, 2), tensor(withAt(15, 0, -Infinity), [5, 3])),
      RangeError,
      /^attention: v\.data\[0\] is -Infinity: inputs must be finite numbers$/,
    );
    run(
      'NaN in an additive mask',
      () => attn.attention(t2(4, 2), t2(5, 2), t2(5, 3), { mask: withAt(20, 2, NaN) }),
      RangeError,
      /^attention: mask\[2\] is NaN: an additive mask takes finite values, or -Infinity to mask$/,
    );
    run(
      '+Infinity in an additive mask tensor',
      () => attn.attention(t2(4, 2), t2(5, 2), t2(5, 3), { mask: tensor(withAt(20, 19, Infinity), [4, 5]) }),
      RangeError,
      /^attention: mask\[19\] is Infinity: an additive mask takes finite values, or -Infinity to mask$/,
    );
    for (const scale of [NaN, Infinity, -Infinity]) {
      run(
        `scale ${scale}`,
        () => attn.attention(t2(4, 2), t2(5, 2), t2(5, 3), { scale }),
        RangeError,
        new RegExp(`^attention: scale must be finite, got ${String(scale).replace('-', '\\-')}$`),
      );
    }
    run(
      'scale beyond float32 range',
      () => attn.attention(t2(4, 2), t2(5, 2), t2(5, 3), { scale: 1e39 }),
      RangeError,
      /^attention: scale must be finite as a 32-bit float .*, got 1e\+39$/,
    );
    // finite inputs whose products overflow float32: q·kᵀ = 1e40 - 1e40 is inf - inf = NaN
    const huge = tensor(new Float32Array([1e20, 1e20]), [1, 2]);
    const opposed = tensor(new Float32Array([1e20, -1e20]), [1, 2]);
    run(
      'inputs whose products overflow float32 give an error, not NaN',
      () => attn.attention(huge, opposed, t2(1, 3)),
      RangeError,
      /^attention: output\[0\] came out NaN: the inputs are so large that their products overflow 32-bit floats/,
    );
    run(
      'the same for the backward',
      () => attn.attentionBackward(huge, opposed, t2(1, 3), t2(1, 3)),
      RangeError,
      /^attentionBackward: d[qkv]\[0\] came out NaN: the inputs are so large/,
    );
    run(
      'a mask whose data is no typed array names mask.data',
      () => attn.attention(t2(4, 2), t2(5, 2), t2(5, 3), { mask: { data: new Int32Array(20), shape: [4, 5] } }),
      TypeError,
      /^attention: mask must be .* or a bare typed array of nQ·nK values; mask\.data is an Int32Array$/,
    );
    run(
      'a boolean[] mask holding numbers names the first',
      () => attn.attention(t2(4, 2), t2(5, 2), t2(5, 3), { mask: { data: [1, 0], shape: [4, 5] } }),
      TypeError,
      /^attention: mask\.data\[0\] is the number 1: a boolean\[\] mask holds true \(keep\) or false$/,
    );
    run(
      'a mask shape that is no array',
      () => attn.attention(t2(4, 2), t2(5, 2), t2(5, 3), { mask: { data: new Uint8Array(20), shape: '4,5' } }),
      TypeError,
      /^attention: mask\.shape must be an array \[nQ,nK\], got a string \("4,5"\)$/,
    );
  });

  describe('attention on heads (3-D and 4-D)', () => {
    // q [1,4,3,2], k [1,2,5,2], v [1,2,5,3]: 4 query heads on 2 kv heads
    const q4 = tensor(f32(24), [1, 4, 3, 2]),
      k4 = tensor(f32(20), [1, 2, 5, 2]),
      v4 = tensor(f32(30), [1, 2, 5, 3]);
    const q3 = tensor(f32(24), [1, 3, 8]),
      k3 = tensor(f32(20), [1, 5, 4]),
      v3 = tensor(f32(30), [1, 5, 6]);
    const heads = { q: 4, kv: 2 };
    run(
      '3-D without heads',
      () => attn.attention(q3, k3, v3),
      TypeError,
      /^attention: 3-D q \[1,3,8\] needs heads: \{ q, kv \} \(q's last size is Hq·dK\)$/,
    );
    run(
      'heads not dividing q',
      () => attn.attention(q3, k3, v3, { heads: { q: 3, kv: 1 } }),
      RangeError,
      /^attention: q is \[1,3,8\]: its last size 8 is not a multiple of heads\.q = 3$/,
    );
    run(
      'query heads not a multiple of kv heads',
      () => attn.attention(tensor(f32(18), [1, 3, 3, 2]), k4, v4),
      RangeError,
      /^attention: 3 query heads do not divide into 2 kv heads \(Hq must be a multiple of Hkv\)$/,
    );
    run(
      'mismatched layouts',
      () => attn.attention(q4, k3, v4),
      RangeError,
      /^attention: q is \[1,4,3,2\] \(4-D\) but k is \[1,5,4\] \(3-D\): q, k and v must share one layout$/,
    );
    run(
      '4-D heads option that disagrees',
      () => attn.attention(q4, k4, v4, { heads: { q: 2, kv: 2 } }),
      RangeError,
      /^attention: heads is \{ q: 2, kv: 2 \} but the 4-D q \[1,4,3,2\] and k \[1,2,5,2\] hold 4 and 2$/,
    );
    run(
      'window left < -1',
      () => attn.attention(q4, k4, v4, { window: { left: -2 } }),
      RangeError,
      /^attention: window\.left must be an integer from -1 to 2\^31-1 \(2147483647\), got -2$/,
    );
    // the core holds each as an int32: the limit is in the message
    run(
      'window right past 2^31-1',
      () => attn.attention(q4, k4, v4, { window: { right: 2 ** 31 } }),
      RangeError,
      /^attention: window\.right must be an integer from -1 to 2\^31-1 \(2147483647\), got 2147483648$/,
    );
    run(
      'rotary.offset past 2^31-1',
      () => attn.attention(q4, k4, v4, { rotary: { offset: 2 ** 31 } }),
      RangeError,
      /^attention: rotary\.offset must be an integer from 0 to 2\^31-1 \(2147483647\), got 2147483648$/,
    );
    run(
      'heads.q past 2^31-1',
      () => attn.attention(q3, k3, v3, { heads: { q: 2 ** 31, kv: 1 } }),
      RangeError,
      /^attention: heads\.q must be an integer from 1 to 2\^31-1 \(2147483647\), got 2147483648$/,
    );
    run(
      'window with an unknown side',
      () => attn.attention(q4, k4, v4, { window: { before: 2 } }),
      TypeError,
      /^attention: window: unknown option "before" \(known: left, right\)$/,
    );
    run(
      'kvLength past the keys',
      () => attn.attention(q4, k4, v4, { kvLength: [6] }),
      RangeError,
      /^attention: kvLength\[0\] is 6: each must be an integer from 0 to the 5 keys$/,
    );
    run(
      'kvLength of the wrong length',
      () => attn.attention(q4, k4, v4, { kvLength: Int32Array.of(1, 2) }),
      RangeError,
      /^attention: kvLength has 2 values but there are 1 sequences \(B\)$/,
    );
    run(
      'kvLength negative in an Int32Array',
      () => attn.attention(q4, k4, v4, { kvLength: Int32Array.of(-1) }),
      RangeError,
      /^attention: kvLength\[0\] is -1: each must be an integer from 0 to the 5 keys$/,
    );
    run(
      'mask size neither 1 nor full',
      () => attn.attention(q4, k4, v4, { mask: { data: new Uint8Array(10), shape: [2, 5] } }),
      RangeError,
      /^attention: mask has shape \[2,5\] but the scores are \[1,4,3,5\] \[B,Hq,nQ,nTotal\]: each size must be 1 or the full size$/,
    );
    run(
      'mask wider than the keys',
      () => attn.attention(q4, k4, v4, { mask: { data: f32(6), shape: [6] } }),
      RangeError,
      /^attention: mask has shape \[6\] but the scores are \[1,4,3,5\] \[B,Hq,nQ,nTotal\]: its last size must be 1 to nTotal = 5$/,
    );
    run(
      'mask of rank 5',
      () => attn.attention(q4, k4, v4, { mask: { data: new Uint8Array(5), shape: [1, 1, 1, 1, 5] } }),
      RangeError,
      /^attention: mask has shape \[1,1,1,1,5\]: it needs 1 to 4 dimensions$/,
    );
    run(
      'mask as a bare typed array',
      () => attn.attention(q4, k4, v4, { mask: new Uint8Array(60) }),
      TypeError,
      /^attention: mask must be a tensor \{ data: Uint8Array or boolean\[\] \(true = keep\), .*, shape \} for 3-D or 4-D inputs; got a Uint8Array$/,
    );
    run(
      'boolean[] mask holding numbers',
      () => attn.attention(q4, k4, v4, { mask: { data: [true, 1, true, true, true], shape: [5] } }),
      TypeError,
      /^attention: mask\.data\[1\] is the number 1: a boolean\[\] mask holds true \(keep\) or false$/,
    );
    run(
      'qkOutput unknown',
      () => attn.attention(q4, k4, v4, { qkOutput: 'raw' }),
      RangeError,
      /^attention: qkOutput must be one of scaled, softcapped, masked, weights, got 'raw'$/,
    );
    run(
      'softcap negative',
      () => attn.attention(q4, k4, v4, { softcap: -1 }),
      RangeError,
      /^attention: softcap must be 0 \(none\) or a positive finite number, got -1$/,
    );
    run(
      'softcap rounding to 0 in float32 (it would run as no softcap)',
      () => attn.attention(q4, k4, v4, { softcap: 1e-46 }),
      RangeError,
      /^attention: softcap 1e-46 rounds to 0 in float32, which means no softcap; give 0 for none or at least 1\.4e-45$/,
    );
    run(
      'softcap rounding to 0, backward',
      () => attn.attentionBackward(q4, k4, v4, tensor(f32(36), [1, 4, 3, 3]), { softcap: 5e-324 }),
      RangeError,
      /^attentionBackward: softcap 5e-324 rounds to 0 in float32/,
    );
    run(
      'rotary dims odd',
      () => attn.attention(tensor(f32(48), [1, 4, 3, 4]), tensor(f32(40), [1, 2, 5, 4]), v4, { rotary: { dims: 3 } }),
      RangeError,
      /^attention: rotary\.dims is 3: it must be even and at most dK = 4$/,
    );
    run(
      'pastKey without pastValue',
      () => attn.attention(q4, k4, v4, { pastKey: tensor(f32(8), [1, 2, 2, 2]) }),
      TypeError,
      /^attention: pastKey and pastValue go together; got only pastKey$/,
    );
    run(
      'pastKey of the wrong heads',
      () =>
        attn.attention(q4, k4, v4, { pastKey: tensor(f32(8), [1, 1, 4, 2]), pastValue: tensor(f32(12), [1, 1, 4, 3]) }),
      RangeError,
      /^attention: pastKey is \[1,1,4,2\] but must be \[B,Hkv,nPast,dK\] = \[1,2,4,2\]$/,
    );
    run(
      'kvLength with pastKey',
      () =>
        attn.attention(q4, k4, v4, {
          pastKey: tensor(f32(8), [1, 2, 2, 2]),
          pastValue: tensor(f32(12), [1, 2, 2, 3]),
          kvLength: [3],
        }),
      TypeError,
      /^attention: kvLength \(padded sequences\) cannot be combined with pastKey$/,
    );
    run(
      'a heads-only option on 2-D inputs',
      () => attn.attention(t2(4, 2), t2(5, 2), t2(5, 3), { kvLength: [3] }),
      TypeError,
      /^attention: option "kvLength" needs q, k, v as 3-D \[B,S,H·D\] or 4-D \[B,H,S,D\] tensors; 2-D calls take causal, mask, scale, trace, softcap, window, rotary, sinks, out$/,
    );
    run(
      'backward with a cache option',
      () => attn.attentionBackward(q4, k4, v4, tensor(f32(36), [1, 4, 3, 3]), { cache: {} }),
      TypeError,
      /^attentionBackward: takes no cache, in any form: it differentiates attention over the k and v it is given \(pass all the keys and values, past and new, as k and v\)$/,
    );
    run(
      'backward with trace',
      () => attn.attentionBackward(q4, k4, v4, tensor(f32(36), [1, 4, 3, 3]), { trace: true }),
      TypeError,
      /^attentionBackward: trace needs 2-D q, k, v: the backward on heads \(3-D or 4-D\) keeps no intermediates$/,
    );
    run(
      'backward with dOutput of the wrong shape',
      () => attn.attentionBackward(q3, k3, v3, tensor(f32(36), [1, 4, 3, 3]), { heads }),
      RangeError,
      /^attentionBackward: dOutput must have 3 dimensions \[B,nQ,Hq·dV\] = \[1,3,12\], got shape \[1,4,3,3\]$/,
    );
    run(
      'a cache that is not one',
      () => attn.attention(q4, k4, v4, { cache: { length: 0 } }),
      TypeError,
      /^attention: cache must be a cache from attn\.kvCache\(\{ batch, kvHeads, dK, dV, capacity \}\)$/,
    );
    run(
      'a cache of other sizes',
      () => {
        const cache = attn.kvCache({ batch: 1, kvHeads: 1, dK: 2, dV: 3, capacity: 8 });
        try {
          attn.attention(q4, k4, v4, { cache });
        } finally {
          cache.dispose();
        }
      },
      RangeError,
      /^attention: the cache holds \[batch,kvHeads,dK,dV\] = \[1,1,2,3\] but k and v are \[1,2,2,3\]$/,
    );
    run(
      'a disposed cache',
      () => {
        const cache = attn.kvCache({ batch: 1, kvHeads: 2, dK: 2, dV: 3, capacity: 8 });
        cache.dispose();
        attn.attention(q4, k4, v4, { cache });
      },
      TypeError,
      /^attention: the cache was disposed$/,
    );
    run(
      'kvCache with a zero capacity',
      () => attn.kvCache({ batch: 1, kvHeads: 2, dK: 2, dV: 3, capacity: 0 }),
      RangeError,
      /^kvCache: capacity must be a positive integer, got 0$/,
    );
    run(
      'kvCache with an unknown dtype',
      () => attn.kvCache({ batch: 1, kvHeads: 2, dK: 2, dV: 3, capacity: 8, dtype: 'int4' }),
      RangeError,
      /^kvCache: dtype must be one of float32, int8, float16, got 'int4'$/,
    );
    run(
      'kvCache with a dtype that is not a string',
      () => attn.kvCache({ batch: 1, kvHeads: 2, dK: 2, dV: 3, capacity: 8, dtype: Float32Array }),
      TypeError,
      /^kvCache: dtype must be one of float32, int8, float16, got a function$/,
    );
    run(
      'an int8 kvCache too large for wasm memory',
      () => attn.kvCache({ batch: 256, kvHeads: 32, dK: 128, dV: 128, capacity: 8192, dtype: 'int8' }),
      RangeError,
      /^kvCache: keys \[256,32,8192,128\] and values \[256,32,8192,128\] needs 17\.0 GB, more than wasm memory can hold \(2 GB\)$/,
    );
    run(
      'kvCache too large for wasm memory',
      () => attn.kvCache({ batch: 64, kvHeads: 32, dK: 128, dV: 128, capacity: 8192 }),
      RangeError,
      /^kvCache: keys \[64,32,8192,128\] and values \[64,32,8192,128\] needs 16\.0 GB, more than wasm memory can hold \(2 GB\)$/,
    );
    run(
      'kvCache.truncate past the length',
      () => {
        const cache = attn.kvCache({ batch: 1, kvHeads: 2, dK: 2, dV: 3, capacity: 8 });
        try {
          cache.truncate(1);
        } finally {
          cache.dispose();
        }
      },
      RangeError,
      /^kvCache\.truncate: n must be an integer from 0 to the cache's length 0, got 1$/,
    );
    test('a call that fails after its keys went into the cache leaves the cache as it was', () => {
      const cache = attn.kvCache({ batch: 1, kvHeads: 2, dK: 2, dV: 3, capacity: 8 });
      try {
        attn.attention(q4, k4, v4, { cache });
        assert.equal(cache.length, 5);
        const huge = tensor(f32(24, 1e30), [1, 4, 3, 2]); // q·kᵀ overflows float32: NaN weights
        throwsWith(
          () => attn.attention(huge, tensor(f32(4, 1e30), [1, 2, 1, 2]), tensor(f32(6), [1, 2, 1, 3]), { cache }),
          RangeError,
          /^attention: output\[0\] came out NaN/,
        );
        assert.equal(cache.length, 5);
      } finally {
        cache.dispose();
      }
      stillWorks(attn, layer);
    });
  });

  describe('a cached layer step that fails', () => {
    // A layer whose weights are scaled in one place: wo huge overflows the output; wk huge
    // makes the new token's key ±Infinity (it would poison every later step over the cache)
    const layerWith = (name, value) => {
      const next = rng(40);
      const weights = {};
      for (const w of ['wq', 'wk', 'wo']) weights[w] = randomTensor(next, [8, 8]);
      weights.wv = tensor(f32(64, 1), [8, 8]); // x of ones: every value is 8
      weights[name] = tensor(f32(64, value), [8, 8]);
      return attn.multiHeadAttention({ dModel: 8, heads: 2, weights });
    };
    const refusedKey =
      /^multiHeadAttention\.forward: kv cache: the new key 0 of sequence 0, kv head 0 holds -?Infinity at \d+: it would make every later step over the cache NaN, so nothing was appended$/;
    for (const [name, value, message, mask] of [
      ['wo', 1e38, /^multiHeadAttention\.forward: output\[0\] came out (NaN|-?Infinity)/],
      ['wk', 1e38, refusedKey],
      // the new key masked for the new query: the output is finite, the key is not
      ['wk', 1e38, refusedKey, { data: Uint8Array.from([1, 1, 1, 0]), shape: [1, 4] }],
    ]) {
      test(`${name} = ${value}${mask ? ', the new key masked' : ''}: a RangeError, and the cache is as it was`, () => {
        const bad = layerWith(name, value);
        const good = layerWith(name, 0.25);
        const cache = attn.kvCache({ batch: 1, kvHeads: 2, dK: 4, dV: 4, capacity: 8 });
        try {
          const x = randomTensor(rng(41), [3, 8]);
          const before = good.forward(x, { cache, causal: true }).output.data;
          assert.equal(cache.length, 3);
          throwsWith(() => bad.forward(t2(1, 8, 1), { cache, causal: true, mask }), RangeError, message);
          assert.equal(cache.length, 3, 'the failed token left the cache');
          // the cache still works: the next step equals one over a fresh cache
          const one = randomTensor(rng(43), [1, 8]);
          const next = good.forward(one, { cache, causal: true }).output.data;
          assert.ok(next.every(Number.isFinite), 'a later step over the cache is finite');
          const fresh = attn.kvCache({ batch: 1, kvHeads: 2, dK: 4, dV: 4, capacity: 8 });
          try {
            assert.deepEqual(good.forward(x, { cache: fresh, causal: true }).output.data, before);
            assert.deepEqual(good.forward(one, { cache: fresh, causal: true }).output.data, next);
          } finally {
            fresh.dispose();
          }
        } finally {
          cache.dispose();
          bad.dispose();
          good.dispose();
        }
        stillWorks(attn, layer);
      });
    }
  });

  describe('multiHeadAttention: configuration', () => {
    const mk = (config) => () => attn.multiHeadAttention(config);
    const good = (next) => ({
      wq: randomTensor(next, [8, 8]),
      wk: randomTensor(next, [8, 8]),
      wv: randomTensor(next, [8, 8]),
      wo: randomTensor(next, [8, 8]),
    });
    run('no config', mk(undefined), TypeError, /^multiHeadAttention: dModel must be a number, got undefined$/);
    run('config not an object', mk(8), TypeError, /^multiHeadAttention: options must be an object, got the number 8$/);
    run(
      'unknown key',
      mk({ dModel: 8, heads: 2, head: 2 }),
      TypeError,
      /^multiHeadAttention: unknown option "head" \(known: dModel, heads, kvHeads, dK, dV, bias, rotary, window, softcap, sinks, weights, seed\)$/,
    );
    run(
      'softcap rounding to 0 in float32',
      mk({ dModel: 8, heads: 2, softcap: 1e-46 }),
      RangeError,
      /^multiHeadAttention: softcap 1e-46 rounds to 0 in float32, which means no softcap/,
    );
    run(
      'dModel 0',
      mk({ dModel: 0, heads: 1 }),
      RangeError,
      /^multiHeadAttention: dModel must be a positive integer, got 0$/,
    );
    run(
      'dModel non-integer',
      mk({ dModel: 7.5, heads: 1 }),
      RangeError,
      /^multiHeadAttention: dModel must be a positive integer, got 7\.5$/,
    );
    run(
      'dModel as a string',
      mk({ dModel: '8', heads: 2 }),
      TypeError,
      /^multiHeadAttention: dModel must be a number, got a string \("8"\)$/,
    );
    run(
      'heads negative',
      mk({ dModel: 8, heads: -2 }),
      RangeError,
      /^multiHeadAttention: heads must be a positive integer, got -2$/,
    );
    run(
      'dK zero',
      mk({ dModel: 8, heads: 2, dK: 0 }),
      RangeError,
      /^multiHeadAttention: dK must be a positive integer, got 0$/,
    );
    run(
      'dV non-integer',
      mk({ dModel: 8, heads: 2, dV: 2.5 }),
      RangeError,
      /^multiHeadAttention: dV must be a positive integer, got 2\.5$/,
    );
    run(
      'heads not dividing dModel without dK',
      mk({ dModel: 8, heads: 3 }),
      RangeError,
      /^multiHeadAttention: heads \(3\) does not divide dModel \(8\): pass dK \(and dV\) explicitly$/,
    );
    run(
      'bias not a boolean',
      mk({ dModel: 8, heads: 2, bias: 1 }),
      TypeError,
      /^multiHeadAttention: bias must be true or false, got the number 1$/,
    );
    for (const seed of [-1, 1.5, 2 ** 32, NaN]) {
      run(
        `seed ${seed}`,
        mk({ dModel: 8, heads: 2, seed }),
        RangeError,
        new RegExp(
          `^multiHeadAttention: seed must be an integer from 0 to 2\\^32-1, got ${String(seed).replace('.', '\\.')}$`,
        ),
      );
    }
    run(
      'seed as a string',
      mk({ dModel: 8, heads: 2, seed: '1' }),
      TypeError,
      /^multiHeadAttention: seed must be a number, got a string \("1"\)$/,
    );
    // Checked from the sizes alone, before any array is made for the weights (dModel 65536's
    // would be gigabytes; 2^31's, V8's "Invalid typed array length").
    test('a layer too large for wasm memory is refused at once, naming the sizes', () => {
      const big = bigFloat32Arrays();
      throwsWith(
        () => attn.multiHeadAttention({ dModel: 65536, heads: 1 }),
        RangeError,
        /^multiHeadAttention: dModel 65536, heads 1, dK 65536, dV 65536 need wq \[65536,65536\] \(16\.0 GB; 16\.0 GB for the weights so far\), more than wasm memory holds \(2 GB\): dModel 65536 is too large$/,
      );
      throwsWith(
        () => attn.multiHeadAttention({ dModel: 2 ** 31, heads: 1 }),
        RangeError,
        /^multiHeadAttention: dModel 2147483648, .*: dModel 2147483648 is too large$/,
      );
      throwsWith(
        () => attn.multiHeadAttention({ dModel: 4, heads: 1, dK: 2 ** 28 }),
        RangeError,
        /^multiHeadAttention: .* need wq \[4,268435456\] .*: heads·dK 268435456 or heads·dV 268435456 is too large$/,
      );
      // Each fits, not all four together: 4 × 0.75 GB.
      throwsWith(
        () => attn.multiHeadAttention({ dModel: 14000, heads: 1 }),
        RangeError,
        /^multiHeadAttention: .* need wv \[14000,14000\] \(0\.7 GB; 2\.2 GB/,
      );
      assert.deepEqual(big.stop(), [], 'Float32Arrays of over 1M floats made before the refusal');
      stillWorks(attn, layer);
    });
    run(
      'weights.wq of the wrong shape',
      () => attn.multiHeadAttention({ dModel: 8, heads: 2, weights: { ...good(rng(1)), wq: t2(8, 4) } }),
      RangeError,
      /^multiHeadAttention: weights\.wq is \[8,4\] but dModel 8, heads 2, dK 4, dV 4 need \[8,8\]$/,
    );
    run(
      'weights.wv for another dV',
      () => attn.multiHeadAttention({ dModel: 8, heads: 2, dV: 3, weights: good(rng(2)) }),
      RangeError,
      /^multiHeadAttention: weights\.wv is \[8,8\] but dModel 8, heads 2, dK 4, dV 3 need \[8,6\]$/,
    );
    run(
      'weights.wo of rank 1',
      () => attn.multiHeadAttention({ dModel: 8, heads: 2, weights: { ...good(rng(3)), wo: tensor(f32(64), [64]) } }),
      RangeError,
      /^multiHeadAttention: weights\.wo must have 2 dimensions \[8,8\], got shape \[64\]$/,
    );
    run(
      'weights.bq of the wrong length',
      () =>
        attn.multiHeadAttention({
          dModel: 8,
          heads: 2,
          bias: true,
          weights: { ...good(rng(4)), bq: tensor(f32(7), [7]) },
        }),
      RangeError,
      /^multiHeadAttention: weights\.bq is \[7\] but dModel 8, heads 2, dK 4, dV 4 need \[8\]$/,
    );
    run(
      'weights.wk missing',
      () => attn.multiHeadAttention({ dModel: 8, heads: 2, weights: { ...good(rng(5)), wk: undefined } }),
      TypeError,
      /^multiHeadAttention: weights\.wk must be a tensor \{ data: Float32Array, shape: number\[\] \} \[8,8\], got undefined$/,
    );
    run(
      'weights.wq.data as Float64Array',
      () =>
        attn.multiHeadAttention({
          dModel: 8,
          heads: 2,
          weights: { ...good(rng(6)), wq: tensor(new Float64Array(64), [8, 8]) },
        }),
      TypeError,
      /^multiHeadAttention: weights\.wq\.data must be a Float32Array, got a Float64Array$/,
    );
    run(
      'weights with an unknown name',
      () => attn.multiHeadAttention({ dModel: 8, heads: 2, weights: { ...good(rng(7)), wx: t2(8, 8) } }),
      TypeError,
      /^multiHeadAttention: weights: unknown option "wx" \(known: wq, wk, wv, wo, bq, bk, bv, bo, sinks\)$/,
    );
    run(
      'weights with biases but no bias: true',
      () => attn.multiHeadAttention({ dModel: 8, heads: 2, weights: { ...good(rng(8)), bo: tensor(f32(8), [8]) } }),
      TypeError,
      /^multiHeadAttention: weights has biases but bias is not true; pass bias: true to use them$/,
    );
    run(
      'NaN in weights.wv',
      () => {
        const w = good(rng(9));
        w.wv.data[5] = NaN;
        return attn.multiHeadAttention({ dModel: 8, heads: 2, weights: w });
      },
      RangeError,
      /^multiHeadAttention: weights\.wv\.data\[5\] is NaN: inputs must be finite numbers$/,
    );
  });

  describe('multiHeadAttention.forward', () => {
    const W = 'multiHeadAttention\\.forward';
    run(
      'x as a plain array',
      () => layer.forward([[1, 2, 3, 4, 5, 6, 7, 8]]),
      TypeError,
      new RegExp(`^${W}: x must be a tensor .* \\[n,dModel\\] or \\[batch,n,dModel\\], got an Array$`),
    );
    run(
      'x of the wrong dModel',
      () => layer.forward(t2(5, 7)),
      RangeError,
      new RegExp(`^${W}: x is \\[5,7\\] but this layer has dModel 8: its last size must be 8$`),
    );
    run(
      'x of rank 4',
      () => layer.forward(tensor(f32(32), [1, 1, 4, 8])),
      RangeError,
      new RegExp(
        `^${W}: x must have 2 or 3 dimensions \\[n,dModel\\] or \\[batch,n,dModel\\], got shape \\[1,1,4,8\\]$`,
      ),
    );
    run(
      'x.data not matching its shape',
      () => layer.forward(tensor(f32(39), [5, 8])),
      RangeError,
      new RegExp(`^${W}: x\\.data has 39 values but shape \\[5,8\\] needs 40$`),
    );
    run(
      'x with a zero batch',
      () => layer.forward(tensor(f32(0), [0, 5, 8])),
      RangeError,
      new RegExp(`^${W}: x has shape \\[0,5,8\\]: every size must be a positive integer$`),
    );
    run(
      'NaN in x',
      () => {
        const x = t2(5, 8);
        x.data[7] = NaN;
        return layer.forward(x);
      },
      RangeError,
      new RegExp(`^${W}: x\\.data\\[7\\] is NaN: inputs must be finite numbers$`),
    );
    run(
      'context with the wrong dModel',
      () => layer.forward(t2(5, 8), { context: t2(6, 7) }),
      RangeError,
      new RegExp(`^${W}: context is \\[6,7\\] but x is \\[5,8\\]: context needs last size dModel 8$`),
    );
    run(
      'context with the wrong batch',
      () => layer.forward(tensor(f32(80), [2, 5, 8]), { context: tensor(f32(144), [3, 6, 8]) }),
      RangeError,
      new RegExp(`^${W}: context is \\[3,6,8\\] but x is \\[2,5,8\\]: context needs batch 2 and last size dModel 8$`),
    );
    run(
      'context of another rank than x',
      () => layer.forward(tensor(f32(80), [2, 5, 8]), { context: t2(6, 8) }),
      RangeError,
      new RegExp(`^${W}: context must have 3 dimensions \\[batch,nK,dModel\\], got shape \\[6,8\\]$`),
    );
    run(
      'context.data as Float64Array',
      () => layer.forward(t2(5, 8), { context: tensor(new Float64Array(48), [6, 8]) }),
      TypeError,
      new RegExp(`^${W}: context\\.data must be a Float32Array, got a Float64Array$`),
    );
    run(
      'Infinity in context',
      () => {
        const c = t2(6, 8);
        c.data[47] = Infinity;
        return layer.forward(t2(5, 8), { context: c });
      },
      RangeError,
      new RegExp(`^${W}: context\\.data\\[47\\] is Infinity: inputs must be finite numbers$`),
    );
    run(
      'mask for self-attention shape in cross-attention',
      () => layer.forward(t2(5, 8), { context: t2(6, 8), mask: tensor(new Uint8Array(25), [5, 5]) }),
      RangeError,
      new RegExp(`^${W}: mask has shape \\[5,5\\] but the scores are \\[5,6\\] \\(nQ queries by nK keys\\)$`),
    );
    run(
      'mask per batch (not supported: shared)',
      () => layer.forward(tensor(f32(80), [2, 5, 8]), { mask: new Uint8Array(50) }),
      RangeError,
      new RegExp(`^${W}: mask has 50 values but the scores \\[5,5\\] need 25$`),
    );
    run(
      '+Infinity in the mask',
      () => {
        const m = f32(25, 0);
        m[4] = Infinity;
        return layer.forward(t2(5, 8), { mask: m });
      },
      RangeError,
      new RegExp(`^${W}: mask\\[4\\] is Infinity: an additive mask takes finite values, or -Infinity to mask$`),
    );
    run(
      'scale NaN',
      () => layer.forward(t2(5, 8), { scale: NaN }),
      RangeError,
      new RegExp(`^${W}: scale must be finite, got NaN$`),
    );
    run(
      'unknown option casual',
      () => layer.forward(t2(5, 8), { casual: true }),
      TypeError,
      new RegExp(`^${W}: unknown option "casual" \\(known: context, causal, mask, scale, trace, cache, out\\)$`),
    );
    run(
      'trace not a boolean',
      () => layer.forward(t2(5, 8), { trace: 'all' }),
      TypeError,
      new RegExp(`^${W}: trace must be true or false, got a string \\("all"\\)$`),
    );
  });

  describe('too large for wasm memory', () => {
    run(
      'attention trace [70000,70000]',
      () => attn.attention(t2(70000, 1), t2(70000, 1), t2(70000, 1), { trace: true }),
      RangeError,
      /^attention: the trace's scores \[70000,70000\] needs 18\.3 GB, more than wasm memory can hold \(2 GB\)$/,
    );
    run(
      'multi-head trace scores for a batch',
      () => layer.forward(tensor(f32(8 * 9000 * 8), [8, 9000, 8]), { trace: true }),
      RangeError,
      /^multiHeadAttention\.forward: the trace's scores needs 4\.8 GB, more than wasm memory can hold \(2 GB\)$/,
    );
    // Q, K, V and concat of [32768, 32768] each: 2^32 bytes apiece, 2^34 together, sizes that
    // wrap around to 0 in wasm32 arithmetic. (Before the fix the module wrote over its own
    // memory and every later call failed with "table index is out of bounds".)
    test('multi-head intermediates past 4 GB (wrap around in wasm32)', () => {
      const wide = attn.multiHeadAttention({ dModel: 1, heads: 1, dK: 32768, seed: 1 });
      throwsWith(
        () => wide.forward(t2(32768, 1)),
        RangeError,
        /^multiHeadAttention\.forward: .+ needs (4|16)\.0 GB, more than wasm memory can hold \(2 GB\)$/,
      );
      stillWorks(attn, layer);
      wide.dispose();
    });
    // Q [16384, 30000]: 1.8 GB, under the 2 GB a block can have, but more than is left.
    test('multi-head intermediates under 2 GB each that do not fit', () => {
      const wide = attn.multiHeadAttention({ dModel: 1, heads: 1, dK: 30000, seed: 1 });
      throwsWith(
        () => wide.forward(t2(16384, 1)),
        RangeError,
        /^multiHeadAttention\.forward: (out of memory: the inputs and their intermediates do not fit in wasm memory|.+ needs 1\.8 GB and wasm memory has no room left for it)$/,
      );
      stillWorks(attn, layer);
      // and the same layer works on a size that fits
      const x = randomTensor(rng(3), [3, 1]);
      const ref = mhaRef(x, wide.weights, { nQ: 3, dModel: 1, heads: 1, dK: 30000 });
      const d = maxAbsDiff(wide.forward(x).output.data, ref.output);
      assert.ok(d <= 1e-4, `max abs diff ${d}`);
      wide.dispose();
    });
    test('no room left: each trace fits alone, not all four (own instance)', async () => {
      const own = await createAttention({ threads: 1 });
      try {
        const baseline = own.memory().allocatedBytes;
        throwsWith(
          () => own.attention(t2(15000, 1), t2(15000, 1), t2(15000, 1), { trace: true }),
          RangeError,
          /^attention: the trace's \w+ \[15000,15000\] needs 858\.3 MB and wasm memory has no room left for it$/,
        );
        assert.equal(own.memory().allocatedBytes, baseline, 'everything freed');
        stillWorks(own);
      } finally {
        own.dispose();
      }
    });
  });
});

describe('inputs once taken silently', () => {
  let attn, layer;
  before(async () => {
    attn = await createAttention({ threads: 1 });
    layer = attn.multiHeadAttention({ dModel: 8, heads: 2, bias: true, seed: 5 });
  });
  after(() => attn.dispose());

  test("a mask's dtype other than float32 or float16 is refused, 2-D, on heads and in a layer", () => {
    const q = t2(2, 4);
    const q4 = tensor(f32(8), [1, 1, 2, 4]);
    for (const dtype of ['bogus', 'int8', 7]) {
      const mask = { data: new Uint8Array(4).fill(1), shape: [2, 2], dtype };
      const Class = typeof dtype === 'string' ? RangeError : TypeError;
      const says = typeof dtype === 'string' ? `got '${dtype}'` : 'got the number 7';
      const re = (where) => new RegExp(`^${where}: mask.dtype must be one of float32, float16, ${says}$`);
      throwsWith(() => attn.attention(q, q, q, { mask }), Class, re('attention'));
      throwsWith(() => attn.attentionBackward(q, q, q, q, { mask }), Class, re('attentionBackward'));
      throwsWith(() => attn.attention(q4, q4, q4, { mask }), Class, re('attention'));
      throwsWith(() => layer.forward(t2(2, 8), { mask }), Class, re('multiHeadAttention.forward'));
    }
    const keep = { data: new Uint8Array(4).fill(1), shape: [2, 2], dtype: 'float32' }; // a known dtype still goes
    assert.equal(attn.attention(q, q, q, { mask: keep }).output.data.length, 8);
    stillWorks(attn, layer);
  });

  // Found by the hostile round on issue 28's surface (tests/js/package/hostile_calls.test.mjs).
  test("a mask's dtype 'float16' on data that is not half bits (a Uint8Array, a Float32Array) is refused", () => {
    const q = t2(2, 4);
    const q4 = tensor(f32(8), [1, 1, 2, 4]);
    for (const data of [new Uint8Array(4), new Float32Array(4)]) {
      const mask = { data, shape: [2, 2], dtype: 'float16' };
      const re = (where) =>
        new RegExp(
          `^${where}: mask\\.data must be a Float16Array, or a Uint16Array holding the bits, for dtype 'float16'; got a ${data.constructor.name}`,
        );
      throwsWith(() => attn.attention(q, q, q, { mask }), TypeError, re('attention'));
      throwsWith(() => attn.attention(q4, q4, q4, { mask }), TypeError, re('attention'));
      throwsWith(() => layer.forward(t2(2, 8), { mask }), TypeError, re('multiHeadAttention\\.forward'));
    }
    stillWorks(attn, layer);
  });

  test('2-D attentionBackward with a cache, a past or qkOutput says backward takes none', () => {
    const q = t2(2, 4);
    const cache = attn.kvCache({ batch: 1, kvHeads: 1, dK: 4, dV: 4, capacity: 4 });
    throwsWith(
      () => attn.attentionBackward(q, q, q, q, { cache }),
      TypeError,
      /^attentionBackward: takes no cache, in any form: it differentiates attention over the k and v it is given \(pass all the keys and values, past and new, as k and v\)$/,
    );
    throwsWith(() => attn.attentionBackward(q, q, q, q, { pastKey: q }), TypeError, /takes no pastKey, in any form/);
    throwsWith(
      () => attn.attentionBackward(q, q, q, q, { qkOutput: 'weights' }),
      TypeError,
      /^attentionBackward: takes no qkOutput, in any form: it differentiates attention over the k and v it is given$/,
    );
    // heads and kvLength still need 3-D or 4-D inputs
    throwsWith(() => attn.attentionBackward(q, q, q, q, { kvLength: [2] }), TypeError, /needs q, k, v as 3-D/);
    assert.equal(cache.length, 0);
    cache.dispose();
  });

  // tensor() holds its data to its shape at once, not at the call that reads it.
  test('tensor() refuses data that does not match its shape, and arrays of anything but numbers', () => {
    const cases = [
      [
        () => checkedTensor(new Float32Array(5), [2, 3]),
        RangeError,
        /^tensor: data has 5 values but shape \[2,3\] needs 6$/,
      ],
      [() => checkedTensor([1, 0, 0], [2, 2]), RangeError, /^tensor: data has 3 values but shape \[2,2\] needs 4$/],
      [
        () => checkedTensor([1, '0', 0, 1], [2, 2]),
        TypeError,
        /^tensor: data\[1\] is a string \("0"\): an Array of data must hold numbers only \(or booleans only, a keep mask\)$/,
      ],
      [
        () => checkedTensor(new Float64Array(4), [2, 2]),
        TypeError,
        /^tensor: data must be a Float32Array or an Array of numbers .*, got a Float64Array$/,
      ],
      [
        () => checkedTensor(new Uint16Array(4), [2, 2]),
        TypeError,
        /got a Uint16Array: if it holds half-precision bits, pass \{ dtype: 'float16' \}$/,
      ],
      [
        () => checkedTensor(new Float32Array(4), [2, 0, 2]),
        RangeError,
        /^tensor: shape \[2,0,2\]: every size must be a positive integer$/,
      ],
      [() => checkedTensor(new Float32Array(4), [2, 1.5]), RangeError, /every size must be a positive integer$/],
      [
        () => checkedTensor(new Float32Array(4), '2,2'),
        TypeError,
        /^tensor: shape must be an array of sizes, got a string/,
      ],
      [
        () => checkedTensor(new Float32Array(4), [4], { dtype: 'int8' }),
        RangeError,
        /^tensor: dtype must be one of float32, float16, got 'int8'$/,
      ],
    ];
    for (const [fn, Class, re] of cases) throwsWith(fn, Class, re);
    // an Array of numbers is taken, as a Float32Array
    const t = checkedTensor([1, 0, 0, 1], [2, 2]);
    assert.ok(t.data instanceof Float32Array);
    assert.deepEqual([...t.data, ...t.shape], [1, 0, 0, 1, 2, 2]);
    assert.deepEqual(checkedTensor([true, false], [1, 2]).data, [true, false]); // a keep mask
  });

  test('seededRandom takes an integer seed from 0 to 2^32-1 only', () => {
    for (const seed of [-1, 2 ** 32, 1.5, NaN, Infinity]) {
      throwsWith(
        () => seededRandom(seed),
        RangeError,
        new RegExp(`^seededRandom: seed must be an integer from 0 to 2\\^32-1, got ${seed}$`),
      );
    }
    throwsWith(() => seededRandom('7'), TypeError, /^seededRandom: seed must be a number, got a string \("7"\)$/);
    throwsWith(() => seededRandom(), TypeError, /^seededRandom: seed must be a number, got undefined$/);
    throwsWith(() => seededRandom(7n), TypeError, /got a bigint \(7n\)/);
    assert.equal(typeof seededRandom(2 ** 32 - 1)(), 'number');
  });

  test('xavierUniform checks its sizes, its generator and what the generator returns', () => {
    throwsWith(
      () => xavierUniform(2, 2, null),
      TypeError,
      /^xavierUniform: next must be a function returning uniform numbers in \[0, 1\) \(e\.g\. seededRandom\(seed\)\), got null$/,
    );
    throwsWith(
      () => xavierUniform(0, 2, seededRandom(1)),
      RangeError,
      /^xavierUniform: fanIn must be a positive integer, got 0$/,
    );
    throwsWith(() => xavierUniform(2, '2', seededRandom(1)), TypeError, /^xavierUniform: fanOut must be a number/);
    throwsWith(
      () => xavierUniform(2, 2, () => 1),
      RangeError,
      /^xavierUniform: next\(\) must return numbers in \[0, 1\); draw 0 was the number 1$/,
    );
    throwsWith(() => xavierUniform(2, 2, () => '0.5'), RangeError, /draw 0 was a string/);
    throwsWith(() => xavierUniform(2, 2, () => NaN), RangeError, /draw 0 was the number NaN/);
  });

  test('a layer config with both seed and weights is refused', () => {
    const weights = layer.weights;
    throwsWith(
      () => attn.multiHeadAttention({ dModel: 8, heads: 2, bias: true, seed: 3, weights }),
      TypeError,
      /^multiHeadAttention: seed draws the first weights, and weights gives them: pass one of seed and weights, not both$/,
    );
    const given = attn.multiHeadAttention({ dModel: 8, heads: 2, bias: true, weights });
    assert.deepEqual(given.weights, weights);
    given.dispose();
  });
});

describe('disposed instances and layers', () => {
  test('calls after mha.dispose() throw; the instance and other layers keep working', async () => {
    const attn = await createAttention({ threads: 2 });
    const keep = attn.multiHeadAttention({ dModel: 8, heads: 2, seed: 1 });
    const gone = attn.multiHeadAttention({ dModel: 8, heads: 2, seed: 2 });
    gone.dispose();
    throwsWith(() => gone.forward(t2(3, 8)), TypeError, /^multiHeadAttention\.forward: this layer was disposed$/);
    throwsWith(() => gone.weights, TypeError, /^multiHeadAttention\.weights: this layer was disposed$/);
    gone.dispose(); // twice is fine
    stillWorks(attn, keep);
    assert.equal(gone.config.dModel, 8, 'config stays readable');
    keep.dispose();
    attn.dispose();
  });

  test('calls after attn.dispose() throw, on the instance and its layers', async () => {
    const attn = await createAttention({ threads: 2 });
    const layer = attn.multiHeadAttention({ dModel: 8, heads: 2, seed: 1 });
    attn.dispose();
    const re = (where) =>
      new RegExp(`^${where}: this attention instance was disposed; create a new one with createAttention\\(\\)$`);
    throwsWith(() => attn.attention(t2(2, 2), t2(2, 2), t2(2, 2)), TypeError, re('attention'));
    throwsWith(() => attn.multiHeadAttention({ dModel: 8, heads: 2 }), TypeError, re('multiHeadAttention'));
    throwsWith(() => layer.forward(t2(3, 8)), TypeError, re('multiHeadAttention\\.forward'));
    throwsWith(() => layer.weights, TypeError, re('multiHeadAttention\\.weights'));
    throwsWith(() => attn.backend, TypeError, re('backend'));
    throwsWith(() => attn.memory(), TypeError, re('memory'));
    attn.dispose(); // twice is fine
    layer.dispose(); // and a layer after its instance
    // other instances are not affected
    const other = await createAttention({ threads: 1 });
    stillWorks(other);
    other.dispose();
  });
});

describe('createAttention options', () => {
  test('threads past 64 are refused at once, starting nothing', async () => {
    const compiled = wasmCompiles();
    await rejectsWith(
      createAttention({ threads: 65 }),
      RangeError,
      /^createAttention: threads must be an integer from 1 to 64 or 'auto', got 65$/,
    );
    await rejectsWith(
      createAttention({ threads: 2 ** 31 }),
      RangeError,
      /^createAttention: threads must be an integer from 1 to 64 or 'auto', got 2147483648$/,
    );
    assert.equal(compiled.stop(), 0, 'refused before any module loads');
  });
  // A server's fallback page where the .wasm should be (Vite 5-7's dev server without
  // optimizeDeps.exclude answers index.html): the error names the file and the fix, for both
  // builds (threads: 2 falls back to one thread, whose .wasm is a page too).
  test('a .wasm that is an HTML page: an error naming the file and the fix', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'wasm-attention-html-'));
    const page = join(dir, 'index.html');
    writeFileSync(page, '<!doctype html>\n<html><body>app</body></html>\n');
    const wasm = fileURLToPath(new URL('../../../web/lib/wasm/', import.meta.url));
    const locateFile = (name) => (name.endsWith('.wasm') ? page : join(wasm, name));
    const warn = console.warn;
    const error = console.error;
    console.warn = console.error = () => {}; // the fallback's warning, Emscripten's own abort
    try {
      for (const threads of [1, 2]) {
        await rejectsWith(
          createAttention({ threads, locateFile }),
          Error,
          new RegExp(
            `^wasm-attention: ${page.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} came back as an HTML page, not the \\.wasm \\(its bytes start 3c 21 64 6f\\): .*With Vite 5-7's dev server, add optimizeDeps: \\{ exclude: \\['wasm-attention'\\] \\} to vite\\.config\\.js; .*createAttention\\(\\{ locateFile \\}\\)$`,
          ),
        );
      }
    } finally {
      console.warn = warn;
      console.error = error;
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('bad options', async () => {
    await rejectsWith(
      createAttention({ threads: 0 }),
      RangeError,
      /^createAttention: threads must be an integer from 1 to 64 or 'auto', got 0$/,
    );
    await rejectsWith(
      createAttention({ threads: 1.5 }),
      RangeError,
      /^createAttention: threads must be an integer from 1 to 64 or 'auto', got 1\.5$/,
    );
    await rejectsWith(
      createAttention({ threads: '2' }),
      TypeError,
      /^createAttention: threads must be an integer from 1 to 64 or 'auto', got string$/,
    );
    await rejectsWith(
      createAttention({ thread: 2 }),
      TypeError,
      /^createAttention: unknown option "thread" \(known: threads, locateFile, wasmBinary, worker, isa\)$/,
    );
    await rejectsWith(
      createAttention({ locateFile: 'wasm/' }),
      TypeError,
      /^createAttention: locateFile must be a function/,
    );
    await rejectsWith(
      createAttention({ wasmBinary: [0, 97, 115, 109] }),
      TypeError,
      /^createAttention: wasmBinary must be an ArrayBuffer or Uint8Array$/,
    );
    await rejectsWith(
      createAttention('auto'),
      TypeError,
      /^createAttention: options must be an object, got a string \("auto"\)$/,
    );
  });
});

// Each thread keeps scratch buffers, grown to the largest block of work it has had and kept
// for the thread's life. Before a leak check: calls larger in every size than those of the
// check, with many blocks each, so that every thread gets some.
function warmUpThreads(attn) {
  const next = rng(5);
  const q = randomTensor(next, [3200, 32]);
  const k = randomTensor(next, [300, 32]);
  const v = randomTensor(next, [300, 32]);
  const layer = attn.multiHeadAttention({ dModel: 32, heads: 4, dK: 16, dV: 16, bias: true, seed: 1 });
  const x = randomTensor(next, [4, 96, 32]);
  const context = randomTensor(next, [4, 80, 32]);
  for (let i = 0; i < 5; ++i) {
    attn.attention(q, k, v);
    attn.attention(q, k, v, { causal: true, trace: true });
    layer.forward(x, { causal: true });
    layer.forward(x, { context, trace: true });
  }
  layer.dispose();
}

describe('no leaks in wasm memory', () => {
  test('a layer dropped without dispose() frees its weights and its saved forward once collected', async () => {
    const gc = garbageCollector();
    const attn = await createAttention({ threads: 1 });
    try {
      const x = randomTensor(rng(12), [256, 64]);
      const use = () => attn.multiHeadAttention({ dModel: 64, heads: 4, seed: 1 }).forward(x); // never disposed
      const warm = attn.multiHeadAttention({ dModel: 64, heads: 4, seed: 1 });
      warm.forward(x); // grows the scratch buffers once
      warm.dispose();
      const baseline = attn.memory().allocatedBytes;
      use();
      assert.ok(
        attn.memory().allocatedBytes > baseline + 256 * 64 * 4,
        'the layer holds its weights and saved forward',
      );
      for (let i = 0; i < 20 && attn.memory().allocatedBytes !== baseline; ++i) {
        gc();
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      assert.equal(attn.memory().allocatedBytes, baseline);
    } finally {
      attn.dispose();
    }
  });

  for (const threads of [1, 2]) {
    test(`2000 calls mixing successes and failures (threads: ${threads})`, async () => {
      const attn = await createAttention({ threads });
      try {
        const next = rng(7);
        const layer = attn.multiHeadAttention({ dModel: 16, heads: 4, bias: true, seed: 3 });
        const wide = attn.multiHeadAttention({ dModel: 1, heads: 1, dK: 30000, seed: 1 });
        const q = randomTensor(next, [64, 16]);
        const k = randomTensor(next, [48, 16]);
        const v = randomTensor(next, [48, 8]);
        const keep = new Uint8Array(64 * 48).map(() => (next() < 0.7 ? 1 : 0));
        const x = randomTensor(next, [2, 10, 16]);
        const ctx = randomTensor(next, [2, 13, 16]);
        const huge = t2(70000, 1);
        const hugeX = tensor(f32(4 * 9000 * 16), [4, 9000, 16]);
        const tall = t2(16384, 1);
        const failures = { count: 0 };
        const fails = (fn) => {
          assert.throws(fn, (e) => e instanceof TypeError || e instanceof RangeError);
          ++failures.count;
        };
        const round = (i) => {
          switch (i % 10) {
            case 0:
              return attn.attention(q, k, v, { causal: true, trace: true });
            case 1:
              return attn.attention(q, k, v, { mask: keep });
            case 2:
              return layer.forward(x, { causal: true, trace: true });
            case 3:
              return layer.forward(x, { context: ctx, trace: true });
            case 4:
              return fails(() => attn.attention(q, v, v)); // k columns != q columns
            case 5:
              return fails(() => attn.attention(huge, huge, huge, { trace: true })); // OOM after q, k, v are in
            case 6:
              return fails(() => layer.forward(hugeX, { trace: true })); // OOM after x and the output
            case 7:
              return fails(() => wide.forward(tall)); // OOM: 1.8 GB intermediates
            case 8:
              return fails(() => layer.forward(x, { context: ctx, mask: new Uint8Array(3) }));
            default:
              return fails(() => attn.attention(q, k, v, { casual: true }));
          }
        };
        warmUpThreads(attn);
        for (let i = 0; i < 200; ++i) round(i);
        const baseline = attn.memory().allocatedBytes;
        failures.count = 0;
        for (let i = 0; i < 2000; ++i) round(i);
        assert.equal(failures.count, 1200);
        const afterCalls = attn.memory().allocatedBytes;
        assert.equal(afterCalls, baseline, `allocatedBytes ${baseline} -> ${afterCalls} after 2000 calls`);
        // and the successes were right all along
        const r = attn.attention(q, k, v, { mask: keep });
        const d = maxAbsDiff(r.output.data, attentionRef(q, k, v, { keep }).output);
        assert.ok(d <= TOL, `max abs diff ${d}`);
        layer.dispose();
        wide.dispose();
      } finally {
        attn.dispose();
      }
    });

    test(`200 layers created and disposed (threads: ${threads})`, async () => {
      const attn = await createAttention({ threads });
      try {
        const next = rng(8);
        const x = randomTensor(next, [2, 6, 12]);
        const make = (i) => {
          const config = { dModel: 12, heads: [1, 2, 3, 4][i % 4], bias: i % 2 === 0 };
          if (i % 3 === 0) {
            const dK = 12 / config.heads;
            config.weights = {
              wq: randomTensor(next, [12, 12]),
              wk: randomTensor(next, [12, 12]),
              wv: randomTensor(next, [12, 12]),
              wo: randomTensor(next, [12, 12]),
            };
            if (config.bias) config.weights.bq = randomTensor(next, [config.heads * dK]);
          } else {
            config.seed = i;
          }
          return attn.multiHeadAttention(config);
        };
        const cycle = (i, baseline) => {
          const l = make(i);
          if (i % 5 === 0) l.forward(x, { causal: true, trace: i % 2 === 0 });
          if (baseline !== undefined && i % 7 === 0) {
            assert.ok(attn.memory().allocatedBytes > baseline, 'a live layer holds its weights');
          }
          l.dispose();
          // a layer that fails to construct holds nothing either
          assert.throws(
            () => attn.multiHeadAttention({ dModel: 12, heads: 2, weights: { wq: t2(12, 5) } }),
            RangeError,
          );
        };
        warmUpThreads(attn);
        for (let i = 0; i < 200; ++i) cycle(i);
        const baseline = attn.memory().allocatedBytes;
        for (let i = 0; i < 200; ++i) cycle(i, baseline);
        const afterLayers = attn.memory().allocatedBytes;
        assert.equal(afterLayers, baseline, `allocatedBytes ${baseline} -> ${afterLayers} after 200 layers`);
      } finally {
        attn.dispose();
      }
    });
  }
});

describe('values that overflow', () => {
  let attn;
  before(async () => {
    attn = await createAttention({ threads: 2 });
  });
  after(() => attn.dispose());

  test('a step whose result is not finite is refused and leaves every weight as it was', () => {
    const layer = attn.multiHeadAttention({ dModel: 4, heads: 2, bias: true, seed: 9 });
    const x = randomTensor(rng(4), [3, 4]);
    layer.forward(x);
    const grads = layer.backward(randomTensor(rng(5), [3, 4]));
    grads.dwq.data.fill(10);
    const before = layer.weights;
    // Before, this wrote ±Infinity into wq and the layer could never run again.
    throwsWith(
      () => layer.step(grads, 1e38),
      RangeError,
      /^multiHeadAttention\.step: wq\[0\] would become -Infinity \(learningRate 1e\+38 times grads\.dwq\[0\] = 10\): the step overflows 32-bit floats; no weight was changed$/,
    );
    assert.deepEqual(layer.weights, before);
    // An overflow only in a later weight (wo) still changes nothing, wq included.
    const late = {
      dwq: tensor(new Float32Array(16).fill(1), [4, 4]),
      dwo: tensor(new Float32Array(16).fill(3e38), [4, 4]),
    };
    throwsWith(() => layer.step(late, -2), RangeError, /^multiHeadAttention\.step: wo\[0\] would become Infinity/);
    assert.deepEqual(layer.weights, before);
    // The layer still runs, and a sane step still applies.
    const out = layer.forward(x).output.data;
    assert.ok(out.every(Number.isFinite));
    layer.step(layer.backward(randomTensor(rng(5), [3, 4])), 0.1);
    assert.notDeepEqual(layer.weights.wq.data, before.wq.data);
    layer.dispose();
  });

  // A scale that makes q·kᵀ overflow, inputs that do not: the message names the scale.
  test('a scale so large that the scaled scores overflow blames the scale, 2-D, on heads and backward', () => {
    const ones = (shape) => tensor(new Float32Array(shape.reduce((a, b) => a * b)).fill(1), shape);
    const re =
      /: output\[0\] came out NaN: scale 3e\+38 times q·kᵀ \(up to 4\.00\) overflows 32-bit floats \(above 3\.4e38\); use a smaller scale \(the default is 1\/√dK = 0\.500\)$/;
    throwsWith(() => attn.attention(ones([3, 4]), ones([3, 4]), ones([3, 4]), { scale: 3e38 }), RangeError, re);
    throwsWith(
      () => attn.attention(ones([1, 1, 3, 4]), ones([1, 1, 3, 4]), ones([1, 1, 3, 4]), { scale: 3e38 }),
      RangeError,
      re,
    );
    throwsWith(
      () => attn.attentionBackward(ones([3, 4]), ones([3, 4]), ones([3, 4]), ones([3, 4]), { scale: 3e38 }),
      RangeError,
      /^attentionBackward: d[qkv]\[0\] came out NaN: scale 3e\+38 times q·kᵀ/,
    );
    // inputs that overflow at the default scale still blame the inputs
    throwsWith(
      () => {
        const big = tensor(new Float32Array(12).fill(1e20), [3, 4]);
        return attn.attention(big, big, ones([3, 4]));
      },
      RangeError,
      /^attention: output\[0\] came out NaN: the inputs are so large/,
    );
  });

  // Training with a learning rate too large grows the weights step by step, each finite,
  // until a forward overflows: the message names the weights and the learning rate.
  test('a layer diverged by step() gives a forward whose NaN blames the learning rate', () => {
    const layer = attn.multiHeadAttention({ dModel: 4, heads: 2, seed: 3 });
    const x = tensor(new Float32Array(12).fill(0.5), [3, 4]);
    const fresh = attn.multiHeadAttention({ dModel: 4, heads: 2, weights: layer.weights });
    try {
      const huge = () => tensor(new Float32Array(16).fill(1e19), [4, 4]);
      layer.step({ dwq: huge(), dwk: huge() }, -1); // finite weights of about 1e19
      const diverged =
        /^multiHeadAttention\.forward: output\[0\] came out NaN: the layer's weights reach \|w\| = 1\.00e\+19 \(x's largest \|x\| is 0\.500\): step\(\) made them so large, its training diverged; lower the learning rate/;
      throwsWith(() => layer.forward(x), RangeError, diverged);
      // the same weights given, never stepped: the weights are named, not a learning rate
      fresh.dispose();
      const given = attn.multiHeadAttention({ dModel: 4, heads: 2, weights: layer.weights });
      throwsWith(
        () => given.forward(x),
        RangeError,
        /^multiHeadAttention\.forward: output\[0\] came out NaN: the layer's weights reach \|w\| = 1\.00e\+19 \(x's largest \|x\| is 0\.500\), so large that their products overflow/,
      );
      given.dispose();
    } finally {
      layer.dispose();
    }
  });

  // Every output is a weighted average of v's rows; the no-trace path sums nK weighted rows
  // before it divides, so an output near float32's range could overflow on one path and not
  // the other. Both refuse it up front, alike.
  test('v so large that nK·|v| nears float32 range: the same RangeError with and without trace', () => {
    const q = tensor(new Float32Array(2 * 4).fill(0), [2, 4]); // equal scores: weights 1/nK
    const k = tensor(new Float32Array(300 * 4).fill(0), [300, 4]);
    const v = tensor(new Float32Array(300 * 2).fill(1e38), [300, 2]);
    const re =
      /^attention: v has values up to 1\.00e\+38 and there are 300 keys: sums of nK·\|v\| must stay below 1\.7e38 \(half of 32-bit floats' range\) for the output to be computed; scale v down$/;
    throwsWith(() => attn.attention(q, k, v), RangeError, re);
    throwsWith(() => attn.attention(q, k, v, { trace: true }), RangeError, re);
    // On heads (4-D [B,H,S,D]), appending to a cache: refused alike, the cache left as it was.
    const cache = attn.kvCache({ batch: 1, kvHeads: 1, dK: 4, dV: 2, capacity: 300 });
    try {
      const heads = (t) => tensor(t.data, [1, 1, ...t.shape]);
      throwsWith(() => attn.attention(heads(q), heads(k), heads(v), { cache }), RangeError, re);
      assert.equal(cache.length, 0);
    } finally {
      cache.dispose();
    }
    // Just under the bound: both give the average, 1e35.
    const fine = tensor(new Float32Array(300 * 2).fill(1e35), [300, 2]);
    for (const trace of [false, true]) {
      const out = attn.attention(q, k, fine, { trace }).output.data;
      assert.ok(
        out.every((x) => Math.abs(x - 1e35) / 1e35 < 1e-5),
        `trace ${trace}: ${out}`,
      );
    }
  });
});
