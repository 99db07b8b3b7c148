#!/usr/bin/env node
// What JavaScriptCore makes of the GEMM micro-kernel's k loop: `node scripts/forensics/kernel_code_jsc.mjs`.
// Bun runs JavaScriptCore and takes its options from BUN_JSC_* variables; JSC_dumpOMGDisassembly
// prints what its optimizing wasm tier (OMG: B3, then Air) emits. Bun's release build has no
// disassembler, but Air is JSC's assembly-level form, one Air instruction per x86 instruction,
// which is what this counts. The loop is kernel_shape.mjs's: the kernels' exact instruction mix
// for a tile, written in the wasm text format, run hot in a child Bun until OMG compiles it.
// Per tile (mr x 8, loadsplat, splat or on a broadcast a panel, mul+add or relaxed_madd): GFLOP/s on L1-resident
// panels, and the Air instructions of its loop body (the block that runs most), by kind.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import { flopsPerPass, instantiate, kernelShapeModule } from './kernel_shape.mjs';

const BUN = fileURLToPath(new URL('../../node_modules/.bin/bun', import.meta.url));
const SHAPES = [
  { mr: 4 },
  { mr: 4, splat: true },
  { mr: 4, broadcast: true },
  { mr: 4, fma: true },
  { mr: 5 },
  { mr: 6 },
  { mr: 6, fma: true },
];

// Child (under Bun): run the shape hot, print its speed on stderr.
async function child({ mr, splat, broadcast, fma }) {
  const run = instantiate(await kernelShapeModule({ mr, splat, broadcast, fma }));
  for (let i = 0; i < 200; ++i) run(50);
  let best = 0;
  for (let r = 0; r < 20; ++r) {
    const t0 = performance.now();
    run(2000);
    best = Math.max(best, (2000 * flopsPerPass(mr)) / (performance.now() - t0) / 1e6);
  }
  console.error(`GFLOP/s ${best.toFixed(1)}`);
}

// Air instructions of the first OMG function's most frequent block(s): { opcode: count }.
function loopAir(dump) {
  const omg = dump.split(/^Generated OMG /m)[1]?.split(/^Generated OMGforOSREntry/m)[0] ?? '';
  let best = -1;
  let body = [];
  let frequency = 0;
  for (const line of omg.split('\n')) {
    const block = /^Air BB#\d+: ; frequency = ([\d.]+)/.exec(line);
    if (block) frequency = Number(block[1]);
    else if (/^Air {8}\S/.test(line)) {
      if (frequency > best) [best, body] = [frequency, []];
      if (frequency === best) body.push(line.slice(11).split(/\s/)[0]);
    }
  }
  const counts = {};
  for (const op of body) counts[op] = (counts[op] ?? 0) + 1;
  return { instructions: body.length, counts };
}

if (process.argv[2] === '--child') await child(JSON.parse(process.argv[3]));
else {
  const version = spawnSync(BUN, ['--version'], { encoding: 'utf8' }).stdout.trim();
  console.log(`JavaScriptCore in Bun ${version}: Air (BUN_JSC_dumpOMGDisassembly=1) of the k loop, per k step`);
  for (const shape of SHAPES) {
    const r = spawnSync(BUN, [fileURLToPath(import.meta.url), '--child', JSON.stringify(shape)], {
      encoding: 'utf8',
      env: { ...process.env, BUN_JSC_dumpOMGDisassembly: '1' },
      maxBuffer: 1 << 28,
    });
    const speed = /GFLOP\/s ([\d.]+)/.exec(r.stderr + r.stdout)?.[1] ?? '?';
    const { instructions, counts } = loopAir(r.stdout + r.stderr);
    const style = shape.splat ? 'splat' : shape.broadcast ? 'broadcast a panel' : 'loadsplat';
    const name = `${shape.mr}x8 ${style} ${shape.fma ? 'relaxed_madd' : 'mul+add'}`;
    const mix = Object.entries(counts)
      .sort((a, b) => b[1] - a[1])
      .map(([op, n]) => `${n} ${op}`)
      .join(', ');
    console.log(`${name}: ${speed} GFLOP/s; ${instructions} Air instructions: ${mix}`);
  }
}
