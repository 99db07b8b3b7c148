// The SIMD peak probe (scripts/bench/peak_probe.mjs) that the bench's % columns divide by: each
// of its loops (the chains unrolled 4×, 2×, 1×) runs the steps asked for, no more and no fewer,
// whatever its unroll, and computes what the chains define (checked against the same chains in
// float32 arithmetic here); the FMA chains likewise where relaxed SIMD runs; measureRuns gives
// each loop a rate and measureOneThread the fastest. Nothing here asserts a speed.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { FLOPS_PER_STEP, UNROLLS, measureRuns, probeModule, probeRuns } from '../../../scripts/bench/peak_probe.mjs';
import { relaxedSimdAvailable } from '../../../web/lib/features.js';

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

// How long a call takes decides how many sizing calls a loop gets (the machine's load with it), so
// this checks only what does not depend on time: the order of the calls and their step counts.
test('measureRuns warms every loop, then times them in interleaved rounds of one size each', async () => {
  const runs = probeRuns(await probeModule());
  const names = Object.keys(runs);
  const log = []; // [name, steps] of every call, in order
  const logged = Object.fromEntries(
    names.map((name) => [
      name,
      (steps) => {
        log.push([name, steps]);
        return runs[name](steps);
      },
    ]),
  );
  const ROUNDS = 3;
  const rates = measureRuns(logged, FLOPS_PER_STEP, ROUNDS);
  assert.deepEqual(Object.keys(rates).sort(), [...names].sort());
  for (const [name, rate] of Object.entries(rates)) assert.ok(Number.isFinite(rate) && rate > 0, `${name}: ${rate}`);
  // Each loop's first 50 calls warm it up at 20000 steps.
  for (const name of names) {
    const own = log.filter(([n]) => n === name).map(([, steps]) => steps);
    assert.deepEqual(own.slice(0, 50), Array(50).fill(20000), `${name}: warm-up calls`);
  }
  // The timed calls come last: ROUNDS rounds, each calling every loop once in the same order,
  // each loop at one step count (a positive multiple of 4) in every round.
  const timed = log.slice(-ROUNDS * names.length);
  for (let round = 0; round < ROUNDS; ++round)
    assert.deepEqual(
      timed.slice(round * names.length, (round + 1) * names.length).map(([n]) => n),
      names,
      `round ${round}: every loop once, in order`,
    );
  for (const name of names) {
    const steps = timed.filter(([n]) => n === name).map(([, s]) => s);
    assert.ok(
      steps.every((s) => s === steps[0] && s > 0 && s % 4 === 0),
      `${name}: timed at ${steps}`,
    );
  }
});
