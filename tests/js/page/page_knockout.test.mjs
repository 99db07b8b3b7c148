// Knock-out and attribution on the tutorial page (web/page/knockout_panel.js, ablation.js), in
// headless Chromium at 1280 and 390 px: window.attentionPage.predict gives the numbers of the
// package run here in Node (the model's layers with the knocked-out heads' W_O rows zeroed); on
// the repeat example, knocking out the induction heads the page names lowers the copy; the heads'
// table marks the head with the largest part of the logit difference and its parts add up to
// the model's difference; the model view's and the steps' toggles knock heads out and put them
// back; bad input to the hooks throws a message that says what to give and changes nothing; the
// notes' numbers are recomputed from what the page shows; "Follow the induction head" opens the
// named head; axe finds nothing in the panel; on a phone nothing scrolls sideways, the page nor a
// table in its box. Screenshots: tests/artifacts/page/knockout-*.png.
// run with: node --test tests/js/page/page_knockout.test.mjs
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { after, before, test } from 'node:test';

import { REPEAT_EXAMPLE } from '../../../web/page/controls.js';
import { ablatedWeights } from '../../../web/page/model/knockout.js';
import { forwardLayers } from '../../../web/page/model/lm.js';
import { predictNext } from '../../../web/page/model/predict.js';
import { makeBatch } from '../../../web/page/model/train.js';
import { layerWeights } from '../../../web/page/model/weights.js';
import { tokenize } from '../../../web/page/tokenize.js';
import { openPage } from '../../../scripts/lib/browser.mjs';
import { ARTIFACTS, closePageSuite, openPageSuite, pageDriver } from '../helpers/page_driver.mjs';

const AXE = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const RULES = { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } };
const TOL = 1e-4;

let browser, server, attn, model;
let suite;
before(async () => {
  suite = await openPageSuite({ port: 9573, attention: true, model: true });
  ({ browser, server, attn, model } = suite);
});
after(() => closePageSuite(suite));

const { act } = pageDriver(0, 0);
const shot = (locator, name) => locator.screenshot({ path: new URL(`knockout-${name}.png`, ARTIFACTS).pathname });
const hook = (page, fn, arg) => page.evaluate(fn, arg);

// The model in Node with the heads in knockOut zeroed: the 10 next words after token `at`.
function expected(text, at, knockOut = []) {
  const ids = tokenize(text, model.tokenizer).map((t) => t.id);
  const n = ids.length,
    d = model.dim,
    heads = model.manifest.model.heads;
  const { x } = makeBatch([{ ids: [...ids, 0] }], n, d, model.tensors.embed.data, model.manifest.model.positionScale);
  const layers = [0, 1].map((L) => {
    const out = knockOut.filter((k) => k.layer === L).map((k) => k.head);
    return attn.multiHeadAttention({
      dModel: d,
      heads,
      weights: ablatedWeights(layerWeights(model.tensors, L), heads, out).w,
    });
  });
  const { hs } = forwardLayers(layers, x);
  for (const l of layers) l.dispose();
  return predictNext(model, hs.at(-1).subarray(at * d, (at + 1) * d), 1, 10)[0];
}

async function open(viewport) {
  const { page, errors } = await openPage(browser, server.url);
  await page.setViewportSize(viewport);
  await page.evaluate(() => window.attentionPage.ready);
  await act(
    page,
    () => page.click('#repeat-example'),
    (s) => s.n > 20,
  );
  return { page, errors };
}

const sameGuesses = (got, want, what) => {
  assert.deepEqual(
    got.map((g) => g.word),
    want.map((g) => g.word),
    `${what}: the words`,
  );
  const worst = got.reduce((m, g, k) => Math.max(m, Math.abs(g.p - want[k].p)), 0);
  assert.ok(worst < TOL, `${what}: probabilities differ from the package's in Node by ${worst}`);
};

test('desktop: predict is the package’s model with heads zeroed; knocking out the named induction heads drops the copy; attribution', async () => {
  const { page, errors } = await open({ width: 1280, height: 900 });
  const text = `${REPEAT_EXAMPLE} ${REPEAT_EXAMPLE}`;
  const state = await hook(page, () => window.attentionPage.state);
  assert.equal(state.text, text);
  const e = await hook(page, () => window.attentionPage.headEffects);
  const named = e.induction;
  const [ind] = named;
  const copyAt = e.copyTargets.at(-1).at;

  // predict: the same numbers as the package in Node, with and without heads knocked out
  for (const knockOut of [[], [ind], [{ layer: 0, head: 0 }], named])
    for (const at of [0, 7, copyAt, state.n - 1]) {
      const got = await hook(page, (a) => window.attentionPage.predict(a), { at, knockOut });
      assert.equal(got.length, 10);
      sameGuesses(got, expected(text, at, knockOut), `at ${at}, knocked out ${JSON.stringify(knockOut)}`);
    }

  // the copy: knocking out the named heads (mean ablation) lowers it
  assert.ok(e.inductionCopy.mean < e.copy, `copy ${e.copy}, without the named heads ${e.inductionCopy.mean}`);

  // attribution: the table's marked row is the head with the largest part; the parts add up
  const all = await hook(page, (at) => window.attentionPage.attribution({ at }), state.focus);
  const parts = all.filter((x) => x.part === 'head');
  assert.equal(parts.length, 8);
  const best = parts.reduce((a, b) => (b.diff > a.diff ? b : a));
  const chart = page.locator('.head-rank');
  assert.match(
    await chart.locator('tr.best th').textContent(),
    new RegExp(`layer ${best.layer + 1} head ${best.head + 1}`),
  );
  const foot = await chart.locator('tfoot td.num').allTextContents();
  const [sum, diff] = foot.map((t) => Number(t.replace('\u2212', '-')));
  assert.ok(Math.abs(sum - diff) <= 0.011, `parts ${sum}, the model's difference ${diff}`);
  assert.ok(Math.abs(all.reduce((a, x) => a + x.diff, 0) - diff) <= 0.006);

  // the UI: the model view's toggle knocks the head out; the table shows the change
  const pOf = (list, w) => list.find((g) => g.word === w)?.p;
  const base = await hook(page, (at) => window.attentionPage.predict({ at }), state.focus);
  const knocked = await hook(page, (a) => window.attentionPage.predict(a), { at: state.focus, knockOut: [ind] });
  const key = `${ind.layer},${ind.head}`;
  await act(
    page,
    () => page.click(`#model-grid button[data-knock="${key}"]`),
    () => true,
  );
  assert.equal(await page.getAttribute(`#model-grid button[data-knock="${key}"]`, 'aria-pressed'), 'true');
  const firstRow = page.locator('.knock-table').first().locator('tbody tr').first();
  const cell = await firstRow.locator('td.delta').textContent();
  if (pOf(knocked, base[0].word) !== undefined) {
    const change = Number(cell.replace('\u2212', '-').replace('±', ''));
    const wantChange = 100 * (pOf(knocked, base[0].word) - base[0].p);
    assert.ok(Math.abs(change - wantChange) < 0.06, `the table's change ${change}, the hook's ${wantChange}`);
  }
  assert.match(
    await page.textContent('#knock'),
    new RegExp(`Knocked out: layer ${ind.layer + 1} head ${ind.head + 1}`),
  );
  await shot(page.locator('#model'), 'desktop');
  await shot(page.locator('#knock'), 'panel');

  // the steps' toggle: the steps show the knocked-out head once opened; its toggle says it is out
  await act(
    page,
    () => page.click(`#model-grid button[data-layer="${ind.layer}"][data-head="${ind.head}"]`),
    new Function('st', `return st.layer === ${ind.layer} && st.head === ${ind.head}`),
  );
  assert.equal(await page.getAttribute('#knock-step', 'aria-pressed'), 'true');
  assert.match(await page.textContent('#knock-step-note'), /with every head/);
  await act(
    page,
    () => page.click('#knock-step'),
    () => true,
  );
  assert.equal(await page.getAttribute('#knock-step', 'aria-pressed'), 'false');
  assert.equal(await page.getAttribute(`#model-grid button[data-knock="${key}"]`, 'aria-pressed'), 'false');
  assert.match(await page.textContent('#knock'), /No head is knocked out/);
  await shot(page.locator('#steps'), 'steps');

  await page.addScriptTag({ content: AXE });
  const { violations } = await page.evaluate((rules) => window.axe.run('#model', rules), RULES);
  assert.deepEqual(
    violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`),
    [],
  );
  assert.deepEqual(errors(), []);
  await page.close();
});

test('bad input to predict and attribution: a message that says what to give, and nothing changes', async () => {
  const { page, errors } = await open({ width: 1280, height: 900 });
  const before = await hook(page, () => ({
    version: window.attentionPage.version,
    state: window.attentionPage.state,
    panel: document.getElementById('knock').innerHTML,
  }));
  const n = before.state.n;
  const cases = [
    [{ at: n }, new RegExp(`at is ${n}, but the sentence has ${n} tokens: give an integer from 0 to ${n - 1}`)],
    [{ at: -1 }, new RegExp(`give an integer from 0 to ${n - 1}`)],
    [{ at: 1.5 }, /at is 1\.5/],
    [{}, /at is undefined/],
    [{ at: 3, knockOut: [{ layer: 2, head: 0 }] }, /layer 0 to 1 and head 0 to 3/],
    [{ at: 3, knockOut: [{ layer: 0, head: 4 }] }, /layer 0 to 1 and head 0 to 3/],
    [{ at: 3, knockOut: [{ layer: 0 }] }, /each entry is \{ layer, head \}/],
    [{ at: 3, knockOut: 'layer 2 head 3' }, /knockOut must be a list of \{ layer, head \}/],
    [{ at: 3, knockOut: [{ layer: 1, head: 2 }], ablation: 'half' }, /ablation is "half"; give 'zero'/],
  ];
  for (const [arg, message] of cases) {
    const got = await hook(
      page,
      (a) => {
        try {
          window.attentionPage.predict(a);
          return null;
        } catch (e) {
          return e.message;
        }
      },
      arg,
    );
    assert.match(got ?? 'no error', message, JSON.stringify(arg));
    assert.match(got, /^predict: /);
  }
  const attr = await hook(page, () => {
    try {
      window.attentionPage.attribution({ at: 99 });
      return null;
    } catch (e) {
      return e.message;
    }
  });
  assert.match(attr ?? 'no error', /^attribution: at is 99/);
  const badWord = await hook(page, () => {
    try {
      window.attentionPage.attribution({ at: 3, word: 'zzzqqq' });
      return null;
    } catch (e) {
      return e.message;
    }
  });
  assert.match(
    badWord ?? 'no error',
    /^attribution: word is "zzzqqq", which is not one of the model's \d+ output tokens/,
  );
  const afterwards = await hook(page, () => ({
    version: window.attentionPage.version,
    state: window.attentionPage.state,
    panel: document.getElementById('knock').innerHTML,
  }));
  assert.deepEqual(afterwards, before);
  // without the trained model (Identity weights): no guesses to give, said so
  await act(
    page,
    () => page.check('input[name="projection"][value="identity"]'),
    (s) => s.projection === 'identity',
  );
  const off = await hook(page, () => {
    try {
      window.attentionPage.predict({ at: 0 });
      return null;
    } catch (e) {
      return e.message;
    }
  });
  assert.match(off ?? 'no error', /the trained model is not shown \(choose Trained weights/);
  assert.ok(await page.locator('#knock').isHidden());
  assert.deepEqual(errors(), []);
  await page.close();
});

test('phone (390 px): the panel fits, the tables and chart read, no sideways scroll', async () => {
  const { page, errors } = await open({ width: 390, height: 844 });
  await act(
    page,
    () => page.click('#model-grid button[data-knock="1,2"]'),
    () => true,
  );
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `the page scrolls sideways by ${overflow} px`);
  const box = await page.locator('#knock').boundingBox();
  assert.ok(box.width <= 390, `the panel is ${box.width} px wide`);
  assert.equal(await page.locator('.knock-table').count(), 2);
  assert.equal(await page.locator('.head-rank tbody tr').count(), 11); // 8 heads, embedding, feed-forward, bias
  // every table whole inside the panel: none scrolls sideways in its box (a learner may not see
  // that it can), none runs past the panel's edge
  const wide = await page.evaluate(() => {
    const panel = document.querySelector('#knock').getBoundingClientRect();
    return [...document.querySelectorAll('#knock table')]
      .map((t) => {
        const box = t.parentElement.classList.contains('table-scroll') ? t.parentElement : t;
        const over = Math.max(box.scrollWidth - box.clientWidth, t.getBoundingClientRect().right - panel.right);
        return over > 1 ? `${t.className}: ${Math.round(over)} px too wide` : null;
      })
      .filter(Boolean);
  });
  assert.deepEqual(wide, []);
  // the heads' table: the pair of columns of the knock-out chosen above, the other hidden
  const shown = async (kind) => (await page.locator(`.head-rank td.abl-${kind}`).first()).isVisible();
  assert.equal(await page.inputValue('#knock-ablation'), 'zero');
  assert.deepEqual([await shown('zero'), await shown('mean')], [true, false]);
  await shot(page.locator('#knock'), 'phone');
  await act(
    page,
    () => page.selectOption('#knock-ablation', 'mean'),
    () => true,
  );
  assert.deepEqual([await shown('zero'), await shown('mean')], [false, true]);
  assert.match(await page.textContent('#attr-note'), /On a narrow screen the table shows the knock-out chosen/);
  // on a wide screen both pairs, and no word of a narrow one
  await page.setViewportSize({ width: 1280, height: 900 });
  assert.deepEqual([await shown('zero'), await shown('mean')], [true, true]);
  assert.ok(!(await page.locator('#attr-note .narrow-only').isVisible()));
  assert.deepEqual(errors(), []);
  await page.close();
});

// Over causal rows i = 1..n−1 of the scaled scores (n,n) and weights: the smallest and largest
// score, the mean gap from each row's largest score to its next, the mean largest weight, and
// how many rows give one key more than 0.99 (the numbers steps 4 and 6 state).
function facts(scaled, weights, n) {
  const f = { low: Infinity, high: -Infinity, gap: 0, top: 0, sharp: 0, rows: n - 1 };
  for (let i = 1; i < n; ++i) {
    const s = Array.from(scaled.data.subarray(i * n, i * n + i + 1)).sort((a, b) => b - a);
    f.low = Math.min(f.low, s.at(-1));
    f.high = Math.max(f.high, s[0]);
    f.gap += (s[0] - s[1]) / f.rows;
    const w = Math.max(...weights.data.subarray(i * n, i * n + i + 1));
    f.top += w / f.rows;
    if (w > 0.99) ++f.sharp;
  }
  return f;
}

// The notes computed from what the page shows: the default head's softmax (steps 4 and 6) from
// the scaled scores and weights the hook gives, the column of zeros in Q and K (step 2), and the
// pronoun note from the model view's weights.
test('notes from what is shown: the default head’s softmax, the zero columns, where "it" looks', async () => {
  const { page, errors } = await openPage(browser, server.url);
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.evaluate(() => window.attentionPage.ready);
  const { snapshot, goToStep } = pageDriver(1, 6);
  const { state, steps } = await snapshot(page);
  const m = (id, name) => steps.find((x) => x.id === id).matrices.find((k) => k.name === name);
  const toTensor = (x) => ({ data: Float32Array.from(x.data), shape: x.shape });
  const scaled = toTensor(m('scale', 'scaled')),
    weights = toTensor(m('softmax', 'weights'));
  const f = facts(scaled, weights, state.n);
  const fmt1 = (x) => x.toFixed(1).replace('-', '\u2212');
  const says = `scaled scores run from ${fmt1(f.low)} to ${fmt1(f.high)}; in the average row the largest is ${fmt1(f.gap)} above the next, and the top key gets ${Math.round(100 * f.top)} % of the weight (in ${f.sharp} of the ${f.rows} rows`;
  for (const id of ['scale', 'softmax']) {
    await goToStep(page, steps.findIndex((x) => x.id === id) + 1);
    const text = await page.textContent('#step-explain');
    assert.ok(text.includes(says), `step ${id}: ${text}`);
    if (f.top > 0.9) assert.match(text, /nearly one-hot\./);
  }
  // step 2: column 25 of Q and K is 0 for every token, and the page says why
  const q = m('qkv', 'Q'),
    k = m('qkv', 'K');
  const cols = q.shape[1];
  const zero = [];
  for (let c = 0; c < cols; ++c)
    if (
      Array.from({ length: q.shape[0] }, (_, r) => q.data[r * cols + c] === 0 && k.data[r * cols + c] === 0).every(
        Boolean,
      )
    )
      zero.push(c + 1);
  await goToStep(page, steps.findIndex((x) => x.id === 'qkv') + 1);
  const qkv = await page.textContent('#step-explain');
  if (zero.length === 1) assert.ok(qkv.includes(`Column ${zero[0]} of Q and K is 0 for every token`), qkv);
  else if (zero.length > 1) assert.ok(qkv.includes(`Columns ${zero.join(', ')}`), qkv);
  else assert.doesNotMatch(qkv, /of Q and K is 0 for every token/);
  // the pronoun note: its first word's weight (the sum over that word's tokens), the head that
  // gives it, and the even share, recomputed from the model view's tiles
  const tiles = await page.evaluate(() => window.attentionPage.modelView.tiles);
  const norms = state.tokens.map((t) => t.text.trim().toLowerCase());
  const it = norms.indexOf('it');
  const note = await page.textContent('#reference-note');
  const said = note.match(/: “([^”]+)” \(tokens? (\d+)(?:–(\d+))?\) (\d+) % \(layer (\d) head (\d)\)/u);
  assert.ok(said, note);
  const [from, to] = [Number(said[2]) - 1, Number(said[3] ?? said[2]) - 1];
  const weightOn = (t) => {
    let w = 0;
    for (let j = from; j <= to; ++j) w += t.data[it * state.n + j];
    return w;
  };
  const best = tiles.reduce((a, t) => (weightOn(t) > a.w ? { w: weightOn(t), t } : a), { w: -1 });
  assert.equal(Number(said[4]), Math.round(100 * best.w), note);
  assert.deepEqual([Number(said[5]), Number(said[6])], [best.t.layer + 1, best.t.head + 1], note);
  const share = (to - from + 1) / (it + 1);
  assert.ok(
    note.includes(`Spread evenly over the ${it + 1} tokens it sees, that word would get ${Math.round(100 * share)} %.`),
    note,
  );
  assert.ok(note.includes(`${(best.w / share).toFixed(1)} times that`), note);
  assert.doesNotMatch(note, /no head of this model links/);
  assert.deepEqual(errors(), []);
  await page.close();
});

// "Follow the induction head" opens the head the page named by its knock-out, following a token
// that repeats an earlier one (the one the note is about).
test('Follow the induction head: the named head, following a repeated token', async () => {
  const { page, errors } = await openPage(browser, server.url);
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.evaluate(() => window.attentionPage.ready);
  const text = 'The animal was tired because the road was long.';
  await act(page, () => page.fill('#sentence', text), new Function('s', `return s.text === ${JSON.stringify(text)}`));
  const [named] = await hook(page, () => window.attentionPage.inductionHeads);
  const snap = await act(
    page,
    () => page.click('#follow-induction'),
    new Function('s', `return s.layer === ${named.layer} && s.head === ${named.head} && s.stepId === 'softmax'`),
  );
  const norms = snap.state.tokens.map((t) => t.text);
  const f = snap.state.focus;
  assert.ok(norms.slice(0, f - 1).includes(norms[f]), `followed “${norms[f]}” (token ${f}), which does not repeat`);
  assert.ok((await page.textContent('#induction')).includes(`appeared before as`));
  assert.deepEqual(errors(), []);
  await page.close();
});
