// Sizes of our .wasm files, raw and gzip-compressed (what a page download costs), with the
// peers' wasm binaries alongside for scale.
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { peerFile, ROOT } from './peers.mjs';

function sizeOf(path) {
  const bytes = readFileSync(path);
  return { bytes: bytes.length, gzipBytes: gzipSync(bytes, { level: 9 }).length };
}

export function wasmSizes() {
  const dir = join(ROOT, 'web', 'lib', 'wasm');
  const ours = existsSync(dir)
    ? readdirSync(dir)
        .filter((f) => f.endsWith('.wasm'))
        .sort()
        .map((f) => ({ file: `web/lib/wasm/${f}`, ...sizeOf(join(dir, f)) }))
    : [];
  const peerFiles = [
    ['tfjs-wasm', peerFile('@tensorflow/tfjs-backend-wasm', 'dist', 'tfjs-backend-wasm-simd.wasm')],
    ['tfjs-wasm', peerFile('@tensorflow/tfjs-backend-wasm', 'dist', 'tfjs-backend-wasm-threaded-simd.wasm')],
    ['onnxruntime-web', peerFile('onnxruntime-web', 'dist', 'ort-wasm-simd-threaded.wasm')],
  ];
  const peers = peerFiles
    .filter(([, p]) => existsSync(p))
    .map(([name, p]) => ({ peer: name, file: p.slice(p.lastIndexOf('/') + 1), ...sizeOf(p) }));
  return { ours, peers };
}
