// The memory bandwidth a wasm SIMD loop gets when it only reads: the yardstick for decoding,
// whose cost is reading the key/value cache once per token. A module in the wasm text format
// (as peak.mjs) sums a buffer of BYTES with v128.load + f32x4.add, four independent
// accumulators, 64 bytes per iteration; the buffer (64 MiB, what decoding reads at a cache of
// 8192 tokens of 8 kv heads, d 128, k and v) is far larger than the CPU's per-core caches.
// One thread; the buffer written first, then the best of several passes after a few warm-up ones.
import wabt from 'wabt';

export const BYTES = 64 * 2 ** 20;

async function readModule() {
  const pages = BYTES / 65536;
  const text = `(module
    (memory (export "memory") ${pages})
    (func (export "read") (param $bytes i32) (result f32)
      (local $p i32) (local $a v128) (local $b v128) (local $c v128) (local $d v128)
      (block (loop
        (local.set $a (f32x4.add (local.get $a) (v128.load offset=0 (local.get $p))))
        (local.set $b (f32x4.add (local.get $b) (v128.load offset=16 (local.get $p))))
        (local.set $c (f32x4.add (local.get $c) (v128.load offset=32 (local.get $p))))
        (local.set $d (f32x4.add (local.get $d) (v128.load offset=48 (local.get $p))))
        (local.set $p (i32.add (local.get $p) (i32.const 64)))
        (br_if 0 (i32.lt_u (local.get $p) (local.get $bytes)))))
      (f32x4.extract_lane 0 (f32x4.add (f32x4.add (local.get $a) (local.get $b))
                                       (f32x4.add (local.get $c) (local.get $d))))))`;
  return (await wabt()).parseWat('read.wat', text, { simd: true }).toBinary({}).buffer;
}

// -> { gbPerSecond, bytes, method }: GB = 1e9 bytes
export async function measureReadBandwidth({ passes = 15 } = {}) {
  const { read, memory } = new WebAssembly.Instance(new WebAssembly.Module(await readModule())).exports;
  // written first: untouched pages would all be the kernel's one zero page, which caches well
  new Float32Array(memory.buffer).fill(1);
  for (let i = 0; i < 5; ++i) read(BYTES);
  let best = Infinity;
  for (let i = 0; i < passes; ++i) {
    const t0 = performance.now();
    read(BYTES);
    best = Math.min(best, performance.now() - t0);
  }
  return {
    gbPerSecond: BYTES / best / 1e6,
    bytes: BYTES,
    method: `v128.load + f32x4.add over ${BYTES / 2 ** 20} MiB, 4 accumulators, 1 thread; best of ${passes} passes`,
  };
}
