// npm's prepack (package.json): `npm pack` and `npm publish` stop here, naming the command to
// run, when the package's built files are missing. They are build outputs, not in git
// (scripts/build/build.sh writes them), and package.json's `files` globs match nothing without
// them: npm would otherwise write a tarball of the JavaScript alone, whose first
// createAttention() fails with ERR_MODULE_NOT_FOUND.
//   node scripts/build/check_pack.mjs [root]   exit 0 when every file is there, else 1 and the list
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { BUILDS } from '../../web/lib/builds.js';

// Every built file the package ships: each build's .wasm, classic glue (.js), ES module glue
// (.mjs) and with threads its workers' script; the wasm folder's package.json; the CommonJS
// entry and its types.
export const BUILT_FILES = [
  ...BUILDS.flatMap(({ base, files }) => [...files, `${base}.mjs`].map((f) => `web/lib/wasm/${f}`)),
  'web/lib/wasm/package.json',
  'web/lib/index.cjs',
  'web/lib/index.d.cts',
];

// root (the package's folder) -> the built files missing there
export const missingFiles = (root) => BUILT_FILES.filter((f) => !existsSync(join(root, f)));

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = process.argv[2] ?? fileURLToPath(new URL('../..', import.meta.url));
  const missing = missingFiles(root);
  if (missing.length) {
    console.error(
      `wasm-attention: cannot pack: ${missing.length} built file${missing.length === 1 ? '' : 's'} missing (${missing.join(', ')}).\n` +
        'Build them first: `npm run build` (needs the toolchain scripts/build/setup.sh installs), or from a fresh clone\n' +
        'all in one: `npm run tarball` (setup, build, then npm pack).',
    );
    process.exit(1);
  }
}
