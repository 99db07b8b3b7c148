// The scaling section (`npm run bench -- --only scaling`): issue 29's cases at 1, 2, 4, 8 and
// 16 threads (those up to the machine's cores unless --threads says otherwise), ours on
// SIMD128 against onnxruntime-web (env.wasm.numThreads) and tfjs-wasm at the same count, each
// implementation and count in a child process of its own (scaling_child.mjs), with the
// speed-up over one thread and the margin (peer ÷ ours); then the scaling model
// (scaling_model.mjs) from pool traces (pool_trace.mjs) of 1 thread (the tasks' durations),
// of 2 threads (the pool's wake-up and join times, where the machine has 2 cores) and of every
// other count (how the work is split there), its predicted speed-up beside each measured one,
// and beside issue 29's figures from a 16-core Xeon.
import { scalingCaseIds, scalingThreads, SCALING_THREADS } from './args.mjs';
import { caseById } from './cases.mjs';
import { failedRows } from './groups.mjs';
import { relativeDiff } from './inputs.mjs';
import { buildTrace } from './pool_trace.mjs';
import { contentionOf, median, poolCostsOf, predictSpeedups, profileFor, profileOf } from './scaling_model.mjs';
import { runChild } from './spawn.mjs';
import { fmtMs } from './table.mjs';

// Issue 29's table: a 16-core Intel Xeon (Sapphire/Emerald Rapids class, AVX-512; a virtual
// machine), Node 22, the package's SIMD128 build against onnxruntime-web 1.30, medians.
export const ISSUE_29 = {
  cpu: "16-core Intel Xeon (Sapphire/Emerald Rapids class, AVX-512, a VM), Node 22 (issue 29; the code before the split of issue 29's deliverable 3)",
  cases: {
    'matmul-1024': { oursMs: 72.3, speedup: { 2: 1.85, 4: 2.37, 8: 3.55, 16: 5.26 } },
    mha: { oursMs: 55.4, speedup: { 2: 1.88, 4: 2.74, 8: 4.6, 16: 4.42 } },
    'mha-1024': { oursMs: 454, speedup: { 2: 1.96, 4: 3.02, 8: 4.48, 16: 7.36 } },
    'decode-8192': { oursMs: 13.7, speedup: { 2: 4.4, 4: 6.7, 8: 11.2, 16: 10.0 } },
  },
};

// The peers' and ours' outputs are compared on their samples (inputs.mjs): a margin means
// nothing if they computed different things.
const AGREE = 2e-3;

// -> { threads, caseIds, peers, rows, model, notes }
export async function measureScaling({ options, machine, peersOk, log }) {
  const threads = scalingThreads(options, machine.cores);
  const caseIds = scalingCaseIds(options);
  const peers = peersOk ? options.peers : [];
  const notes = [];
  if (!peersOk && options.peers.length) notes.push('the peers are not installed: ours only');
  const over = threads.filter((t) => t > machine.cores);
  if (over.length)
    notes.push(`${over.join(', ')} thread(s) ran on ${machine.cores} cores: those rows share cores and mean little`);
  const child = (task, tag) =>
    runChild(task, {
      timeoutMs: 30 * 60 * 1000,
      onStderr: (text) =>
        text
          .split('\n')
          .filter(Boolean)
          .forEach((l) => log(`  [${tag}] ${l.trim()}`)),
    });

  const rows = [];
  for (const t of threads) {
    for (const impl of ['ours', ...peers]) {
      log(`scaling: ${impl} on ${t} thread(s), in a child process`);
      const r = await child({ mode: 'scaling', impl, threads: t, caseIds, quick: options.quick }, `${impl}-${t}`);
      if (r.error) rows.push(...failedRows(`${impl}-${t}`, t, caseIds, 'failed', r.error));
      else rows.push(...r.rows);
    }
  }

  // threads: 'auto' (what createAttention gives by default: the cores, up to 16), ours only,
  // for the check that it is never slower than a smaller count (autoCheck)
  log("scaling: ours on threads 'auto', in a child process");
  const auto = await child(
    { mode: 'scaling', impl: 'ours', threads: 'auto', caseIds, quick: options.quick },
    'ours-auto',
  );
  if (auto.error) rows.push(...failedRows('ours-auto', 'auto', caseIds, 'failed', auto.error));
  else rows.push(...auto.rows);

  let model = null;
  log('scaling model: building the pool-trace modules (bash scripts/build/build.sh pool_trace)');
  const missing = buildTrace();
  if (missing) notes.push(`no scaling model: ${missing}`);
  else {
    const traces = {};
    for (const t of [...new Set([1, ...SCALING_THREADS, ...threads])].sort((a, b) => a - b)) {
      log(`scaling model: tracing the pool on ${t} thread(s), in a child process`);
      traces[t] = await child({ mode: 'trace', threads: t, caseIds, quick: options.quick }, `trace-${t}`);
    }
    model = buildModel(traces, caseIds, machine.cores, notes);
  }
  for (const r of rows) {
    const ours = rows.find((o) => o.case === r.case && o.impl === 'ours-1' && o.status === 'ok');
    const d = r.status === 'ok' && ours && r !== ours ? relativeDiff(r.sample, ours.sample) : null;
    if (d != null && d > AGREE)
      notes.push(
        `${r.impl} on ${r.case} differs from ours by ${d.toExponential(1)} (relative): check before trusting its margin`,
      );
  }
  return { threads, caseIds, peers, rows: rows.map(({ sample: _s, ...r }) => r), model, notes };
}

// How far above the fastest smaller count 'auto' may measure before the check calls it
// slower: the spread of medians between runs of one case on a quiet machine.
export const AUTO_NOISE = 0.05;

// rows (measureScaling's), caseIds, threads -> per case { autoThreads, autoMs, smaller: [{ threads,
// ms }], fastest (the fastest of those), ratio (auto ÷ fastest), slower (ratio above 1 + AUTO_NOISE) }:
// threads: 'auto' against every count below the one it picked. Where 'auto' picked a count
// that also ran, both are the same pool and the check is that count against the smaller ones.
export function autoCheck(rows, caseIds, threads) {
  const ok = (c, impl) => rows.find((r) => r.case === c && r.impl === impl && r.status === 'ok');
  return Object.fromEntries(
    caseIds.map((id) => {
      const a = ok(id, 'ours-auto');
      if (!a) return [id, null];
      const smaller = threads
        .filter((t) => t < a.threads)
        .map((t) => ({ threads: t, ms: ok(id, `ours-${t}`)?.ms }))
        .filter((r) => r.ms != null);
      const fastest = smaller.reduce((b, r) => (!b || r.ms < b.ms ? r : b), null);
      const ratio = fastest ? a.ms / fastest.ms : null;
      return [
        id,
        {
          autoThreads: a.threads,
          autoMs: a.ms,
          smaller,
          fastest,
          ratio,
          slower: ratio != null && ratio > 1 + AUTO_NOISE,
        },
      ];
    }),
  );
}

// The fewest traced calls, on 1 thread and on the cost trace's count, that the contention
// term is measured from (each task the least over them).
const MIN_CONTENTION_CALLS = 5;

// traces: { [threads]: a trace child's answer } -> { pool, cases: { [id]: … } }
export function buildModel(traces, caseIds, cores, notes) {
  const ok = (t, id) => traces[t] && !traces[t].error && traces[t].cases[id]?.calls;
  for (const [t, tr] of Object.entries(traces))
    if (tr.error) notes.push(`pool trace on ${t} thread(s) failed: ${tr.error}`);
  // the wake-up and join times: from the largest count up to the cores that has workers
  const costFrom = Object.keys(traces)
    .map(Number)
    .filter((t) => t >= 2 && t <= cores && !traces[t].error)
    .pop();
  let pool = { wakeMs: 0, joinMs: 0, threads: null, sections: 0 };
  if (costFrom) {
    const costs = poolCostsOf(
      caseIds.filter((id) => ok(costFrom, id)).flatMap((id) => traces[costFrom].cases[id].calls),
    );
    if (costs) pool = { ...costs, threads: costFrom };
  }
  if (!pool.threads) notes.push('no pool trace on 2..cores threads: the model takes waking and joining as free');
  const cases = {};
  for (const id of caseIds) {
    if (!ok(1, id)) {
      cases[id] = { error: traces[1]?.cases?.[id]?.error ?? traces[1]?.error ?? 'no 1-thread trace' };
      continue;
    }
    const calls1 = traces[1].cases[id].calls;
    const profile1 = profileOf(calls1);
    const profilesAt = {},
      from = {};
    for (const t of Object.keys(traces).map(Number)) {
      if (t === 1 || !ok(t, id)) continue;
      profilesAt[t] = profileOf(traces[t].cases[id].calls);
      from[t] = profileFor(profile1, profilesAt[t]).from;
    }
    const resplit = Object.keys(from).filter((t) => from[t] !== '1-thread trace');
    if (resplit.length)
      notes.push(
        `${id}: the work is split differently at ${resplit.join(', ')} threads; the model takes that split from those traces`,
      );
    const counts = [...new Set([1, ...SCALING_THREADS, ...Object.keys(traces).map(Number)])].sort((a, b) => a - b);
    const work = (p) => p.sections.reduce((a, s) => a + s.durations.reduce((x, y) => x + y, 0), 0);
    const tasks = profile1.sections.map((s) => s.durations.length);
    // c from fewer than MIN_CONTENTION_CALLS calls a side (--quick traces 2) is a busy
    // moment's, not the machine's: the model then goes without the term
    const measured = (t) => (traces[t]?.cases[id]?.calls?.length ?? 0) >= MIN_CONTENTION_CALLS;
    const contention =
      pool.threads && profilesAt[pool.threads] && measured(1) && measured(pool.threads)
        ? contentionOf(profile1, profilesAt[pool.threads], pool.threads)
        : null;
    if (pool.threads && !contention)
      notes.push(`${id}: too few traced calls to measure the contention term: the model is the schedule alone`);
    const manySerialMs = pool.threads && profilesAt[pool.threads] ? profilesAt[pool.threads].serialMs : undefined;
    cases[id] = {
      callMs: median(calls1.map((c) => c.ms)),
      serialMs: profile1.serialMs,
      gapsMs: profile1.gapsMs,
      workMs: work(profile1),
      sections: tasks.length,
      tasks: tasks.reduce((a, b) => a + b, 0),
      tasksPerSection: tasks.length ? [Math.min(...tasks), Math.max(...tasks)] : [0, 0],
      speedup: predictSpeedups(profile1, profilesAt, pool, counts, contention, manySerialMs),
      // the schedule alone (no contention term), for comparison
      scheduleSpeedup: predictSpeedups(profile1, profilesAt, pool, counts, null, manySerialMs),
      // the serial part where several threads run (the cost trace's count)
      manySerialMs,
      from,
      // the contention term: the call's slowdown per extra thread, and the least and most of
      // its sections'
      contention: contention && {
        call: contention.call,
        range: [Math.min(...contention.sections), Math.max(...contention.sections)],
      },
      // the same slowdown per extra thread measured at each traced count up to the cores
      // (only 2 on 2 cores; every count on a many-core machine): where it grows with the
      // count, the line through 1 and 2 threads under-predicts the loss
      contentionAt: Object.fromEntries(
        Object.keys(profilesAt)
          .map(Number)
          .filter((t) => contention && t >= 2 && t <= cores && measured(t))
          .map((t) => [t, contentionOf(profile1, profilesAt[t], t).call]),
      ),
    };
  }
  return { pool, cases };
}

const pct = (v) => `${(100 * v).toFixed(1)} %`;
const x = (v) => (v == null || !Number.isFinite(v) ? '' : `${v.toFixed(2)}×`);
const table = (header, rows) =>
  [
    `| ${header.join(' | ')} |`,
    `|${header.map(() => '---').join('|')}|`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n');

// -> the section's report (Markdown tables, ready for docs)
export function renderScaling(s, machine) {
  const out = [
    `## Scaling: ours (SIMD128) at ${s.threads.join(', ')} threads, each count in its own process`,
    `${machine.cpuModel}, ${machine.cores} cores, load ${machine.loadAverage.join(' ')} at the start, Node ${machine.node}`,
    '',
  ];
  const ok = (c, impl) => s.rows.find((r) => r.case === c && r.impl === impl && r.status === 'ok');
  const peerNames = { ort: 'onnxruntime-web', tfjs: 'tfjs-wasm' };
  const header = [
    'case',
    'threads',
    'ours ms',
    'speed-up',
    'model',
    'first call ms',
    ...s.peers.flatMap((p) => [`${peerNames[p]} ms`, `${peerNames[p]} ÷ ours`]),
  ];
  const body = [];
  for (const id of s.caseIds) {
    const one = ok(id, 'ours-1');
    for (const t of s.threads) {
      const r = ok(id, `ours-${t}`);
      const failed = s.rows.find((q) => q.case === id && q.impl === `ours-${t}` && q.status !== 'ok');
      body.push([
        t === s.threads[0] ? caseById(id).label : '',
        t,
        r ? fmtMs(r.ms) : failed ? `${failed.status}: ${failed.reason}` : '',
        r && one ? x(one.ms / r.ms) : '',
        x(s.model?.cases[id]?.speedup?.[t]),
        r ? fmtMs(r.firstMs) : '',
        ...s.peers.flatMap((p) => {
          const q = ok(id, `${p}-${t}`);
          const why = s.rows.find((w) => w.case === id && w.impl === `${p}-${t}` && w.status !== 'ok');
          return [q ? fmtMs(q.ms) : (why?.status ?? ''), q && r ? x(q.ms / r.ms) : ''];
        }),
      ]);
    }
  }
  out.push(table(header, body), '');
  out.push(
    "speed-up: ours at that count ÷ ours on 1 thread (1 thread runs the single-thread build); model: the scaling model's prediction of it; peer ÷ ours: > 1 where ours is faster. Medians after 1.5 s of warm-up; the first call is timed apart.",
    '',
  );
  const auto = autoCheck(s.rows, s.caseIds, s.threads);
  const autoIds = s.caseIds.filter((id) => auto[id]);
  if (autoIds.length) {
    out.push(
      `### threads: 'auto' (${auto[autoIds[0]].autoThreads} threads here) against every smaller count`,
      '',
      table(
        ['case', "'auto' ms", 'the smaller counts, ms', "'auto' ÷ the fastest of them", 'verdict'],
        autoIds.map((id) => {
          const a = auto[id];
          return [
            caseById(id).label,
            fmtMs(a.autoMs),
            a.smaller.map((r) => `${r.threads}: ${fmtMs(r.ms)}`).join(', ') || '(none ran)',
            a.fastest ? `${a.ratio.toFixed(2)} (against ${a.fastest.threads})` : '',
            !a.fastest ? '' : a.slower ? `**slower** than ${a.fastest.threads} threads` : 'not slower',
          ];
        }),
      ),
      '',
      `'auto' is slower where it measures more than ${100 * AUTO_NOISE} % above the fastest smaller count (medians; within that, runs of one case differ on a quiet machine).`,
      '',
    );
  }
  if (s.model) {
    const { pool, cases } = s.model;
    const counts = [2, 4, 8, 16];
    out.push(
      `### The model's inputs (pool traces; waking ${(pool.wakeMs * 1000).toFixed(0)} µs and joining ${(pool.joinMs * 1000).toFixed(0)} µs per section, medians over ${pool.sections} sections on ${pool.threads ?? '-'} threads)`,
      '',
      table(
        [
          'case',
          'traced call ms (1 thread)',
          'serial ms',
          'serial share',
          'sections',
          'tasks (per section)',
          `slowdown per extra thread (call; sections), from ${pool.threads ?? '-'} threads`,
          ...counts.map((t) => `model ${t} (schedule alone)`),
        ],
        s.caseIds.map((id) => {
          const c = cases[id];
          if (c.error) return [caseById(id).label, `no trace: ${c.error}`];
          return [
            caseById(id).label,
            fmtMs(c.callMs),
            fmtMs(c.serialMs),
            `${((100 * c.serialMs) / (c.serialMs + c.workMs)).toFixed(1)} %`,
            c.sections,
            `${c.tasks} (${c.tasksPerSection[0]}..${c.tasksPerSection[1]})`,
            c.contention
              ? `${pct(c.contention.call)} (${pct(c.contention.range[0])}..${pct(c.contention.range[1])})` +
                Object.entries(c.contentionAt)
                  .filter(([t]) => Number(t) !== pool.threads)
                  .map(([t, v]) => `; at ${t}: ${pct(v)}`)
                  .join('')
              : '',
            ...counts.map((t) => `${x(c.speedup[t])} (${x(c.scheduleSpeedup[t])})`),
          ];
        }),
      ),
      '',
    );
    const gapped = s.caseIds.filter((id) => cases[id]?.gapsMs);
    if (gapped.length)
      out.push(
        "### The serial part by where it falls (1 thread): before the first section (the JS copies in, the finiteness scans, packing on the caller), between sections, after the last (the result's scan and copy out)",
        '',
        table(
          ['case', 'serial ms', 'before', 'between (in order)', 'after'],
          gapped.map((id) => {
            const g = cases[id].gapsMs;
            return [
              caseById(id).label,
              fmtMs(cases[id].serialMs),
              fmtMs(g[0]),
              g
                .slice(1, -1)
                .map((v) => v.toFixed(3))
                .join(' '),
              fmtMs(g[g.length - 1]),
            ];
          }),
        ),
        '',
      );
    const checked = s.caseIds.filter((id) => ISSUE_29.cases[id] && cases[id] && !cases[id].error);
    if (checked.length) {
      out.push(
        `### The model from this machine against ${ISSUE_29.cpu}`,
        '',
        table(
          ['case', ...counts.flatMap((t) => [`${t}: Xeon`, `${t}: model`, `${t}: model ÷ Xeon (schedule alone)`])],
          checked.map((id) => [
            caseById(id).label,
            ...counts.flatMap((t) => {
              const m = ISSUE_29.cases[id].speedup[t],
                p = cases[id].speedup[t],
                q = cases[id].scheduleSpeedup[t];
              return [x(m), x(p), `${(p / m).toFixed(2)} (${(q / m).toFixed(2)})`];
            }),
          ]),
        ),
        '',
      );
    }
  }
  if (s.notes.length) out.push(...s.notes.map((n) => `- ${n}`), '');
  return out.join('\n');
}
