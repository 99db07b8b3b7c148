// One attention with wasm-attention on an extension page, computed on the page and in a
// worker, each shown with the build it ran on. The manifest makes the page cross-origin
// isolated (so it gets threads) under a policy that evaluates no string and starts workers
// only from the extension's own files, which is all the package needs.
import { createAttention } from './wasm-attention/index.js';

// The worked example (tests/cpp/worked_example_test.cpp): x (3,2) is the queries and the values, k (3,2) the keys.
const t = (data, shape) => ({ data: new Float32Array(data), shape });
const x = t([1, 0, 0, 1, 1, 1], [3, 2]);
const k = t([1, 1, 0, 1, 1, 2], [3, 2]);

const show = (id, text) => {
  document.getElementById(id).textContent = text;
};
// backend -> e.g. 'relaxed-simd, 2 threads'
const describe = ({ isa, threads }) => `${isa}, ${threads} thread${threads === 1 ? '' : 's'}`;
const rows = (output) =>
  [0, 1, 2].map((i) => `${output.data[2 * i].toFixed(6)} ${output.data[2 * i + 1].toFixed(6)}`).join('\n');

async function main() {
  const attn = await createAttention({ threads: 2 });
  const { output } = attn.attention(x, k, x); // (3,2)
  show('build', describe(attn.backend));
  show('output', rows(output));
  attn.dispose();

  // The same in a worker: every call returns a Promise and the page's thread stays free.
  const inWorker = await createAttention({ threads: 2, worker: true });
  const { output: fromWorker } = await inWorker.attention(x, k, x); // (3,2)
  show('worker-build', describe(inWorker.backend));
  show('worker-output', rows(fromWorker));
  await inWorker.dispose();
}

main().then(
  () => show('status', 'done'),
  (e) => show('status', `failed: ${e.message}`),
);
