#!/usr/bin/env node
// Where a 1-thread 512³ matmul's time goes, in one process, side by side:
//   node scripts/forensics/gemm_probe.mjs [--rounds N] [--also DIR] [--tiles]
// For the SIMD128 and the relaxed-SIMD builds, as GFLOP/s and % of the mul+add peak:
//   loop     the kernel's k loop alone, written in wasm text (kernel_shape.mjs): the ceiling of
//            its instruction mix in this engine
//   hot      gemm_packed_b on 16x16x256, everything in L1/L2 (four 4x8 tiles of 256 steps; its
//            pack_a is ~2 % of the work): the kernel as gemm.cpp runs it, call and c stores
//            included, without cache misses
//   packed   gemm_packed_b 512³ on b packed beforehand: the kernel over the blocking, with
//            cache misses and pack_a
//   gemm     pack_b + gemm_packed_b 512³: everything matmul runs inside the module
//   matmul   the package's attn.matmul (1 thread): the gemm plus copies in and out of JS
//   pack_b   packing b alone, as a share of gemm's time
// from the bench-only modules of gemm_probe.cpp (build/wasm/bench/, built by scripts/build.sh),
// and the peak probes (peak_probe.mjs: mul+add chains, relaxed_madd chains). Rounds interleave
// everything; medians are printed, best in brackets. Times are this process's CPU time
// (process.cpuUsage), not wall time: on a shared machine a neighbour that takes the core away
// then costs nothing, so the figures compare even when the machine is busy (everything here
// runs on this one thread).
// --tiles: also the k loop of other tiles (kernel_shape.mjs), mul+add and FMA: 4x8, 4x8 with
// XNNPACK's "splat" broadcasts, 2x16 (the 8-accumulator ones), 5x8, 3x12, 6x8, 4x12 (more
// accumulators, fewer loads per multiply-add).
// --also DIR: the probe modules of another build too (a copy of build/wasm/bench/ from before a
// change), measured in the same rounds, to compare side by side; its rows are marked with DIR's
// name and have no loop or matmul row (those are this checkout's).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { spawnSync } from 'node:child_process';
import { flopsPerPass, instantiate, kernelShapeModule } from './kernel_shape.mjs';
import { FLOPS_PER_ITERATION, probeModule } from '../bench/peak_probe.mjs';
import { RELAXED_SIMD_FLAG } from '../bench/spawn.mjs';

if (!process.execArgv.includes(RELAXED_SIMD_FLAG)) {
  const r = spawnSync(process.execPath, [RELAXED_SIMD_FLAG, ...process.execArgv, ...process.argv.slice(1)], {
    stdio: 'inherit',
  });
  process.exit(r.status ?? 1);
}

const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const rounds = Number(arg('--rounds', 7));
const size = 512;
const HOT = [16, 16, 256]; // m, n, k

const require = createRequire(import.meta.url);
const BENCH_DIR = fileURLToPath(new URL('../../build/wasm/bench/', import.meta.url));
const lib = await import('../../web/lib/index.js');

async function variant(isa, file, dir = BENCH_DIR, label = '') {
  // wasmBinary: the loader would fetch() a file path, which Node 20's fetch rejects
  const wasmBinary = readFileSync(`${dir}/${file.replace(/\.js$/, '.wasm')}`);
  const module = await require(`${dir}/${file}`)({ wasmBinary });
  const probe = (name) => module[`_wab_${name}`];
  probe('setup')(0, ...HOT);
  probe('setup')(1, size, size, size);
  const attn = label ? null : await lib.createAttention({ threads: 1, isa });
  const a = label ? null : lib.tensor(new Float32Array(size * size).fill(0.25), [size, size]);
  const loop = label ? null : instantiate(await kernelShapeModule({ fma: isa === 'relaxed-simd' }));
  return { isa: `${isa}${label}`, probe, attn, a, loop };
}

const gemmFlops = 2 * size ** 3;
const gemmReps = 4; // ~1 GFLOP
const hotFlops = 2 * HOT[0] * HOT[1] * HOT[2];
const hotReps = Math.round(1e9 / hotFlops);
const loopPasses = Math.round(1e9 / flopsPerPass());
// name -> (v) => [flops, run()]
const PIECES = {
  loop: (v) => [flopsPerPass() * loopPasses, () => v.loop(loopPasses)],
  hot: (v) => [hotFlops * hotReps, () => v.probe('packed')(0, hotReps)],
  packed: (v) => [gemmFlops * gemmReps, () => v.probe('packed')(1, gemmReps)],
  gemm: (v) => [gemmFlops * gemmReps, () => v.probe('gemm')(1, gemmReps)],
  matmul: (v) => [
    gemmFlops * gemmReps,
    () => {
      for (let r = 0; r < gemmReps; ++r) v.attn.matmul(v.a, v.a);
    },
  ],
  pack_b: (v) => [gemmFlops * gemmReps, () => v.probe('pack_b')(1, gemmReps)],
};

const gflops = (flops, run) => {
  const t0 = process.cpuUsage();
  run();
  const { user, system } = process.cpuUsage(t0);
  return flops / (user + system) / 1e3;
};
// peak_probe.mjs's module -> run(iterations), ~50 ms of it
const peakRun = (bytes) => {
  const { run } = new WebAssembly.Instance(new WebAssembly.Module(bytes)).exports;
  return () => run(2e6);
};
const median = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];

const variants = [
  await variant('simd128', 'gemm_probe_simd.js'),
  await variant('relaxed-simd', 'gemm_probe_relaxed.js'),
];
const also = arg('--also', null);
if (also) {
  const label = ` (${also.split('/').filter(Boolean).pop()})`;
  variants.push(await variant('simd128', 'gemm_probe_simd.js', also, label));
  variants.push(await variant('relaxed-simd', 'gemm_probe_relaxed.js', also, label));
}
const TILES = process.argv.includes('--tiles') ? ['4x8', '4x8 splat', '2x16', '5x8', '3x12', '6x8', '4x12'] : [];
const tiles = [];
for (const tile of TILES) {
  const [mr, nr] = tile.split(' ')[0].split('x').map(Number);
  for (const fma of [false, true]) {
    const run = instantiate(await kernelShapeModule({ fma, mr, nr, splat: tile.endsWith('splat') }));
    const passes = Math.round(1e9 / flopsPerPass(mr, nr));
    tiles.push([`tile ${tile} loop${fma ? ', FMA' : ''}`, [flopsPerPass(mr, nr) * passes, () => run(passes)]]);
  }
}
const piecesOf = (v) => Object.entries(PIECES).filter(([name]) => v.attn || !['matmul', 'loop'].includes(name));
const peaks = { 'mul+add': peakRun(await probeModule()), fma: peakRun(await probeModule({ fma: true })) };
const samples = {}; // key -> GFLOP/s per round
const record = (key, value) => (samples[key] ??= []).push(value);

for (const v of variants) for (const [, piece] of piecesOf(v)) piece(v)[1](); // warm up: TurboFan
for (const run of Object.values(peaks)) for (let i = 0; i < 5; ++i) run();
for (const [, [, run]] of tiles) run();
for (let r = 0; r < rounds; ++r) {
  for (const [name, run] of Object.entries(peaks)) record(`peak ${name}`, gflops(2e6 * FLOPS_PER_ITERATION, run));
  for (const v of variants) for (const [name, piece] of piecesOf(v)) record(`${v.isa} ${name}`, gflops(...piece(v)));
  for (const [name, piece] of tiles) record(name, gflops(...piece));
  process.stderr.write(`round ${r + 1}/${rounds}\n`);
}

const peak = median(samples['peak mul+add']);
const out = [
  `gemm probe: ${size}³, 1 thread; ${rounds} interleaved rounds, median [best]`,
  `peak mul+add ${median(samples['peak mul+add']).toFixed(1)} [${Math.max(...samples['peak mul+add']).toFixed(1)}] GFLOP/s; ` +
    `peak FMA (relaxed_madd) ${median(samples['peak fma']).toFixed(1)} [${Math.max(...samples['peak fma']).toFixed(1)}]; ` +
    `FMA / mul+add ${(median(samples['peak fma']) / peak).toFixed(2)}`,
];
for (const v of variants) {
  for (const [name] of piecesOf(v)) {
    const xs = samples[`${v.isa} ${name}`];
    const m = median(xs);
    if (name === 'pack_b') {
      const share = median(samples[`${v.isa} gemm`]) / m; // pack_b time / gemm time
      out.push(`  ${v.isa.padEnd(24)} ${name.padEnd(7)} ${(100 * share).toFixed(1)}% of gemm's time`);
      continue;
    }
    out.push(
      `  ${v.isa.padEnd(24)} ${name.padEnd(7)} ${m.toFixed(1).padStart(5)} [${Math.max(...xs).toFixed(1)}] GFLOP/s  ${((100 * m) / peak).toFixed(1).padStart(5)}% of mul+add peak`,
    );
  }
}
for (const [name] of tiles) {
  const xs = samples[name];
  const m = median(xs);
  out.push(
    `  ${name.padEnd(32)} ${m.toFixed(1).padStart(5)} [${Math.max(...xs).toFixed(1)}] GFLOP/s  ${((100 * m) / peak).toFixed(1).padStart(5)}% of mul+add peak`,
  );
}
for (const v of variants) v.attn?.dispose();
console.log(out.join('\n'));
