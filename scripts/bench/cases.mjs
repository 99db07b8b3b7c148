// The benchmark cases. A case is a plain object (it crosses into child processes as JSON):
//   id, section, op ('matmul' | 'attention' | 'mha'), backward, causal, sizes, label,
//   inputsKey: the name the inputs are seeded from, shared by a case's causal and backward
//   twins so that all of them see the same numbers.

const N = 512,
  D = 64,
  D_MODEL = 512,
  HEADS = 8;

function attention(n, d, causal, backward, section) {
  return {
    id: `attention${causal ? '-causal' : ''}${backward ? '-bwd' : ''}${section === 'long' ? `-${n}` : ''}`,
    section,
    op: 'attention',
    n,
    d,
    causal,
    backward,
    label: `${backward ? 'backward ' : ''}${causal ? 'causal ' : ''}attention n=${n} d=${d}`,
    inputsKey: `attention n=${n} d=${d}`,
  };
}

// backwardOnly: our layer's backward() alone, after one forward outside the timing (the
// peers' rows run forward + backward, which is all tf.grads can do; this row is ours only,
// for the backward-vs-forward GFLOP/s target).
// oursOnly (any case): why the peers have no such row; they show it as n/a.
function mha(causal, backward, backwardOnly = false) {
  return {
    id: `mha${causal ? '-causal' : ''}${backward ? '-bwd' : ''}${backwardOnly ? '-only' : ''}`,
    section: backward ? 'backward' : 'mha',
    op: 'mha',
    n: N,
    dModel: D_MODEL,
    heads: HEADS,
    causal,
    backward,
    backwardOnly,
    oursOnly: backwardOnly ? 'our backward() alone' : undefined,
    label: `${backward ? (backwardOnly ? 'backward alone ' : 'forward+backward ') : ''}${causal ? 'causal ' : ''}MHA n=${N} dModel=${D_MODEL} h=${HEADS}`,
    inputsKey: `mha n=${N} dModel=${D_MODEL}`,
  };
}

// Decoding one new token over a key/value cache of `past` tokens, and a causal prefill, both
// grouped-query (32 query heads, 8 kv heads, d 128: a Llama-style layer), batch 1. dtype: the
// cache's element type (attn.kvCache's dtype); the peers keep float32 caches only.
const GQA = { batch: 1, qHeads: 32, kvHeads: 8, d: 128 };
export const DECODE_LENGTHS = [512, 1024, 2048, 4096, 8192, 16384];
export const DECODE_DTYPES = ['float32', 'float16', 'int8'];
export const decodeId = (past, dtype = 'float32') => `decode-${past}${dtype === 'float32' ? '' : `-${dtype}`}`;
function decode(past, dtype) {
  return {
    id: decodeId(past, dtype),
    section: 'decode',
    op: 'decode',
    ...GQA,
    past,
    dtype,
    oursOnly: dtype === 'float32' ? undefined : `${dtype === 'int8' ? 'an' : 'a'} ${dtype} kv cache`,
    causal: true,
    backward: false,
    label: `decode 1 token, ${dtype} cache ${past}, Hq ${GQA.qHeads} Hkv ${GQA.kvHeads} d ${GQA.d}`,
    inputsKey: `decode past=${past}`,
  };
}
const PREFILL = {
  id: 'prefill-gqa',
  section: 'decode',
  op: 'prefill',
  ...GQA,
  n: 2048,
  causal: true,
  backward: false,
  label: `causal GQA prefill n=2048, Hq ${GQA.qHeads} Hkv ${GQA.kvHeads} d ${GQA.d}`,
  inputsKey: 'prefill n=2048',
};

function matmul(id, size) {
  return {
    id,
    section: 'matmul',
    op: 'matmul',
    m: size,
    k: size,
    n: size,
    backward: false,
    causal: false,
    label: `matmul ${size}×${size}×${size}`,
    inputsKey: `matmul ${size}`,
  };
}

export const CASES = [
  matmul('matmul', N),
  attention(N, D, false, false, 'attention'),
  attention(N, D, true, false, 'attention'),
  mha(false, false),
  mha(true, false),
  attention(N, D, false, true, 'backward'),
  attention(N, D, true, true, 'backward'),
  mha(false, true),
  mha(true, true),
  mha(false, true, true),
  mha(true, true, true),
  ...DECODE_DTYPES.flatMap((dtype) => DECODE_LENGTHS.map((past) => decode(past, dtype))),
  PREFILL,
];

// The scaling section's own cases (scaling.mjs): the shapes of issue 29 that no other section
// has. The section also runs mha, decode-8192 and attention-causal-2048 (the long section's).
const SCALING_ONLY = [
  { ...matmul('matmul-1024', 1024), section: 'scaling' },
  {
    id: 'mha-1024',
    section: 'scaling',
    op: 'mha',
    n: 1024,
    dModel: 1024,
    heads: 16,
    causal: false,
    backward: false,
    backwardOnly: false,
    label: 'MHA n=1024 dModel=1024 h=16',
    inputsKey: 'mha n=1024 dModel=1024',
  },
  {
    ...PREFILL,
    id: 'prefill-gqa-1024',
    section: 'scaling',
    n: 1024,
    label: `causal GQA prefill n=1024, Hq ${GQA.qHeads} Hkv ${GQA.kvHeads} d ${GQA.d}`,
    inputsKey: 'prefill n=1024',
  },
  { ...attention(1024, D, false, true, 'scaling'), id: 'attention-bwd-1024' },
];

// The scaling section's cases, in its table's order (issue 29's first).
export const SCALING_CASES = [
  'matmul-1024',
  'mha',
  'mha-1024',
  'decode-8192',
  'attention-causal-2048',
  'prefill-gqa-1024',
  'attention-bwd-1024',
];

// Cases run only when named (--cases) or by their section: a tiny one for the tests that run
// the bench end to end, and the scaling section's.
export const EXTRA_CASES = [matmul('matmul-small', 64), ...SCALING_ONLY];

// The cases that also run on our relaxed-SIMD build (1 thread), beside the SIMD128 rows.
export const RELAXED_CASES = ['matmul', 'matmul-small', 'attention', 'attention-causal', 'mha', 'mha-causal'];

// --quick keeps one case per section: enough to see every implementation run.
export const QUICK_CASES = ['matmul', 'attention-causal', 'mha', 'attention-bwd', 'decode-1024'];

// The first-call section's input: the tutorial page's, 19 tokens, d_model 100, one head.
export const FIRST_CALL = {
  id: 'first-call',
  section: 'firstcall',
  op: 'attention',
  n: 19,
  d: 100,
  causal: false,
  backward: false,
  label: 'attention n=19 d=100',
  inputsKey: 'attention n=19 d=100',
};

export const LONG_SIZES = [512, 1024, 2048, 4096, 8192, 16384];
export const LONG_SIZES_QUICK = [512, 1024];

export function longCase(n) {
  return attention(n, D, true, false, 'long');
}

export function caseById(id) {
  const found = CASES.find((c) => c.id === id) ?? EXTRA_CASES.find((c) => c.id === id);
  if (found) return found;
  const long = /^attention-causal-(\d+)$/.exec(id);
  if (long) return longCase(Number(long[1]));
  throw new Error(`unknown case ${id}`);
}
