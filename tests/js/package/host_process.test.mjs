// A library must leave its host as it found it. Each test runs a small program in a child
// Node process (its own process-wide state, --expose-gc) and reads what it reports:
//   no process handlers: createAttention() adds no uncaughtException/unhandledRejection
//     listener, an app's own uncaught error exits with code 1, and many instances give no
//     MaxListenersExceededWarning;
//   no lingering instances: disposed or dropped instances give back their threads and memory.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';

const INDEX = new URL('../../../web/lib/index.js', import.meta.url).href;

// A child that has not ended after this long is stuck (each takes about a second), not slow: it
// is killed and the test fails saying so, instead of holding the whole run.
const STUCK_MS = 300_000;

// Runs `source` (an ES module; `createAttention` and `tensor` are imported for it) in a child
// process with `flags` and the environment `env` -> { code, stdout, stderr }.
function child(source, flags = [], env = process.env) {
  const program = `import { createAttention, tensor } from ${JSON.stringify(INDEX)};\n${source}`;
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [...flags, '--input-type=module', '--eval', program], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env,
    });
    let stdout = '',
      stderr = '';
    p.stdout.on('data', (d) => {
      stdout += d;
    });
    p.stderr.on('data', (d) => {
      stderr += d;
    });
    const stuck = setTimeout(() => {
      p.kill('SIGKILL');
      reject(new Error(`the child ran ${STUCK_MS / 1000} s and was killed:\n${stdout}\n${stderr.slice(0, 2000)}`));
    }, STUCK_MS);
    p.on('error', reject);
    p.on('close', (code) => {
      clearTimeout(stuck);
      resolve({ code, stdout, stderr });
    });
  });
}

// The last line of stdout, as JSON.
const report = ({ stdout, stderr, code }) => {
  const line = stdout.trim().split('\n').pop();
  try {
    return JSON.parse(line);
  } catch {
    throw new Error(`the child printed no report (exit code ${code}):\n${stdout}\n${stderr.slice(0, 2000)}`);
  }
};

// Threads of this process (Linux), and its resident memory in MB.
const PROBES = `
import { readdirSync } from 'node:fs';
const threadCount = () => readdirSync('/proc/self/task').length;
const rssMB = () => process.memoryUsage().rss / 2 ** 20;
async function collect() {
  for (let i = 0; i < 6; ++i) {
    globalThis.gc();
    await new Promise((r) => setTimeout(r, 50));
  }
}
// Collects until gone() holds or STUCK_MS / 2 have passed: a terminated worker's thread exits
// soon after, later on a loaded machine, so the count is read once it has, not after a fixed wait.
async function collectUntil(gone) {
  for (const t0 = Date.now(); Date.now() - t0 < ${STUCK_MS / 2}; ) {
    await collect();
    if (gone()) return;
  }
}
const rand = (n, seed) => { const a = new Float32Array(n); for (let i = 0; i < n; ++i) a[i] = Math.sin(seed + i); return a; };
`;

test('createAttention() leaves the process-wide listeners as they were', async () => {
  const r = report(
    await child(`
    const names = ['uncaughtException', 'unhandledRejection', 'exit'];
    const before = names.map((n) => process.listeners(n).length);
    const one = await createAttention({ threads: 1 });
    const two = await createAttention({ threads: 2 });
    one.attention(tensor(new Float32Array(4).fill(1), [2, 2]), tensor(new Float32Array(4).fill(1), [2, 2]), tensor(new Float32Array(4).fill(1), [2, 2]));
    const after = names.map((n) => process.listeners(n).length);
    one.dispose(); two.dispose();
    console.log(JSON.stringify({ before, after }));
  `),
  );
  assert.deepEqual(r.after, r.before);
});

test("createAttention() leaves the host's globals as they were (Worker, SharedArrayBuffer, performance)", async () => {
  const r = report(
    await child(`
    const names = ['Worker', 'SharedArrayBuffer', 'performance', 'self', 'location'];
    const before = names.map((n) => globalThis[n]);
    const one = await createAttention({ threads: 1 });
    const two = await createAttention({ threads: 2 });
    const changed = names.filter((n, i) => globalThis[n] !== before[i]);
    const threads = two.backend.threads;
    one.dispose(); two.dispose();
    console.log(JSON.stringify({ changed, threads }));
  `),
  );
  assert.equal(r.threads, 2);
  assert.deepEqual(r.changed, []);
});

// The pthread worker's script swapped, through locateFile, for one that throws at once.
test('threads whose workers fail to start: one thread, a warning, and the process goes on', async () => {
  const r = await child(`
    import { mkdtempSync, writeFileSync } from 'node:fs';
    import { tmpdir } from 'node:os';
    import { join } from 'node:path';
    import { fileURLToPath } from 'node:url';
    const folder = fileURLToPath(new URL('wasm/', ${JSON.stringify(INDEX)}));
    const broken = join(mkdtempSync(join(tmpdir(), 'wasm-attention-')), 'broken.worker.js');
    writeFileSync(broken, "throw new Error('this worker cannot start');");
    const locateFile = (name) => (name.endsWith('.worker.js') ? broken : join(folder, name));
    const x = tensor(new Float32Array(64 * 16).map((_, i) => Math.sin(i)), [64, 16]);
    const attn = await createAttention({ threads: 2, locateFile });
    const one = await createAttention({ threads: 1 });
    const a = attn.attention(x, x, x).output.data, b = one.attention(x, x, x).output.data;
    console.log(JSON.stringify({ backend: attn.backend, same: a.every((v, i) => Object.is(v, b[i])) }));
    attn.dispose(); one.dispose();
  `);
  assert.equal(r.code, 0, `exit code ${r.code}; stderr:\n${r.stderr.slice(0, 1000)}`);
  const { backend, same } = report(r);
  assert.equal(backend.threads, 1);
  assert.equal(same, true);
  assert.match(r.stderr, /running on one thread: .*this worker cannot start/);
});

test('threads start in a `node --input-type=module --eval` program under NODE_OPTIONS=--import, the pool and the worker form', async () => {
  // the workers are files: the program's --input-type is not theirs (Node refuses a worker that
  // inherits it once NODE_OPTIONS has --import)
  const env = { ...process.env, NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import data:text/javascript,0` };
  const r = await child(
    `
    const x = tensor(new Float32Array(64 * 16).map((_, i) => Math.sin(i)), [64, 16]);
    const attn = await createAttention({ threads: 2 });
    const worker = await createAttention({ threads: 2, worker: true });
    const a = attn.attention(x, x, x).output.data, b = (await worker.attention(x, x, x)).output.data;
    console.log(JSON.stringify({ threads: [attn.backend.threads, (await worker.backend).threads], same: a.every((v, i) => Object.is(v, b[i])) }));
    attn.dispose(); await worker.dispose();
  `,
    [],
    env,
  );
  assert.equal(r.code, 0, `exit code ${r.code}; stderr:\n${r.stderr.slice(0, 1000)}`);
  assert.deepEqual(report(r), { threads: [2, 2], same: true });
  assert.doesNotMatch(r.stderr, /running on one thread/);
});

test("an app's own uncaught error exits with code 1 and its own message", async () => {
  const r = await child(`
    const attn = await createAttention({ threads: 2 });
    setTimeout(() => { throw new Error('the app failed on its own'); }, 0);
  `);
  assert.equal(r.code, 1, `exit code ${r.code}; stderr:\n${r.stderr.slice(0, 1000)}`);
  assert.match(r.stderr, /the app failed on its own/);
  assert.ok(
    r.stderr.length < 5000,
    `stderr is ${r.stderr.length} characters: the module's glue was printed as the error's source`,
  );
});

test("an app's unhandled rejection follows Node's own mode (--unhandled-rejections=warn keeps it alive)", async () => {
  const r = await child(
    `
    const attn = await createAttention({ threads: 1 });
    Promise.reject(new Error('nobody handles this'));
    setTimeout(() => { attn.dispose(); console.log(JSON.stringify({ alive: true })); }, 100);
  `,
    ['--unhandled-rejections=warn'],
  );
  assert.equal(r.code, 0, `exit code ${r.code}; stderr:\n${r.stderr.slice(0, 1000)}`);
  assert.deepEqual(report(r), { alive: true });
});

test('twelve instances give no MaxListenersExceededWarning', async () => {
  const r = await child(`
    const all = [];
    for (let i = 0; i < 12; ++i) all.push(await createAttention({ threads: 1 }));
    for (const a of all) a.dispose();
    console.log(JSON.stringify({ ok: true }));
  `);
  assert.equal(r.code, 0);
  assert.doesNotMatch(r.stderr, /MaxListenersExceeded/);
});

test('instances created, used and disposed in a loop give back their threads and memory', async () => {
  const r = report(
    await child(
      `${PROBES}
    const q = tensor(rand(64 * 64, 1), [64, 64]);
    const kv = tensor(rand(100000 * 64, 2), [100000, 64]);  // 25 MB, twice in wasm memory
    const cycle = async () => {
      const attn = await createAttention({ threads: 3 });
      attn.attention(q, kv, kv);
      attn.dispose();
    };
    await cycle();
    await collect();
    const threads0 = threadCount(), rss0 = rssMB();
    for (let i = 0; i < 8; ++i) await cycle();
    await collectUntil(() => threadCount() <= threads0 + 1);
    console.log(JSON.stringify({ threads0, threads: threadCount(), rss0, rss: rssMB() }));
  `,
      ['--expose-gc'],
    ),
  );
  assert.ok(r.threads <= r.threads0 + 1, `threads ${r.threads0} -> ${r.threads} after 8 more cycles`);
  assert.ok(r.rss - r.rss0 < 150, `RSS ${r.rss0.toFixed(0)} MB -> ${r.rss.toFixed(0)} MB after 8 more cycles`);
});

test('instances dropped without dispose() give back their threads once collected', async () => {
  const r = report(
    await child(
      `${PROBES}
    await collect();
    const threads0 = threadCount();
    let made = 0;
    for (let i = 0; i < 12; ++i) {
      const attn = await createAttention({ threads: 3 });
      made = Math.max(made, attn.backend.threads);
      attn.attention(tensor(rand(8, 1), [4, 2]), tensor(rand(8, 2), [4, 2]), tensor(rand(8, 3), [4, 2]));
    }
    const threadsHeld = threadCount();
    await collectUntil(() => threadCount() <= threads0 + 2);
    console.log(JSON.stringify({ made, threads0, threadsHeld, threads: threadCount() }));
  `,
      ['--expose-gc'],
    ),
  );
  assert.equal(r.made, 3);
  assert.ok(
    r.threadsHeld >= r.threads0 + 12,
    `12 instances of 3 threads held only ${r.threadsHeld - r.threads0} more threads`,
  );
  assert.ok(
    r.threads <= r.threads0 + 2,
    `threads ${r.threads0} -> ${r.threads} after 12 dropped instances were collected`,
  );
});

test('a layer keeps its dropped instance alive; both go once the layer is dropped too', async () => {
  const r = report(
    await child(
      `${PROBES}
    let layer = (await createAttention({ threads: 2 })).multiHeadAttention({ dModel: 8, heads: 2, seed: 1 });
    await collect();
    const x = tensor(rand(5 * 8, 4), [5, 8]);
    const first = layer.forward(x).output.data;  // still works: the instance was not collected
    const again = layer.forward(x).output.data;
    const threadsHeld = threadCount();
    layer = null;
    await collectUntil(() => threadCount() < threadsHeld);
    console.log(JSON.stringify({ same: first.every((v, i) => v === again[i]), threadsHeld, threads: threadCount() }));
  `,
      ['--expose-gc'],
    ),
  );
  assert.equal(r.same, true);
  assert.ok(r.threads < r.threadsHeld, `threads ${r.threadsHeld} -> ${r.threads} once the layer was dropped`);
});
