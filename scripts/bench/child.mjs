// The entry of the bench's child processes: `node child.mjs '<task as JSON>'`. A child is
// needed where one process cannot hold two configurations (onnxruntime-web's and tfjs's
// thread counts are global and fixed at start; tfjs's threaded build needs global patches),
// where the process must be fresh (startup times, first calls; peak memory per sequence
// length), and where a failure may take the process down (out of memory in a peer's wasm).
//
// Tasks:
//   { mode: 'group',     group, caseIds, quick }           -> { rows } (a group of groups.mjs)
//   { mode: 'startup',   impl, threads }                   -> { importMs, initMs, totalMs, sinceProcessStartMs }
//   { mode: 'firstcall', impl, threads, quick }            -> { firstMs, secondMs, steadyMs }
//   { mode: 'long',      impl, threads, n, quick }         -> { row } (with maxRssBytes)
//   { mode: 'scaling',   impl, threads, caseIds, quick }   -> { rows } (scaling.mjs)
//   { mode: 'trace',     threads, caseIds, quick }         -> { threads, cases } (scaling.mjs)
// The result is printed as one line after RESULT_MARKER, so that whatever a library logs
// on stdout cannot corrupt it.
import { readFileSync } from 'node:fs';
import { longCase } from './cases.mjs';
import { runGroup } from './groups.mjs';
import { runScaling, traceScaling } from './scaling_child.mjs';
import { createImpl } from './impls.mjs';
import { message, runCase } from './runner.mjs';
import { RESULT_MARKER } from './spawn.mjs';
import { firstCallOf, startupOf } from './startup.mjs';
import { LONG, LONG_QUICK } from './timing.mjs';

// Peak resident memory of this process, whatever the library. On Linux from VmHWM, the
// high-water mark of this process's own memory: getrusage's maxRSS would also count the
// parent's pages this child was forked with (Linux keeps it across exec).
function peakRss() {
  try {
    const kb = /VmHWM:\s*(\d+)\s*kB/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
    if (kb) return Number(kb) * 1024;
  } catch {
    /* not Linux */
  }
  return process.resourceUsage().maxRSS * 1024;
}

async function main(task) {
  if (task.mode === 'startup') return startupOf(task.impl, task.threads);
  if (task.mode === 'firstcall') return firstCallOf(task.impl, task.threads, task.quick);
  if (task.mode === 'scaling') return { rows: await runScaling(task) };
  if (task.mode === 'trace') return traceScaling(task);
  if (task.mode === 'group') {
    const log = (text) => process.stderr.write(`${text}\n`);
    return { rows: await runGroup(task.group, { caseIds: task.caseIds, quick: task.quick, peersOk: true, log }) };
  }
  const impl = await createImpl(task.impl, { threads: task.threads });
  if (task.mode === 'long') {
    const row = await runCase(impl, longCase(task.n), task.quick ? LONG_QUICK : LONG, { firstOnly: true });
    row.maxRssBytes = peakRss();
    return { row };
  }
  throw new Error(`unknown mode ${task.mode}`);
}

{
  let result;
  try {
    result = await main(JSON.parse(process.argv[2]));
  } catch (e) {
    result = { error: message(e) };
  }
  // pthread pools and Emscripten runtimes may hold the event loop open: leave once the result
  // is out (a large one, a pool trace's, is still being written to the pipe when write returns)
  process.stdout.write(`\n${RESULT_MARKER}${JSON.stringify(result)}\n`, () => process.exit(0));
}
