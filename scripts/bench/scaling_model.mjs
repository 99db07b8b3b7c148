// The scaling model: a call's time at T threads from a 1- and a 2-thread pool trace, so that a
// 2-core machine can say what 4-16 cores would do. A call is its serial part plus its parallel
// sections (pool_trace.mjs); the pool runs a section's tasks
//   for (i = 0; i < n; ++i) task(i)
// by list scheduling in index order on min(T, max_threads) threads, the workers starting after
// the pool's wake-up. Each task slows linearly with the threads beside it, by c per thread,
// measured per section on 2 threads (contentionOf): the one contention term 2 cores can measure.
// Not modelled: a bandwidth knee, clock changes, hyper-threads, the OS's scheduling; each makes
// the model predict more speed-up than a machine gives (scripts/LAB.md, "The scaling model").
// Everything here is a pure function of its arguments (tests/js/tools/scaling_model.test.mjs).

// -> the median of a non-empty list of numbers
export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

// durations [n] (task i takes durations[i]), threads T, workerStart: when the T - 1 workers
// can take their first task (the caller, thread 0, can at 0) -> the time the last task ends.
// Each task goes, in index order, to the thread free first (on a tie, the lower thread: the
// caller before the workers); a thread that takes no task does not count.
export function listSchedule(durations, threads, { workerStart = 0 } = {}) {
  if (!Number.isInteger(threads) || threads < 1) throw new RangeError(`listSchedule: threads ${threads}`);
  const free = [0, ...new Array(threads - 1).fill(workerStart)];
  let end = 0;
  for (const d of durations) {
    let k = 0;
    for (let j = 1; j < threads; ++j) if (free[j] < free[k]) k = j;
    free[k] += d;
    end = Math.max(end, free[k]);
  }
  return end;
}

// One section's time on T threads: on one thread (or with one task, or a max_threads of 1,
// which the pool runs on the caller alone) the sum of its tasks; else the list schedule on
// min(T, maxThreads) threads of its tasks slowed by the contention term (contention: c, the
// slowdown per extra thread, 0 where not measured) plus the pool's wake-up and join.
// overheadMs: what the section costs beyond its tasks at any count (the loop, the trace);
// maxThreads: null for no limit.
export function sectionMs(section, threads, pool) {
  const { durations, overheadMs = 0, maxThreads = null, contention = 0 } = section;
  const t = Math.min(threads, maxThreads ?? Infinity);
  if (t <= 1 || durations.length <= 1) return overheadMs + durations.reduce((a, b) => a + b, 0);
  const slower = 1 + contention * (Math.min(t, durations.length) - 1);
  return (
    overheadMs +
    listSchedule(
      durations.map((d) => d * slower),
      t,
      { workerStart: pool.wakeMs },
    ) +
    pool.joinMs
  );
}

// profile { serialMs, sections: [{ durations, overheadMs }] }, threads, pool { wakeMs, joinMs }
// -> the call's predicted time at that count
export function predictMs(profile, threads, pool) {
  return profile.sections.reduce((sum, s) => sum + sectionMs(s, threads, pool), profile.serialMs);
}

// The shape of a traced call: its sections' task counts, e.g. "16,16,8".
export const shapeOf = (sections) => sections.map((s) => s.durations.length).join(',');

// calls: one case's traced calls on one thread, [{ ms, gapsMs, sections: [{ wallMs, durations }] }]
// -> its profile: the serial part (the call's time outside its sections) as the least over
// the calls; the sections and their tasks from the calls of the most common shape, each
// task's duration the least over them. The least, not the median: on a shared machine other
// processes only ever add time, to whichever task or serial stretch they preempt (a task of
// 60 µs traced at 35 ms), and the largest task decides a section on many threads. (A call's
// shape is the same every time unless the code splits work by something other than the
// shapes and the thread count.)
export function profileOf(calls) {
  if (!calls.length) throw new Error('profileOf: no traced calls');
  const least = (xs) => Math.min(...xs);
  const serialMs = least(calls.map((c) => c.ms - c.sections.reduce((a, s) => a + s.wallMs, 0)));
  const byShape = new Map();
  for (const c of calls) byShape.set(shapeOf(c.sections), [...(byShape.get(shapeOf(c.sections)) ?? []), c]);
  const same = [...byShape.values()].sort((a, b) => b.length - a.length)[0];
  const sections = same[0].sections.map((_, j) => {
    const durations = same[0].sections[j].durations.map((_, i) => least(same.map((c) => c.sections[j].durations[i])));
    const overheadMs = least(
      same.map((c) => c.sections[j].wallMs - c.sections[j].durations.reduce((a, b) => a + b, 0)),
    );
    return { durations, overheadMs: Math.max(0, overheadMs), maxThreads: same[0].sections[j].maxThreads ?? null };
  });
  // where the serial part falls: before the first section, between each two, after the last
  // (each the least over the calls; traces without gapsMs leave it out)
  const gapsMs = same.every((c) => c.gapsMs?.length === c.sections.length + 1)
    ? same[0].gapsMs.map((_, i) => Math.max(0, least(same.map((c) => c.gapsMs[i]))))
    : null;
  return { serialMs: Math.max(0, serialMs), sections, shape: shapeOf(sections), gapsMs };
}

// The pool's wake-up and join times from traced calls on T ≥ 2 threads: over every section
// a worker took part in, the median of (its first worker task's start - the section's begin)
// and of (the section's end - its last task's end). -> { wakeMs, joinMs, sections } (sections:
// how many it saw), or null when no worker ran a task.
export function poolCostsOf(calls) {
  const wakes = [],
    joins = [];
  for (const c of calls)
    for (const s of c.sections) {
      if (s.wakeMs == null) continue;
      wakes.push(s.wakeMs);
      joins.push(s.joinMs);
    }
  if (!wakes.length) return null;
  return { wakeMs: median(wakes), joinMs: median(joins), sections: wakes.length };
}

// The profile for T threads: the 1-thread profile where the T-thread trace split the work the
// same way (same sections, same task counts), with the T-thread trace's max_threads (a call
// may cap its threads by the pool's size); where it split it differently (the split depends
// on the thread count), the T-thread trace's shape with its tasks' durations scaled so that
// each section (or, if the sections differ too, the whole call) holds the 1-thread trace's
// work. A split for more threads may also move work out of the serial part into a section
// (matmul: B packed on the caller at 1 thread, in tasks from 2): serialMs, the serial part
// measured where that split runs on real cores (the 2-thread trace on 2 cores), replaces the
// 1-thread one, and the sections hold what left it besides the 1-thread work.
// profileT: profileOf() of the T-thread calls, or null when there are none.
// -> { profile, from: '1-thread trace' | 'T-thread trace, rescaled' }
export function profileFor(profile1, profileT, { serialMs = profile1.serialMs } = {}) {
  if (!profileT) return { profile: profile1, from: '1-thread trace' };
  if (profileT.shape === profile1.shape) {
    const sections = profile1.sections.map((s, j) => ({ ...s, maxThreads: profileT.sections[j].maxThreads ?? null }));
    return { profile: { ...profile1, sections }, from: '1-thread trace' };
  }
  const work = (s) => s.durations.reduce((a, b) => a + b, 0);
  const total = (p) => p.sections.reduce((a, s) => a + work(s), 0);
  const serial = Math.min(serialMs, profile1.serialMs);
  const moved = profile1.serialMs - serial;
  const sameSections = profileT.sections.length === profile1.sections.length && moved === 0;
  const sections = profileT.sections.map((s, j) => {
    const scale = sameSections
      ? work(profile1.sections[j]) / (work(s) || 1)
      : (total(profile1) + moved) / (total(profileT) || 1);
    return {
      durations: s.durations.map((d) => d * scale),
      overheadMs: profile1.sections[j]?.overheadMs ?? 0,
      maxThreads: s.maxThreads ?? null,
    };
  });
  return {
    profile: { ...profile1, serialMs: serial, sections, shape: profileT.shape },
    from: 'T-thread trace, rescaled',
  };
}

// The contention term from the 1-thread profile and a profile traced on k ≥ 2 threads (the
// pool's costs' count; 2 on 2 cores): c = (a section's work on k threads ÷ on 1 − 1) ÷
// (active − 1), where active = min(k, tasks, max_threads) ≥ 2 in the k-thread trace, section j
// of one against section j of the other where both have as many sections (however each split
// its tasks: the same pass either way). callC: the same over the work the k-thread trace ran
// on ≥ 2 threads, for the sections it ran on one, or all of them where the sections differ
// (with what left the serial part for them: profileFor).
// A section of less than a tenth of the call's work takes the call's c too: the ratio of a
// few short tasks is the clock's and the caches' noise (a 40 µs packing pass measured 4× on 2
// threads). c is never below 0: a task does not run faster for company, so less is noise.
// -> { sections: [c per section of profile1], call: callC }
export function contentionOf(profile1, profileK, k) {
  const work = (s) => s.durations.reduce((a, b) => a + b, 0);
  const sum = (xs) => xs.reduce((a, b) => a + b, 0);
  const active = (s) => Math.min(k, s.durations.length, s.maxThreads ?? Infinity);
  const per = (w1, wk, a) => (a >= 2 && w1 > 0 ? Math.max(0, (wk / w1 - 1) / (a - 1)) : null);
  const paired = profileK.sections.length === profile1.sections.length;
  const ran = profileK.sections.map((s, j) => j).filter((j) => active(profileK.sections[j]) >= 2);
  // the call: the work k ran on ≥ 2 threads against the same sections' work on 1 thread where
  // the sections pair up, else against all of the 1-thread work that k did not run serially
  const wk = sum(ran.map((j) => work(profileK.sections[j])));
  const moved = paired ? 0 : Math.max(0, profile1.serialMs - profileK.serialMs);
  const w1 = paired
    ? sum(ran.map((j) => work(profile1.sections[j])))
    : sum(profile1.sections.map(work)) + moved - sum(profileK.sections.filter((s) => active(s) < 2).map(work));
  const call = per(w1, wk, k) ?? 0;
  const total = sum(profile1.sections.map(work));
  const sections = profile1.sections.map((s, j) => {
    const sk = paired && work(s) >= total / 10 ? profileK.sections[j] : null;
    return (sk && per(work(s), work(sk), active(sk))) ?? call;
  });
  return { sections, call };
}

// profile (profileFor's), contention (contentionOf's) -> the profile with each section's c:
// its own where the profile has as many sections as the 1-thread one, else the call's.
export function withContention(profile, contention) {
  if (!contention) return profile;
  const own = profile.sections.length === contention.sections.length;
  const sections = profile.sections.map((s, j) => ({
    ...s,
    contention: own ? contention.sections[j] : contention.call,
  }));
  return { ...profile, sections };
}

// contention: contentionOf's, or null for none (the schedule alone); serialMs: the serial part
// on ≥ 2 threads (profileFor's), where measured.
export function predictSpeedups(profile1, profilesAt, pool, counts, contention = null, serialMs = undefined) {
  const one = predictMs(profile1, 1, pool);
  const at = (t) =>
    withContention(profileFor(profile1, t > 1 ? (profilesAt[t] ?? null) : null, { serialMs }).profile, contention);
  return Object.fromEntries(counts.map((t) => [t, one / predictMs(at(t), t, pool)]));
}
