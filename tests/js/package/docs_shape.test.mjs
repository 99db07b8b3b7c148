// The docs a user reads stay short where they read them (STYLE.md point 10): no prose paragraph of
// the README or web/docs/*.md runs past 200 words (code blocks, tables and headings are not prose; a
// tight list is one paragraph, a list with blank lines between its items one per item), and
// performance.md holds the results in at most 200 lines (the lab's notes live in scripts/LAB.md).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { DOC_FILES, repo } from '../helpers/docs_examples.mjs';

const MAX_WORDS = 200;
const MAX_PERFORMANCE_LINES = 200;

// The prose paragraphs of a markdown text: [{ line, words }], line from 1.
export function paragraphs(text) {
  const found = [];
  let current = null;
  let fence = false;
  const close = () => {
    if (current) found.push(current);
    current = null;
  };
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (/^(```|~~~)/.test(line)) {
      close();
      fence = !fence;
      return;
    }
    if (fence) return;
    if (line === '' || line.startsWith('|') || /^#{1,6} /.test(line) || line.startsWith('<')) {
      close();
      return;
    }
    current ??= { line: i + 1, words: 0 };
    current.words += line.split(/\s+/).filter((w) => /[\p{L}\p{N}]/u.test(w)).length;
  });
  close();
  return found;
}

test('the paragraph counter sees prose, neither code nor tables, and a loose list item apart', () => {
  const prose = Array.from({ length: 201 }, (_, i) => `w${i}`).join(' ');
  const text = [
    '# Title',
    '',
    'one two three',
    'four',
    '',
    '```js',
    prose,
    '```',
    '',
    `| ${prose} |`,
    '',
    `- ${prose}`,
    '- a b',
    '',
    '- c d e',
    '',
    '- f',
  ];
  assert.deepEqual(paragraphs(text.join('\n')), [
    { line: 3, words: 4 },
    { line: 12, words: 203 },
    { line: 15, words: 3 },
    { line: 17, words: 1 },
  ]);
});

test(`no prose paragraph of the README or web/docs runs past ${MAX_WORDS} words`, () => {
  const long = [];
  for (const file of DOC_FILES)
    for (const { line, words } of paragraphs(readFileSync(join(repo, file), 'utf8')))
      if (words > MAX_WORDS) long.push(`${file}:${line}: ${words} words`);
  assert.deepEqual(long, []);
});

test(`performance.md holds the results in at most ${MAX_PERFORMANCE_LINES} lines`, () => {
  const lines = readFileSync(join(repo, 'web/docs/performance.md'), 'utf8').trimEnd().split('\n').length;
  assert.ok(lines <= MAX_PERFORMANCE_LINES, `web/docs/performance.md has ${lines} lines`);
});
