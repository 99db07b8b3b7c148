// Main-thread long tasks in a page, by PerformanceObserver 'longtask' (Chromium reports every
// task over 50 ms), for the tests that hold the page to "no task over 100 ms".
//
//   watchLongTasks(page)            starts recording (window.longTasks: [{ start, duration }])
//   now(page) -> ms                 the page's performance.now(), to mark where a window opens
//   longTasksSince(page, t0, over = 100) -> [{ start, duration }]   the tasks over `over` ms since t0
//   busyLoopSeen(page, ms = 150) -> boolean   runs a `ms` busy loop in a task of its own and tells
//                                   whether it was reported: the control that shows a check
//                                   above could fail
export async function watchLongTasks(page) {
  const supported = await page.evaluate(() => PerformanceObserver.supportedEntryTypes.includes('longtask'));
  if (!supported) throw new Error('this Chromium reports no long tasks');
  await page.evaluate(() => {
    if (window.longTasks) return;
    window.longTasks = [];
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) window.longTasks.push({ start: e.startTime, duration: e.duration });
    }).observe({ type: 'longtask' });
  });
}

export const now = (page) => page.evaluate(() => performance.now());

export async function longTasksSince(page, t0, over = 100) {
  await page.waitForTimeout(300); // the observer reports a task after it ended
  return page.evaluate(
    ([from, limit]) =>
      window.longTasks
        .filter((e) => e.start >= from && e.duration > limit)
        .map((e) => ({ start: Math.round(e.start), duration: Math.round(e.duration) })),
    [t0, over],
  );
}

export function busyLoopSeen(page, ms = 150) {
  return page.evaluate(async (length) => {
    const seen = window.longTasks.length;
    setTimeout(() => {
      const from = performance.now();
      while (performance.now() - from < length);
    });
    await new Promise((r) => setTimeout(r, length + 450));
    return window.longTasks.slice(seen).some((e) => e.duration >= length);
  }, ms);
}
