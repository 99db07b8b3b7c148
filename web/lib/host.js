// Which host runs the package, and its built-in modules.
//
//   isNode  Node, and Deno and Bun, which provide Node's API (process, node:worker_threads,
//           node:fs): the package loads its files from disk and starts worker_threads there.
//           A browser page (window) is never one, whatever a bundler's shims define.
//   process Node's process object, or undefined. Read from globalThis, never by its free
//           name: Parcel builds a free `process` into the app as a polyfill, which it installs.

export const process = globalThis.process;

export const isNode =
  typeof process === 'object' && typeof process.versions?.node === 'string' && typeof window === 'undefined';

// Node's built-in module `name` ('os', 'worker_threads', ...), fetched so that bundlers for the
// browser never see an import.
export async function nodeBuiltin(name) {
  if (process.getBuiltinModule) return process.getBuiltinModule(name);
  const specifier = `node:${name}`;
  return import(/* @vite-ignore */ /* webpackIgnore: true */ specifier);
}

// A worker_threads Worker of script (a file: URL or an absolute path) under Node, Deno or Bun,
// with the process's flags less --input-type, which is for `node -e` code only (the worker is a
// file): Node refuses a worker that inherits it once NODE_OPTIONS has --import. The flags Node
// refuses in a worker (V8's, named after the error's last ': ') are left out: they apply to the
// worker anyway. Used for the pool's workers (loader.js) and the worker form's (worker_client.js).
export function nodeWorker(Worker, script) {
  const execArgv = process.execArgv.filter((flag) => !flag.startsWith('--input-type'));
  try {
    return new Worker(script, { execArgv });
  } catch (e) {
    if (e?.code !== 'ERR_WORKER_INVALID_EXEC_ARGV') throw e;
    const refused = new Set(String(e.message).split(': ').pop().split(/,\s*/));
    return new Worker(script, { execArgv: execArgv.filter((flag) => !refused.has(flag)) });
  }
}
