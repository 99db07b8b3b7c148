// The peers (tfjs-wasm, onnxruntime-web) are ~200 MB: they are not dependencies of the
// package. They are installed on demand into build/bench-peers/ (ignored by git, outside
// the package's own node_modules) and loaded from there by path.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const PEER_DIR = join(ROOT, 'build', 'bench-peers');
const PEER_MODULES = join(PEER_DIR, 'node_modules');

export const PEER_VERSIONS = {
  '@tensorflow/tfjs-core': '4.22.0',
  '@tensorflow/tfjs-backend-wasm': '4.22.0',
  'onnxruntime-web': '1.30.0',
};

export function installedVersion(name) {
  try {
    return JSON.parse(readFileSync(join(PEER_MODULES, name, 'package.json'), 'utf8')).version;
  } catch {
    return null;
  }
}

// The packages of each peer, by its implementation's name (impls.mjs).
export const PEER_PACKAGES = {
  ort: ['onnxruntime-web'],
  tfjs: ['@tensorflow/tfjs-core', '@tensorflow/tfjs-backend-wasm'],
};

const missing = (names = Object.keys(PEER_VERSIONS)) =>
  Object.entries(PEER_VERSIONS).filter(([name, v]) => names.includes(name) && installedVersion(name) !== v);

// Installs the pinned peers when any of `names` (default: all) is missing or at another version.
// -> { ok: true } or { ok: false, error }; the bench goes on without peers when it fails.
export function ensurePeers(log, names = undefined) {
  const wanted = missing(names);
  if (wanted.length === 0) return { ok: true };
  const specs = Object.entries(PEER_VERSIONS).map(([name, v]) => `${name}@${v}`);
  log(`installing the peers into ${PEER_DIR} (once, ~200 MB): ${wanted.map(([n]) => n).join(', ')}`);
  mkdirSync(PEER_DIR, { recursive: true });
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const r = spawnSync(npm, ['install', '--prefix', PEER_DIR, '--no-save', '--no-audit', '--no-fund', ...specs], {
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const still = missing(names);
  if (r.status === 0 && still.length === 0) return { ok: true };
  return {
    ok: false,
    error: r.error
      ? String(r.error.message)
      : `npm install exited with ${r.status}; missing: ${still.map(([n]) => n).join(', ')}`,
  };
}

// require() that resolves from build/bench-peers, for the peers' CommonJS Node builds.
export const peerRequire = createRequire(join(PEER_DIR, 'resolve-from-here.js'));

export function peerFile(...parts) {
  return join(PEER_MODULES, ...parts);
}

export function peerUrl(...parts) {
  return pathToFileURL(peerFile(...parts)).href;
}
