// The pool trace the scaling model reads (cpp/src/runtime/pool_trace.h,
// scripts/bench/pool_trace.mjs): on 1 and 2 threads, a matmul's calls record their parallel sections, every task of a section
// once, inside the section's time, on the caller alone at 1 thread and on at most two threads
// at 2 (how the work is split is the code's to choose, per thread count). Needs the bench-only modules (skipped, saying how to
// build them, where they are not built). Nothing here asserts a speed.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { create } from '../../../scripts/bench/impl_ours.mjs';
import { caseById } from '../../../scripts/bench/cases.mjs';
import { makeInputs } from '../../../scripts/bench/inputs.mjs';
import { takeTrace, traceLib, traceMissing } from '../../../scripts/bench/pool_trace.mjs';

const missing = traceMissing();

// threads -> the raw sections of one call of matmul 1024³ (work for 2 threads)
async function traceOneCall(threads) {
  const impl = await create({ threads, isa: 'simd128', libUrl: traceLib() });
  try {
    const spec = caseById('matmul-1024');
    const prepared = await impl.prepare(spec, makeInputs(spec));
    prepared.variants[0].run();
    takeTrace();
    prepared.variants[0].run();
    return { threads: impl.threads, sections: takeTrace() };
  } finally {
    impl.dispose();
  }
}

function checkSections(sections) {
  assert.ok(sections.length >= 1, 'no section recorded');
  for (const { begin, end, caller, tasks } of sections) {
    assert.ok(begin <= end, `section ends (${end}) before it begins (${begin})`);
    assert.ok(tasks.length > 0 && tasks.length % 3 === 0);
    for (let i = 0; i < tasks.length; i += 3) {
      const [start, stop, thread] = [tasks[i], tasks[i + 1], tasks[i + 2]];
      assert.ok(thread >= 0, `task ${i / 3} was not recorded (thread ${thread})`);
      assert.ok(begin <= start && start <= stop && stop <= end, `task ${i / 3} lies outside its section`);
    }
    assert.ok(Number.isInteger(caller) && caller >= 0);
  }
}

test('1 thread: every task of every section recorded, on the caller', { skip: missing ?? false }, async () => {
  const { threads, sections } = await traceOneCall(1);
  assert.equal(threads, 1);
  checkSections(sections);
  for (const s of sections)
    for (let i = 2; i < s.tasks.length; i += 3) assert.equal(s.tasks[i], s.caller, 'a task ran off the caller');
});

test('2 threads: every task recorded, on at most the two threads', { skip: missing ?? false }, async () => {
  const { threads, sections } = await traceOneCall(2);
  assert.equal(threads, 2);
  checkSections(sections);
  const ran = new Set();
  for (const s of sections) for (let i = 2; i < s.tasks.length; i += 3) ran.add(s.tasks[i]);
  // which threads took tasks depends on the machine's load; that no more than two did does not
  assert.ok(ran.size <= 2 && [...ran].every((t) => t >= 0), `threads ${[...ran]} ran tasks`);
});
