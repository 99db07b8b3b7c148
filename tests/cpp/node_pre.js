// Runs before the wasm test binaries' loader under Node: read the .wasm beside the script
// from disk, because Emscripten 3.1.6's loader would try fetch() on a file path under
// Node 20. Pthread workers get the compiled module from the main thread instead.
/* global Module */ // Emscripten's module object, in scope where --pre-js code runs
if (typeof __filename == 'string' && !Module['ENVIRONMENT_IS_PTHREAD'] && !Module['wasmBinary']) {
  Module['wasmBinary'] = require('fs').readFileSync(__filename.replace(/\.js$/, '.wasm'));
}
