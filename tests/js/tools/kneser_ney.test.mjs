// The count models behind the ceilings (scripts/train/kneser_ney.mjs), held to a plain reference:
// interpolated modified Kneser-Ney written out from its definition over string-keyed maps, on
// small random texts; and the distributions are distributions.
// run with: node --test tests/js/tools/kneser_ney.test.mjs
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { seededRandom } from '../../../web/lib/index.js';
import { countNgrams, kneserNey } from '../../../scripts/train/kneser_ney.mjs';

// documents of class ids from a skewed random source with some structure (w follows w−1 often)
function randomDocs(seed, V, lengths) {
  const next = seededRandom(seed);
  return lengths.map((len) => {
    const ids = new Int32Array(len);
    for (let i = 0; i < len; ++i) {
      const r = next();
      ids[i] = i > 0 && r < 0.4 ? (ids[i - 1] + 1) % V : Math.floor(next() ** 2 * V);
    }
    return ids;
  });
}

// The reference: every k-gram's raw count and its number of distinct left neighbours, by string
// key; p_k from the definition, recursively.
function referenceKneserNey(docs, V, order) {
  const raw = new Map(),
    left = new Map();
  for (const ids of docs) {
    for (let k = 1; k <= order; ++k) {
      for (let i = 0; i + k <= ids.length; ++i) {
        const g = ids.slice(i, i + k).join(' ');
        raw.set(g, (raw.get(g) ?? 0) + 1);
        if (i > 0) {
          if (!left.has(g)) left.set(g, new Set());
          left.get(g).add(ids[i - 1]);
        }
      }
    }
  }
  const cont = (g) => left.get(g)?.size ?? 0;
  const level = (g) => g.split(' ').length;
  function D(countOf, k) {
    const n = [0, 0, 0, 0, 0];
    for (const g of raw.keys()) {
      const c = countOf(g);
      if (level(g) === k && c >= 1 && c <= 4) ++n[c];
    }
    // as Chen & Goodman, clamped to [0, j]; with some n_j = 0: Y for all, or 0.5 without n1, n2
    const Y = n[1] / (n[1] + 2 * n[2]);
    let d;
    if (n[1] === 0 || n[2] === 0) d = [0, 0.5, 0.5, 0.5];
    else if (n[3] === 0 || n[4] === 0) d = [0, Y, Y, Y];
    else {
      d = [0, 1 - (2 * Y * n[2]) / n[1], 2 - (3 * Y * n[3]) / n[2], 3 - (4 * Y * n[4]) / n[3]];
      for (let j = 1; j <= 3; ++j) d[j] = Math.min(Math.max(d[j], 0), j);
    }
    return (c) => d[Math.min(c, 3)];
  }
  function p(w, h, k, top) {
    if (k === 0) return 1 / V;
    const countOf = k === top ? (g) => raw.get(g) ?? 0 : cont;
    const d = D(countOf, k);
    const hs = h.slice(h.length - (k - 1));
    const key = (v) => [...hs, v].join(' ');
    let sum = 0,
      gamma = 0;
    for (let v = 0; v < V; ++v) {
      const c = countOf(key(v));
      sum += c;
      if (c > 0) gamma += d(c);
    }
    const lower = p(w, h, k - 1, top);
    if (sum === 0) return lower;
    const c = countOf(key(w));
    return (c > 0 ? (c - d(c)) / sum : 0) + (gamma / sum) * lower;
  }
  return (context, w) => {
    const top = Math.min(order, context.length + 1);
    return p(w, Array.from(context), top, top);
  };
}

test('Kneser-Ney distributions match the reference and sum to 1', () => {
  const V = 7;
  const docs = randomDocs(3, V, [400, 250, 31, 5]);
  const counts = countNgrams(docs, V, 4);
  const contexts = [[], [0], [3], [6, 6], [1, 2], [2, 3, 4], [5, 0, 1, 2], [0, 0, 0, 0, 0]];
  let checked = 0;
  for (const order of [1, 2, 3, 4]) {
    const model = kneserNey(counts, order);
    const ref = referenceKneserNey(docs, V, order);
    for (const context of contexts) {
      const p = model.distribution(Int32Array.from(context), new Float64Array(V));
      assert.ok(Math.abs(p.reduce((a, b) => a + b, 0) - 1) < 1e-12, `order ${order}, context ${context}: sum`);
      for (let w = 0; w < V; ++w) {
        assert.ok(p[w] > 0, `order ${order}, context ${context}, w ${w}: p ${p[w]}`);
        const r = ref(context, w);
        assert.ok(Math.abs(p[w] - r) < 1e-12, `order ${order}, context [${context}], w ${w}: ${p[w]} vs ${r}`);
        ++checked;
      }
    }
  }
  assert.equal(checked, 4 * 8 * V);
});

test('a higher order uses its context: the 3-gram model tells apart what the 2-gram cannot', () => {
  // "a b c" and "d b e", repeated: after "b" the 2-gram model splits between c and e; the
  // 3-gram model knows which from the token before "b"
  const docs = [Int32Array.from({ length: 300 }, (_, i) => [0, 1, 2, 3, 1, 4][i % 6])];
  const counts = countNgrams(docs, 5, 3);
  const p2 = kneserNey(counts, 2).distribution([0, 1], new Float64Array(5));
  const p3 = kneserNey(counts, 3).distribution([0, 1], new Float64Array(5));
  assert.ok(Math.abs(p2[2] - p2[4]) < 0.01, `2-gram: ${p2}`);
  assert.ok(p3[2] > 0.9 && p3[4] < 0.05, `3-gram: ${p3}`);
});

test('an order above the counted one is a RangeError', () => {
  const counts = countNgrams([Int32Array.from([0, 1, 0, 1])], 2, 2);
  assert.throws(() => kneserNey(counts, 3), RangeError);
});
