// The tutorial page with long inputs, links, downloads and touch, in headless Chromium:
// - a 256-token sentence computed by the library's worker form (the main thread's long tasks
//   while it recomputes reported, not asserted), its numbers against the package run here in Node, and its token
//   matrices as an overview with a zoomed window (moved by keys and by dragging, following the
//   followed row);
// - the settings in the address: a link opened in a new page shows the same step and numbers,
//   and the same two heads compared;
// - each heatmap's PNG (signature, size) and CSV (the page's numbers) downloads;
// - a phone (390 × 844, touch): a tapped cell's value, no sideways scroll on any step.
// Screenshots: tests/artifacts/page/long-*.png and phone-touch-*.png.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, test } from 'node:test';

import { tensor } from '../../../web/lib/index.js';
import { pieceLabel, tokenize } from '../../../web/page/tokenize.js';
import { openPage } from '../../../scripts/lib/browser.mjs';
import { longTasksSince, now, watchLongTasks } from '../helpers/long_tasks.mjs';
import { ARTIFACTS, closePageSuite, openPageSuite, pageDriver } from '../helpers/page_driver.mjs';
import { eye } from '../../../scripts/lib/tensors.mjs';

// words that are one token each, with and without a leading space: long(n) is n tokens (checked
// against the tokenizer in the first test)
const WORDS = ['the', 'old', 'man', 'and', 'it', 'of', 'day', 'new', 'land', 'way', 'men'];
// The settings these tests start from, whatever the page's defaults: identity weights, 4 heads.
const PLAIN = '?projection=identity&heads=4&causal=0&scaling=1&positions=0';
const long = (n) => Array.from({ length: n }, (_, i) => WORDS[(i * 7 + (i >> 3)) % WORDS.length]).join(' ');

let browser, server, attn, model;
let suite;
before(async () => {
  suite = await openPageSuite({ port: 9541, attention: true, model: true });
  ({ browser, server, attn, model } = suite);
});
after(() => closePageSuite(suite));

const { snapshot, act, goToStep } = pageDriver(0, 0); // states only: the matrices are fetched one by one

// One matrix of the page's steps: { shape, data }.
const pageMatrix = (page, id, name) =>
  page.evaluate(
    ([i, m]) => {
      const mat = window.attentionPage.steps.find((s) => s.id === i).matrices.find((x) => x.name === m);
      return { shape: mat.shape, data: mat.data };
    },
    [id, name],
  );

// Head 1's scores and weights for `text` with identity weights and 4 heads, as the page computes them.
function expectedHead(text) {
  const toks = tokenize(text, model.tokenizer);
  const n = toks.length,
    d = model.dim;
  const x = new Float32Array(n * d);
  toks.forEach((t, i) => x.set(model.tensors.embed.data.subarray(t.id * d, (t.id + 1) * d), i * d));
  const mha = attn.multiHeadAttention({
    dModel: d,
    heads: 4,
    weights: { wq: eye(d), wk: eye(d), wv: eye(d), wo: eye(d) },
  });
  const f = mha.forward(tensor(x, [n, d]), { scale: 1 / 5, trace: true });
  mha.dispose();
  const h = f.heads[0];
  return attn.attention(h.q, h.k, h.v, { scale: 1 / 5, trace: true });
}

function assertClose(actual, expected, what, tol = 1e-5) {
  assert.equal(actual.length, expected.length, `${what}: length`);
  let size = 1,
    worst = 0;
  for (const v of expected) size = Math.max(size, Math.abs(v));
  for (let k = 0; k < actual.length; ++k) worst = Math.max(worst, Math.abs(actual[k] - expected[k]));
  assert.ok(worst <= tol * size, `${what}: largest difference ${worst}`);
}

const windowText = (page, name) =>
  page.$eval(`figure.heatmap[data-name="${name}"] .hm-window-text`, (el) => el.textContent);
// Waits until the zoom's text of heatmap `name` satisfies ok(text) (the window redraws on the
// next frame) -> the text.
async function windowTextOnce(page, name, ok) {
  await page.waitForFunction(
    ([selector, src]) => new Function('t', `return (${src})(t)`)(document.querySelector(selector)?.textContent ?? ''),
    [`figure.heatmap[data-name="${name}"] .hm-window-text`, ok.toString()],
  );
  return windowText(page, name);
}

test('a 256-token sentence: computed in a worker, overview and zoom', async (ctx) => {
  const { page, errors } = await openPage(browser, server.url + PLAIN);
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.evaluate(() => window.attentionPage.ready);
  assert.equal((await snapshot(page)).state.worker, false, 'a short sentence runs on the main thread');
  for (const n of [150, 256, 530]) assert.equal(tokenize(long(n), model.tokenizer).length, n, `long(${n})'s tokens`);
  await watchLongTasks(page);
  // The main thread's long tasks while it recomputes are reported, not asserted: their length
  // depends on the machine's load. What is asserted: the worker form computed it.
  const runs = [];
  let state;
  for (const shift of [0]) {
    const t0 = await now(page);
    ({ state } = await act(
      page,
      () =>
        page.fill(
          '#sentence',
          long(256 + shift)
            .split(' ')
            .slice(shift)
            .join(' '),
        ),
      (s) => s.n === 256 && !document.querySelector('#busy:not([hidden])'),
    ));
    assert.equal(state.worker, true, 'the worker form computed the long input');
    runs.push((await longTasksSince(page, t0, 200)).map((task) => task.duration));
  }
  ctx.diagnostic(`main-thread tasks over 200 ms while recomputing: ${JSON.stringify(runs)} ms`);
  const text = await page.inputValue('#sentence');
  assert.equal(state.truncatedFrom, null);
  assert.match(await page.textContent('#token-status'), /256 tokens \(up to 512\)/);

  // The worker's numbers are the package's.
  const exp = expectedHead(text);
  await goToStep(page, 2);
  const scores = await pageMatrix(page, 'scores', 'scores');
  assert.deepEqual(scores.shape, [256, 256]);
  assertClose(scores.data, exp.scores.data, 'scores');
  assertClose((await pageMatrix(page, 'softmax', 'weights')).data, exp.weights.data, 'weights');

  // Overview and zoom: the window starts around the followed row ("it", token 9).
  const fig = 'figure.heatmap[data-name="scores"]';
  // (canvas.hm-rows: the detail's row labels kept in view while it scrolls sideways)
  assert.equal(await page.locator(`${fig} .hm-overview canvas:not(.hm-rows)`).count(), 1);
  assert.equal(await page.locator(`${fig} .hm-detail canvas:not(.hm-rows)`).count(), 1);
  assert.match(await windowText(page, 'scores'), /^Zoom: rows 1–\d+, columns 1–\d+\.$/);
  await page.locator(`${fig} .hm-overview`).screenshot({ path: new URL('long-256-overview.png', ARTIFACTS).pathname });
  await page.locator(fig).screenshot({ path: new URL('long-256-overview-zoom.png', ARTIFACTS).pathname });
  // A cell of the zoom: its tooltip gives the whole matrix's indices and value.
  let point = await page.evaluate(() => window.attentionPage.cellPoint('scores', 200, 130));
  await page.mouse.move(point.x, point.y);
  await page.waitForSelector('#tooltip:not([hidden])');
  assert.match(await page.textContent('#tooltip .tt-title'), /\[201, 131\]/);
  assert.equal(
    Number((await page.textContent('#tooltip .tt-value')).replace('\u2212', '-')),
    Number(scores.data[200 * 256 + 130].toFixed(4)),
  );
  // Keys move the window (and not the step); the followed row is kept in view.
  const before = await windowText(page, 'scores');
  await page.focus(`${fig} .hm-overview`);
  await page.keyboard.press('PageDown');
  await page.keyboard.press('ArrowRight');
  const after = await windowTextOnce(page, 'scores', new Function('t', `return t !== ${JSON.stringify(before)}`));
  assert.notEqual(after, before);
  assert.equal((await snapshot(page)).state.step, 2, 'the arrow key changed the step');
  await page.keyboard.press('End');
  const ended = await windowTextOnce(page, 'scores', (t) => /rows \d+–256, columns \d+–256\./.test(t));
  assert.match(ended, /rows \d+–256, columns \d+–256\./);
  // Dragging on the overview centres the window on the pointer.
  const box = await page.locator(`${fig} .hm-overview canvas`).boundingBox();
  await page.mouse.move(box.x + 5, box.y + box.height / 2);
  await page.mouse.down();
  await page.mouse.move(box.x + 8, box.y + box.height / 2 + 4, { steps: 3 });
  await page.mouse.up();
  const dragged = await windowTextOnce(page, 'scores', (t) => /columns 1–/.test(t) && !/rows 1–/.test(t));
  assert.match(dragged, /columns 1–/);
  assert.doesNotMatch(dragged, /rows 1–/);
  // Following token 250 (its chip) brings its row into the zoom.
  await act(
    page,
    () => page.click('#chips li:nth-child(250) .chip'),
    (s) => s.focus === 249,
  );
  const m = (await windowText(page, 'scores')).match(/rows (\d+)–(\d+)/);
  assert.ok(Number(m[1]) <= 250 && 250 <= Number(m[2]), `row 250 out of the zoom: ${m[0]}`);
  // The backward for the new followed token came from the worker too: y_i is row 250 of the output.
  const output = await pageMatrix(page, 'output', 'output');
  const lossRows = await pageMatrix(page, 'loss', 'loss_rows');
  const d = output.shape[1];
  assert.deepEqual(lossRows.data.slice(0, d), output.data.slice(249 * d, 250 * d));
  const { loss } = (await snapshot(page)).state;
  const half = lossRows.data.slice(2 * d).reduce((a, g) => a + 0.5 * g * g, 0);
  assert.ok(Math.abs(loss - half) <= 1e-5 * Math.max(1, half), `loss ${loss}, ½‖y − x‖² ${half}`);
  await goToStep(page, 5);
  await page.locator('#steps').screenshot({ path: new URL('long-256-softmax.png', ARTIFACTS).pathname });
  await goToStep(page, 7);
  await page.locator('#steps').screenshot({ path: new URL('long-256-heads.png', ARTIFACTS).pathname });

  // Past 512 tokens the page uses the first 512.
  await act(
    page,
    () => page.fill('#sentence', long(530)),
    (s) => s.n === 512,
  );
  assert.equal((await snapshot(page)).state.truncatedFrom, 530);
  assert.match(await page.textContent('#token-status'), /530 tokens: the page uses the first 512/);
  assert.deepEqual(errors(), []);
  await page.close();
});

test('a link holds the sentence and every setting: a new page shows the same step and numbers', async () => {
  const { page, errors } = await openPage(browser, server.url + PLAIN);
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.evaluate(() => window.attentionPage.ready);
  const text = 'The quick brown fox jumps over the lazy dog because it can.';
  await act(
    page,
    () => page.fill('#sentence', text),
    new Function('s', `return s.n === ${tokenize(text, model.tokenizer).length}`),
  );
  await act(
    page,
    () => page.check('input[name="projection"][value="random"]'),
    (s) => s.projection === 'random',
  );
  await act(
    page,
    () => page.fill('#seed', '7'),
    (s) => s.seed === 7,
  );
  await act(
    page,
    () => page.selectOption('#heads', '2'),
    (s) => s.heads === 2,
  );
  await act(
    page,
    () => page.fill('#dk', '8'),
    (s) => s.dK === 8,
  );
  await act(
    page,
    () => page.check('#causal'),
    (s) => s.causal,
  );
  await act(
    page,
    () => page.uncheck('#scaling'),
    (s) => !s.scaling,
  );
  await act(
    page,
    () => page.check('#positions'),
    (s) => s.positions,
  );
  await act(
    page,
    () => page.selectOption('#follow-head', { value: '1' }),
    (s) => s.head === 1,
  );
  await act(
    page,
    () => page.click('#chips li:nth-child(4) .chip'),
    (s) => s.focus === 3,
  );
  await goToStep(page, 13);
  await act(
    page,
    () => page.selectOption('#target', { value: '6' }),
    (s) => s.target === 6,
  );
  await page.waitForFunction(() => new URLSearchParams(location.search).get('target') === '6');
  const url = page.url();
  const query = new URL(url).searchParams;
  for (const [k, v] of Object.entries({
    text,
    projection: 'random',
    seed: '7',
    heads: '2',
    dK: '8',
    causal: '1',
    scaling: '0',
    positions: '1',
    head: '1',
    step: '13',
    focus: '3',
    target: '6',
  }))
    assert.equal(query.get(k), v, `the link's ${k}`);
  const want = await page.evaluate(() => ({ state: window.attentionPage.state, steps: window.attentionPage.steps }));

  const opened = await openPage(browser, url);
  await opened.page.setViewportSize({ width: 1280, height: 900 });
  await opened.page.evaluate(() => window.attentionPage.ready);
  const got = await opened.page.evaluate(() => ({
    state: window.attentionPage.state,
    steps: window.attentionPage.steps,
  }));
  for (const k of ['text', 'projection', 'seed', 'heads', 'dK', 'causal', 'scaling', 'positions', 'head']) {
    assert.deepEqual(got.state[k], want.state[k], k);
  }
  for (const k of ['step', 'stepId', 'focus', 'target', 'loss', 'n']) assert.deepEqual(got.state[k], want.state[k], k);
  assert.deepEqual(got.steps, want.steps, 'every step shows the same numbers');
  assert.equal(await opened.page.inputValue('#sentence'), text);
  assert.equal(await opened.page.inputValue('#seed'), '7');
  assert.equal(await opened.page.isChecked('#causal'), true);
  assert.match(await opened.page.textContent('#step-title'), /^14\./);
  // A hand-edited link: invalid fields are ignored, valid ones kept.
  const edited = await openPage(browser, `${server.url}?heads=3&seed=x&causal=1&step=999&text=hello%20world`);
  await edited.page.evaluate(() => window.attentionPage.ready);
  const s = await edited.page.evaluate(() => window.attentionPage.state);
  assert.equal(s.heads, 4);
  assert.equal(s.seed, 42);
  assert.equal(s.causal, true);
  assert.equal(s.n, tokenize('hello world', model.tokenizer).length);
  assert.equal(s.step, 0, 'step=999 is not a step (valid steps are < 100 and within the steps)');
  assert.deepEqual([...errors(), ...opened.errors(), ...edited.errors()], []);
  await Promise.all([page.close(), opened.page.close(), edited.page.close()]);
});

test('a link holds the head comparison: a new page compares the same two heads', async () => {
  const { page, errors } = await openPage(browser, server.url); // the trained model (the default)
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.evaluate(() => window.attentionPage.ready);
  const compared = () => page.evaluate(() => window.attentionPage.compare);
  assert.deepEqual(
    (({ a, b }) => ({ a, b }))(await compared()),
    { a: { layer: 0, head: 0 }, b: { layer: 1, head: 0 } },
    'the default pair',
  );
  await act(page, () => page.selectOption('#compare-a', '1,2'));
  await act(page, () => page.selectOption('#compare-b', '0,3'));
  await page.waitForFunction(() => new URLSearchParams(location.search).get('compareB') === '0,3');
  const url = page.url();
  assert.equal(new URL(url).searchParams.get('compareA'), '1,2');
  const want = await compared();
  assert.deepEqual(
    [want.a, want.b],
    [
      { layer: 1, head: 2 },
      { layer: 0, head: 3 },
    ],
  );

  const opened = await openPage(browser, url);
  await opened.page.setViewportSize({ width: 1280, height: 900 });
  await opened.page.evaluate(() => window.attentionPage.ready);
  assert.deepEqual(await opened.page.evaluate(() => window.attentionPage.compare), want, 'the same pair and numbers');
  assert.equal(await opened.page.inputValue('#compare-a'), '1,2');
  assert.equal(await opened.page.inputValue('#compare-b'), '0,3');
  assert.match(await opened.page.textContent('#compare'), /A: layer 2, head 3/);
  // A hand-edited link: a head the model does not have is the first head; a malformed pair is
  // ignored (the default kept).
  const edited = await openPage(browser, `${server.url}?compareA=7,1&compareB=1%3B3`);
  await edited.page.evaluate(() => window.attentionPage.ready);
  const e = await edited.page.evaluate(() => window.attentionPage.compare);
  assert.deepEqual(
    [e.a, e.b],
    [
      { layer: 0, head: 0 },
      { layer: 1, head: 0 },
    ],
  );
  assert.deepEqual([...errors(), ...opened.errors(), ...edited.errors()], []);
  await Promise.all([page.close(), opened.page.close(), edited.page.close()]);
});

// CSV text -> { header, rows: [[label, ...numbers]] }: fields as RFC 4180 quotes them.
function parseCsv(text) {
  const lines = [];
  let field = '',
    line = [],
    quoted = false;
  for (let k = 0; k < text.length; ++k) {
    const ch = text[k];
    if (quoted) {
      if (ch === '"' && text[k + 1] === '"') ((field += '"'), (k += 1));
      else if (ch === '"') quoted = false;
      else field += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ',') (line.push(field), (field = ''));
    else if (ch === '\r' && text[k + 1] === '\n') {
      line.push(field);
      lines.push(line);
      ((line = []), (field = ''), (k += 1));
    } else field += ch;
  }
  return lines;
}

async function downloadOf(page, selector) {
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click(selector)]);
  return { name: dl.suggestedFilename(), bytes: fs.readFileSync(await dl.path()) };
}

test('each heatmap downloads as PNG and as CSV with the numbers the page shows', async () => {
  const { page, errors } = await openPage(browser, server.url + PLAIN);
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.evaluate(() => window.attentionPage.ready);
  const text = 'Alice said, "yes" to the old-fashioned plan, and it worked.';
  const { state } = await act(
    page,
    () => page.fill('#sentence', text),
    (s) => s.n > 10,
  );
  await act(
    page,
    () => page.check('#causal'),
    (s) => s.causal,
  );
  await goToStep(page, 4); // the mask: -Infinity cells
  for (const name of ['masked']) {
    const fig = `figure.heatmap[data-name="${name}"]`;
    const label = await page.getAttribute(`${fig} button[data-export="csv"]`, 'aria-label');
    assert.match(label, /^Download .+ numbers as CSV$/);
    const csv = await downloadOf(page, `${fig} button[data-export="csv"]`);
    assert.equal(csv.name, `${name}.csv`);
    const rows = parseCsv(csv.bytes.toString('utf8'));
    const want = await pageMatrix(page, 'mask', name);
    const [n, m] = want.shape;
    assert.equal(rows.length, n + 1);
    assert.deepEqual(
      rows[0].slice(1),
      state.tokens.map((t) => pieceLabel(t.text)),
      'the header row is the tokens',
    );
    assert.deepEqual(
      rows.slice(1).map((r) => r[0]),
      state.tokens.map((t) => pieceLabel(t.text)),
      'the first column is the tokens',
    );
    const values = rows.slice(1).flatMap((r) => r.slice(1).map(Number));
    assert.equal(values.length, n * m);
    assert.deepEqual(values, want.data, 'the CSV holds the exact numbers');
    assert.ok(values.includes(-Infinity));

    const png = await downloadOf(page, `${fig} button[data-export="png"]`);
    assert.equal(png.name, `${name}.png`);
    assert.deepEqual([...png.bytes.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'PNG signature');
    const size = [png.bytes.readUInt32BE(16), png.bytes.readUInt32BE(20)];
    const canvas = await page.$eval(`${fig} canvas`, (c) => [c.width, c.height]);
    assert.deepEqual(size, canvas, 'the PNG is the heatmap as drawn');
  }
  // A weight matrix (numbered rows and columns).
  await goToStep(page, 1);
  await page.click('#matrices details summary');
  const csv = parseCsv(
    (await downloadOf(page, 'figure.heatmap[data-name="W_Q"] button[data-export="csv"]')).bytes.toString(),
  );
  const wq = await pageMatrix(page, 'qkv', 'W_Q');
  assert.deepEqual(rows0(csv), ['row', ...Array.from({ length: wq.shape[1] }, (_, c) => String(c + 1))]);
  assert.deepEqual(
    csv.slice(1).flatMap((r) => r.slice(1).map(Number)),
    wq.data,
  );
  // A small multiple's PNG is the matrix at full size, not the small picture.
  await goToStep(page, 7);
  const multiple = await downloadOf(page, 'figure.heatmap[data-name="weights_head2"] button[data-export="png"]');
  const small = await page.$eval('figure.heatmap[data-name="weights_head2"] canvas', (c) => c.width);
  assert.ok(multiple.bytes.readUInt32BE(16) > small, 'the PNG of a small multiple is drawn larger');
  // A long input's matrix: the PNG is the whole matrix at full size.
  await act(
    page,
    () => page.fill('#sentence', long(150)),
    (s) => s.n === 150,
  );
  await goToStep(page, 2);
  const png = await downloadOf(page, 'figure.heatmap[data-name="scores"] button[data-export="png"]');
  const [w, h] = [png.bytes.readUInt32BE(16), png.bytes.readUInt32BE(20)];
  assert.ok(w >= 1500 && h >= 1500, `a 150 × 150 PNG of ${w} × ${h} px`);
  const longCsv = parseCsv(
    (await downloadOf(page, 'figure.heatmap[data-name="scores"] button[data-export="csv"]')).bytes.toString(),
  );
  assert.deepEqual(
    longCsv.slice(1).flatMap((r) => r.slice(1).map(Number)),
    (await pageMatrix(page, 'scores', 'scores')).data,
  );
  assert.deepEqual(errors(), []);
  await page.close();
});
const rows0 = (csv) => csv[0];

test('a phone (390 × 844, touch): tap a cell for its value, nothing scrolls sideways on any step', async () => {
  const context = await browser.newContext({
    viewport: { width: 390, height: 844 },
    hasTouch: true,
    isMobile: true,
    deviceScaleFactor: 2,
  });
  const page = await context.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push(e.message));
  page.on('console', (m) => m.type() === 'error' && problems.push(m.text()));
  await page.goto(server.url + PLAIN);
  await page.evaluate(() => window.attentionPage.ready);
  for (const [label, text] of [
    ['short', null],
    ['long', long(256)],
  ]) {
    if (text)
      await act(
        page,
        () => page.fill('#sentence', text),
        (s) => s.n === 256,
      );
    const steps = await page.locator('button[data-step]').count();
    for (let i = 0; i < steps; ++i) {
      await goToStep(page, i);
      const width = await page.evaluate(() => document.scrollingElement.scrollWidth);
      assert.ok(width <= 390, `${label} step ${i + 1}: the page is ${width} px wide`);
    }
    // Tap a cell of the scores: its value appears (tooltip and readout), the followed row stays.
    await goToStep(page, 2);
    const { state } = await snapshot(page);
    const [r, c] = text ? [140, 150] : [2, 5];
    const scores = await pageMatrix(page, 'scores', 'scores');
    const point = await page.evaluate(([a, b]) => window.attentionPage.cellPoint('scores', a, b), [r, c]);
    await page.touchscreen.tap(point.x, point.y);
    const readout = page.locator('figure.heatmap[data-name="scores"] .hm-readout');
    await readout.waitFor({ state: 'visible' });
    const shown = (await readout.textContent()).match(/: (\S+)$/)[1].replace('\u2212', '-');
    assert.equal(Number(shown), Number(scores.data[r * scores.shape[1] + c].toFixed(4)));
    assert.match(await readout.textContent(), new RegExp(`\\[${r + 1}, ${c + 1}\\]`));
    assert.equal((await snapshot(page)).state.focus, state.focus, 'a tap on a cell reads it, follows nothing');
    await page.screenshot({ path: new URL(`phone-touch-${label}-scores.png`, ARTIFACTS).pathname });
  }
  assert.deepEqual(problems, []);
  await context.close();
});

test('without the worker (its script refused), a long input is computed on the main thread', async () => {
  const { page, errors } = await openPage(browser, server.url + PLAIN);
  await page.route('**/worker_host.js', (route) => route.abort());
  await page.evaluate(() => window.attentionPage.ready);
  const { state } = await act(
    page,
    () => page.fill('#sentence', long(150)),
    (s) => s.n === 150,
  );
  assert.equal(state.worker, false);
  assert.equal(await page.locator('#busy').isHidden(), true);
  const weights = await pageMatrix(page, 'softmax', 'weights');
  assertClose(weights.data, expectedHead(await page.inputValue('#sentence')).weights.data, 'weights');
  // The refused script is the only complaint.
  assert.deepEqual(
    errors().filter((e) => !/Failed to load resource|worker_host/.test(e)),
    [],
  );
  await page.close();
});
