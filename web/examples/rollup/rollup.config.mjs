// Rollup needs two plugins for any npm package that ships assets:
//   nodeResolve           finds 'wasm-attention' in node_modules (browser: true picks the
//                         browser entries of packages that have them)
//   importMetaAssets      copies each file named by new URL('./file', import.meta.url) into the
//                         build and rewrites the URL: the .wasm files and the pthread worker's
//                         scripts of wasm-attention
// and, for createAttention({ worker: true }), the worker's script as a second input: Rollup
// does not follow new Worker(new URL('./worker_host.js', import.meta.url)): importMetaAssets
// leaves the module that says it alone (exclude), and the input's output lands where the URL
// points, next to main.js.
import { nodeResolve } from '@rollup/plugin-node-resolve';
import { importMetaAssets } from '@web/rollup-plugin-import-meta-assets';

export default {
  input: { main: 'main.js', worker_host: 'node_modules/wasm-attention/web/lib/worker_host.js' },
  output: { dir: 'dist', format: 'es', entryFileNames: '[name].js' },
  plugins: [
    nodeResolve({ browser: true }),
    importMetaAssets({ exclude: '**/wasm-attention/web/lib/worker_client.js' }),
  ],
};
