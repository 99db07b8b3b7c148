// Unit tests for the tutorial page's tokenizer (web/page/tokenize.js, with the shipped merges and
// scripts/train/bpe.mjs), its positions and its prose, run with:
// node --test tests/js/page/page_units.test.mjs
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test, describe } from 'node:test';
import { fileURLToPath } from 'node:url';

import { createTokenizer, pieceLabel, tokenize } from '../../../web/page/tokenize.js';
import { sinusoidalPositions } from '../../../web/page/positions.js';
import { describeHead } from '../../../web/page/model/head_stats.js';
import { seededRandom } from '../../../web/lib/index.js';
import { trainBpe } from '../../../scripts/train/bpe.mjs';
import { loadShippedModel } from '../helpers/shipped_model.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const model = loadShippedModel();
const tok = model.tokenizer;

describe('tokenize (byte-level BPE)', () => {
  // the text the pieces spell, read from the ids (decode) and from the tokens' bytes
  const spelled = (toks) => tok.decode(toks.map((t) => t.id));

  // Offsets: in order, each token's characters cover its bytes; the tokens tile the input.
  function assertTiles(input, toks) {
    let prev = 0;
    for (const t of toks) {
      assert.ok(t.start >= 0 && t.end > t.start && t.end <= input.length, `offsets of ${JSON.stringify(t)}`);
      assert.ok(t.start === prev || t.start < prev, `no gap before ${JSON.stringify(t)}`);
      prev = Math.max(prev, t.end);
      const whole = new TextDecoder().decode(tok.bytes(t.id));
      if (!/^(<[0-9A-F]{2}>)+$/.test(t.text)) assert.equal(input.slice(t.start, t.end), whole, JSON.stringify(t));
    }
    assert.equal(prev, input.length, 'the tokens reach the end');
  }

  test('empty input gives no tokens; whitespace is tokens too', () => {
    assert.deepEqual(tokenize('', tok), []);
    assert.deepEqual(tokenize(undefined, tok), []);
    for (const s of ['   ', '\n\n\t ', ' a  b   c    ']) {
      const toks = tokenize(s, tok);
      assert.ok(toks.length > 0);
      assert.equal(spelled(toks), s);
      assertTiles(s, toks);
    }
  });

  test('frequent words are one token with their leading space; rare ones are pieces', () => {
    const toks = tokenize('The nation and the people of the United States', tok);
    const texts = toks.map((t) => t.text);
    for (const w of [' the', ' and', ' people', ' of', ' United', ' States'])
      assert.ok(texts.includes(w), `${w} in ${texts}`);
    const rare = tokenize(' Xylophonists', tok);
    assert.ok(rare.length > 1, 'a rare word is split');
    assert.equal(rare.map((t) => t.text).join(''), ' Xylophonists');
    assert.equal(pieceLabel(' the'), '\u2423the');
    assert.equal(pieceLabel('\n\t'), '\u21b5\u21e5');
  });

  test('emoji and other scripts: bytes, shown as <HH>, spelling the text back', () => {
    const s = 'I ❤️ 🐈‍⬛ café 日本語 Ωmega';
    const toks = tokenize(s, tok);
    assert.equal(spelled(toks), s);
    assertTiles(s, toks);
    const cat = toks.filter((t) => s.slice(t.start, t.end) === '🐈');
    assert.ok(cat.length >= 2 && cat.every((t) => /^(<[0-9A-F]{2}>)+$/.test(t.text)), JSON.stringify(cat));
    assert.ok(toks.every((t) => t.id >= 0 && t.id < tok.size));
  });

  test('random Unicode strings spell themselves back, every token one of the V', () => {
    const next = seededRandom(7);
    // code points from ASCII, Latin-1, Greek, CJK, emoji and combining marks, and whitespace
    const ranges = [
      [0x20, 0x7e],
      [0xa0, 0xff],
      [0x370, 0x3ff],
      [0x300, 0x36f],
      [0x4e00, 0x4fff],
      [0x1f300, 0x1f6ff],
      [0x9, 0xd],
    ];
    for (let k = 0; k < 300; ++k) {
      const len = Math.floor(next() * 40);
      let s = '';
      for (let i = 0; i < len; ++i) {
        const [lo, hi] = ranges[Math.floor(next() * ranges.length)];
        s += String.fromCodePoint(lo + Math.floor(next() * (hi - lo + 1)));
      }
      const toks = tokenize(s, tok);
      assert.equal(spelled(toks), s, JSON.stringify(s));
      if (s) assertTiles(s, toks);
      assert.ok(toks.every((t) => Number.isInteger(t.id) && t.id >= 0 && t.id < tok.size));
      assert.equal(toks.length === 0, s === '');
    }
  });

  test('encodes as minbpe does: the earliest learned merge first, never across chunks', () => {
    // a tokenizer of 3 merges: "a"+"b" -> 256, "b"+"c" -> 257, 256+"c" -> 258
    const [a, b, c] = [97, 98, 99];
    const small = createTokenizer({
      merges: [
        [a, b],
        [b, c],
        [256, c],
      ],
    });
    assert.equal(small.size, 259);
    assert.deepEqual(
      small.encode('abc').map((t) => t.id),
      [258],
    );
    assert.deepEqual(
      small.encode('bc').map((t) => t.id),
      [257],
    );
    // " abc" is one chunk (a word with its space): space, then 258
    assert.deepEqual(
      small.encode(' abc').map((t) => t.id),
      [32, 258],
    );
    // "ab!c": "ab" and "!c" are two chunks
    assert.deepEqual(
      small.encode('ab!c').map((t) => t.id),
      [256, 33, c],
    );
    assert.deepEqual(small.pieces.slice(256), ['ab', 'bc', 'abc']);
    assert.throws(() => createTokenizer({ merges: [[a, 300]] }), /merge 0 joins tokens 97 and 300/);
  });

  test('trainBpe learns the most frequent pair first, deterministically', () => {
    const spec = trainBpe(['aaab aaab aaab xy'], 259);
    assert.equal(spec.merges.length, 3);
    // " aaab" x3: (a,a) occurs 6 times (twice per word), the most frequent pair
    assert.deepEqual(spec.merges[0], [97, 97]);
    assert.deepEqual(trainBpe(['aaab aaab aaab xy'], 259), spec);
    const t = createTokenizer(spec);
    assert.equal(t.decode(t.encode('aaab xy zz').map((x) => x.id)), 'aaab xy zz');
  });

  test("the shipped tokenizer: V tokens, the model's classes, bytes first", () => {
    assert.equal(tok.size, model.manifest.tokenizer.tokens);
    assert.equal(model.tensors.embed.shape[0], tok.size);
    assert.equal(model.manifest.model.classes, tok.size);
    assert.equal(tok.pieces[65], 'A');
    assert.equal(new Set(tok.pieces).size, tok.size, 'pieces are distinct');
  });
});

describe('positions', () => {
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
