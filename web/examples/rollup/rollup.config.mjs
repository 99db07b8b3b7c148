// Rollup needs two plugins for any npm package that ships assets:
//   nodeResolve           finds 'wasm-attention' in node_modules (browser: true picks the
//                         browser entries of packages that have them)
//   importMetaAssets      copies each file named by new URL('./file', import.meta.url) into the
//                         build and rewrites the URL: the .wasm files and the pthread worker's
//                         scripts of wasm-attention
import { nodeResolve } from '@rollup/plugin-node-resolve';
import { importMetaAssets } from '@web/rollup-plugin-import-meta-assets';

export default {
  input: 'main.js',
  output: { dir: 'dist', format: 'es' },
  plugins: [nodeResolve({ browser: true }), importMetaAssets()],
};
