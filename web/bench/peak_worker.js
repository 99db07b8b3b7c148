// One core's wasm SIMD peak, in a Web Worker (web/bench/run.js starts one per core at once):
// the probe module's bytes in, GFLOP/s out.
import { measureOneThread } from '/bench-src/peak_probe.mjs';

self.onmessage = (e) => self.postMessage(measureOneThread(e.data, 15));
