// The GEMM micro-kernel's k loop written directly in the wasm text format: what V8 makes of
// exactly the instruction mix of f32_gemm_4x8_*.cpp with nothing around it (no call, no c
// loads and stores, no tails), on panels hot in L1. Between the peak probe (peak_probe.mjs:
// multiply-adds only) and the kernel (gemm_probe.mjs), it says how much the loop's own loads
// and overhead cost, and how much the code around the loop does.
// Per k step: 2 v128.load of b, 4 v128.load32_splat of a, 8 multiply-adds into 8 accumulators
// (f32x4.mul + f32x4.add, or f32x4.relaxed_madd with fma), over a (KC,4) a panel and a (KC,8)
// b panel, KC steps per pass. splat: XNNPACK's wasmsimd "splat" style instead, one v128.load of
// the step's mr a values and an i32x4 lane shuffle per row (pshufd on x86) for the broadcasts.
// broadcast: an a panel packed already broadcast (each a value 4 times, a (KC,4,4) panel), so a
// row's broadcast is a plain v128.load: no splat for the engine to lower (no such kernel ships).
// Other tiles (mr rows, nr = 4·vectors columns) the same way, to
// see which ones V8 compiles without spilling and how fast.
const KC = 256;
let wabt = null; // one instance: each would hold a wasm memory of its own
export const flopsPerPass = (mr = 4, nr = 8) => KC * mr * nr * 2;

// run(passes: i32) -> f32 (the accumulators' first lanes, so nothing is dead code)
export async function kernelShapeModule({ fma = false, mr = 4, nr = 8, splat = false, broadcast = false } = {}) {
  const nb = nr / 4;
  const aStep = (broadcast ? 16 : 4) * mr; // bytes of a per k step
  const rows = Array.from({ length: mr }, (_, i) => i);
  const cols = Array.from({ length: nb }, (_, j) => j);
  const acc = rows.flatMap((i) => cols.map((j) => `$c${i}x${j}`));
  const step = cols.map((j) => `(local.set $b${j} (v128.load offset=${16 * j} (local.get $pb)))`);
  if (splat) step.push('(local.set $av (v128.load (local.get $pa)))'); // mr = 4
  const lane = (i) => [0, 1, 2, 3].map((x) => 4 * i + x).join(' ');
  for (const i of rows) {
    step.push(
      splat
        ? `(local.set $a (i8x16.shuffle ${Array(4).fill(lane(i)).join(' ')} (local.get $av) (local.get $av)))`
        : broadcast
          ? `(local.set $a (v128.load offset=${16 * i} (local.get $pa)))`
          : `(local.set $a (v128.load32_splat offset=${4 * i} (local.get $pa)))`,
    );
    for (const j of cols) {
      const c = acc[nb * i + j];
      step.push(
        fma
          ? `(local.set ${c} (f32x4.relaxed_madd (local.get $a) (local.get $b${j}) (local.get ${c})))`
          : `(local.set ${c} (f32x4.add (f32x4.mul (local.get $a) (local.get $b${j})) (local.get ${c})))`,
      );
    }
  }
  const text = `(module (import "shape" "memory" (memory 1))
    (func (export "run") (param $passes i32) (result f32)
      (local $pa i32) (local $pb i32) (local $k i32) (local $a v128) (local $av v128) ${cols.map((j) => `(local $b${j} v128)`).join(' ')}
      ${acc.map((c) => `(local ${c} v128)`).join(' ')}
      (block (loop
        (local.set $pa (i32.const 0)) (local.set $pb (i32.const ${KC * aStep})) (local.set $k (i32.const ${KC}))
        (block (loop
          ${step.join('\n          ')}
          (local.set $pa (i32.add (local.get $pa) (i32.const ${aStep})))
          (local.set $pb (i32.add (local.get $pb) (i32.const ${4 * nr})))
          (br_if 0 (local.tee $k (i32.sub (local.get $k) (i32.const 1))))))
        (br_if 0 (local.tee $passes (i32.sub (local.get $passes) (i32.const 1))))))
      ${acc.slice(1).reduce((s, c) => `(f32.add ${s} (f32x4.extract_lane 0 (local.get ${c})))`, `(f32x4.extract_lane 0 (local.get ${acc[0]}))`)}))`;
  wabt ??= import('wabt').then((m) => m.default());
  return (await wabt).parseWat('shape.wat', text, { simd: true, relaxed_simd: fma }).toBinary({}).buffer;
}

// bytes -> run(passes), its panels filled with small values (no denormals, no overflow). Every
// loop runs in one memory: JavaScriptCore gives a process's first few memories (about 8 in Bun
// 1.4) bounds checks by signal handler and every later one an explicit check per access, which
// runs these loops at 0.5-0.75× (BUN_JSC_maxNumWasmFastMemories raises the count).
let memory = null;
export function instantiate(bytes) {
  if (!memory) {
    memory = new WebAssembly.Memory({ initial: 1 });
    new Float32Array(memory.buffer).fill(1e-3);
  }
  return new WebAssembly.Instance(new WebAssembly.Module(bytes), { shape: { memory } }).exports.run;
}
