// Our package, through its public ESM API, as a user would call it: JS Float32Arrays in,
// JS Float32Arrays out (each call copies its inputs into wasm memory and the result out,
// and that is timed, as it is for the peers).
//   matmul      attn.matmul(a, b)
//   attention   attn.attention(q, k, v, { causal }), attn.attentionBackward(q, k, v, dOut, { causal })
//   mha         attn.multiHeadAttention({ dModel, heads, weights }), layer.forward(x, { causal }),
//               layer.backward(dOut) after layer.forward(x)
//   decode      a kvCache of the case's dtype filled with the past tokens once (untimed); each run
//               attn.attention(q, k, v, { cache, causal }) appends the new token and attends
//               over all of it, then cache.truncate(past) takes the token back for the next run
//   prefill     attn.attention(q, k, v, { causal }) on 4-D GQA heads
// The package's JS -> { start() }: start() is createAttention({ threads, isa }) (compiles the
// wasm, starts the threads). The rows and the startup probe both come through here.
// isa: 'simd128' or 'relaxed-simd' (the build with relaxed SIMD's fused multiply-add; Node
// runs it with --experimental-wasm-relaxed-simd, which the bench passes), or 'auto' (what a
// user gets: relaxed SIMD where the engine runs it). libUrl: another copy of the package's
// entry (the pool trace's, pool_trace.mjs), else the package's own.
export async function load(threads, isa = 'auto', libUrl = undefined) {
  const lib = await (libUrl ? import(libUrl) : import('../../web/lib/index.js'));
  return { lib, start: () => lib.createAttention({ threads, isa }) };
}

// The row keys: ours-1, ours-2 (SIMD128), ours-relaxed-1 (relaxed SIMD).
export const oursKey = (threads, isa) => (isa === 'relaxed-simd' ? `ours-relaxed-${threads}` : `ours-${threads}`);

export async function create({ threads, isa = 'simd128', libUrl }) {
  const { lib, start } = await load(threads, isa, libUrl);
  const attn = await start();
  // a row is what it says: a build that fell back to one thread (no SharedArrayBuffer) is not a
  // 2-thread row ('auto': whatever the instance picked)
  if (typeof threads === 'number' && attn.backend.threads !== threads) {
    const actual = attn.backend.threads;
    attn.dispose();
    throw new Error(`wasm-attention runs ${actual} thread(s), not ${threads}`);
  }
  const isaName = attn.backend.isa === 'relaxed-simd' ? 'relaxed SIMD (FMA)' : 'SIMD128';
  return {
    key: oursKey(threads, attn.backend.isa),
    name: 'wasm-attention',
    threads: attn.backend.threads,
    isa: attn.backend.isa,
    detail: attn.backend.threads > 1 ? `${isaName} + pthreads` : isaName,
    wasmBytes: () => attn.memory().wasmBytes,
    dispose: () => attn.dispose(),
    prepare: (spec, x) => prepare(attn, lib.tensor, spec, x),
  };
}

function prepare(attn, tensor, spec, x) {
  if (spec.op === 'matmul') {
    const a = tensor(x.a, [spec.m, spec.k]),
      b = tensor(x.b, [spec.k, spec.n]);
    return { variants: [{ name: 'attn.matmul(a, b)', run: () => [attn.matmul(a, b).data] }] };
  }
  if (spec.op === 'attention') {
    const shape = [spec.n, spec.d];
    const q = tensor(x.q, shape),
      k = tensor(x.k, shape),
      v = tensor(x.v, shape);
    const options = { causal: spec.causal };
    if (!spec.backward) {
      return { variants: [{ name: 'attn.attention()', run: () => [attn.attention(q, k, v, options).output.data] }] };
    }
    const dOut = tensor(x.dOut, shape);
    const run = () => {
      const g = attn.attentionBackward(q, k, v, dOut, options);
      return [g.dq.data, g.dk.data, g.dv.data];
    };
    return { variants: [{ name: 'attn.attentionBackward()', run }] };
  }
  if (spec.op === 'mha') {
    const dm = spec.dModel;
    const w = (name) => tensor(x[name], [dm, dm]);
    const layer = attn.multiHeadAttention({
      dModel: dm,
      heads: spec.heads,
      weights: { wq: w('wq'), wk: w('wk'), wv: w('wv'), wo: w('wo') },
    });
    const input = tensor(x.x, [spec.n, dm]);
    const options = { causal: spec.causal };
    const release = () => layer.dispose();
    if (!spec.backward) {
      return {
        release,
        variants: [{ name: 'layer.forward()', run: () => [layer.forward(input, options).output.data] }],
      };
    }
    const dOut = tensor(x.dOut, [spec.n, dm]);
    if (spec.backwardOnly) {
      layer.forward(input, options); // once: backward() differentiates it on every run
      return {
        release,
        variants: [{ name: 'layer.backward() (forward once, untimed)', run: () => [layer.backward(dOut).dx.data] }],
      };
    }
    const run = () => {
      layer.forward(input, options);
      return [layer.backward(dOut).dx.data]; // dwq..dwo are computed too; dx is compared
    };
    return { release, variants: [{ name: 'layer.forward() + layer.backward()', run }] };
  }
  if (spec.op === 'decode') {
    const { batch, qHeads, kvHeads, d, past, dtype } = spec;
    const cache = attn.kvCache({ batch, kvHeads, dK: d, dV: d, capacity: past + 1, dtype });
    const q = tensor(x.q, [batch, qHeads, 1, d]);
    // the past tokens go in with one call (a query row over them, not causal; its output unused)
    attn.attention(q, tensor(x.pastK, [batch, kvHeads, past, d]), tensor(x.pastV, [batch, kvHeads, past, d]), {
      cache,
    });
    const k = tensor(x.k, [batch, kvHeads, 1, d]),
      v = tensor(x.v, [batch, kvHeads, 1, d]);
    const run = () => {
      const { output } = attn.attention(q, k, v, { cache, causal: true });
      cache.truncate(past);
      return [output.data];
    };
    return { release: () => cache.dispose(), variants: [{ name: 'attention(q, k, v, { cache }) + truncate', run }] };
  }
  if (spec.op === 'prefill') {
    const { batch, qHeads, kvHeads, d, n } = spec;
    const q = tensor(x.q, [batch, qHeads, n, d]),
      k = tensor(x.k, [batch, kvHeads, n, d]),
      v = tensor(x.v, [batch, kvHeads, n, d]);
    return {
      variants: [
        {
          name: 'attention(q, k, v, { causal }), 4-D',
          run: () => [attn.attention(q, k, v, { causal: true }).output.data],
        },
      ],
    };
  }
  throw new Error(`ours: unknown op ${spec.op}`);
}
