// The "Under the hood" panel: which build of the library runs (threaded or single-thread, SIMD),
// on how many threads, why, and how long each library call took.
//
//   renderBuild(element, backend, isolated)
//   renderTimings(tbody, timings)                 timings: [{ call, detail, ms }]
import { esc, plural } from './format.js';

export function renderBuild(el, backend, isolated) {
  const threaded = backend.threads > 1; // only the threaded build runs more than one
  const section = el.closest('section');
  section.dataset.threads = String(backend.threads);
  const build = threaded
    ? `<strong>Threaded build</strong> (WebAssembly SIMD, <code>${esc(backend.isa)}</code>, plus threads), running on ${plural(backend.threads, 'thread')}.`
    : `<strong>Single-thread build</strong> (WebAssembly SIMD, <code>${esc(backend.isa)}</code>, one thread).`;
  const why = isolated
    ? threaded
      ? ' The page is cross-origin isolated (served with COOP and COEP headers), so the browser allows the shared memory that threads need.'
      : ' The page is cross-origin isolated, but this device reports a single core, so one thread is used.'
    : ' This page is not cross-origin isolated (served without COOP/COEP headers), so the browser withholds the shared memory that threads need. The library falls back to one thread; every result is the same, only larger inputs run slower.';
  el.innerHTML = build + why;
}

export function renderTimings(tbody, timings) {
  tbody.innerHTML = timings
    .map(
      ({ call, detail, ms }) =>
        `<tr><th scope="row"><code>${esc(call).replaceAll('.', '.<wbr>')}</code></th><td>${esc(detail)}</td><td class="num">${ms.toFixed(2)}</td></tr>`,
    )
    .join('');
}
