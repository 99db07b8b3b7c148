// The results record one bench run fills in, in Node (scripts/bench.mjs) and in a page
// (web/bench/run.js): every section empty until it runs.
export function emptyResults(options, machine) {
  return {
    startedAt: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    options,
    machine,
    notes: [],
    peers: {},
    peak: null,
    bandwidth: null,
    rows: [],
    startup: null,
    firstCall: null,
    sizes: null,
    long: null,
    targets: [],
  };
}
