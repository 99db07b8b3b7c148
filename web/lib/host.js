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
