// web/bench.html: runs the benchmark (run.js) on a button press, or at once when the address
// says so (?run=quick or ?run=full, optionally &cases=id,id: how `npm run bench -- --browser`
// and the tests drive it), and shows the table, the targets and the chart that `npm run bench`
// prints and writes. window.benchResults: a Promise of the results, once a run has started.
import { CASES, QUICK_CASES } from '/bench-src/cases.mjs';
import { renderChart } from '/bench-src/svg.mjs';
import { renderReport } from '/bench-src/table.mjs';
import { renderTargets } from '/bench-src/targets.mjs';
import { runBench } from './run.js';

const $ = (id) => document.getElementById(id);
const buttons = [$('run-quick'), $('run-full')];

function log(text) {
  $('bench-log').textContent += `${text}\n`;
  $('bench-status').textContent = text;
  globalThis.benchLog?.(text); // the headless driver's progress hook
}

async function run({ quick, caseIds }) {
  buttons.forEach((b) => (b.disabled = true));
  $('bench-log').textContent = '';
  try {
    const results = await runBench({ quick, caseIds, log });
    $('bench-table').textContent = renderReport(results);
    $('bench-targets').textContent = renderTargets(results.targets, results.machine);
    $('bench-chart').innerHTML = renderChart(results).replace(/^<\?xml[^>]*>\s*/, '');
    const json = JSON.stringify(results, (k, v) => (k === 'sample' ? undefined : v), 2);
    $('bench-download').href = URL.createObjectURL(new Blob([json], { type: 'application/json' }));
    $('bench-results').hidden = false;
    $('bench-status').textContent = `Done in ${results.durationSeconds} s.`;
    return results;
  } catch (e) {
    $('bench-status').textContent = `The run failed: ${e?.message ?? e}`;
    throw e;
  } finally {
    buttons.forEach((b) => (b.disabled = false));
  }
}

const start = (options) => (window.benchResults = run(options));
const allCases = (quick) => CASES.filter((c) => !quick || QUICK_CASES.includes(c.id)).map((c) => c.id);
$('run-quick').addEventListener('click', () => start({ quick: true, caseIds: allCases(true) }));
$('run-full').addEventListener('click', () => start({ quick: false, caseIds: allCases(false) }));

const params = new URLSearchParams(location.search);
if (params.has('run')) {
  const quick = params.get('run') !== 'full';
  const cases = params.get('cases');
  start({ quick, caseIds: cases ? cases.split(',').filter(Boolean) : allCases(quick) });
}
