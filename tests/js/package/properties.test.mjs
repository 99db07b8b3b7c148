// Property-based tests (fast-check): shapes drawn from 1, tile edges and primes; causal and
// mask options; heads; and hostile inputs. Every result is held to the float64 reference
// (scripts/lib/reference.mjs), every rejection to its error class, and after each case the instance
// still computes right and wasm memory holds what it held before.
//
// CI runs a fixed seed and 40 to 250 cases per property (seconds). For minutes of search
// (100 times the cases, and sizes past the 256-key block):
//   WA_PROPERTIES_LONG=1 node --test tests/js/package/properties.test.mjs
// and WA_PROPERTIES_SEED=n to replay a seed fast-check reported.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Worker } from 'node:worker_threads';
import fc from 'fast-check';

import { createAttention } from '../../../web/lib/index.js';
import { rawTensor as tensor } from '../helpers/assertions.mjs';
import { attentionRef, maxAbs, maxAbsDiff, mhaRef } from '../../../scripts/lib/reference.mjs';

const LONG = process.env.WA_PROPERTIES_LONG === '1' || process.argv.includes('--long');
const SEED = Number(process.env.WA_PROPERTIES_SEED ?? 20261123);
const runs = (n) => ({ seed: SEED, numRuns: LONG ? n * 100 : n, endOnFailure: true });

// Sizes: 1, the GEMM tile edges (4x8 kernel, 32-row blocks, 256-key blocks) and primes.
const SIZES = [1, 2, 3, 4, 5, 7, 8, 9, 13, 17, 31, 32, 33, 63, 65, 129];
const LONG_SIZES = [...SIZES, 255, 257, 263];
const size = fc.constantFrom(...(LONG ? LONG_SIZES : SIZES));
const small = fc.constantFrom(1, 2, 3, 4, 5, 7, 8, 9, 17);

// n float32 values in [-2, 2): from a seed, so big tensors shrink and print small.
const values = (n, seed) => {
  const out = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; ++i) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = (s / 2 ** 32) * 4 - 2;
  }
  return out;
};

// A tensor's data in one of the layouts a caller may hand over, all holding the same values.
const LAYOUTS = ['plain', 'offset', 'shared', 'subclass'];
function lay(data, layout) {
  if (layout === 'plain') return data;
  if (layout === 'offset') {
    const big = new Float32Array(data.length + 11).fill(1e6);
    big.set(data, 5);
    return big.subarray(5, 5 + data.length);
  }
  if (layout === 'shared') {
    const s = new Float32Array(new SharedArrayBuffer(4 * data.length));
    s.set(data);
    return s;
  }
  class Liar extends Float32Array {
    get length() {
      return 1;
    }
    get byteLength() {
      return 4;
    }
  }
  return Liar.from(data);
}

const attentionCase = fc.record({
  nQ: size,
  nK: size,
  dK: small,
  dV: small,
  causal: fc.boolean(),
  mask: fc.constantFrom('none', 'keep', 'additive'),
  scale: fc.option(fc.double({ min: 0.01, max: 4, noNaN: true }), { nil: undefined }),
  trace: fc.boolean(),
  layout: fc.constantFrom(...LAYOUTS),
  seed: fc.nat(),
});

for (const threads of [1, 2]) {
  describe(`properties (threads: ${threads})`, () => {
    let attn, baseline;
    before(async () => {
      attn = await createAttention({ threads });
      // Warm every scratch slot up to its kept size, so memory() can be compared exactly.
      const big = (n, d) => tensor(values(n * d, 1), [n, d]);
      attn.attention(big(300, 17), big(300, 17), big(300, 17), { causal: true });
      attn.attention(big(300, 17), big(300, 17), big(300, 17));
      baseline = attn.memory().allocatedBytes;
    });
    after(() => attn.dispose());

    // Memory afterwards: what it was, but for the scratch each thread may keep (4 slots of
    // at most 1 MiB, grown by shapes the warm-up did not reach). A leak of the cases' buffers
    // adds up past that over the runs; errors.test.mjs checks exact figures.
    const memoryIntact = () => {
      const bytes = attn.memory().allocatedBytes;
      assert.ok(bytes <= baseline + threads * 4 * 2 ** 20 + 65536, `allocatedBytes ${baseline} -> ${bytes}`);
    };

    test('attention matches the float64 reference', () => {
      fc.assert(
        fc.property(attentionCase, (c) => {
          const q = tensor(values(c.nQ * c.dK, c.seed), [c.nQ, c.dK]);
          const k = tensor(values(c.nK * c.dK, c.seed + 1), [c.nK, c.dK]);
          const v = tensor(values(c.nK * c.dV, c.seed + 2), [c.nK, c.dV]);
          const options = { causal: c.causal, trace: c.trace, scale: c.scale };
          const refOptions = { causal: c.causal, scale: c.scale === undefined ? undefined : Math.fround(c.scale) };
          if (c.mask === 'keep') {
            const keep = new Uint8Array(c.nQ * c.nK).map((_, i) => ((i * 7 + c.seed) % 3 !== 0 ? 1 : 0));
            options.mask = keep;
            refOptions.keep = keep;
          } else if (c.mask === 'additive') {
            const bias = values(c.nQ * c.nK, c.seed + 3).map((x, i) => (i % 5 === 0 ? -Infinity : x));
            options.mask = tensor(bias, [c.nQ, c.nK]);
            refOptions.bias = bias;
          }
          const ref = attentionRef(q, k, v, refOptions);
          const got = attn.attention(
            tensor(lay(q.data, c.layout), q.shape),
            k,
            tensor(lay(v.data, c.layout), v.shape),
            options,
          );
          assert.deepEqual(got.output.shape, [c.nQ, c.dV]);
          const d = maxAbsDiff(got.output.data, ref.output);
          assert.ok(d <= 1e-5 * Math.max(1, maxAbs(ref.output)), `output: max abs diff ${d}`);
          if (c.trace) {
            const dw = maxAbsDiff(got.weights.data, ref.weights);
            assert.ok(dw <= 1e-5, `weights: max abs diff ${dw}`);
          }
          memoryIntact();
        }),
        runs(150),
      );
    });

    test('matmul matches the float64 reference', () => {
      fc.assert(
        fc.property(
          fc.record({
            m: size,
            n: size,
            k: size,
            tA: fc.boolean(),
            tB: fc.boolean(),
            layout: fc.constantFrom(...LAYOUTS),
            seed: fc.nat(),
          }),
          (c) => {
            const a = values(c.m * c.k, c.seed),
              b = values(c.k * c.n, c.seed + 1);
            const got = attn.matmul(
              tensor(lay(a, c.layout), c.tA ? [c.k, c.m] : [c.m, c.k]),
              tensor(b, c.tB ? [c.n, c.k] : [c.k, c.n]),
              { transposeA: c.tA, transposeB: c.tB },
            );
            let worst = 0;
            for (let i = 0; i < c.m; ++i) {
              for (let j = 0; j < c.n; ++j) {
                let s = 0;
                for (let p = 0; p < c.k; ++p)
                  s += a[c.tA ? p * c.m + i : i * c.k + p] * b[c.tB ? j * c.k + p : p * c.n + j];
                worst = Math.max(worst, Math.abs(got.data[i * c.n + j] - s));
              }
            }
            assert.ok(worst <= 1e-5 * c.k * 4, `max abs diff ${worst}`);
            memoryIntact();
          },
        ),
        runs(40),
      );
    });

    test('multi-head attention matches the float64 reference', () => {
      fc.assert(
        fc.property(
          fc.record({
            batch: fc.constantFrom(1, 2, 3),
            nQ: small,
            nK: small,
            heads: fc.constantFrom(1, 2, 3, 4),
            dK: fc.constantFrom(1, 2, 3, 4, 8),
            dModel: fc.constantFrom(1, 4, 5, 8, 12),
            bias: fc.boolean(),
            cross: fc.boolean(),
            causal: fc.boolean(),
            seed: fc.nat(0xffffffff),
          }),
          (c) => {
            const layer = attn.multiHeadAttention({
              dModel: c.dModel,
              heads: c.heads,
              dK: c.dK,
              bias: c.bias,
              seed: c.seed,
            });
            try {
              const nK = c.cross ? c.nK : c.nQ;
              const x = tensor(values(c.batch * c.nQ * c.dModel, c.seed), [c.batch, c.nQ, c.dModel]);
              const context = c.cross
                ? tensor(values(c.batch * nK * c.dModel, c.seed + 1), [c.batch, nK, c.dModel])
                : undefined;
              const got = layer.forward(x, { context, causal: c.causal });
              const ref = mhaRef(x, layer.weights, {
                batch: c.batch,
                nQ: c.nQ,
                nK,
                dModel: c.dModel,
                heads: c.heads,
                dK: c.dK,
                context,
                causal: c.causal,
              });
              const d = maxAbsDiff(got.output.data, ref.output);
              assert.ok(d <= 1e-4 * Math.max(1, maxAbs(ref.output)), `max abs diff ${d}`);
            } finally {
              layer.dispose();
            }
            memoryIntact();
          },
        ),
        runs(100),
      );
    });

    // Hostile arguments: each is either computed right (from what it really holds) or
    // refused with the right class, and the instance keeps working.
    const hostile = fc.constantFrom(
      ['a Proxy around data', TypeError, (t) => tensor(new Proxy(t.data, {}), t.shape)],
      [
        'an object inheriting from Float32Array.prototype',
        TypeError,
        (t) => tensor(Object.create(Float32Array.prototype), t.shape),
      ],
      [
        'a detached buffer',
        TypeError,
        (t) => {
          const d = t.data.slice();
          structuredClone(d.buffer, { transfer: [d.buffer] });
          return tensor(d, t.shape);
        },
      ],
      ['a Float64Array', TypeError, (t) => tensor(Float64Array.from(t.data), t.shape)],
      ['string sizes', TypeError, (t) => tensor(t.data, t.shape.map(String))],
      ['BigInt sizes', TypeError, (t) => tensor(t.data, t.shape.map(BigInt))],
      [
        'a shape that changes after its first read',
        null,
        (t) => {
          let n = 0;
          return {
            data: t.data,
            get shape() {
              return n++ ? [t.shape[0] * 1000, t.shape[1]] : t.shape;
            },
          };
        },
      ],
      ['a subclass lying about its size', null, (t) => tensor(lay(t.data, 'subclass'), t.shape)],
      [
        'a subclass whose real length is short',
        RangeError,
        (t) => {
          class S extends Float32Array {
            get length() {
              return t.data.length;
            }
          }
          return tensor(S.from(t.data.subarray(1)), t.shape);
        },
      ],
      [
        'a NaN',
        RangeError,
        (t) => {
          const d = t.data.slice();
          d[d.length - 1] = NaN;
          return tensor(d, t.shape);
        },
      ],
      ['a zero size', RangeError, (t) => tensor(t.data, [0, t.shape[1]])],
      ['a negative size', RangeError, (t) => tensor(t.data, [-t.shape[0], t.shape[1]])],
      [
        'a Proxy shape growing between reads',
        null,
        (t) => {
          let n = 0;
          return tensor(t.data, new Proxy([...t.shape], { get: (a, key) => (key === '0' && n++ ? 1e6 : a[key]) }));
        },
      ],
    );
    test('hostile arguments are computed right or refused with the right class; the instance stays intact', () => {
      fc.assert(
        fc.property(
          fc.record({ nQ: size, nK: size, d: small, which: fc.constantFrom('q', 'k', 'v'), hostile, seed: fc.nat() }),
          (c) => {
            const [, Class, make] = c.hostile;
            const t = {
              q: tensor(values(c.nQ * c.d, c.seed), [c.nQ, c.d]),
              k: tensor(values(c.nK * c.d, c.seed + 1), [c.nK, c.d]),
              v: tensor(values(c.nK * c.d, c.seed + 2), [c.nK, c.d]),
            };
            const ref = attentionRef(t.q, t.k, t.v).output;
            const args = { ...t, [c.which]: make(t[c.which]) };
            let got, error;
            try {
              got = attn.attention(args.q, args.k, args.v);
            } catch (e) {
              error = e;
            }
            if (Class) {
              assert.ok(error, `expected a ${Class.name}`);
              assert.equal(error.constructor, Class, `${error.constructor.name}: ${error.message}`);
              assert.match(error.message, new RegExp(`^attention: ${c.which}\\b`));
            } else {
              assert.equal(error, undefined, error?.message);
              assert.ok(maxAbsDiff(got.output.data, ref) <= 1e-5, 'output from what the argument really holds');
            }
            const again = attn.attention(t.q, t.k, t.v).output.data;
            assert.ok(maxAbsDiff(again, ref) <= 1e-5, 'a plain call afterwards');
            memoryIntact();
          },
        ),
        runs(250),
      );
    });
  });
}

// worker_threads, each with its own instance of 2 threads, hammering the same calls: every
// result bitwise equal to the one-thread result in this thread.
test('worker_threads with their own instances give results bitwise equal to one thread', async () => {
  const cases = [
    [1, 1, 1],
    [5, 9, 8],
    [33, 65, 17],
    [129, 63, 4],
    [64, 300, 32],
  ];
  const attn = await createAttention({ threads: 1 });
  const expected = cases.map(
    ([nQ, nK, d], i) =>
      attn.attention(
        tensor(values(nQ * d, i), [nQ, d]),
        tensor(values(nK * d, i + 1), [nK, d]),
        tensor(values(nK * d, i + 2), [nK, d]),
        { causal: i % 2 === 1 },
      ).output.data,
  );
  attn.dispose();
  const source = `
    import { parentPort, workerData } from 'node:worker_threads';
    const { createAttention, tensor } = await import(workerData.index);
    const values = ${values.toString()};
    const attn = await createAttention({ threads: 2 });
    const out = [];
    for (let rep = 0; rep < workerData.reps; ++rep) {
      workerData.cases.forEach(([nQ, nK, d], i) => {
        const r = attn.attention(tensor(values(nQ * d, i), [nQ, d]), tensor(values(nK * d, i + 1), [nK, d]), tensor(values(nK * d, i + 2), [nK, d]), { causal: i % 2 === 1 }).output.data;
        if (rep === workerData.reps - 1) out.push(r);
        else if (rep === 0) out.push(r);
      });
    }
    attn.dispose();
    parentPort.postMessage(out);
  `;
  const index = new URL('../../../web/lib/index.js', import.meta.url).href;
  const reps = LONG ? 200 : 5;
  const results = await Promise.all(
    [0, 1, 2].map(
      () =>
        new Promise((resolve, reject) => {
          const w = new Worker(new URL(`data:text/javascript,${encodeURIComponent(source)}`), {
            workerData: { index, cases, reps },
          });
          w.once('message', resolve);
          w.once('error', reject);
        }),
    ),
  );
  for (const out of results) {
    for (let i = 0; i < out.length; ++i) {
      const want = expected[i % cases.length];
      const got = out[i];
      assert.equal(got.length, want.length);
      const differs = got.findIndex((x, j) => !Object.is(x, want[j]));
      assert.equal(differs, -1, `case ${cases[i % cases.length]}: value ${differs} differs from one thread`);
    }
  }
});
