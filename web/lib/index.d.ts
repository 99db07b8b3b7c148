// Types for wasm-attention. Letters: nQ queries, nK keys (= values), dK query/key width,
// dV value width, dModel token width, heads the number of heads.

/** A row-major float32 tensor. */
export interface Tensor {
  data: Float32Array;
  shape: number[];
}

/** A keep mask (Uint8Array, 1 = keep, 0 = masked) or an additive one (Float32Array, -Infinity masks),
 *  either as a tensor of shape [nQ,nK] or a bare typed array of nQ·nK values. */
export type Mask =
  | { data: Uint8Array | Float32Array; shape: [number, number] | number[] }
  | Uint8Array
  | Float32Array;

export interface CreateAttentionOptions {
  /** Threads to run on: an integer from 1 to 64 (a RangeError past it) or 'auto' (default):
   *  the cores reported, up to 16. A browser page that is not cross-origin isolated gets 1,
   *  without error. */
  threads?: number | 'auto';
  /** Where the package's .wasm/.js files are, if not next to the module: a URL (browser) or path (Node). */
  locateFile?: (fileName: string) => string;
  /** The .wasm bytes, if already at hand. */
  wasmBinary?: ArrayBuffer | Uint8Array;
  /** 'auto' (default): relaxed SIMD where the engine runs it, else SIMD128 (SIMD128 when
   *  wasmBinary is given). 'relaxed-simd' where the engine lacks it is a RangeError. */
  isa?: 'auto' | 'relaxed-simd' | 'simd128';
  /** true: compute in a Worker (browser) or worker_thread (Node); see AsyncAttention. */
  worker?: boolean;
}

/** createAttention's options for the worker form. */
export interface CreateWorkerAttentionOptions extends CreateAttentionOptions {
  worker: true;
}

export interface Backend {
  simd: true;
  /** Threads actually in use. */
  threads: number;
  /** 'simd-mt': with threads; 'simd': one thread. */
  variant: 'simd-mt' | 'simd';
  /** The vector instruction set: 'relaxed-simd' (SIMD128 + fused multiply-add in matrix
   *  products) or 'simd128'. */
  isa: 'relaxed-simd' | 'simd128';
}

export interface AttentionOptions {
  /** Query i sees keys j <= i only. */
  causal?: boolean;
  /** [nQ,nK]: a keep mask or an additive mask. */
  mask?: Mask;
  /** Multiplies q·kᵀ; default 1/sqrt(dK). */
  scale?: number;
  /** Also return every intermediate. */
  trace?: boolean;
}

export interface AttentionResult {
  /** [nQ,dV] */
  output: Tensor;
  /** With trace: q·kᵀ [nQ,nK] */
  scores?: Tensor;
  /** With trace: scores·scale [nQ,nK] */
  scaled?: Tensor;
  /** With trace: the softmax input [nQ,nK]: scaled + additive mask, -Infinity where masked */
  masked?: Tensor;
  /** With trace: softmax(masked), rows sum to 1 (a row with every key masked is all zero) [nQ,nK] */
  weights?: Tensor;
}

export interface MultiHeadWeights {
  /** [dModel, heads·dK] */
  wq: Tensor;
  /** [dModel, heads·dK] */
  wk: Tensor;
  /** [dModel, heads·dV] */
  wv: Tensor;
  /** [heads·dV, dModel] */
  wo: Tensor;
  /** [heads·dK], with bias */
  bq?: Tensor;
  /** [heads·dK], with bias */
  bk?: Tensor;
  /** [heads·dV], with bias */
  bv?: Tensor;
  /** [dModel], with bias */
  bo?: Tensor;
}

export interface MultiHeadConfig {
  dModel: number;
  heads: number;
  /** Per-head query/key width; default dModel / heads. */
  dK?: number;
  /** Per-head value width; default dK. */
  dV?: number;
  /** Add biases to the four projections (default false). */
  bias?: boolean;
  /** Initial weights; without them, seeded Xavier-uniform (biases zero). */
  weights?: MultiHeadWeights;
  /** Seed of the initialization, 0 to 2^32-1 (default 0). */
  seed?: number;
}

export interface ForwardOptions extends AttentionOptions {
  /** The keys' and values' sequence, for cross-attention: [nK,dModel] or [batch,nK,dModel]. */
  context?: Tensor;
}

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

export interface ForwardResult {
  /** Same shape as x. */
  output: Tensor;
  /** With trace: one entry per head. */
  heads?: HeadTrace[];
  /** With trace: [batch?, nQ, heads·dV] */
  concat?: Tensor;
}

/** Gradients of a layer's most recent forward, each the shape of what it differentiates. */
export interface MultiHeadGradients {
  /** Same shape as x. */
  dx: Tensor;
  /** Same shape as the context; cross-attention only. */
  dContext?: Tensor;
  dwq: Tensor;
  dwk: Tensor;
  dwv: Tensor;
  dwo: Tensor;
  /** With bias. */
  dbq?: Tensor;
  dbk?: Tensor;
  dbv?: Tensor;
  dbo?: Tensor;
}

export interface AttentionGradients {
  /** [nQ,dK] */
  dq: Tensor;
  /** [nK,dK] */
  dk: Tensor;
  /** [nK,dV] */
  dv: Tensor;
  /** With trace: the forward's weights P [nQ,nK] */
  weights?: Tensor;
  /** With trace: dP = dOutput·vᵀ [nQ,nK] */
  dWeights?: Tensor;
  /** With trace: dS = ∂L/∂(q·kᵀ) = P ⊙ (dP − rowsum(dP ⊙ P))·scale, zero where masked [nQ,nK] */
  dScores?: Tensor;
}

export interface MatmulOptions {
  /** a is given as [k,m]. */
  transposeA?: boolean;
  /** b is given as [n,k]. */
  transposeB?: boolean;
}

export interface MultiHeadAttention {
  readonly config: Readonly<{ dModel: number; heads: number; dK: number; dV: number; bias: boolean }>;
  /** x [n,dModel] or [batch,n,dModel] -> output of the same shape. Keeps what backward() needs. */
  forward(x: Tensor, options?: ForwardOptions): ForwardResult;
  /** Gradients of the most recent forward for dOutput = ∂L/∂output (the output's shape). */
  backward(dOutput: Tensor): MultiHeadGradients;
  /** Plain SGD in place: w -= learningRate · dw for each gradient given. Clears the saved forward. */
  step(grads: Partial<MultiHeadGradients>, learningRate: number): void;
  /** The current weights (copies). */
  readonly weights: MultiHeadWeights;
  /** Frees the layer's wasm memory; later calls throw. */
  dispose(): void;
}

export interface Attention {
  readonly backend: Backend;
  /** q [nQ,dK], k [nK,dK], v [nK,dV] -> output [nQ,dV] = softmax(mask(q·kᵀ·scale))·v */
  attention(q: Tensor, k: Tensor, v: Tensor, options?: AttentionOptions): AttentionResult;
  /** Gradients of attention(q, k, v, options) for dOutput [nQ,dV] = ∂L/∂output. */
  attentionBackward(q: Tensor, k: Tensor, v: Tensor, dOutput: Tensor, options?: AttentionOptions): AttentionGradients;
  /** a [m,k] · b [k,n] -> [m,n]. */
  matmul(a: Tensor, b: Tensor, options?: MatmulOptions): Tensor;
  multiHeadAttention(config: MultiHeadConfig): MultiHeadAttention;
  /** Bytes of wasm memory, and bytes allocated in it. */
  memory(): { wasmBytes: number; allocatedBytes: number };
  /** Stops the threads and frees the module; later calls throw. An instance collected
   *  without it (and without live layers) is disposed by a finalizer. */
  dispose(): void;
}

/** The worker form's extra option, in the last options argument of every call that takes tensors. */
export interface TransferOption {
  /** Transfer the ArrayBuffers behind this call's typed arrays to the worker instead of copying
   *  them: they are detached here once the call is made (default false). Results are always
   *  transferred back. */
  transfer?: boolean;
}

/** A MultiHeadAttention living in the worker: the same members, with Promise results. */
export interface AsyncMultiHeadAttention {
  readonly config: Readonly<{ dModel: number; heads: number; dK: number; dV: number; bias: boolean }>;
  forward(x: Tensor, options?: ForwardOptions & TransferOption): Promise<ForwardResult>;
  backward(dOutput: Tensor, options?: TransferOption): Promise<MultiHeadGradients>;
  step(grads: Partial<MultiHeadGradients>, learningRate: number, options?: TransferOption): Promise<void>;
  /** The current weights (copies). */
  readonly weights: Promise<MultiHeadWeights>;
  /** Frees the layer in the worker; later calls reject. */
  dispose(): Promise<void>;
}

/** What createAttention({ worker: true }) gives: Attention's members, each computed in a
 *  dedicated worker and returning a Promise. Calls run one at a time in the order made.
 *  Errors reject with the TypeError/RangeError the synchronous form throws. */
export interface AsyncAttention {
  /** The worker's build. */
  readonly backend: Backend;
  attention(q: Tensor, k: Tensor, v: Tensor, options?: AttentionOptions & TransferOption): Promise<AttentionResult>;
  attentionBackward(q: Tensor, k: Tensor, v: Tensor, dOutput: Tensor, options?: AttentionOptions & TransferOption): Promise<AttentionGradients>;
  matmul(a: Tensor, b: Tensor, options?: MatmulOptions & TransferOption): Promise<Tensor>;
  multiHeadAttention(config: MultiHeadConfig & TransferOption): Promise<AsyncMultiHeadAttention>;
  memory(): Promise<{ wasmBytes: number; allocatedBytes: number }>;
  /** Lets the calls already made finish, then frees the module and terminates the worker;
   *  later calls reject. */
  dispose(): Promise<void>;
}

export function createAttention(options: CreateWorkerAttentionOptions): Promise<AsyncAttention>;
export function createAttention(options?: CreateAttentionOptions & { worker?: false }): Promise<Attention>;
export function createAttention(options?: CreateAttentionOptions): Promise<Attention | AsyncAttention>;
export function tensor(data: Float32Array, shape: number[]): Tensor;
