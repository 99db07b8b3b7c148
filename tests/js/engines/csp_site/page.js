// The page tests/js/engines/csp.test.mjs serves under a strict Content-Security-Policy (its
// script runs from a file: the policy allows no inline script). It computes one attention
// (q, k, v (16,16), causal) with 2 threads directly and in the worker form, and writes what it
// found into #result as JSON, then sets document.title to 'done' (or 'failed: MESSAGE').
//   ?direct    the direct form alone (a policy that allows no worker at all)
//   ?controls  instead checks that the policy bites: a string evaluated and a blob: worker,
//              each refused
// Every Content-Security-Policy violation the document sees is listed in the result.
import { createAttention } from '/lib/index.js';

const violations = [];
document.addEventListener('securitypolicyviolation', (e) => violations.push(`${e.violatedDirective} ${e.blockedURI}`));

// (16,16) inputs, the same values in every engine
const n = 16;
const d = 16;
const input = (phase) => ({
  data: Float32Array.from({ length: n * d }, (_, i) => Math.sin(i * 0.37 + phase)),
  shape: [n, d],
});
const q = input(0);
const k = input(1);
const v = input(2);

// -> 'refused' when new Worker(blob:) throws or its worker fails to start, 'started' when it runs
function blobWorker() {
  return new Promise((resolve) => {
    let worker;
    try {
      worker = new Worker(URL.createObjectURL(new Blob(['postMessage(1)'], { type: 'text/javascript' })));
    } catch {
      resolve('refused');
      return;
    }
    worker.onmessage = () => resolve('started');
    worker.onerror = (e) => {
      e.preventDefault();
      resolve('refused');
    };
    setTimeout(() => resolve('refused'), 5000);
  });
}

async function controls() {
  let evaluated;
  try {
    evaluated = new Function('return "evaluated"')();
  } catch (e) {
    evaluated = `refused (${e.name})`;
  }
  return { evaluated, blobWorker: await blobWorker() };
}

async function compute(forms) {
  const found = {};
  if (forms.includes('direct')) {
    const attn = await createAttention({ threads: 2 });
    found.direct = { backend: attn.backend, output: Array.from(attn.attention(q, k, v, { causal: true }).output.data) };
    attn.dispose();
  }
  if (forms.includes('worker')) {
    const attn = await createAttention({ threads: 2, worker: true });
    const { output } = await attn.attention(q, k, v, { causal: true });
    found.worker = { backend: attn.backend, output: Array.from(output.data) };
    await attn.dispose();
  }
  return found;
}

const asked = new URLSearchParams(location.search);
const run = asked.has('controls') ? controls : () => compute(asked.has('direct') ? ['direct'] : ['direct', 'worker']);
run().then(
  (found) => {
    document.getElementById('result').textContent = JSON.stringify({
      ...found,
      isolated: crossOriginIsolated,
      violations,
    });
    document.title = 'done';
  },
  (e) => {
    document.title = `failed: ${e.message}`;
  },
);
