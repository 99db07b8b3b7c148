// The pool trace, for the scaling model (scaling_model.mjs): our SIMD128 modules rebuilt with
// WA_POOL_TRACE (CMakeLists.txt, "bench only: the pool trace"; cpp/src/runtime/pool_trace.h), run
// through a copy of the package's own JS, so every call goes the way a user's does. Built on
// demand (buildTrace(); scripts/test.sh builds them for tests/js/tools/pool_trace.test.mjs), never
// shipped:
//   bash scripts/build/build.sh pool_trace   -> build/wasm/trace/lib/wasm/
// traceCase() runs a case as the scaling rows do (impl_ours.mjs), warmed up past V8's tier-up,
// then times a few calls and reads each one's sections: how long each took on the caller, and
// each task's duration, thread, start and end.
import { copyFileSync, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { buildTargets } from '../lib/build_targets.mjs';
import { ROOT } from './peers.mjs';

export const TRACE_LIB = join(ROOT, 'build', 'wasm', 'trace', 'lib');
export const TRACE_BUILD = 'bash scripts/build/build.sh pool_trace';
const MODULES = ['wasm_attention_simd128_mt.wasm', 'wasm_attention_simd128.wasm'];

// -> null when the trace modules are built, else why not (with the command that builds them)
export function traceMissing() {
  const absent = MODULES.filter((f) => !existsSync(join(TRACE_LIB, 'wasm', f)));
  return absent.length ? `the pool-trace modules are not built (${absent.join(', ')}): ${TRACE_BUILD}` : null;
}

// Builds the trace modules (incremental) -> null, or why they are not there
export function buildTrace() {
  try {
    buildTargets('pool_trace');
  } catch (e) {
    return `the pool-trace modules did not build (${TRACE_BUILD}): ${e.message}`;
  }
  return traceMissing();
}

// Copies web/lib/*.js beside the trace modules (fresh each time: the package's JS may have
// changed since) -> the copy's entry, as a URL impl_ours.mjs can import.
export function traceLib() {
  const why = traceMissing();
  if (why) throw new Error(why);
  const lib = join(ROOT, 'web', 'lib');
  mkdirSync(TRACE_LIB, { recursive: true });
  for (const f of readdirSync(lib)) if (f.endsWith('.js')) copyFileSync(join(lib, f), join(TRACE_LIB, f));
  // build/wasm/package.json says CommonJS (for the test binaries); this copy is ES modules
  writeFileSync(join(TRACE_LIB, 'package.json'), '{ "type": "module" }\n');
  return pathToFileURL(join(TRACE_LIB, 'index.js')).href;
}

// The newest trace module's poolTraceTake() (cpp/bindings/pool_trace.cpp): the sections since
// the last take, [{ begin, end, caller, tasks: Float64Array (start, end, thread)… }], in µs.
const traceModule = () => {
  const modules = globalThis.waPoolTraceModules;
  if (!modules?.length) throw new Error('no pool-trace module is loaded here');
  return modules[modules.length - 1];
};
export const takeTrace = () => traceModule().poolTraceTake();

// The trace's clock now, in µs (poolTraceNow(): steady_clock, whose epoch is not
// performance.now()'s).
export const traceNow = () => traceModule().poolTraceNow();

// One traced call -> { ms, gapsMs, sections: [{ wallMs, durations, maxThreads, wakeMs, joinMs }] }:
// gapsMs: the call's serial stretches in order, from its start (startUs, on the trace's clock)
// to the first section, between each two, and from the last to its end (endUs), each in ms;
// [ms] for a call without sections.
// maxThreads (the most threads parallel_for let the section use; null: no limit), wakeMs (the
// first task a worker ran started that long after the section began; null if no worker ran
// one) and joinMs (the section ended that long after its last task) in ms.
function summarize(startUs, endUs, sections) {
  const edges = [startUs, ...sections.flatMap((x) => [x.begin, x.end]), endUs];
  const gapsMs = [];
  for (let i = 0; i < edges.length; i += 2) gapsMs.push((edges[i + 1] - edges[i]) / 1000);
  return {
    ms: (endUs - startUs) / 1000,
    gapsMs,
    sections: sections.map(({ begin, end, caller, maxThreads, tasks }) => {
      const durations = [];
      let wake = Infinity,
        last = begin;
      for (let i = 0; i < tasks.length; i += 3) {
        const [start, stop, thread] = [tasks[i], tasks[i + 1], tasks[i + 2]];
        durations.push((stop - start) / 1000);
        if (thread !== caller) wake = Math.min(wake, start - begin);
        last = Math.max(last, stop);
      }
      return {
        wallMs: (end - begin) / 1000,
        durations,
        maxThreads: Number.isFinite(maxThreads) ? maxThreads : null,
        wakeMs: Number.isFinite(wake) ? wake / 1000 : null,
        joinMs: (end - last) / 1000,
      };
    }),
  };
}

// run: a case's timed call (a prepared variant's run) -> { firstMs, calls } after warming up
// for warmupMs (and at least 2 calls), then `calls` traced calls.
export async function traceCalls(run, { warmupMs = 1500, calls = 7 } = {}) {
  const t0 = performance.now();
  await run();
  const firstMs = performance.now() - t0;
  const until = performance.now() + warmupMs;
  for (let i = 0; i < 2 || performance.now() < until; ++i) await run();
  takeTrace(); // the warm-up's sections
  const out = [];
  for (let i = 0; i < calls; ++i) {
    const start = traceNow();
    await run();
    const end = traceNow();
    out.push(summarize(start, end, takeTrace()));
  }
  return { firstMs, calls: out };
}
