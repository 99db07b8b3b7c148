#!/usr/bin/env node
// Where a 1-thread 512³ matmul's time goes, per engine: the bench times the call, this splits it
// (the k loop alone in wasm text, the kernel on cache-resident panels, packing, the whole GEMM,
// the public matmul) against the peak probe, all interleaved in one process or page.
//   node scripts/forensics/gemm_probe.mjs [--rounds N] [--also DIR] [--tiles] [--json]   V8 (Node)
//   node_modules/.bin/bun scripts/forensics/gemm_probe.mjs [...]                        JavaScriptCore (Bun)
//   node scripts/forensics/gemm_probe.mjs --browser chromium|firefox|webkit [...]        a browser's page
// Node and Bun count this process's CPU time (a busy neighbour then costs nothing: medians), a page
// wall time (a neighbour only adds: bests). --tiles: other tiles' k loops too (kernel_shape.mjs);
// --also DIR: another build's probe modules in the same rounds. Findings: scripts/LAB.md.
import { relaxedSimdAvailable } from '../../web/lib/internal.js';
import { createAttention, tensor } from '../../web/lib/index.js';
// now(): CPU time in Node and Bun (an engine's compiler threads count while they work), else wall
import { benchModule, buildForensics, cpuClock, now } from './bench_modules.mjs';
import { flopsPerPass, instantiate } from './kernel_shape.mjs';
import { FLOPS_PER_STEP, probeRuns } from '../bench/peak_probe.mjs';

const SIZE = 512;
const HOT = [16, 16, 256]; // m, n, k
const GEMM_FLOPS = 2 * SIZE ** 3;
const GEMM_REPS = 4; // ~1 GFLOP
const HOT_FLOPS = 2 * HOT[0] * HOT[1] * HOT[2];
const HOT_REPS = Math.round(1e9 / HOT_FLOPS);
const PEAK_STEPS = 8e6; // ~0.9 GFLOP
const BUILDS = [
  ['simd128', 'gemm_probe_simd128', 'createGemmProbeSimd128'],
  ['relaxed-simd', 'gemm_probe_relaxed_simd', 'createGemmProbeRelaxedSimd'],
];
export const TILES = ['4x8', '4x8 splat', '4x8 broadcast', '2x16', '5x8', '3x12', '6x8', '4x12'];

const gflops = (flops, run) => {
  const t0 = now();
  run();
  return flops / (now() - t0) / 1e6;
};
// A function with the loop inside (kernel_shape.mjs's, peak_probe.mjs's): many short calls
// first, as kernel_code_jsc.mjs does, so that the engines optimize the function itself rather
// than only enter the loop's optimized code from a long call.
const warmLoop = (run, arg) => {
  for (let i = 0; i < 200; ++i) run(arg);
};
const median = (xs) => [...xs].sort((x, y) => x - y)[xs.length >> 1];
const bytesOf = (array) => new Uint8Array(array);

// One build's pieces: name -> [flops, run()]. loopBytes and the package's attention only for
// this checkout's builds (label '').
async function buildPieces({ isa, name, exportName, dir, label, loopBytes }) {
  const { factory, wasmBinary } = await benchModule(name, exportName, dir);
  const module = await factory({ wasmBinary });
  const probe = (piece) => module[`_wab_${piece}`];
  probe('setup')(0, ...HOT);
  probe('setup')(1, SIZE, SIZE, SIZE);
  const pieces = {
    hot: [HOT_FLOPS * HOT_REPS, () => probe('packed')(0, HOT_REPS)],
    packed: [GEMM_FLOPS * GEMM_REPS, () => probe('packed')(1, GEMM_REPS)],
    gemm: [GEMM_FLOPS * GEMM_REPS, () => probe('gemm')(1, GEMM_REPS)],
    pack_b: [GEMM_FLOPS * GEMM_REPS, () => probe('pack_b')(1, GEMM_REPS)],
  };
  let attn = null;
  if (!label) {
    const loop = instantiate(bytesOf(loopBytes));
    const passes = Math.round(1e9 / flopsPerPass());
    attn = await createAttention({ threads: 1, isa });
    const a = tensor(new Float32Array(SIZE * SIZE).fill(0.25), [SIZE, SIZE]);
    warmLoop(loop, 50);
    pieces.loop = [flopsPerPass() * passes, () => loop(passes)];
    pieces.matmul = [
      GEMM_FLOPS * GEMM_REPS,
      () => {
        for (let r = 0; r < GEMM_REPS; ++r) attn.matmul(a, a);
      },
    ];
  }
  const order = ['loop', 'hot', 'packed', 'gemm', 'matmul', 'pack_b'].filter((p) => pieces[p]);
  return { isa: `${isa}${label}`, pieces: order.map((p) => [p, pieces[p]]), dispose: () => attn?.dispose() };
}

// options (module bytes as arrays of numbers, so that they pass into a page):
//   loops      { simd128, 'relaxed-simd' }: kernel_shape.mjs's 4x8 loop, mul+add and FMA
//   peaks      { 'mul+add', fma }: peak_probe.mjs's modules
//   tiles      [[name, bytes, flops per pass]]: other tiles' loops (--tiles)
//   also       a URL of another build's build/wasm/bench/ (--also), or null
// -> { clock, samples: [[key, [GFLOP/s per round]]] } (pairs: WebKit's WebDriver does not keep
// an object's key order)
export async function measureGemm({ loops, peaks, tiles = [], also = null, rounds = 7 }) {
  const relaxed = relaxedSimdAvailable();
  const specs = BUILDS.filter(([isa]) => relaxed || isa !== 'relaxed-simd');
  const builds = [];
  for (const [isa, name, exportName] of specs)
    builds.push(await buildPieces({ isa, name, exportName, label: '', loopBytes: loops[isa] }));
  if (also) {
    const label = ` (${also.split('/').filter(Boolean).pop()})`;
    for (const [isa, name, exportName] of specs)
      builds.push(await buildPieces({ isa, name, exportName, dir: new URL(also), label }));
  }
  const peakRuns = { 'mul+add': probeRuns(bytesOf(peaks['mul+add'])) };
  if (relaxed) peakRuns.fma = probeRuns(bytesOf(peaks.fma));
  const tileRuns = tiles
    .filter(([, bytes]) => WebAssembly.validate(bytesOf(bytes))) // FMA ones: where relaxed SIMD runs
    .map(([name, bytes, flops]) => {
      const passes = Math.round(1e9 / flops);
      const run = instantiate(bytesOf(bytes));
      warmLoop(run, 50);
      return [name, [flops * passes, () => run(passes)]];
    });

  const samples = new Map(); // key -> GFLOP/s per round
  const record = (key, value) => samples.set(key, [...(samples.get(key) ?? []), value]);
  // warm up: each engine's optimizing tier (the loops: warmLoop above)
  for (const b of builds) for (const [, [, run]] of b.pieces) run();
  for (const forms of Object.values(peakRuns)) for (const run of Object.values(forms)) warmLoop(run, 4000);
  for (const [, [, run]] of tileRuns) run();
  for (let r = 0; r < rounds; ++r) {
    for (const [name, forms] of Object.entries(peakRuns))
      record(
        `peak ${name}`,
        Math.max(...Object.values(forms).map((run) => gflops(PEAK_STEPS * FLOPS_PER_STEP, () => run(PEAK_STEPS)))),
      );
    for (const b of builds) for (const [name, piece] of b.pieces) record(`${b.isa} ${name}`, gflops(...piece));
    for (const [name, piece] of tileRuns) record(name, gflops(...piece));
  }
  for (const b of builds) b.dispose();
  return { clock: cpuClock ? 'CPU time' : 'wall time', samples: [...samples] };
}

// -> text lines: medians [bests] in CPU time, bests [medians] in wall time.
export function formatGemm(engine, { clock, samples }, load) {
  const byKey = new Map(samples);
  const wall = clock === 'wall time';
  const stat = (xs) => (wall ? Math.max(...xs) : median(xs));
  const other = (xs) => (wall ? median(xs) : Math.max(...xs));
  const peak = stat(byKey.get('peak mul+add'));
  const msPer512 = (g) => GEMM_FLOPS / g / 1e6;
  const out = [
    `${engine}${load ? `, load ${load}` : ''}`,
    `gemm probe: ${SIZE}³, 1 thread; ${byKey.get('peak mul+add').length} interleaved rounds, ${clock}, ` +
      `${wall ? 'best [median]' : 'median [best]'}`,
    `peak mul+add ${stat(byKey.get('peak mul+add')).toFixed(1)} [${other(byKey.get('peak mul+add')).toFixed(1)}] GFLOP/s` +
      (byKey.has('peak fma')
        ? `; peak FMA (relaxed_madd) ${stat(byKey.get('peak fma')).toFixed(1)} [${other(byKey.get('peak fma')).toFixed(1)}]; ` +
          `FMA / mul+add ${(stat(byKey.get('peak fma')) / peak).toFixed(2)}`
        : ''),
  ];
  for (const [key, xs] of samples) {
    if (key.startsWith('peak ')) continue;
    const cut = key.lastIndexOf(' ');
    const [what, name] = key.startsWith('tile ') ? [key, ''] : [key.slice(0, cut), key.slice(cut + 1)];
    if (name === 'pack_b') {
      const share = stat(byKey.get(`${what} gemm`)) / stat(xs); // pack_b time / gemm time
      out.push(`  ${what.padEnd(24)} ${name.padEnd(7)} ${(100 * share).toFixed(1)}% of gemm's time`);
      continue;
    }
    const g = stat(xs);
    out.push(
      `  ${what.padEnd(name ? 24 : 32)} ${name.padEnd(name ? 7 : 0)} ${g.toFixed(1).padStart(5)} [${other(xs).toFixed(1)}] GFLOP/s` +
        `  ${msPer512(g).toFixed(2).padStart(5)} ms per 512³  ${((100 * g) / peak).toFixed(1).padStart(5)}% of mul+add peak`,
    );
  }
  return out.join('\n');
}

async function main() {
  (await import('../bench/spawn.mjs')).rerunWithRelaxedSimd();
  await buildForensics();
  const { argument, measureAndPrint } = await import('./in_page.mjs');
  const { kernelShapeModule } = await import('./kernel_shape.mjs');
  const { probeModule } = await import('../bench/peak_probe.mjs');
  const { pathToFileURL } = await import('node:url');
  const array = (buffer) => Array.from(new Uint8Array(buffer));
  const tiles = [];
  if (process.argv.includes('--tiles'))
    for (const tile of TILES) {
      const [mr, nr] = tile.split(' ')[0].split('x').map(Number);
      for (const fma of [false, true]) {
        const style = tile.split(' ')[1];
        const bytes = await kernelShapeModule({
          fma,
          mr,
          nr,
          splat: style === 'splat',
          broadcast: style === 'broadcast',
        });
        tiles.push([`tile ${tile} loop${fma ? ', FMA' : ''}`, array(bytes), flopsPerPass(mr, nr)]);
      }
    }
  const also = argument('--also', null);
  if (also && argument('--browser', null)) throw new Error('--also runs in Node and Bun only');
  await measureAndPrint({
    moduleUrl: '/scripts/forensics/gemm_probe.mjs',
    exportName: 'measureGemm',
    measureHere: measureGemm,
    format: formatGemm,
    options: {
      loops: {
        simd128: array(await kernelShapeModule()),
        'relaxed-simd': array(await kernelShapeModule({ fma: true })),
      },
      peaks: { 'mul+add': array(await probeModule()), fma: array(await probeModule({ fma: true })) },
      tiles,
      also: also ? pathToFileURL(`${also.replace(/\/?$/, '/')}`).href : null,
      rounds: Number(argument('--rounds', 7)),
    },
  });
}

if (typeof process === 'object' && process.argv?.[1] && new URL(import.meta.url).pathname === process.argv[1])
  await main();
