// The bench-only modules of build/wasm/bench/ (CMakeLists.txt's wa_probe: Emscripten factories
// built for web and node, never shipped), loaded wherever a forensics script runs.
//   benchModule(name, exportName[, dir]) -> { factory, wasmBinary }
//   cpuClock, now()   the process's CPU time in ms where the host tells it (Node, Bun: every
//                     thread of it; a neighbour that takes the core away then costs nothing),
//                     else wall time (pages)
// In a page (in_page.mjs serves the repository): a script tag of dir/NAME.js, whose factory is
// the global exportName, and dir/NAME.wasm fetched. In Node or Bun: require() of NAME.js and
// NAME.wasm read from disk (passed as wasmBinary: the loader would fetch() a file path, which
// Node 20's fetch rejects). dir: a URL, build/wasm/bench/ of this checkout unless given.
export const cpuClock = typeof process === 'object' && typeof process.cpuUsage === 'function';
export const now = cpuClock
  ? () => {
      const u = process.cpuUsage();
      return (u.user + u.system) / 1000;
    }
  : () => performance.now();

export async function benchModule(name, exportName, dir = new URL('../../build/wasm/bench/', import.meta.url)) {
  const js = new URL(`${name}.js`, dir);
  const wasm = new URL(`${name}.wasm`, dir);
  if (typeof document === 'object') {
    await new Promise((resolve, reject) => {
      const s = document.createElement('script');
      s.src = js.href;
      s.onload = resolve;
      s.onerror = () => reject(new Error(`${s.src} did not load`));
      document.head.append(s);
    });
    return { factory: globalThis[exportName], wasmBinary: new Uint8Array(await (await fetch(wasm)).arrayBuffer()) };
  }
  const { readFile } = await import('node:fs/promises');
  const { createRequire } = await import('node:module');
  const { fileURLToPath } = await import('node:url');
  const factory = createRequire(import.meta.url)(fileURLToPath(js));
  return { factory, wasmBinary: await readFile(wasm) };
}
