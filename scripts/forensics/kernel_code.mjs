#!/usr/bin/env node
// What V8 makes of our GEMM micro-kernels: `node scripts/forensics/kernel_code.mjs [--out FILE]`.
// For the shipped single-thread modules (web/lib/wasm: SIMD128 and relaxed SIMD, the ones the
// 1-thread bench rows run), it
//   1. finds the wasm functions holding a kernel's k loop (wabt disassembles the module; the
//      build strips names, so a kernel is a function whose innermost loop has the loadsplat
//      kernels' shape: 2 b loads, MR ≥ 3 load32_splats and 2·MR multiply-adds per k step, or a
//      multiple: one per tile and unroll; the splat style has no load32_splat and is not found),
//   2. runs a small matmul in a child Node with --no-liftoff --no-wasm-lazy-compilation
//      --print-wasm-code, so TurboFan compiles every function and prints it, and cuts each
//      kernel's x64 code out,
//   3. summarizes each hot loop (the backward jump around the most multiply-adds): instructions
//      per k step, vector loads, broadcasts, mul/add/FMA, xmm spills and reloads (stack-relative
//      moves), scalar overhead, and prints the 4x8 loop itself.
// --out FILE also writes the report there.
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { BUILDS } from '../../web/lib/internal.js';
import { RELAXED_SIMD_FLAG } from '../bench/spawn.mjs';

const WASM_DIR = new URL('../../web/lib/wasm/', import.meta.url);
const MODULES = BUILDS.filter((v) => !v.threads).map(({ isa, base }) => ({ isa, file: `${base}.wasm` }));

// wasm text of one module -> [{ index, loop }]: the innermost loops shaped like the kernel's
// k loop, with their op counts per k step.
async function findKernelLoops(bytes) {
  const { default: wabt } = await import('wabt');
  const features = { simd: true, relaxed_simd: true, threads: true, exceptions: true, bulk_memory: true };
  const text = (await wabt()).readWasm(bytes, features).toText({ foldExprs: false });
  const found = [];
  for (const func of text.split('\n  (func ').slice(1)) {
    const index = Number(/^\(;(\d+);\)/.exec(func)?.[1]);
    const lines = func.split('\n').map((l) => l.trim());
    const open = []; // start line of each open block/loop, and whether it is a loop
    for (let i = 0; i < lines.length; ++i) {
      const op = lines[i].split(/\s/)[0];
      if (op === 'block' || op === 'loop' || op === 'if' || op === 'try') open.push({ start: i, loop: op === 'loop' });
      else if (op === 'end' && open.length) {
        const b = open.pop();
        if (!b.loop) continue;
        const body = lines.slice(b.start + 1, i);
        if (body.some((l) => l.startsWith('loop'))) continue; // not innermost
        const count = (re) => body.filter((l) => re.test(l)).length;
        const c = {
          splat: count(/^v128\.load32_splat/),
          load: count(/^v128\.load(\s|$)/),
          mul: count(/^f32x4\.mul/),
          add: count(/^f32x4\.add/),
          madd: count(/^f32x4\.relaxed_madd/),
        };
        const fmas = c.madd || Math.min(c.mul, c.add);
        if (c.splat >= 3 && c.load >= 2 && fmas === 2 * c.splat && (c.madd === 0 || c.mul === 0))
          found.push({ index, steps: c.load / 2, ...c });
      }
    }
  }
  return found;
}

// Child mode: load the package on one thread with this ISA and multiply twice (compiles the
// GEMM path; --no-liftoff makes it TurboFan code from the start).
async function child(isa) {
  const lib = await import('../../web/lib/index.js');
  const attn = await lib.createAttention({ threads: 1, isa });
  const n = 64;
  const a = lib.tensor(new Float32Array(n * n).fill(0.5), [n, n]);
  for (let i = 0; i < 2; ++i) attn.matmul(a, a);
  attn.dispose();
}

// The x64 listing of wasm function `index` from V8's --print-wasm-code output ->
// [{ addr, text }], text without address and offset columns.
function functionCode(out, index) {
  const start = out.indexOf(`name: wasm-function[${index}]\n`);
  if (start < 0) return null;
  const end = out.indexOf('--- End code ---', start);
  const code = [];
  for (const line of out.slice(start, end).split('\n')) {
    const m = /^0x([0-9a-f]+)\s+[0-9a-f]+\s+[0-9a-f]+\s+(.*)$/.exec(line);
    if (m) code.push({ addr: BigInt(`0x${m[1]}`), text: m[2].trim() });
  }
  return code;
}

const isMulAdd = (t) => /^v?(mulps|addps|vfn?madd\w*ps)/.test(t);

// The hot loop: of the innermost loops (backward jumps with no other inside), the one with the
// most multiply-adds.
function hotLoop(code) {
  const loops = [];
  for (let i = 0; i < code.length; ++i) {
    const m = /^j\w+ 0x([0-9a-f]+)/.exec(code[i].text);
    if (!m || BigInt(`0x${m[1]}`) > code[i].addr) continue;
    const from = code.findIndex((c) => c.addr === BigInt(`0x${m[1]}`));
    if (from >= 0) loops.push({ from, to: i });
  }
  const innermost = loops.filter((l) => !loops.some((o) => o !== l && o.from >= l.from && o.to <= l.to));
  let best = null;
  for (const l of innermost) {
    const body = code.slice(l.from, l.to + 1);
    const weight = body.filter((c) => isMulAdd(c.text)).length;
    if (!best || weight > best.weight) best = { body, weight };
  }
  return best?.body ?? [];
}

// The loop's instruction mix, per k step (each step: 8 multiply-adds, as 8 mul + 8 add or 8 FMA).
function summarize(body, kMR = 4) {
  const n = (re) => body.filter((c) => re.test(c.text)).length;
  const xmmMove = /^v?mov(dqu|ups|aps|dqa|q|sd|ss)\b/;
  const stackRef = /\[(rbp|rsp)[+-]/;
  const fma = n(/^vfn?madd\w*ps/);
  const mul = n(/^v?mulps/);
  const add = n(/^v?addps/);
  const steps = (fma || mul) / (2 * kMR);
  const c = {
    instructions: body.length,
    vectorLoads: body.filter((x) => xmmMove.test(x.text) && /^v?\w+ xmm\d+,\[/.test(x.text) && !stackRef.test(x.text))
      .length,
    broadcasts: n(/^v?(broadcastss|pshufd|shufps)/),
    mul,
    add,
    fma,
    spills: body.filter((x) => xmmMove.test(x.text) && /^v?\w+ \[(rbp|rsp)[^\]]*\],xmm/.test(x.text)).length,
    reloads: body.filter((x) => xmmMove.test(x.text) && /xmm\d+,\[(rbp|rsp)/.test(x.text)).length,
    stackChecks: n(/cmpq rsp,/),
    branches: n(/^j/),
  };
  c.scalar = c.instructions - c.vectorLoads - c.broadcasts - mul - add - fma - c.spills - c.reloads;
  return { steps, ...c };
}

// "family F model M" from /proc/cpuinfo (Linux), which names the core where the model string does not
function cpuFamily() {
  try {
    const info = readFileSync('/proc/cpuinfo', 'utf8');
    const field = (name) => new RegExp(`^${name}\\s*:\\s*(\\S+)`, 'm').exec(info)?.[1];
    return field('cpu family') ? `, family ${field('cpu family')} model ${field('model')}` : '';
  } catch {
    return '';
  }
}

function report() {
  const lines = [];
  const say = (s = '') => lines.push(s);
  say(`V8 ${process.versions.v8} (Node ${process.version}), ${cpus()[0]?.model ?? 'CPU not named'}${cpuFamily()}`);
  say('TurboFan x64 code (--no-liftoff --print-wasm-code) of the GEMM micro-kernel loop in the shipped');
  say('single-thread modules, found by shape (wabt), cut from the function that holds it.');
  return { lines, say };
}

async function main() {
  const outArg = process.argv.indexOf('--out');
  const { lines, say } = report();
  for (const build of MODULES) {
    const bytes = readFileSync(new URL(build.file, WASM_DIR));
    const loops = await findKernelLoops(bytes);
    say();
    say(`== ${build.isa}: ${build.file}`);
    if (!loops.length) {
      say('  no loop shaped like the kernel was found');
      continue;
    }
    const flags = ['--no-liftoff', '--no-wasm-lazy-compilation', '--print-wasm-code'];
    if (build.isa === 'relaxed-simd') flags.unshift(RELAXED_SIMD_FLAG);
    const r = spawnSync(process.execPath, [...flags, fileURLToPath(import.meta.url), '--child', build.isa], {
      encoding: 'utf8',
      maxBuffer: 1 << 30,
    });
    if (r.status !== 0) {
      say(`  the child failed: ${r.stderr.slice(-500)}`);
      continue;
    }
    // one kernel per function (its tile rows: load32_splats per k step); the chosen one's loop in full
    // a function's unrolled loop, not its remainder loop
    const byFunction = new Map();
    for (const l of loops) if (!(byFunction.get(l.index)?.steps >= l.steps)) byFunction.set(l.index, l);
    for (const l of byFunction.values()) {
      const mr = l.splat / l.steps;
      const code = functionCode(r.stdout, l.index);
      say();
      say(
        `  ${mr}x8 kernel, k unrolled ${l.steps}x in wasm: function ${l.index}, innermost loop: ${l.load} v128.load, ` +
          `${l.splat} v128.load32_splat, ` +
          (l.madd ? `${l.madd} f32x4.relaxed_madd` : `${l.mul} f32x4.mul + ${l.add} f32x4.add`),
      );
      if (!code) {
        say(`  V8 printed no code for function ${l.index}`);
        continue;
      }
      const loop = hotLoop(code);
      const s = summarize(loop, mr);
      const per = (x) => (x / s.steps).toFixed(2).replace(/\.00$/, '');
      say(`  function: ${code.length} instructions; hot loop: ${s.instructions} instructions for ${s.steps} k step(s)`);
      say(
        `  per k step (${16 * mr} FLOPs): ${per(s.instructions)} instructions: ${per(s.vectorLoads)} vector loads, ${per(s.broadcasts)} broadcasts, ` +
          `${per(s.mul)} mul, ${per(s.add)} add, ${per(s.fma)} FMA, ${per(s.spills)} xmm spills, ${per(s.reloads)} xmm reloads, ` +
          `${per(s.scalar)} scalar (${per(s.branches)} branches, ${per(s.stackChecks)} stack checks)`,
      );
      if (mr === 4 && l.steps === 1) {
        say('  the loop:');
        for (const c of loop) say(`    ${c.text}`);
      }
    }
  }
  const text = lines.join('\n') + '\n';
  process.stdout.write(text);
  if (outArg > 0) writeFileSync(process.argv[outArg + 1], text);
}

if (process.argv[2] === '--child') await child(process.argv[3]);
else await main();
