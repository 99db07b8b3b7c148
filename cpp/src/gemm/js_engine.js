// An Emscripten JavaScript library (linked with --js-library, CMakeLists.txt): the JavaScript
// engine running the module, for gemm_select.cpp's choice of GEMM micro-kernel.
//   wa_js_engine() -> 100 + V8's major version, 1 SpiderMonkey, 2 JavaScriptCore, 0 unknown
// Runtimes by their globals (Bun runs JavaScriptCore; Node and Deno V8), browsers by their user
// agent: Firefox's is SpiderMonkey; Chrome's names its version, and V8 x.y ships in Chrome xy;
// any other WebKit one (Safari, and every browser on iOS) is JavaScriptCore.
/* global mergeInto, LibraryManager, Bun, Deno */
mergeInto(LibraryManager.library, {
  wa_js_engine: function () {
    if (typeof Bun === 'object') return 2;
    var ua = (typeof navigator === 'object' && navigator.userAgent) || '';
    if (ua.indexOf('Firefox/') >= 0) return 1;
    var v8 =
      (typeof process === 'object' && process.versions && process.versions.v8) ||
      (typeof Deno === 'object' && Deno.version.v8);
    if (v8) return 100 + parseInt(v8, 10);
    var chrome = /(Chrome|Chromium)\/([0-9]+)/.exec(ua);
    if (chrome) return 100 + Math.floor(Number(chrome[2]) / 10);
    if (ua.indexOf('AppleWebKit/') >= 0) return 2;
    return 0;
  },
});
