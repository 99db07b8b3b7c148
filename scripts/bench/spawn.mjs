// Runs a task in a child process (child.mjs) and returns what it printed after the result
// marker. A child that crashes, aborts or times out yields { error } with the tail of its
// stderr, which is usually the reason (e.g. a wasm "out of memory" abort).
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { relaxedSimdAvailable } from '../../web/lib/internal.js';

const CHILD = fileURLToPath(new URL('./child.mjs', import.meta.url));
export const RESULT_MARKER = '@@bench-result@@';
// Node 20 runs wasm relaxed SIMD (our relaxed build) only with this V8 flag, fixed at start;
// Node 22 runs it as it is, and refuses the flag ("bad option").
export const RELAXED_SIMD_FLAG = '--experimental-wasm-relaxed-simd';

// The flags a Node process needs for relaxed SIMD: none where this one runs it without the flag.
const relaxedSimdFlags = () =>
  relaxedSimdAvailable() && !process.execArgv.includes(RELAXED_SIMD_FLAG) ? [] : [RELAXED_SIMD_FLAG];

// For a script that runs our relaxed build in its own process: in Node 20 without the flag,
// runs the script again with it and exits with that run's status (never returns); with the
// flag, in a Node that runs relaxed SIMD without it, or in Bun (JavaScriptCore validates
// relaxed SIMD as it is), returns.
export function rerunWithRelaxedSimd() {
  if (process.versions.bun || process.execArgv.includes(RELAXED_SIMD_FLAG) || relaxedSimdAvailable()) return;
  const argv = [RELAXED_SIMD_FLAG, ...process.execArgv, ...process.argv.slice(1)];
  process.exit(spawnSync(process.execPath, argv, { stdio: 'inherit' }).status ?? 1);
}

export function runChild(task, { timeoutMs = 10 * 60 * 1000, onStderr } = {}) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...relaxedSimdFlags(), CHILD, JSON.stringify(task)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '',
      stderr = '',
      timedOut = false;
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
      onStderr?.(String(d));
    });
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const at = stdout.lastIndexOf(RESULT_MARKER);
      if (at >= 0) {
        try {
          resolve(JSON.parse(stdout.slice(at + RESULT_MARKER.length).split('\n')[0]));
          return;
        } catch {
          /* fall through to the error below */
        }
      }
      const tail = stderr.trim().split('\n').filter(Boolean).slice(-3).join(' | ').slice(0, 400);
      const why = timedOut ? `timed out after ${Math.round(timeoutMs / 1000)} s` : `exited with ${signal ?? code}`;
      resolve({ error: `child process ${why}${tail ? `: ${tail}` : ''}` });
    });
  });
}
