// Just enough of the WebAssembly binary format to write a module by hand: LEB128 numbers,
// sections, and the opcodes the peak probe uses. No toolchain, so the probe is exactly the
// instructions listed here and nothing a compiler added or removed.

export function uleb(n) {
  const out = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n !== 0) b |= 0x80;
    out.push(b);
  } while (n !== 0);
  return out;
}

export function sleb(n) {
  const out = [];
  for (;;) {
    const b = n & 0x7f;
    n >>= 7;
    if ((n === 0 && (b & 0x40) === 0) || (n === -1 && (b & 0x40) !== 0)) {
      out.push(b);
      return out;
    }
    out.push(b | 0x80);
  }
}

const vec = (items) => [...uleb(items.length), ...items.flat()];
const section = (id, body) => [id, ...uleb(body.length), ...body];
const name = (s) => vec([...new TextEncoder().encode(s)]);

export const I32 = 0x7f, F32 = 0x7d, V128 = 0x7b;

export const op = {
  block: 0x02, loop: 0x03, end: 0x0b, br_if: 0x0d, void: 0x40,
  local_get: 0x20, local_set: 0x21, local_tee: 0x22,
  i32_const: 0x41, i32_sub: 0x6b, f32_add: 0x92,
  // SIMD: prefix 0xfd, then the opcode as a LEB128
  v128_const: [0xfd, ...uleb(12)],
  f32x4_extract_lane: [0xfd, ...uleb(31)],
  f32x4_add: [0xfd, ...uleb(228)],
  f32x4_mul: [0xfd, ...uleb(230)],
};

// A module of one exported function.
//   params, results: value types; locals: [[count, type], ...]; code: the body's bytes
export function moduleWithOneFunction({ exportName, params, results, locals, code }) {
  const type = [0x60, ...vec(params.map((t) => [t])), ...vec(results.map((t) => [t]))];
  const body = [...vec(locals.map(([count, t]) => [...uleb(count), t])), ...code, op.end];
  return Uint8Array.from([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,      // "\0asm", version 1
    ...section(1, vec([type])),                          // type section: one signature
    ...section(3, vec([uleb(0)])),                       // function section: one function
    ...section(7, vec([[...name(exportName), 0x00, ...uleb(0)]])),  // export it
    ...section(10, vec([[...uleb(body.length), ...body]])),         // its code
  ]);
}
