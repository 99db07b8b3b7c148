// The few packages the browser bench needs that a browser cannot import as published, bundled
// by esbuild (a devDependency) into ES modules under build/bench-browser/, which
// scripts/serve.mjs serves at /bench/vendor/:
//   onnx-proto.mjs  onnx-proto (CommonJS + protobufjs): encodes the ONNX models (onnx_graphs.mjs)
//   wabt.mjs        wabt (Emscripten, CommonJS): assembles the SIMD peak probe (peak_probe.mjs)
//   tfjs.mjs        @tensorflow/tfjs-core + tfjs-backend-wasm + tfjs-core's gradient functions
//                   (which its own bundles leave out; tf.grads needs them), from the peers
//                   in build/bench-peers/ (scripts/bench/peers.mjs); only when they are installed
// onnxruntime-web needs no bundle: its dist/ort.wasm.min.mjs is an ES module (served as is).
//
//   node scripts/bench/browser_bundles.mjs    (npm start and `npm run bench -- --browser` run it)
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PEER_VERSIONS, installedVersion, peerFile, ROOT } from './peers.mjs';

export const BUNDLE_DIR = join(ROOT, 'build', 'bench-browser');

const ENTRIES = {
  'onnx-proto.mjs': { peers: false, source: "import onnxProto from 'onnx-proto';\nexport default onnxProto;\n" },
  'wabt.mjs': { peers: false, source: "import wabt from 'wabt';\nexport default wabt;\n" },
  'tfjs.mjs': {
    peers: true,
    source:
      "export * as tf from '@tensorflow/tfjs-core';\n" +
      "export * as tfWasm from '@tensorflow/tfjs-backend-wasm';\n" +
      "import '@tensorflow/tfjs-core/dist/register_all_gradients';\n",
  },
};

const peersInstalled = () => Object.entries(PEER_VERSIONS).every(([name, v]) => installedVersion(name) === v);

// Builds the bundles that are missing or older than their packages. -> { built, skipped }
export async function ensureBrowserBundles(log = () => {}) {
  const { build } = await import('esbuild');
  mkdirSync(BUNDLE_DIR, { recursive: true });
  const built = [],
    skipped = [];
  for (const [file, entry] of Object.entries(ENTRIES)) {
    const out = join(BUNDLE_DIR, file);
    if (entry.peers && !peersInstalled()) {
      skipped.push(`${file} (peers not installed)`);
      continue;
    }
    const stamp = entry.peers ? peerFile('@tensorflow/tfjs-core', 'package.json') : join(ROOT, 'package-lock.json');
    if (existsSync(out) && statSync(out).mtimeMs > statSync(stamp).mtimeMs) continue;
    log(`bundling ${file} for the browser bench`);
    await build({
      stdin: { contents: entry.source, resolveDir: ROOT, sourcefile: file.replace('.mjs', '-entry.mjs') },
      nodePaths: [peerFile(), join(ROOT, 'node_modules')],
      bundle: true,
      format: 'esm',
      platform: 'browser',
      target: 'es2022',
      minify: true,
      // the Node-only branches of the Emscripten glue and tfjs's Node helpers
      external: ['fs', 'path', 'os', 'perf_hooks', 'worker_threads', 'crypto', 'url', 'module'],
      logLevel: 'error',
      outfile: out,
    });
    built.push(file);
  }
  return { built, skipped };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { built, skipped } = await ensureBrowserBundles((t) => console.error(t));
  console.error(
    `browser bundles in ${BUNDLE_DIR}: ${built.length ? `built ${built.join(', ')}` : 'up to date'}` +
      (skipped.length ? `; skipped ${skipped.join(', ')}` : ''),
  );
}
