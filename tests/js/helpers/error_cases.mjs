// Representative bad calls to the package, one per kind of error it raises, for running the
// same way in Node and in each browser (tests/js/engines/browser_loading.test.mjs): badCalls is
// self-contained (a page gets it as source text) and takes the package's exports.
// -> [{ call, error: 'Class: message' or null, instanceOfError }] and whether a correct
// call after all of them gives the same bits as before them.
export async function badCalls({ createAttention, tensor }) {
  const attn = await createAttention({ threads: 1 });
  const t = (rows, cols, f = (i) => Math.sin(i)) =>
    tensor(
      Float32Array.from({ length: rows * cols }, (_, i) => f(i)),
      [rows, cols],
    );
  const bits = (f) => Array.from(new Uint32Array(f.buffer, f.byteOffset, f.length));
  const q = t(4, 2),
    k = t(5, 2),
    v = t(5, 3);
  const good = () => bits(attn.attention(q, k, v, { causal: true }).output.data);
  const before = good();

  const layer = attn.multiHeadAttention({ dModel: 4, heads: 2, bias: true, seed: 9 });
  const gone = attn.multiHeadAttention({ dModel: 4, heads: 2 });
  gone.dispose();
  const x = t(3, 4);
  layer.forward(x);
  const grads = layer.backward(t(3, 4));
  grads.dwq.data.fill(10);
  const weights = JSON.stringify(layer.weights, (_, w) => (ArrayBuffer.isView(w) ? Array.from(w) : w));
  const out = new Float32Array(12).fill(7); // a bad call's out stays as it was
  const huge = t(4, 2, () => 1e20);

  const cases = {
    'k with other columns than q': () => attn.attention(q, t(5, 3), v),
    'q.data a Float64Array': () => attn.attention({ data: new Float64Array(8), shape: [4, 2] }, k, v),
    'tensor() of 5 values for [2,3]': () => tensor(new Float32Array(5), [2, 3]),
    'q a plain array': () => attn.attention([[1, 2]], k, v),
    'a NaN in v': () =>
      attn.attention(
        q,
        k,
        t(5, 3, (i) => (i === 7 ? NaN : 1)),
      ),
    'an unknown option value': () => attn.attention(q, k, v, { causal: 'yes' }),
    'out of another size': () => attn.attention(q, k, t(5, 2), { out }),
    'out a Float64Array': () => attn.matmul(q, t(2, 3), { out: new Float64Array(12) }),
    'out for a product that overflows float32': () =>
      attn.matmul(
        huge,
        t(2, 3, () => 1e20),
        { out },
      ),
    'a disposed layer': () => gone.forward(x),
    'a step that overflows float32': () => layer.step(grads, 1e38),
    "isa 'avx'": () => createAttention({ isa: 'avx' }),
    'threads 0': () => createAttention({ threads: 0 }),
  };
  const results = [];
  for (const [call, fn] of Object.entries(cases)) {
    try {
      await fn();
      results.push({ call, error: null });
    } catch (e) {
      results.push({ call, error: `${e.constructor.name}: ${e.message}`, instanceOfError: e instanceof Error });
    }
  }
  const unchanged =
    JSON.stringify(good()) === JSON.stringify(before) &&
    out.every((x) => x === 7) &&
    JSON.stringify(layer.weights, (_, w) => (ArrayBuffer.isView(w) ? Array.from(w) : w)) === weights;
  layer.dispose();
  attn.dispose();
  return { results, unchanged };
}
