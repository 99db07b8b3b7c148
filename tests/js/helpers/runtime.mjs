// The JavaScript runtime a test file runs under, and the few things the suites do differently
// in each. Node runs every suite; Deno (`deno test -A`) and Bun (`bun test`) run the node:test
// files that tests/js/engines/runtimes.test.mjs lists.
import v8 from 'node:v8';
import vm from 'node:vm';

export const RUNTIME = globalThis.Deno ? 'deno' : globalThis.Bun ? 'bun' : 'node';

// source (an ES module) -> the arguments that make this runtime's executable (process.execPath)
// run it in a fresh process
export function evalArgs(source) {
  return RUNTIME === 'deno' ? ['eval', source] : ['--input-type=module', '--eval', source];
}

// -> a function that runs a full garbage collection (FinalizationRegistry callbacks follow on
// a later turn). Node and Deno: V8's gc, exposed on demand; Bun: Bun.gc.
export function garbageCollector() {
  if (RUNTIME === 'bun') return () => globalThis.Bun.gc(true);
  v8.setFlagsFromString('--expose-gc');
  return vm.runInNewContext('gc');
}
