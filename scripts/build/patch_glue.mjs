// Adapts Emscripten 3.1.6's glue of a threaded module to the engines the package runs on.
// Run by CMake after each threaded module links, before scripts/build/wrap_esm.mjs wraps the glue.
//
//   node scripts/build/patch_glue.mjs web/lib/wasm/wasm_attention_simd128_mt.js
//     rewrites wasm_attention_simd128_mt.js and wasm_attention_simd128_mt.worker.js in place:
//
//   glue (.js, and so the .mjs made from it; pthread workers load the same .js)
//     SharedArrayBuffer  a binding of the glue's own: the global where there is one, else the
//                        constructor of a shared WebAssembly.Memory's buffer. WebKitGTK has
//                        shared memory on a cross-origin isolated page but no global
//                        SharedArrayBuffer, which the glue names (instanceof, typeof).
//     Worker             a binding of the glue's own: under Node (and Deno, Bun) the glue sets
//                        it to worker_threads' Worker, which it otherwise writes over the
//                        host's global Worker.
//     worker.onerror     calls Module.onWorkerError(event) where the loader gives one, instead
//                        of rethrowing from the event handler, which kills a Node or Deno
//                        process: the loader falls back to one thread.
//     a pool worker      made by Module.pthreadWorker() where the loader gives one (a module
//                        worker from the package's <base>.worker.mjs, builds.js), else from
//                        locateFile('<base>.worker.js') as Emscripten makes it.
//   pthread worker (.worker.js)
//     location           not set: under Node nothing reads it (the glue's Node branch finds
//                        its files through locateFile), and Deno runs worker_threads in a web
//                        worker scope whose location has only a getter (assigning it throws).
//     importScripts      under Node, require() of the glue (a CommonJS file: its module.exports
//                        is the factory, which the worker then calls by its global name)
//                        instead of an eval of its text: the shipped .js evaluate no string.
//
// Each rewrite must find what it replaces, so a new Emscripten fails the build here instead of
// shipping unpatched glue. A file already patched (it starts with MARK) is left as it is.
import { readFileSync, writeFileSync } from 'node:fs';

const MARK = '/* patched by scripts/build/patch_glue.mjs */';

// The glue's bindings, first thing in its factory's closure (var: visible to all of the glue).
const BINDINGS = `
  var SharedArrayBuffer = globalThis.SharedArrayBuffer || (function () {
    try {
      return new WebAssembly.Memory({ shared: true, initial: 1, maximum: 1 }).buffer.constructor;
    } catch (e) {
      return undefined;
    }
  })();
  var Worker = globalThis.Worker;
`;

// [what, pattern, replacement] for the glue, then for the pthread worker's script. Patterns
// allow for the minified (-O3) and the readable (-O1, relaxed builds) glue alike.
const GLUE = [
  ['the factory closure', /^(var \w+ = \(\(\) => \{\n)/m, `$1${BINDINGS}`],
  ['global.Worker', /\bglobal\.Worker\s*=\s*nodeWorkerThreads\.Worker\b/, 'Worker = nodeWorkerThreads.Worker'],
  [
    'worker.onerror',
    /(\bworker\.onerror\s*=\s*\(?\s*e\s*=>\s*\{)/,
    '$1 if (Module["onWorkerError"]) return Module["onWorkerError"](e);',
  ],
  [
    'the pool worker made in allocateUnusedWorker',
    /\bPThread\.unusedWorkers\.push\(\s*new Worker\(\s*pthreadMainJs\s*\)\s*\)/,
    'PThread.unusedWorkers.push(Module["pthreadWorker"] ? Module["pthreadWorker"]() : new Worker(pthreadMainJs))',
  ],
];
const WORKER = [
  ['location in Object.assign(global, …)', /\blocation:\s*\{\s*href:\s*__filename\s*\},\s*/, ''],
  [
    "Node's importScripts",
    /\bimportScripts:\s*function\s*\(f\)\s*\{\s*\(0,\s*eval\)\(fs\.readFileSync\(f,\s*"utf8"\)\)\s*\}/,
    (source) => `importScripts:function(f){global.${factoryCalled(source)}=require(f)}`,
  ],
];

// The name the pthread worker's script calls the glue's factory by (its global, once loaded).
function factoryCalled(source) {
  const name = /\b(\w+)\(Module\)\.then\(/.exec(source)?.[1];
  if (!name) throw new Error("patch_glue: the worker's call of the factory not found");
  return name;
}

function patch(file, rewrites) {
  let source = readFileSync(file, 'utf8');
  if (source.startsWith(MARK)) return;
  for (const [what, pattern, replacement] of rewrites) {
    if (!pattern.test(source)) throw new Error(`patch_glue: ${what} not found in ${file}`);
    source = source.replace(pattern, typeof replacement === 'function' ? replacement(source) : replacement);
  }
  writeFileSync(file, `${MARK}\n${source}`);
}

const js = process.argv[2];
if (!js?.endsWith('.js')) throw new Error('usage: node scripts/build/patch_glue.mjs <module>.js');
patch(js, GLUE);
patch(js.replace(/\.js$/, '.worker.js'), WORKER);
