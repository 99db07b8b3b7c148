// tfjs-backend-wasm's threaded binary in Node. Out of the box tfjs never uses it in Node:
//   1. flags_wasm: WASM_HAS_MULTITHREAD_SUPPORT is false whenever IS_NODE (tfjs issue #3830);
//   2. forcing the flag, Emscripten's pthread pool starts its workers from a blob: URL
//      (the worker script is inlined as a Blob), and Node's Worker only takes file paths:
//      ERR_WORKER_PATH;
//   3. the main script handed to the workers is the factory's source (also a Blob), which
//      refers to the bundler's names for Node modules (require$$0 = require('fs'), ...,
//      commonjsGlobal) that do not exist in the worker;
//   4. the C++ side caps the pool at emscripten_num_logical_cores() / 2 (it assumes
//      two hyper-threads per core), which is os.cpus().length / 2 in Node: 1 on a 2-core
//      machine, so it would run one thread anyway.
// This module works around all four, for the bench's child process only: it records the
// text of string Blobs, turns their object URLs into temporary files, rewrites the 'load'
// message's main script into a file with the missing names defined, and reports twice the
// cores to os.cpus() when asked for more threads than half of them. It must run before
// tf.setBackend('wasm').
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os, { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker as NodeWorker } from 'node:worker_threads';

// `var require$$0 = require('fs');` lines of the bundle, plus commonjsGlobal.
function bundlerPrelude(bundlePath) {
  const text = readFileSync(bundlePath, 'utf8');
  const lines = [...text.matchAll(/^var (require\$\$\d+) = require\('([^']+)'\);$/gm)].map(
    ([, name, mod]) => `var ${name} = require(${JSON.stringify(mod)});`,
  );
  return `${lines.join('\n')}\nvar commonjsGlobal = globalThis;\n`;
}

export function enableThreadedTfjs({ threads, bundlePath }) {
  const dir = mkdtempSync(join(tmpdir(), 'bench-tfjs-mt-'));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  let count = 0;
  const toFile = (text) => {
    const file = join(dir, `script-${count++}.cjs`);
    writeFileSync(file, text);
    return file;
  };
  const prelude = bundlerPrelude(bundlePath);

  const NativeBlob = globalThis.Blob;
  globalThis.Blob = class TextBlob extends NativeBlob {
    constructor(parts = [], options) {
      super(parts, options);
      this.text_ = parts.every((p) => typeof p === 'string') ? parts.join('') : null;
    }
  };
  const nativeCreateObjectURL = URL.createObjectURL;
  URL.createObjectURL = (blob) => (blob?.text_ != null ? toFile(blob.text_) : nativeCreateObjectURL(blob));

  class FileWorker extends NodeWorker {
    postMessage(message, transfer) {
      if (message?.cmd === 'load' && message.urlOrBlob?.text_ != null) {
        message = { ...message, urlOrBlob: toFile(prelude + message.urlOrBlob.text_) };
      }
      return super.postMessage(message, transfer);
    }
  }
  // The Emscripten glue assigns global.Worker = worker_threads.Worker when it starts: keep ours.
  Object.defineProperty(globalThis, 'Worker', { get: () => FileWorker, set() {}, configurable: true });

  const cores = os.cpus().length;
  if (threads > Math.floor(cores / 2)) {
    // The same object the bundle's require('os') returns.
    const cpus = os.cpus.bind(os);
    os.cpus = () => {
      const list = cpus();
      return [...list, ...list];
    };
  }
}
