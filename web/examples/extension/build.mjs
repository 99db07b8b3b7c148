// Writes the unpacked extension to dist/: its own files, and the package's browser files
// (node_modules/wasm-attention/web/lib) as dist/wasm-attention/, which page.js imports.
// Then load dist/ in chrome://extensions ("Load unpacked").
import { cpSync, rmSync } from 'node:fs';

rmSync('dist', { recursive: true, force: true });
for (const file of ['manifest.json', 'background.js', 'page.html', 'page.js']) cpSync(file, `dist/${file}`);
cpSync('node_modules/wasm-attention/web/lib', 'dist/wasm-attention', {
  recursive: true,
  dereference: true,
  filter: (path) => !/\.(cjs|d\.c?ts)$/.test(path), // require()'s entry and the types: not for a page
});
