// --post-js of the bench-only pool-trace modules (CMakeLists.txt): each instance's Module,
// for scripts/bench/pool_trace.mjs to call poolTraceTake() on. Never in the package. Plain
// ES2015: Emscripten 3.1.6's JS optimizer parses this file.
/* global Module */ // Emscripten's module object, in scope where --post-js code runs
(globalThis.waPoolTraceModules = globalThis.waPoolTraceModules || []).push(Module);
