// The page's link and CSV formats in Node (url_state.js, export.js): every setting survives a
// round trip through the query, invalid fields are left out, and a CSV quotes tokens that need it
// and writes the exact float32 values.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { matrixCsv } from '../../../web/page/export.js';
import { createState } from '../../../web/page/state.js';
import { readSettingsQuery, settingsQuery } from '../../../web/page/url_state.js';

test('settings -> query -> settings', () => {
  const s = createState('Hello, "world" & more: 50% + ü?');
  Object.assign(s.settings, {
    mode: 'sentence',
    projection: 'random',
    layer: 1,
    seed: 4294967295,
    heads: 5,
    dK: 7,
    causal: true,
    scaling: false,
    positions: true,
    head: 3,
    step: 17,
    focus: 4,
    target: 0,
    lr: 0.003,
  });
  const query = settingsQuery(s.settings);
  const back = readSettingsQuery(`?${query}`);
  const { text, ...rest } = back;
  assert.equal(text, s.settings.text);
  for (const [k, v] of Object.entries(rest)) assert.deepEqual(v, s.settings[k], k);
  assert.deepEqual(
    Object.keys(back).sort(),
    Object.keys(s.settings)
      .filter((k) => k !== 'version')
      .sort(),
  );
  // null fields (the defaults' "pick for me") are left out.
  const fresh = createState('x').settings;
  assert.equal(new URLSearchParams(settingsQuery(fresh)).has('focus'), false);
  assert.equal(new URLSearchParams(settingsQuery(fresh)).has('dK'), false);
});

test('invalid fields are left out', () => {
  const bad = readSettingsQuery(
    '?mode=other&projection=x&layer=2&seed=-1&heads=3&dK=0&causal=yes&scaling=1&head=1.5&step=1e2&focus=&target=512&lr=1&text=',
  );
  assert.deepEqual(bad, { scaling: true, text: '' });
});

test('CSV: a header row of tokens, quoted where needed, exact values', () => {
  const data = Float32Array.from([0.1, -Infinity, 1 / 3, 2]);
  const csv = matrixCsv({
    name: 'm',
    shape: [2, 2],
    data,
    rowLabels: ['a,b', 'say "hi"'],
    colLabels: ['a,b', 'say "hi"'],
  });
  const lines = csv.split('\r\n');
  assert.equal(lines[0], 'token,"a,b","say ""hi"""');
  assert.equal(lines[1], `"a,b",${Math.fround(0.1)},-Infinity`);
  assert.equal(lines[2], `"say ""hi""",${Math.fround(1 / 3)},2`);
  assert.equal(Number(lines[2].split(',').at(-2)), data[2]);
  assert.equal(lines[3], '');
  const numbered = matrixCsv({ name: 'w', shape: [1, 3], data: Float32Array.from([1, 2, 3]) });
  assert.equal(numbered, 'row,1,2,3\r\n1,1,2,3\r\n');
});
