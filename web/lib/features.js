// What the WebAssembly engine can run, asked with tiny modules that WebAssembly.validate
// checks without compiling or running anything (the technique of wasm-feature-detect).

// (func (result v128) (f32x4.relaxed_madd (i32x4.splat 1) (i32x4.splat 1) (i32x4.splat 1)))
const RELAXED_MADD_MODULE = new Uint8Array([
  0x00,
  0x61,
  0x73,
  0x6d,
  0x01,
  0x00,
  0x00,
  0x00, // "\0asm", version 1
  0x01,
  0x05,
  0x01,
  0x60,
  0x00,
  0x01,
  0x7b, // type section: one type, () -> v128
  0x03,
  0x02,
  0x01,
  0x00, // function section: one function, of type 0
  0x0a,
  0x13,
  0x01,
  0x11,
  0x00, // code section: one body of 17 bytes, no locals
  0x41,
  0x01,
  0xfd,
  0x11, // i32.const 1, i32x4.splat
  0x41,
  0x01,
  0xfd,
  0x11,
  0x41,
  0x01,
  0xfd,
  0x11,
  0xfd,
  0x85,
  0x02, // f32x4.relaxed_madd: prefix 0xfd, opcode 0x105 as LEB128
  0x0b, // end
]);

let relaxed;

// Whether relaxed SIMD runs here: Chromium 114+, Firefox 145+, Node 20 with
// --experimental-wasm-relaxed-simd. Asked once.
export function relaxedSimdAvailable() {
  relaxed ??= typeof WebAssembly === 'object' && WebAssembly.validate(RELAXED_MADD_MODULE);
  return relaxed;
}

let sharedMemory;

// Whether threads can share a WebAssembly.Memory here: one can be made shared (its buffer a
// SharedArrayBuffer) and be posted on a MessagePort, as the glue posts it to each thread's
// worker. Asked of WebAssembly itself, not of the global SharedArrayBuffer, which an engine may
// leave out while it shares memories. WebKitGTK 2.50 on a cross-origin isolated page makes
// shared memories but refuses to post them (DataCloneError), and has no global
// SharedArrayBuffer; with JavaScriptCore's SharedArrayBuffer on (as in Safari) it posts them.
// (structuredClone would not do: WebKit refuses to clone a memory it posts.) Asked once; the
// one-page memory is left to the collector.
export function sharedMemoryAvailable() {
  if (sharedMemory === undefined) {
    try {
      const memory = new WebAssembly.Memory({ shared: true, initial: 1, maximum: 1 });
      const { port1, port2 } = new MessageChannel();
      try {
        port1.postMessage(memory);
      } finally {
        port1.close();
        port2.close();
      }
      sharedMemory = !(memory.buffer instanceof ArrayBuffer);
    } catch {
      sharedMemory = false;
    }
  }
  return sharedMemory;
}
