// The bench-only modules of build/wasm/bench/ (CMakeLists.txt's wa_probe: Emscripten factories
// built for web and node, never shipped), loaded wherever a forensics script runs.
//   benchModule(name, exportName[, dir]) -> { factory, wasmBinary }
//   cpuClock, now()   the process's CPU time in ms where the host tells it (Node, Bun: every
//                     thread of it; a neighbour that takes the core away then costs nothing),
//                     else wall time (pages)
// In a page (in_page.mjs serves the repository): a script tag of dir/NAME.js, whose factory is
// the global exportName, and dir/NAME.wasm fetched. In Node or Bun: require() of NAME.js and
// NAME.wasm read from disk (passed as wasmBinary: the loader would fetch() a file path, which
// Node 20's fetch rejects). dir: a URL, build/wasm/bench/ of this checkout unless given; in Node
// or Bun that folder's modules are built first (the forensics target, not in the default build).
export const cpuClock = typeof process === 'object' && typeof process.cpuUsage === 'function';
export const now = cpuClock
  ? () => {
      const u = process.cpuUsage();
      return (u.user + u.system) / 1000;
    }
  : () => performance.now();

const BENCH_DIR = new URL('../../build/wasm/bench/', import.meta.url);

export async function benchModule(name, exportName, dir = BENCH_DIR) {
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
  if (dir.href === BENCH_DIR.href) await buildForensics();
  const { readFile } = await import('node:fs/promises');
  const { createRequire } = await import('node:module');
  const { fileURLToPath } = await import('node:url');
  const factory = createRequire(import.meta.url)(fileURLToPath(js));
  return { factory, wasmBinary: await readFile(wasm) };
}

// Node or Bun: the forensics target (the probes and forensics modules of build/wasm/bench/), on
// demand; a script that loads them in a page calls it before it opens the page.
export async function buildForensics() {
  const { buildTargets } = await import('../lib/build_targets.mjs');
  buildTargets('forensics');
}
