// Runs a task in a child process (child.mjs) and returns what it printed after the result
// marker. A child that crashes, aborts or times out yields { error } with the tail of its
// stderr, which is usually the reason (e.g. a wasm "out of memory" abort).
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const CHILD = fileURLToPath(new URL('./child.mjs', import.meta.url));
export const RESULT_MARKER = '@@bench-result@@';
// Node 20 runs wasm relaxed SIMD (our relaxed build) only with this V8 flag, fixed at start.
export const RELAXED_SIMD_FLAG = '--experimental-wasm-relaxed-simd';

// For a script that runs our relaxed build in its own process: in Node without the flag, runs
// the script again with it and exits with that run's status (never returns); with the flag,
// or in Bun (JavaScriptCore validates relaxed SIMD as it is), returns.
export function rerunWithRelaxedSimd() {
  if (process.versions.bun || process.execArgv.includes(RELAXED_SIMD_FLAG)) return;
  const argv = [RELAXED_SIMD_FLAG, ...process.execArgv, ...process.argv.slice(1)];
  process.exit(spawnSync(process.execPath, argv, { stdio: 'inherit' }).status ?? 1);
}

export function runChild(task, { timeoutMs = 10 * 60 * 1000, onStderr } = {}) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [RELAXED_SIMD_FLAG, CHILD, JSON.stringify(task)], {
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
