// The browser suites' engines (scripts/lib/browser.mjs launches them):
//   describeEngines(name, body, configs = ENGINES)
//                                a suite `name` with one sub-suite per engine (or configuration:
//                                WEBKIT_AS_SAFARI), body({ engine, launch, gets }) its tests:
//                                launchBrowser(engine, launch) gives its browser, gets is what
//                                the package should pick there (ENGINE_GETS). The engines run
//                                side by side (each one's tests one after another); an engine
//                                whose programs are missing is skipped, saying what is missing.
//   ENGINE_GETS[engine]          { isa, threads }: the instruction set the package picks there,
//                                and whether an isolated page gets threads
//   WEBKIT_AS_SAFARI             WebKitGTK with SharedArrayBuffer on, as a configuration
import { describe, test } from 'node:test';

import { ENGINES, engineMissing } from '../../../scripts/lib/browser.mjs';

// What the package gets in each engine by default: its instruction set (relaxed SIMD validates
// in Chromium since 114 and Firefox since 145, not in WebKit) and whether a cross-origin isolated
// page gets threads. WebKitGTK's JavaScriptCore runs with useSharedArrayBuffer off: it makes a
// shared WebAssembly.Memory but cannot post it to a worker (DataCloneError), so one thread; with
// JSC_useSharedArrayBuffer=true in its environment it has what Safari has on such a page.
export const ENGINE_GETS = {
  chromium: { isa: 'relaxed-simd', threads: true },
  firefox: { isa: 'relaxed-simd', threads: true },
  webkit: { isa: 'simd128', threads: false },
};

// configs: engine names, or { name, engine, launch (launchBrowser's options), gets (as
// ENGINE_GETS) } for an engine under other settings.
export function describeEngines(name, body, configs = ENGINES) {
  describe(name, { concurrency: true }, () => {
    for (const config of configs) {
      const {
        engine,
        launch = {},
        gets = ENGINE_GETS[engine],
        ...rest
      } = typeof config === 'string' ? { engine: config } : config;
      const missing = engineMissing(engine);
      describe(rest.name ?? engine, { concurrency: 1 }, () =>
        // (a skipped test, not a skipped suite: the runner's closing lines count it)
        missing ? test('its tests', { skip: missing }, () => {}) : body({ engine, launch, gets }),
      );
    }
  });
}

// WebKitGTK with SharedArrayBuffer on, as Safari has it on a cross-origin isolated page.
export const WEBKIT_AS_SAFARI = {
  name: 'webkit, SharedArrayBuffer on (as Safari)',
  engine: 'webkit',
  launch: { env: { JSC_useSharedArrayBuffer: 'true' } },
  gets: { isa: 'simd128', threads: true },
};
