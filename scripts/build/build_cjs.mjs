// Builds the package's CommonJS entry, web/lib/index.cjs, from web/lib/require_entry.js with
// Rollup: tensor(), seededRandom() and xavierUniform() bundled from their ES modules, and
// createAttention's import('./index.js') kept a dynamic import (Rollup's dynamicImportInCjs),
// so require() users run the same code as import users. Run by scripts/build/build.sh.
//
//   node scripts/build/build_cjs.mjs
import { fileURLToPath } from 'node:url';
import { rollup } from 'rollup';

const lib = fileURLToPath(new URL('../../web/lib/', import.meta.url));
const bundle = await rollup({
  input: `${lib}require_entry.js`,
  external: [`${lib}index.js`],
  // Reading a property runs no code of ours: without this, tensor.js' typed-array accessors
  // (read from the engine's prototypes when it loads, used only by its checks) would come along.
  treeshake: { propertyReadSideEffects: false },
});
await bundle.write({
  file: `${lib}index.cjs`,
  format: 'cjs',
  banner: '// Built by scripts/build/build_cjs.mjs from require_entry.js (npm run build); edit that, not this.',
});
await bundle.close();
