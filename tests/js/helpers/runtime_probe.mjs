// What the package does in the runtime that runs this script (Node, `deno run -A`, `bun`):
// prints one line of JSON for tests/js/engines/runtimes.test.mjs.
//
//   runtime, version   which runtime, which release
//   backends           attn.backend for threads 1 and 2, and for the worker form with 2
//   sums               per threads count: the sum of a (2,96,4·32) → 4-D heads attention's output
//   bitwise            1 and 2 threads give the same bits (attention on heads, a layer's forward
//                      and backward)
//   fallback           attn.backend when the threads' worker script throws at once (locateFile)
//   globalsChanged     globals that createAttention changed (none expected)
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { createAttention, tensor } from '../../../web/lib/index.js';
import { RUNTIME } from './runtime.mjs';

const version = globalThis.Deno?.version.deno ?? globalThis.Bun?.version ?? process.versions.node;
const values = (n, seed) => Float32Array.from({ length: n }, (_, i) => Math.sin(seed + i * 0.37));
const bits = (a) => Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length));
const sum = (a) => a.reduce((s, x) => s + x, 0);

// (B 2, H 4, S 96, D 32), causal: one thread's results and the numbers compared
function run(attn) {
  const [B, H, S, D] = [2, 4, 96, 32];
  const q = tensor(values(B * H * S * D, 1), [B, H, S, D]);
  const k = tensor(values(B * H * S * D, 2), [B, H, S, D]);
  const v = tensor(values(B * H * S * D, 3), [B, H, S, D]);
  const { output } = attn.attention(q, k, v, { causal: true });
  const layer = attn.multiHeadAttention({ dModel: 64, heads: 4, seed: 7 });
  const x = tensor(values(2 * 40 * 64, 4), [2, 40, 64]);
  const forward = layer.forward(x).output;
  const grads = layer.backward(tensor(values(2 * 40 * 64, 5), [2, 40, 64]));
  layer.dispose();
  return { output: output.data, forward: forward.data, dx: grads.dx.data };
}

const names = ['Worker', 'SharedArrayBuffer', 'performance', 'self', 'location'];
const before = names.map((n) => globalThis[n]);

const one = await createAttention({ threads: 1 });
const two = await createAttention({ threads: 2 });
const [r1, r2] = [run(one), run(two)];
const bitwise = ['output', 'forward', 'dx'].every((key) => bits(r1[key]).join() === bits(r2[key]).join());

const worker = await createAttention({ worker: true, threads: 2 });
const backends = { 1: one.backend, 2: two.backend, worker: worker.backend };
await worker.dispose();
one.dispose();
two.dispose();

const folder = fileURLToPath(new URL('../../../web/lib/wasm/', import.meta.url));
const broken = join(mkdtempSync(join(tmpdir(), 'wasm-attention-')), 'broken.worker.js');
writeFileSync(broken, "throw new Error('this worker cannot start');");
const locateFile = (name) => (name.endsWith('.worker.js') ? broken : join(folder, name));
const failing = await createAttention({ threads: 2, locateFile });
const fallback = failing.backend;
failing.dispose();

const globalsChanged = names.filter((n, i) => globalThis[n] !== before[i]);
console.log(
  JSON.stringify({
    runtime: RUNTIME,
    version,
    backends,
    sums: { 1: sum(r1.output), 2: sum(r2.output) },
    bitwise,
    fallback,
    globalsChanged,
  }),
);
