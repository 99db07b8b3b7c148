// The bench's scaling model (scripts/bench/scaling_model.mjs) and the scaling section's command
// line (scripts/bench/args.mjs). The scheduler is checked on hand-made task lists whose
// makespan on T threads is worked out by hand: index order (not longest first), the caller
// starting before the workers, more threads than tasks; the profile of traced calls (and where
// its serial part falls), the prediction, the rescaling of another split and of work that
// leaves the serial part, and the contention term: measured from hand-made 1- and k-thread
// profiles (per section, the call's for small or unpaired sections, never below 0) and applied
// as (1 + c·(active − 1)); the report's check of threads 'auto' against the fastest smaller
// count, with its noise band. The arguments: thread counts and peers
// parsed, bad ones refused with a message (the bench exits 2). Nothing here times anything.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import { caseIdsOf, parseArgs, scalingCaseIds, scalingThreads } from '../../../scripts/bench/args.mjs';
import { SCALING_CASES } from '../../../scripts/bench/cases.mjs';
import { AUTO_NOISE, autoCheck } from '../../../scripts/bench/scaling.mjs';
import {
  contentionOf,
  listSchedule,
  poolCostsOf,
  predictMs,
  predictSpeedups,
  profileFor,
  profileOf,
  withContention,
} from '../../../scripts/bench/scaling_model.mjs';

const BENCH = fileURLToPath(new URL('../../../scripts/bench.mjs', import.meta.url));

test('one thread runs the tasks one after another', () => {
  assert.equal(listSchedule([3, 1, 4, 1, 5], 1), 14);
  assert.equal(listSchedule([], 4), 0);
});

test('equal tasks spread evenly; a remainder costs a whole task', () => {
  assert.equal(listSchedule([1, 1, 1, 1, 1, 1, 1, 1], 4), 2);
  assert.equal(listSchedule([1, 1, 1, 1, 1, 1, 1, 1, 1], 4), 3);
  assert.equal(listSchedule(new Array(16).fill(2), 16), 2);
});

test('tasks are taken in index order, not longest first', () => {
  // tasks 0 and 1 start at 0 on threads 0 and 1; at 1 both are free: thread 0 (the lower)
  // takes task 2, thread 1 task 3, which ends at 4
  assert.equal(listSchedule([1, 1, 1, 3], 2), 4); // longest first would give 3
  assert.equal(listSchedule([3, 1, 1, 1], 2), 3);
});

test('more threads than tasks: the longest task decides', () => {
  assert.equal(listSchedule([5, 2], 16), 5);
  assert.equal(listSchedule([2, 5], 16), 5);
});

test('workers start late: the caller takes what it can meanwhile', () => {
  // the worker is free at 1: caller takes 2 (to 2), the worker the second 2 (1 to 3)
  assert.equal(listSchedule([2, 2], 2, { workerStart: 1 }), 3);
  // the worker is free at 5: the caller runs both before it could start one
  assert.equal(listSchedule([2, 2], 2, { workerStart: 5 }), 4);
  // a worker that takes no task does not count, however late it would start
  assert.equal(listSchedule([2], 8, { workerStart: 100 }), 2);
});

test('a bad thread count is refused', () => {
  assert.throws(() => listSchedule([1], 0), RangeError);
  assert.throws(() => listSchedule([1], 1.5), RangeError);
});

// two calls of one case: a serial part, a section of 4 tasks, a section of 1
const call = (ms, a, b) => ({
  ms,
  sections: [
    { wallMs: a.reduce((x, y) => x + y, 0) + 0.1, durations: a, wakeMs: 0.2, joinMs: 0.05 },
    { wallMs: b[0], durations: b, wakeMs: null, joinMs: 0 },
  ],
});

test('a profile: serial time outside the sections, each task its least', () => {
  const calls = [call(20, [2, 5, 2, 2], [4]), call(23, [2, 4, 2, 2], [4]), call(21, [3, 3, 2, 2], [4])];
  const p = profileOf(calls);
  assert.deepEqual(p.sections[0].durations, [2, 3, 2, 2]);
  assert.equal(p.sections.length, 2);
  assert.equal(p.shape, '4,1');
  // serial: 20 - 11.1 - 4, 23 - 10.1 - 4, 21 - 10.1 - 4: the least is 4.9
  assert.ok(Math.abs(p.serialMs - 4.9) < 1e-9, `${p.serialMs}`);
  assert.ok(Math.abs(p.sections[0].overheadMs - 0.1) < 1e-9);
  assert.equal(p.gapsMs, null, 'calls without gaps: none in the profile');
});

test('a profile: where the serial part falls, each stretch its least', () => {
  const calls = [call(20, [2, 2], [4]), call(21, [2, 2], [4])];
  calls[0].gapsMs = [3, 0.5, 1];
  calls[1].gapsMs = [2.5, 0.7, 2];
  assert.deepEqual(profileOf(calls).gapsMs, [2.5, 0.5, 1]);
});

test('a prediction: serial + list schedule + waking and joining, where a section has workers', () => {
  const profile = {
    serialMs: 5,
    sections: [
      { durations: [2, 2, 2, 2], overheadMs: 0 },
      { durations: [4], overheadMs: 0 },
    ],
  };
  const pool = { wakeMs: 0.5, joinMs: 0.25 };
  assert.equal(predictMs(profile, 1, pool), 5 + 8 + 4);
  // 2 threads: caller 2+2 (0..4), worker from 0.5: 2 (to 2.5), 2 (to 4.5): 4.5 + 0.25 join; the 1-task section alone
  assert.equal(predictMs(profile, 2, pool), 5 + 4.75 + 4);
  // 4 threads: the caller takes task 0 at 0, the workers tasks 1..3 at 0.5: all end by 2.5; + 0.25
  assert.equal(predictMs(profile, 4, pool), 5 + 2.75 + 4);
  const s = predictSpeedups(profile, {}, pool, [1, 2, 4]);
  assert.equal(s[1], 1);
  assert.ok(Math.abs(s[4] - 17 / 11.75) < 1e-12);
});

test("a section's max_threads caps its threads, whatever the pool's size", () => {
  const pool = { wakeMs: 0, joinMs: 0 };
  const capped = { serialMs: 0, sections: [{ durations: new Array(16).fill(1), overheadMs: 0, maxThreads: 4 }] };
  assert.equal(predictMs(capped, 16, pool), 4);
  assert.equal(predictMs(capped, 2, pool), 8);
  const one = { serialMs: 0, sections: [{ durations: [1, 1, 1], overheadMs: 0, maxThreads: 1 }] };
  assert.equal(predictMs(one, 8, { wakeMs: 5, joinMs: 5 }), 3, 'a cap of 1 runs on the caller, no pool costs');
  // the cap comes from the T-thread trace, the durations from the 1-thread one
  const p1 = { serialMs: 0, sections: [{ durations: [1, 1, 1, 1], overheadMs: 0, maxThreads: null }], shape: '4' };
  const pT = { serialMs: 0, sections: [{ durations: [9, 9, 9, 9], overheadMs: 0, maxThreads: 2 }], shape: '4' };
  assert.equal(predictMs(profileFor(p1, pT).profile, 4, pool), 2);
});

test('the pool costs: medians over the sections a worker took part in', () => {
  const calls = [call(20, [2, 2], [4]), call(20, [2, 2], [4])];
  calls[1].sections[0].wakeMs = 0.4;
  calls[1].sections[0].joinMs = 0.15;
  assert.deepEqual(poolCostsOf(calls), { wakeMs: 0.30000000000000004, joinMs: 0.1, sections: 2 });
  assert.equal(poolCostsOf([call(1, [1], [1])].map((c) => ({ ...c, sections: [c.sections[1]] }))), null);
});

test('another split at T threads: its tasks, holding the 1-thread work', () => {
  const p1 = { serialMs: 1, sections: [{ durations: [4, 4], overheadMs: 0 }], shape: '2' };
  assert.deepEqual(profileFor(p1, { ...p1 }).profile.sections, [
    { durations: [4, 4], overheadMs: 0, maxThreads: null },
  ]);
  assert.equal(profileFor(p1, null).from, '1-thread trace');
  // split into 4 tasks at T, each traced at 3 (slower, sharing cores): scaled to 2 each
  const pT = { serialMs: 9, sections: [{ durations: [3, 3, 3, 3], overheadMs: 0 }], shape: '4' };
  const { profile, from } = profileFor(p1, pT);
  assert.deepEqual(profile.sections[0].durations, [2, 2, 2, 2]);
  assert.equal(profile.serialMs, 1);
  assert.match(from, /rescaled/);
  const pool = { wakeMs: 0, joinMs: 0 };
  // 1 thread: 1 + 8; 4 threads with the 4-task split: 1 + 2
  assert.equal(predictSpeedups(p1, { 4: pT }, pool, [4])[4], 9 / 3);
});

test('work that leaves the serial part for a section at T threads counts once, in the section', () => {
  // 1 thread: packing (1) on the caller, in the serial part of 2; 2 threads: packing in 2 tasks
  const p1 = { serialMs: 2, sections: [{ durations: [4, 4], overheadMs: 0 }], shape: '2' };
  const p2 = {
    serialMs: 1,
    sections: [
      { durations: [0.5, 0.5], overheadMs: 0 },
      { durations: [4, 4], overheadMs: 0 },
    ],
    shape: '2,2',
  };
  const { profile } = profileFor(p1, p2, { serialMs: 1 });
  assert.equal(profile.serialMs, 1);
  assert.deepEqual(
    profile.sections.map((s) => s.durations),
    [
      [0.5, 0.5],
      [4, 4],
    ],
  );
  const pool = { wakeMs: 0, joinMs: 0 };
  assert.equal(predictSpeedups(p1, { 2: p2 }, pool, [2], null, 1)[2], 10 / 5.5);
  // a serial part measured larger on 2 threads is noise: the 1-thread one stays
  assert.equal(profileFor(p1, p2, { serialMs: 3 }).profile.serialMs, 2);
});

const sec = (durations, maxThreads = null) => ({ durations, overheadMs: 0, maxThreads });
const close = (a, b, what) => assert.ok(Math.abs(a - b) < 1e-12, `${what}: ${a}, expected ${b}`);

test('contention: each section slowed by c per extra thread running it', () => {
  const pool = { wakeMs: 0, joinMs: 0 };
  const profile = { serialMs: 1, sections: [{ ...sec(new Array(8).fill(1)), contention: 0.1 }] };
  close(predictMs(profile, 1, pool), 1 + 8, '1 thread: no contention');
  // 4 threads: tasks of 1.3, two each
  close(predictMs(profile, 4, pool), 1 + 2.6, '4 threads');
  // 16 threads: only 8 run (one task each), so 7 extra: tasks of 1.7
  close(predictMs(profile, 16, pool), 1 + 1.7, '16 threads, 8 tasks');
  // a cap of 2 threads: 1 extra
  const capped = { serialMs: 0, sections: [{ ...sec(new Array(8).fill(1), 2), contention: 0.1 }] };
  close(predictMs(capped, 16, pool), 4 * 1.1, 'max_threads 2');
  const s = predictSpeedups({ ...profile, shape: '8' }, {}, pool, [4], { shape: '8', sections: [0.1], call: 0.1 });
  close(s[4], 9 / 3.6, 'predictSpeedups with the term');
});

test('contention measured from a 2-thread trace: per section, the call for the rest', () => {
  const p1 = { serialMs: 1, sections: [sec([2, 2, 2, 2]), sec([4]), sec([1, 1])], shape: '4,1,2' };
  const p2 = { serialMs: 1, sections: [sec([2.2, 2.2, 2.2, 2.2]), sec([4]), sec([1.5, 1.5])], shape: '4,1,2' };
  const c = contentionOf(p1, p2, 2);
  close(c.sections[0], 0.1, 'section 0: 8.8 / 8');
  close(c.sections[2], 0.5, 'section 2: 3 / 2');
  // the call: sections 0 and 2 ran on 2 threads, 11.8 / 10
  close(c.call, 0.18, 'the call');
  close(c.sections[1], 0.18, 'a one-task section takes the call');
  // on 4 threads, the per-thread slowdown is the ratio's excess over the 3 extra threads
  const p4 = { ...p2, sections: [sec([2.6, 2.6, 2.6, 2.6]), sec([4]), sec([1, 1])] };
  close(contentionOf(p1, p4, 4).sections[0], 0.1, '4 threads: 10.4 / 8 over 3 extra');
  // faster on 2 threads is noise: 0, not a speed-up
  const p2f = { ...p2, sections: [sec([1.9, 1.9, 1.9, 1.9]), sec([4]), sec([1, 1])] };
  assert.equal(contentionOf(p1, p2f, 2).sections[0], 0);
  // a section the 2-thread trace ran on the caller alone (max_threads 1) takes the call's c
  const p2c = { ...p2, sections: [sec([2.2, 2.2, 2.2, 2.2]), sec([4]), sec([1.5, 1.5], 1)] };
  close(contentionOf(p1, p2c, 2).sections[2], 0.1, 'a capped section');
  // a section of less than a tenth of the work is noise: it takes the call's c
  const small1 = { serialMs: 0, sections: [sec([10, 10]), sec([0.5, 0.5])], shape: '2,2' };
  const small2 = { serialMs: 0, sections: [sec([11, 11]), sec([2, 2])], shape: '2,2' };
  const cs = contentionOf(small1, small2, 2);
  close(cs.sections[0], 0.1, 'the large section: its own');
  close(cs.sections[1], 26 / 21 - 1, 'the small one: the call');
});

test('contention where 2 threads split the work differently: section by section, else the call', () => {
  // 1 thread: packing on the caller (one task) and 2 tasks of 4; 2 threads: packing in 2
  // tasks of 0.55, the rest in 4 tasks of 2.5
  const p1 = { serialMs: 0, sections: [sec([1], 1), sec([4, 4])], shape: '1,2' };
  const p2 = { serialMs: 0, sections: [sec([0.55, 0.55]), sec([2.5, 2.5, 2.5, 2.5])], shape: '2,4' };
  const c = contentionOf(p1, p2, 2);
  close(c.sections[0], 0.1, 'packing: 1.1 / 1');
  close(c.sections[1], 0.25, 'the rest: 10 / 8');
  const p = withContention(profileFor(p1, p2).profile, c);
  assert.deepEqual(
    p.sections.map((s) => s.contention),
    c.sections,
  );
  // 2 threads fold the packing into the product: one section, so the call's c for it
  const p2one = { serialMs: 0, sections: [sec([2.75, 2.75, 2.75, 2.75])], shape: '4' };
  const c1 = contentionOf(p1, p2one, 2);
  close(c1.call, 11 / 9 - 1, 'all the work ran on 2 threads: 11 / 9');
  assert.deepEqual(c1.sections, [c1.call, c1.call]);
  const q = withContention(profileFor(p1, p2one).profile, c1);
  assert.deepEqual(
    q.sections.map((s) => s.contention),
    [c1.call],
  );
  assert.equal(withContention(p1, null), p1, 'no term: the profile as it is');
});

test("threads 'auto' against every smaller count: the fastest of them, slower past the noise", () => {
  const row = (c, impl, threads, ms) => ({ case: c, impl, threads, ms, status: 'ok' });
  const rows = [
    // 'auto' picked 8 (also run as ours-8); 4 threads was the fastest smaller count
    ...[
      ['a', 1, 40],
      ['a', 2, 21],
      ['a', 4, 11],
      ['a', 8, 12],
    ].map(([c, t, ms]) => row(c, `ours-${t}`, t, ms)),
    row('a', 'ours-auto', 8, 11 * (1 + AUTO_NOISE) + 0.01),
    // 'auto' picked 2: within the noise of 1 thread, not slower; its own count and the counts
    // above it are not smaller counts
    row('b', 'ours-1', 1, 10),
    row('b', 'ours-2', 2, 6),
    row('b', 'ours-auto', 2, 10 * (1 + AUTO_NOISE) - 0.01),
    row('b', 'ours-4', 4, 1),
  ];
  const check = autoCheck(rows, ['a', 'b', 'c'], [1, 2, 4, 8]);
  assert.equal(check.a.autoThreads, 8);
  assert.deepEqual(check.a.fastest, { threads: 4, ms: 11 });
  assert.equal(check.a.slower, true);
  assert.deepEqual(
    check.b.smaller.map((r) => r.threads),
    [1],
  );
  assert.equal(check.b.fastest.threads, 1);
  assert.equal(check.b.slower, false, `${check.b.ratio} is within the noise`);
  assert.equal(check.c, null, "no 'auto' row: nothing to check");
});

test('--only scaling takes thread counts, peers and cases', () => {
  const o = parseArgs(['--only', 'scaling', '--threads', '16,1,4,4', '--peers=ort']);
  assert.deepEqual(o.sections, ['scaling']);
  assert.deepEqual(o.threads, [1, 4, 16]);
  assert.deepEqual(o.peers, ['ort']);
  assert.deepEqual(scalingThreads(o, 2), [1, 4, 16], 'forced counts run above the cores');
  assert.deepEqual(scalingCaseIds(o), SCALING_CASES);
  assert.deepEqual(parseArgs(['--only=scaling', '--peers', 'none']).peers, []);
  const d = parseArgs(['--only', 'scaling']);
  assert.deepEqual(scalingThreads(d, 2), [1, 2]);
  assert.deepEqual(scalingThreads(d, 12), [1, 2, 4, 8]);
  assert.deepEqual(d.peers, ['ort', 'tfjs']);
  const c = parseArgs(['--only', 'scaling', '--cases', 'mha,matmul-1024']);
  assert.deepEqual(c.sections, ['scaling']);
  assert.deepEqual(scalingCaseIds(c), ['mha', 'matmul-1024']);
  assert.deepEqual(caseIdsOf(c), [], 'the kernel sections run none of them');
});

test('a browser run takes the kernel and decode sections and their cases, and refuses a pick with none of them', () => {
  const d = parseArgs(['--only', 'decode', '--browser=firefox', '--cases', 'decode-1024,decode-8192']);
  assert.deepEqual(d.sections, ['decode']);
  assert.deepEqual(caseIdsOf(d), ['decode-1024', 'decode-8192']);
  assert.ok(caseIdsOf(parseArgs(['--browser', '--only', 'decode'])).includes('decode-16384-int8'));
  assert.deepEqual(parseArgs(['--browser']).sections, ['matmul', 'attention', 'mha', 'backward', 'decode']);
});

test('the default run leaves the scaling section out; a scaling case brings it in', () => {
  assert.ok(!parseArgs([]).sections.includes('scaling'));
  assert.deepEqual(parseArgs(['--cases', 'mha']).sections, ['mha']);
  assert.deepEqual(parseArgs(['--cases', 'attention-bwd-1024']).sections, ['scaling']);
  const both = parseArgs(['--only', 'mha,scaling', '--cases', 'mha,matmul-1024']);
  assert.deepEqual(both.sections, ['mha', 'scaling']);
  assert.deepEqual(caseIdsOf(both), ['mha']);
});

for (const [args, message] of [
  [['--browser=webkit', '--only', 'startup'], /--browser runs the sections .*: none of them is picked/],
  [['--only', 'scaling', '--threads', '0,2'], /--threads: integers from 1 to 64.*not 0/],
  [['--only', 'scaling', '--threads', 'two'], /--threads: .*not two/],
  [['--only', 'scaling', '--threads'], /--threads needs a list/],
  [['--only', 'scaling', '--peers', 'tf'], /--peers: some of ort, tfjs, or none; not tf/],
  [['--threads', '2'], /--threads and --peers are the scaling section's: add --only scaling/],
]) {
  test(`bench ${args.join(' ')} is refused: ${message}`, () => {
    const r = spawnSync(process.execPath, [BENCH, ...args], { encoding: 'utf8' });
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, message);
  });
}
