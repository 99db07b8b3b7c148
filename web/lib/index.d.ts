// Types for wasm-attention. Letters: nQ queries, nK keys (= values), dK query/key width,
// dV value width, dModel token width, heads the number of heads. On heads (3-D and 4-D
// inputs): B sequences, Hq query heads, Hkv key/value heads, nPast earlier keys (pastKey or
// a cache), nNew new keys, nTotal = nPast + nNew.

/** tensor()'s options. */
export interface TensorOptions {
  /** What the data holds (default 'float32', then left off the tensor); 'float16': a
   *  Float16Array, or a Uint16Array of half-precision bits. */
  dtype?: 'float32' | 'float16';
}

/** A row-major float32 tensor. */
export interface Tensor {
  data: Float32Array;
  shape: number[];
  dtype?: 'float32';
}

/** The engine's Float16Array (ES2025: Chromium, Firefox, Deno, Bun; not Node 20) where
 *  TypeScript's lib declares it, else never. */
export type Float16ArrayOf = typeof globalThis extends { Float16Array: { prototype: infer A } } ? A : never;

/** A row-major half-precision (IEEE binary16) tensor: a Float16Array, or a Uint16Array holding
 *  the bits. Computed on in float32 inside; each result comes back in the format of the input
 *  it follows (the same array type, dtype 'float16'). A Float16Array is taken without a dtype
 *  too; a Uint16Array needs it. */
export interface HalfTensor<D extends Float16ArrayOf | Uint16Array = Float16ArrayOf | Uint16Array> {
  data: D;
  shape: number[];
  dtype: 'float16';
}

/** What a tensor argument may be. */
export type AnyTensor = Tensor | HalfTensor;
/** The result type that follows an input of type T: float16 in, float16 out, in the same
 *  array type (a Float16Array, or a Uint16Array of bits). */
export type Follows<T extends AnyTensor> = T extends HalfTensor ? HalfTensor<T['data']> : Tensor;

/** The typed array a result of type R is held in, for the out option: a Float32Array for
 *  float32 results, the input's Float16Array or Uint16Array (bits) for float16 ones. */
export type OutArray<R extends AnyTensor = AnyTensor> = R['data'];

/** The out option of matmul, attention and a layer's forward. */
export interface OutOption<R extends AnyTensor = AnyTensor> {
  /** The caller's typed array that receives the call's main result (matmul's product,
   *  attention's and forward's output) instead of a fresh one, and is then that result's
   *  data (the same object): a loop that passes one allocates no result array per call.
   *  Exactly the result's values (a RangeError otherwise), of the type the result follows (a
   *  Float32Array, or for float16 results the input's Float16Array or Uint16Array; a
   *  TypeError otherwise), not detached. It may be an input's array (inputs are copied into
   *  wasm memory first). A call that fails leaves it as it was. null or left out: a fresh
   *  array. */
  out?: OutArray<R> | null;
}

/** A keep mask (Uint8Array or boolean[], 1 or true = keep, 0 or false = masked) or an additive
 *  one (Float32Array, -Infinity masks), either as a tensor of shape [nQ,nK] or a bare typed
 *  array of nQ·nK values. dtype 'float16' only on half-precision data (a HalfTensor). */
export type Mask =
  | { data: Uint8Array | boolean[] | Float32Array; shape: [number, number] | number[]; dtype?: 'float32' }
  | HalfTensor
  | Uint8Array
  | Float32Array
  | Float16ArrayOf;

/** On heads: a keep mask (Uint8Array or boolean[], true/1 = keep) or an additive one
 *  (Float32Array, -Infinity masks) of rank 1 to 4, right-aligned against the scores
 *  [B,Hq,nQ,nTotal]: each leading size 1 (broadcast) or full; a last size below nTotal masks
 *  the keys past it. */
export type HeadsMask =
  | { data: Uint8Array | boolean[] | Float32Array | Float16ArrayOf; shape: number[]; dtype?: 'float32' }
  /** 'float16': a Float16Array, or a Uint16Array of half-precision bits, added to the scores. */
  | { data: Float16ArrayOf | Uint16Array; shape: number[]; dtype: 'float16' };

/** A key/value cache in wasm memory: keys [batch,kvHeads,capacity,dK], values
 *  [batch,kvHeads,capacity,dV], rows [0, length) filled. */
export interface KvCacheConfig {
  batch: number;
  kvHeads: number;
  dK: number;
  dV: number;
  capacity: number;
  /** What each kept key and value is (default 'float32'). 'float16': IEEE binary16 (rounded to
   *  nearest even; 11 significant bits, subnormals in steps of 2^-24 below 2^-14, |x| <= 2^-25
   *  becomes 0), half the bytes; a key or value beyond ±65504 is a RangeError. 'int8': blocks
   *  of 32 along d as int8 steps of a bfloat16 scale (max|x|/127 rounded up, llama.cpp's q8_0
   *  with float32's exponent range), 0.27× the bytes: every finite value, within max|x|/252 of
   *  its block. Both are read in place; cache.read() gives them back as float32. */
  dtype?: KvCacheDtype;
}

export type KvCacheDtype = 'float32' | 'float16' | 'int8';

/** What a cache was made with (its kvCache config, every option filled in). */
export interface KvCacheShape {
  readonly capacity: number;
  readonly batch: number;
  readonly kvHeads: number;
  readonly dK: number;
  readonly dV: number;
  readonly dtype: KvCacheDtype;
}

/** A cache's rows [0, length) as float32, as the cache keeps them: float16 widened exactly,
 *  int8 times its block scales. */
export interface KvCacheRows {
  /** [batch,kvHeads,length,dK] */
  key: Tensor;
  /** [batch,kvHeads,length,dV] */
  value: Tensor;
}

export interface KvCache extends KvCacheShape {
  /** Rows filled in each head (0 once the cache or its instance was disposed). */
  readonly length: number;
  /** Its keys and values, copied out (fresh arrays; 0 rows each when it is empty). A TypeError
   *  once it or its instance was disposed; a RangeError when keys or values do not fit in wasm
   *  memory on their way out. */
  read(): KvCacheRows;
  /** Keeps the first n rows (n <= length), e.g. to drop a rejected draft. */
  truncate(n: number): void;
  /** Empties the cache; its memory stays for the next sequence. */
  reset(): void;
  /** Frees its wasm memory; later use throws. A cache collected without it is freed by a finalizer. */
  dispose(): void;
}

/** qkOutput: which [B,Hq,nQ,nTotal] matrix to return as qk (ONNX qk_matmul_output_mode 0..3):
 *  'scaled' q·kᵀ·scale, 'softcapped' after softcap, 'masked' the softmax input, 'weights'. */
export type QkOutput = 'scaled' | 'softcapped' | 'masked' | 'weights';

export interface RotaryOptions {
  /** Position of row 0 of q and of the new keys, before nPast is added (default 0). */
  offset?: number;
  /** The wavelength base (default 10000). */
  base?: number;
  /** Pairs (2t, 2t+1) instead of (t, t + dims/2) (default false). */
  interleaved?: boolean;
  /** Entries rotated per row, even, at most dK (default dK). */
  dims?: number;
}

export interface CreateAttentionOptions {
  /** Threads to run on: an integer from 1 to 64 (a RangeError past it) or 'auto' (default):
   *  the cores reported, up to 16. A browser page that is not cross-origin isolated, or an
   *  engine that cannot share a WebAssembly.Memory with workers, gets 1, without error; so
   *  does a threaded build whose workers fail to start (with a console warning saying why). */
  threads?: number | 'auto';
  /** Where the package's .wasm/.js files are, if not next to the module: a URL (browser) or path (Node). */
  locateFile?: (fileName: string) => string;
  /** The .wasm bytes, if already at hand. */
  wasmBinary?: ArrayBuffer | Uint8Array;
  /** 'auto' (default): relaxed SIMD where the engine runs it, else SIMD128 (SIMD128 when
   *  wasmBinary is given). 'relaxed-simd' where the engine lacks it is a RangeError. */
  isa?: 'auto' | 'relaxed-simd' | 'simd128';
  /** true: compute in a Worker (browser) or worker_thread (Node); see AsyncAttention
   *  (default false). */
  worker?: boolean;
}

/** createAttention's options for the worker form. */
export interface CreateWorkerAttentionOptions extends CreateAttentionOptions {
  worker: true;
}

/** Which build runs: its instruction set and threads, and the GEMM micro-kernel chosen. */
export interface Backend {
  /** Threads actually in use: more than 1 only on the threaded build. */
  threads: number;
  /** The vector instruction set: 'relaxed-simd' (SIMD128 + fused multiply-add in matrix
   *  products) or 'simd128'. */
  isa: 'relaxed-simd' | 'simd128';
  /** The matrix-product micro-kernel this instance runs, chosen for the JavaScript engine
   *  (e.g. 'f32_gemm_4x8_simd128'); every kernel of one isa gives bitwise the same results. */
  gemmKernel: string;
}

export interface AttentionOptions<P extends AnyTensor = AnyTensor> extends OutOption {
  /** Query i sees keys j <= i + offset only (offset nPast with a past, cache.length − nQ with
   *  a cache (its length after the append), kvLength[b] − nQ with kvLength, else 0). Default
   *  false, with a past or a cache too, as in ONNX: a prefill over a cache needs causal: true. */
  causal?: boolean;
  /** 2-D: [nQ,nK], a keep mask or an additive mask. 3-D/4-D: a HeadsMask. */
  mask?: Mask | HeadsMask;
  /** Multiplies q·kᵀ (default 1/√dK). */
  scale?: number;
  /** Also return every intermediate (default false). */
  trace?: boolean;
  /** Scaled scores become softcap·tanh(s/softcap) before the mask (default 0: none). */
  softcap?: number;
  /** A sliding window: key j is kept for query i when −left <= j − (i + offset) <= right; -1 or absent = unbounded. */
  window?: { left?: number; right?: number };
  /** Attention sinks: one logit per query head, [Hq] (2-D: [1]), joining every row's softmax
   *  denominator with no value, after scale, softcap and mask (gpt-oss; onnxruntime's
   *  GroupQueryAttention head_sink): weights = exp(x_j − m) / (Σ_l exp(x_l − m) + exp(sink − m)).
   *  Each finite, or -Infinity for none. A row with every key masked stays a zero row. */
  sinks?: Float32Array | Tensor;
  /** 3-D/4-D only from here on, rotary aside, sinks too. The heads of 3-D inputs [B,S,H·D] (required
   *  there; checked against 4-D inputs). */
  heads?: { q: number; kv: number };
  /** [B,Hkv,nPast,dK]: keys before k; the result holds presentKey [B,Hkv,nTotal,dK]. */
  pastKey?: P;
  /** [B,Hkv,nPast,dV]: values before v; the result holds presentValue [B,Hkv,nTotal,dV]. */
  pastValue?: P;
  /** Real keys per sequence (the rest is padding), each 0 to nTotal (ONNX nonpad_kv_seqlen). */
  kvLength?: number[] | Int32Array;
  /** Return this [B,Hq,nQ,nTotal] matrix as qk. */
  qkOutput?: QkOutput;
  /** Rotary positions (RoPE) on q and the new keys, rows at offset + nPast + row (2-D too:
   *  rows at offset + row). */
  rotary?: boolean | RotaryOptions;
  /** Append k and v (rotated) to this cache and attend over all of it: every key, the new
   *  ones included, unless causal: true (not implied by a cache, as in ONNX). */
  cache?: KvCache;
}

/** attentionBackward's options: attention()'s, without a past, cache, qk output or out; trace
 *  for 2-D inputs only (3-D and 4-D calls refuse it), heads and kvLength for 3-D/4-D only. */
export type AttentionBackwardOptions =
  | (Omit<AttentionOptions, 'pastKey' | 'pastValue' | 'cache' | 'qkOutput' | 'out' | 'heads' | 'kvLength'> & {
      heads?: never;
      kvLength?: never;
    })
  | (Omit<AttentionOptions, 'pastKey' | 'pastValue' | 'cache' | 'qkOutput' | 'out' | 'trace'> & { trace?: never });

/** Results in q's format (O: output, qk) and the past's (P: presentKey, presentValue, as ONNX's
 *  T1 and T2); trace intermediates are float32. */
export interface AttentionResult<O extends AnyTensor = Tensor, P extends AnyTensor = Tensor> {
  /** q's layout with dV: [nQ,dV], [B,nQ,Hq·dV] or [B,Hq,nQ,dV] */
  output: O;
  /** With pastKey: [B,Hkv,nTotal,dK], the past then the new (rotated) keys */
  presentKey?: P;
  /** With pastValue: [B,Hkv,nTotal,dV] */
  presentValue?: P;
  /** With qkOutput: [B,Hq,nQ,nTotal] */
  qk?: O;
  /** With trace and softcap: the capped scores, [nQ,nK] or [B,Hq,nQ,nTotal] */
  capped?: Tensor;
  /** With trace: q·kᵀ [nQ,nK] */
  scores?: Tensor;
  /** With trace: scores·scale [nQ,nK] */
  scaled?: Tensor;
  /** With trace: the softmax input [nQ,nK]: scaled + additive mask, -Infinity where masked */
  masked?: Tensor;
  /** With trace: softmax(masked), rows sum to 1, or to 1 − the sink's weight with sinks (a
   *  row with every key masked is all zero) [nQ,nK] */
  weights?: Tensor;
}

/** The format of a past (pastKey or pastValue, K) in options O: presentKey and presentValue
 *  follow it. */
type PastFormat<O, K extends 'pastKey' | 'pastValue'> = O extends { [P in K]: infer T }
  ? T extends AnyTensor
    ? Follows<T>
    : Tensor
  : Tensor;

/** What attention() returns for options O (the options object as written): AttentionResult
 *  with each member O asks for present: with trace: true, scores, scaled, masked and weights;
 *  with pastKey and pastValue, presentKey and presentValue; with qkOutput, qk. An options value
 *  whose type leaves them open (trace: boolean) keeps them optional. */
export type AttentionResultOf<R extends AnyTensor, O> = AttentionResult<R, PastFormat<O, 'pastKey'>> &
  (O extends { trace: true } ? { scores: Tensor; scaled: Tensor; masked: Tensor; weights: Tensor } : unknown) &
  (O extends { pastKey: AnyTensor } ? { presentKey: PastFormat<O, 'pastKey'> } : unknown) &
  (O extends { pastValue: AnyTensor } ? { presentValue: PastFormat<O, 'pastValue'> } : unknown) &
  (O extends { qkOutput: QkOutput } ? { qk: R } : unknown);

/** Options O, checked for keys that Known does not have (each then an error, as an object
 *  literal's excess property is where the options type is not inferred). */
export type OnlyKnown<O, Known> = { [K in Exclude<keyof O, keyof Known>]: never };

export interface MultiHeadWeights {
  /** [dModel, heads·dK] */
  wq: Tensor;
  /** [dModel, kvHeads·dK] */
  wk: Tensor;
  /** [dModel, kvHeads·dV] */
  wv: Tensor;
  /** [heads·dV, dModel] */
  wo: Tensor;
  /** [heads·dK], with bias */
  bq?: Tensor;
  /** [kvHeads·dK], with bias */
  bk?: Tensor;
  /** [kvHeads·dV], with bias */
  bv?: Tensor;
  /** [dModel], with bias */
  bo?: Tensor;
  /** [heads], with sinks: each head's learned sink logit */
  sinks?: Tensor;
}

export interface MultiHeadShapeConfig {
  dModel: number;
  heads: number;
  /** Key/value heads, dividing heads (default heads): query head h reads kv head
   *  ⌊h/(heads/kvHeads)⌋ (grouped-query attention; 1: multi-query attention). wk is then
   *  [dModel,kvHeads·dK], wv [dModel,kvHeads·dV]. */
  kvHeads?: number;
  /** Per-head query/key width (default dModel / heads). */
  dK?: number;
  /** Per-head value width (default dK). */
  dV?: number;
  /** Add biases to the four projections (default false). */
  bias?: boolean;
  /** Rotary positions (RoPE) on every head's q and k after the projections: row i at
   *  offset + i (+ cache.length over a cache). */
  rotary?: boolean | RotaryOptions;
  /** A sliding window: key j is kept for query i when −left <= j − i' <= right (i' = i, or
   *  i + cache.length over a cache); -1 or absent = unbounded. */
  window?: { left?: number; right?: number };
  /** Scaled scores become softcap·tanh(s/softcap) before the mask (default 0: none). */
  softcap?: number;
  /** Attention sinks, a learned parameter: one logit per head in every row's softmax
   *  denominator with no value (AttentionOptions.sinks). true: starting at 0; a Float32Array
   *  (or tensor) of heads finite values: starting there (or give weights.sinks with true). */
  sinks?: boolean | Float32Array | Tensor;
}

/** A layer's config: its shape and options, and its first weights, given or drawn from a seed
 *  (one of the two: both are a TypeError). */
export type MultiHeadConfig = MultiHeadShapeConfig &
  (
    | {
        /** Initial weights; without them, seeded Xavier-uniform (biases and sinks zero). */
        weights?: { [name in keyof MultiHeadWeights]: AnyTensor };
        seed?: never;
      }
    | {
        /** Seed of the initialization, 0 to 2^32-1 (default 0); not with weights. */
        seed?: number;
        weights?: never;
      }
  );

/** The options of a layer's forward with and without a cache. */
export interface ForwardCommonOptions extends Pick<AttentionOptions, 'causal' | 'scale'>, OutOption {
  /** [nQ,nK], a keep mask or an additive mask, shared by every sequence and head
   *  ([nQ, cache.length + nQ] over a cache). */
  mask?: Mask;
}

/** A layer's forward options: attention()'s 2-D ones (heads, kvHeads, rotary, window and
 *  softcap come from the layer's config); with a cache, no context and no trace (a TypeError). */
export type ForwardOptions = ForwardCommonOptions &
  (
    | {
        /** Also return every intermediate: heads and concat (default false). */
        trace?: boolean;
        /** The keys' and values' sequence, for cross-attention: [nK,dModel] or [batch,nK,dModel]. */
        context?: AnyTensor;
        cache?: never;
      }
    | {
        /** Decode: x holds only the new tokens, whose keys and values join this cache ({ batch,
         *  kvHeads, dK, dV } the layer's); the new queries attend over all of it. Not causal
         *  unless causal: true is given, as in ONNX: then new token i sees the cache's rows up
         *  to cache.length + i (its length before the call; bottom-right), which a prompt of
         *  several tokens needs (one token at a time sees the same either way). Not with
         *  context or trace; backward() does not follow such a forward. */
        cache: KvCache;
        trace?: false;
        context?: never;
      }
  );

/** A layer's config as it took it, defaults filled in. */
export type MultiHeadLayerConfig = Readonly<{
  dModel: number;
  heads: number;
  kvHeads: number;
  dK: number;
  dV: number;
  bias: boolean;
  rotary: Readonly<{ offset: number; base: number; dims: number; interleaved: boolean }> | null;
  window: Readonly<{ left: number; right: number }>;
  softcap: number;
  sinks: boolean;
}>;

export interface HeadTrace {
  /** [batch?, nQ, dK] */
  q: Tensor;
  /** [batch?, nK, dK] */
  k: Tensor;
  /** [batch?, nK, dV] */
  v: Tensor;
  /** [batch?, nQ, nK] */
  scores: Tensor;
  scaled: Tensor;
  masked: Tensor;
  weights: Tensor;
  /** [batch?, nQ, dV] */
  output: Tensor;
}

export interface ForwardResult<O extends AnyTensor = Tensor> {
  /** Same shape and format as x. */
  output: O;
  /** With trace: one entry per head. */
  heads?: HeadTrace[];
  /** With trace: [batch?, nQ, heads·dV] */
  concat?: Tensor;
}

/** What a layer's forward returns for options O: with trace: true, heads and concat present. */
export type ForwardResultOf<R extends AnyTensor, O> = ForwardResult<R> &
  (O extends { trace: true } ? { heads: HeadTrace[]; concat: Tensor } : unknown);

/** The keys a layer's forward takes (ForwardOptions, every member of the union). */
type ForwardKeys = ForwardCommonOptions & { trace?: boolean; context?: AnyTensor; cache?: KvCache };

/** Gradients of a layer's most recent forward, each the shape of what it differentiates. */
export interface MultiHeadGradients {
  /** Same shape as x. */
  /** In x's format (float16 for a float16 x); the weight gradients are float32, as the weights. */
  dx: AnyTensor;
  /** Same shape as the context, in its format; cross-attention only. */
  dContext?: AnyTensor;
  dwq: Tensor;
  dwk: Tensor;
  dwv: Tensor;
  dwo: Tensor;
  /** With bias. */
  dbq?: Tensor;
  dbk?: Tensor;
  dbv?: Tensor;
  dbo?: Tensor;
  /** With sinks: [heads], summed over every sequence's rows. */
  dsinks?: Tensor;
}

/** Each gradient in the format of its input (Q, K, V); trace intermediates float32. */
export interface AttentionGradients<
  Q extends AnyTensor = Tensor,
  K extends AnyTensor = Tensor,
  V extends AnyTensor = Tensor,
> {
  /** q's shape: [nQ,dK] */
  dq: Q;
  /** k's shape: [nK,dK] */
  dk: K;
  /** v's shape: [nK,dV] */
  dv: V;
  /** With trace: the forward's weights P [nQ,nK] */
  weights?: Tensor;
  /** With trace: dP = dOutput·vᵀ [nQ,nK] */
  dWeights?: Tensor;
  /** With trace: dS = ∂L/∂(q·kᵀ) = P ⊙ (dP − rowsum(dP ⊙ P))·scale, zero where masked [nQ,nK] */
  dScores?: Tensor;
  /** With sinks: ∂L/∂sinks [Hq] (2-D: [1]) = −Σ over the head's rows of p_sink·(dOutput·output),
   *  summed over the batch; 0 for a sink of -Infinity. */
  dsinks?: Tensor;
}

/** What attentionBackward() returns for options O: with trace: true, weights, dWeights and
 *  dScores present; with sinks, dsinks. */
export type AttentionGradientsOf<Q extends AnyTensor, K extends AnyTensor, V extends AnyTensor, O> = AttentionGradients<
  Q,
  K,
  V
> &
  (O extends { trace: true } ? { weights: Tensor; dWeights: Tensor; dScores: Tensor } : unknown) &
  (O extends { sinks: Float32Array | Tensor } ? { dsinks: Tensor } : unknown);

/** The keys attentionBackward takes (AttentionBackwardOptions, every member of the union). */
type BackwardKeys = Omit<AttentionOptions, 'pastKey' | 'pastValue' | 'cache' | 'qkOutput' | 'out'>;

export interface MatmulOptions<R extends AnyTensor = AnyTensor> extends OutOption<R> {
  /** a is given as [k,m] (default false). */
  transposeA?: boolean;
  /** b is given as [n,k] (default false). */
  transposeB?: boolean;
}

export interface MultiHeadAttention {
  readonly config: MultiHeadLayerConfig;
  /** x [n,dModel] or [batch,n,dModel] -> output of the same shape. Keeps what backward() needs
   *  (not over a cache). */
  forward<X extends AnyTensor = Tensor, O extends ForwardOptions = {}>(
    x: X,
    options?: O & OutOption<Follows<X>> & OnlyKnown<O, ForwardKeys>,
  ): ForwardResultOf<Follows<X>, O>;
  /** Gradients of the most recent forward for dOutput = ∂L/∂output (the output's shape). */
  backward(dOutput: AnyTensor): MultiHeadGradients;
  /** Plain SGD in place: w -= learningRate · dw for each gradient given. Clears the saved forward. */
  step(grads: { [name in keyof MultiHeadGradients]?: AnyTensor }, learningRate: number): void;
  /** The current weights (copies). */
  readonly weights: MultiHeadWeights;
  /** Frees the layer's wasm memory; later calls throw. */
  dispose(): void;
}

export interface Attention {
  readonly backend: Backend;
  /** q [nQ,dK], k [nK,dK], v [nK,dV] -> output [nQ,dV] = softmax(mask(q·kᵀ·scale))·v; or on
   *  heads, q [B,nQ,Hq·dK] | [B,Hq,nQ,dK], k and v likewise with Hkv heads (the ONNX
   *  Attention operator, opsets 23-25) -> output in q's layout. */
  attention<Q extends AnyTensor = Tensor, O extends AttentionOptions = {}>(
    q: Q,
    k: AnyTensor,
    v: AnyTensor,
    options?: O & OutOption<Follows<Q>> & OnlyKnown<O, AttentionOptions>,
  ): AttentionResultOf<Follows<Q>, O>;
  /** Gradients of attention(q, k, v, options) for dOutput = ∂L/∂output (the output's shape),
   *  each the shape of what it differentiates; on heads, kv heads' gradients sum over their
   *  query heads, and dq, dk are of q and k before rotation. */
  attentionBackward<
    Q extends AnyTensor = Tensor,
    K extends AnyTensor = Tensor,
    V extends AnyTensor = Tensor,
    O extends AttentionBackwardOptions = {},
  >(
    q: Q,
    k: K,
    v: V,
    dOutput: AnyTensor,
    options?: O & OnlyKnown<O, BackwardKeys>,
  ): AttentionGradientsOf<Follows<Q>, Follows<K>, Follows<V>, O>;
  /** A key/value cache in wasm memory, for attention(q, k, v, { cache }). A RangeError, before
   *  anything is allocated, when it does not fit: its bytes (capacity rounded up to panels of 8
   *  keys, dV to 8 columns, int8's scales) past 2 GB or past what wasm memory has left. */
  kvCache(config: KvCacheConfig): KvCache;
  /** a [m,k] · b [k,n] -> [m,n] in a's format. */
  matmul<A extends AnyTensor = Tensor>(a: A, b: AnyTensor, options?: MatmulOptions<Follows<A>>): Follows<A>;
  multiHeadAttention(config: MultiHeadConfig): MultiHeadAttention;
  /** Bytes of wasm memory, and bytes allocated in it. */
  memory(): { wasmBytes: number; allocatedBytes: number };
  /** Stops the threads and frees the module; later calls throw. An instance collected
   *  without it (and without live layers) is disposed by a finalizer. */
  dispose(): void;
}

/** The worker form's extra option, in the last options argument of every call that takes tensors. */
export interface TransferOption {
  /** Transfer the ArrayBuffers behind the typed arrays this call reads in place (tensors' float32
   *  data, a layer's weights) to the worker instead of copying them: they are detached here
   *  once the call is made (default false); what the call copies anyway (masks, sinks, widened
   *  float16 data, step's gradients, views on a SharedArrayBuffer) goes as that copy, leaving
   *  yours. Results are always
   *  transferred back. out is never sent: the result comes back in a fresh array and is copied
   *  into it here (one surface with the direct form; no allocation saved). An out on a buffer
   *  this would send is a TypeError; a call whose out is detached while it runs is undone. */
  transfer?: boolean;
}

/** The worker form of a direct-form type T (Attention, MultiHeadAttention, KvCache), as
 *  createAttention({ worker: true }) makes it from its table of operations
 *  (web/lib/operations.js): each method returns a Promise of what T's returns, and each
 *  property is a Promise of its value, settling once the calls made before it ran; Local, the
 *  members known on the calling side (a cache's shape, a layer's config, the backend), stay as
 *  they are. Errors reject with the TypeError/RangeError the direct form throws. */
export type Promised<T, Local extends keyof T = never> = {
  readonly [K in keyof T]: K extends Local
    ? T[K]
    : T[K] extends (...args: infer A) => infer R
      ? (...args: A) => Promise<R>
      : Promise<T[K]>;
};

/** A direct-form method (a layer's backward and step) in the worker form: a Promise of its
 *  result, with the worker form's own trailing { transfer } argument. */
export type WithTransfer<F> = F extends (...args: infer A) => infer R
  ? (...args: [...A, options?: TransferOption]) => Promise<R>
  : never;

/** A direct-form options type O in the worker form: each member of a union mapped, a cache
 *  option taking a cache of the worker form where O takes a KvCache, and the transfer option. */
export type WorkerOptions<O> = O extends unknown
  ? { [K in keyof O]: K extends 'cache' ? WorkerCache<O[K]> : O[K] } & TransferOption
  : never;

/** A cache option's type C in the worker form: KvCache becomes AsyncKvCache. */
export type WorkerCache<C> = C extends KvCache ? AsyncKvCache : C;

/** A KvCache living in the worker: its shape as it is, length and the methods giving Promises.
 *  dispose() frees the cache in the worker; later use rejects. */
export interface AsyncKvCache extends Promised<KvCache, keyof KvCacheShape> {}

/** A MultiHeadAttention living in the worker: config as it is, the rest giving Promises;
 *  forward's options.cache is a cache of the same worker form. */
export interface AsyncMultiHeadAttention extends Omit<
  Promised<MultiHeadAttention, 'config'>,
  'forward' | 'backward' | 'step'
> {
  /** As MultiHeadAttention.forward; options.cache: a cache of this form. */
  forward<X extends AnyTensor = Tensor, O extends WorkerOptions<ForwardOptions> = {}>(
    x: X,
    options?: O & OutOption<Follows<X>> & OnlyKnown<O, WorkerOptions<ForwardKeys>>,
  ): Promise<ForwardResultOf<Follows<X>, O>>;
  readonly backward: WithTransfer<MultiHeadAttention['backward']>;
  readonly step: WithTransfer<MultiHeadAttention['step']>;
}

/** What createAttention({ worker: true }) gives: Attention's members, each computed in a
 *  dedicated worker and returning a Promise (backend as it is). Calls run one at a time in
 *  the order made. dispose() lets the calls already made finish, then frees the module and
 *  terminates the worker; later calls reject. */
export interface AsyncAttention extends Omit<
  Promised<Attention, 'backend'>,
  'attention' | 'attentionBackward' | 'matmul' | 'kvCache' | 'multiHeadAttention'
> {
  /** As Attention.attention; options.cache: a cache of this form. */
  attention<Q extends AnyTensor = Tensor, O extends WorkerOptions<AttentionOptions> = {}>(
    q: Q,
    k: AnyTensor,
    v: AnyTensor,
    options?: O & OutOption<Follows<Q>> & OnlyKnown<O, WorkerOptions<AttentionOptions>>,
  ): Promise<AttentionResultOf<Follows<Q>, O>>;
  attentionBackward<
    Q extends AnyTensor = Tensor,
    K extends AnyTensor = Tensor,
    V extends AnyTensor = Tensor,
    O extends WorkerOptions<AttentionBackwardOptions> = {},
  >(
    q: Q,
    k: K,
    v: V,
    dOutput: AnyTensor,
    options?: O & OnlyKnown<O, WorkerOptions<BackwardKeys>>,
  ): Promise<AttentionGradientsOf<Follows<Q>, Follows<K>, Follows<V>, O>>;
  matmul<A extends AnyTensor = Tensor>(
    a: A,
    b: AnyTensor,
    options?: WorkerOptions<MatmulOptions<Follows<A>>>,
  ): Promise<Follows<A>>;
  /** A key/value cache in the worker, for this form's attention() and layers' forward(). */
  kvCache(config: KvCacheConfig): Promise<AsyncKvCache>;
  /** config may also say { transfer: true }, for its weights. */
  multiHeadAttention(config: WorkerOptions<MultiHeadConfig>): Promise<AsyncMultiHeadAttention>;
}

export function createAttention(options: CreateWorkerAttentionOptions): Promise<AsyncAttention>;
export function createAttention(options?: CreateAttentionOptions & { worker?: false }): Promise<Attention>;
export function createAttention(options?: CreateAttentionOptions): Promise<Attention | AsyncAttention>;
/** A float32 tensor of shape (1 to 4 positive sizes) over data, as many values as the shape
 *  needs (a RangeError otherwise): a Float32Array, kept as it is, or an Array of numbers, copied
 *  into a new Float32Array (anything else is a TypeError). */
export function tensor(
  data: Float32Array | number[],
  shape: number[],
  options?: TensorOptions & { dtype?: 'float32' },
): Tensor;
/** A half-precision tensor: a Float16Array, or a Uint16Array of bits with { dtype: 'float16' }. */
export function tensor<D extends Float16ArrayOf | Uint16Array>(
  data: D,
  shape: number[],
  options: TensorOptions & { dtype: 'float16' },
): HalfTensor<D>;
/** A mask as a tensor: a keep mask's Uint8Array or boolean[] (true = keep). */
export function tensor(
  data: Uint8Array | boolean[],
  shape: number[],
): { data: Uint8Array | boolean[]; shape: number[] };
/** Float32 values -> a new Uint16Array of their IEEE half-precision (float16) bits, as a
 *  Float16Array would hold them: rounded to nearest, ties to even, subnormals kept, |x| >= 65520
 *  to ±Infinity, NaN a NaN. For float16 tensors where the engine has no Float16Array (Node 20):
 *  tensor(toFloat16Bits(values), shape, { dtype: 'float16' }). A TypeError for anything but a
 *  Float32Array. */
export function toFloat16Bits(values: Float32Array): Uint16Array;
/** float16 bits (a Uint16Array, e.g. a float16 result's data) -> a new Float32Array of their
 *  values, exact (every half is a float32). A TypeError for anything but a Uint16Array. */
export function fromFloat16Bits(bits: Uint16Array): Float32Array;
/** A seeded generator (mulberry32): each call returns the next uniform float in [0, 1); the same
 *  seed (an integer from 0 to 2^32-1; anything else is a TypeError or RangeError) gives the
 *  same numbers in every engine. A layer's `seed` draws its initial
 *  weights from seededRandom(seed) through xavierUniform, so an app can reproduce them. */
export function seededRandom(seed: number): () => number;
/** Xavier (Glorot) uniform weights for a [fanIn,fanOut] matrix, row-major: U(−a, a) with
 *  a = √(6 / (fanIn + fanOut)), fanIn·fanOut draws of `next`. A seeded layer's wq, wk, wv, wo
 *  are xavierUniform(...shape, next) in turn for one next = seededRandom(seed). */
export function xavierUniform(fanIn: number, fanOut: number, next: () => number): Float32Array;
