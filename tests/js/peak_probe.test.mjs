// The SIMD peak probe (scripts/bench/peak_probe.mjs) that the bench's % columns divide by: each
// of its loops (the chains unrolled 4×, 2×, 1×) runs the steps asked for, no more and no fewer,
// whatever its unroll, and computes what the chains define (checked against the same chains in
// float32 arithmetic here); the FMA chains likewise where relaxed SIMD runs; measureRuns gives
// each loop a rate and measureOneThread the fastest. Nothing here asserts a speed.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { FLOPS_PER_STEP, UNROLLS, measureRuns, probeModule, probeRuns } from '../../scripts/bench/peak_probe.mjs';
import { relaxedSimdAvailable } from '../../web/lib/features.js';

const CHAINS = FLOPS_PER_STEP / 8;
const f = Math.fround;

// run(steps)'s result from the definition: chain c starts at 1 + c/16 and takes `steps` steps of
// step(x); the first lanes summed in chain order, in float32.
function expected(steps, step) {
  let sum = 0;
  for (let c = 0; c < CHAINS; ++c) {
    let x = f(1 + c / 16);
    for (let i = 0; i < steps; ++i) x = step(x);
    sum = c === 0 ? x : f(sum + x);
  }
  return sum;
}

// Steps that tell the loops apart: x = 0.5·x + 0.5 reaches 1 in float32 after ~25 steps, so
// fewer than that, a multiple of 4.
const STEPS = [4, 8, 12, 20];

test('every loop of the mul+add probe runs the steps asked for: x = x·0.5 + 0.5 per chain', async () => {
  const runs = probeRuns(await probeModule());
  assert.deepEqual(Object.keys(runs).sort(), UNROLLS.map((u) => `run_unroll${u}`).sort());
  for (const steps of STEPS) {
    const want = expected(steps, (x) => f(f(x * 0.5) + 0.5));
    for (const [name, run] of Object.entries(runs)) assert.equal(run(steps), want, `${name}(${steps})`);
  }
});

const NO_RELAXED =
  !relaxedSimdAvailable() && 'this engine runs no relaxed SIMD (Node 20: --experimental-wasm-relaxed-simd)';

test('every loop of the FMA probe runs x = x + 0.5·0.5 per chain', { skip: NO_RELAXED }, async () => {
  const runs = probeRuns(await probeModule({ fma: true }));
  for (const steps of STEPS) {
    // fused or not (relaxed_madd may do either), 0.5·0.5 is exact and so is the sum here
    const want = expected(steps, (x) => f(x + 0.25));
    for (const [name, run] of Object.entries(runs)) assert.equal(run(steps), want, `${name}(${steps})`);
  }
});

test('measureRuns gives every loop a rate, measured in interleaved rounds', async () => {
  const runs = probeRuns(await probeModule());
  const called = {};
  const counted = Object.fromEntries(
    Object.entries(runs).map(([name, run]) => [
      name,
      (steps) => {
        called[name] = (called[name] ?? 0) + 1;
        return run(steps);
      },
    ]),
  );
  const rates = measureRuns(counted, FLOPS_PER_STEP, 2);
  assert.deepEqual(Object.keys(rates).sort(), Object.keys(runs).sort());
  for (const [name, rate] of Object.entries(rates)) assert.ok(Number.isFinite(rate) && rate > 0, `${name}: ${rate}`);
  const calls = Object.values(called);
  assert.ok(
    calls.every((n) => n === calls[0]),
    `every loop sized and timed alike: ${JSON.stringify(called)}`,
  );
});
