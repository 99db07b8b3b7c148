// The wasm module's surface: bindings only. The core's own argument structs (ConstMatrix,
// Matrix, ScoreMask, the traces, MhaShape, MhaWeights, MhaGrads, HeadsShape, HeadTensor,
// HeadsMask, Rotary) are Embind value objects,
// so JS passes them as plain objects (built by web/lib/binding.js, one helper per struct);
// their pointer fields are byte offsets into wasm memory, 0 for null. Each call converts,
// calls the core, and returns a Status instead of throwing, because a C++ exception reaching
// JS would arrive as a bare number.
#include <emscripten/bind.h>
#include <emscripten/heap.h>

#include <malloc.h>
#include <unistd.h>

#include <cstdint>
#include <exception>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>

#include "gemm/gemm_select.h"  // the GEMM micro-kernel: internal, reported and pinned here
#include "runtime/scratch.h"   // release_large_scratch: internal, called when each call ends
#include "wa/attention.h"
#include "wa/attention_heads.h"
#include "wa/build_info.h"
#include "wa/finite.h"
#include "wa/gemm.h"
#include "wa/kv_cache.h"
#include "wa/rotary.h"
#include "wa/thread_pool.h"

namespace {

std::unique_ptr<wa::ThreadPool> pool;  // one per module instance, started by set_threads

// What went wrong in a call, by kind, so JS picks the error class without reading the text.
// The numbers are ErrorKind in web/lib/binding.js.
enum ErrorKind : int {
  kOk = 0,
  kInvalidArgument = 1,  // shapes or buffers that do not fit together (a bug in the JS layer)
  kOutOfMemory = 2,      // wasm memory could not hold the inputs and their intermediates
  kOther = 3,
  kOutOfRange = 4,  // values a float32 cannot carry on (a non-finite key for a cache)
};
struct Status {
  int kind = kOk;
  std::string message;  // "" when kind is kOk
};

// Runs a call; whatever it left, scratch past kScratchKeepBytes goes back to malloc.
template <class F>
Status guarded(F&& call) {
  Status status;
  try {
    call();
  } catch (const std::bad_alloc&) {
    status = {kOutOfMemory,
              "out of memory: the inputs and their intermediates do not fit in wasm memory"};
  } catch (const std::invalid_argument& e) {
    status = {kInvalidArgument, e.what()};
  } catch (const std::range_error& e) {
    status = {kOutOfRange, e.what()};
  } catch (const std::exception& e) {
    status = {kOther, e.what()};
  }
  wa::release_large_scratch();
  return status;
}

template <class T>
T* ptr(uintptr_t offset) {
  return reinterpret_cast<T*>(offset);
}

// A pointer field of a core struct, seen from JS as a byte offset (a number; 0 = null).
template <auto field>
struct Offset;
template <class T, class P, P* T::*field>
struct Offset<field> {
  static uintptr_t get(const T& t) { return reinterpret_cast<uintptr_t>(t.*field); }
  static void set(T& t, uintptr_t offset) { t.*field = reinterpret_cast<P*>(offset); }
};
#define WA_OFFSET(member) &Offset<&member>::get, &Offset<&member>::set

// The fewest threads that get a pool: 2 (1 thread runs without one), or 1 in the bench's pool-
// trace modules (WA_POOL_TRACE), whose 1-thread pool runs each parallel section on the caller,
// as no pool would, and records it (cpp/src/runtime/pool_trace.h).
#ifdef WA_POOL_TRACE
constexpr int kPoolFromThreads = 1;
#else
constexpr int kPoolFromThreads = 2;
#endif

// "" or why the threads could not start (the loader reports it).
std::string set_threads(int threads) {
  return guarded([&] {
           pool.reset();
           if (threads >= kPoolFromThreads) pool = std::make_unique<wa::ThreadPool>(threads);
         })
      .message;
}

int threads() { return pool ? pool->threads() : 1; }

std::string simd_isa() { return wa::simd_isa(); }

// The GEMM micro-kernel this instance runs; the first call chooses it (gemm_select.cpp).
std::string gemm_kernel() { return wa::kernels::gemm_kernel().name; }

// This build's GEMM micro-kernels, comma-separated, the default first.
std::string gemm_kernels() {
  std::string names;
  for (const wa::kernels::GemmKernel& kernel : wa::kernels::gemm_kernels())
    names += (names.empty() ? "" : ",") + std::string(kernel.name);
  return names;
}

// Runs that kernel from now on (benchmarks compare them); false if this build has none of
// that name.
bool use_gemm_kernel(const std::string& name) { return wa::kernels::use_gemm_kernel(name.c_str()); }

// The index of the first NaN or ±inf among n floats at offset x, or -1.
double first_non_finite(uintptr_t x, uint32_t n) {
  const size_t i = wa::first_non_finite(ptr<const float>(x), n, pool.get());
  return i == n ? -1.0 : static_cast<double>(i);
}

// The largest |x| among n finite floats at offset x (0 for none).
double max_abs(uintptr_t x, uint32_t n) { return wa::max_abs(ptr<const float>(x), n); }

// Bytes malloc has handed out and not had back: the leak checks watch this.
double allocated_bytes() { return static_cast<double>(mallinfo().uordblks); }

// The largest block malloc could still hand out, at most: what wasm memory may still grow by
// (its maximum less the break) plus what malloc holds free. A block larger than this fails
// without growing memory; one that passes may still fail where the free bytes are scattered.
double heap_room() {
  return static_cast<double>(emscripten_get_heap_max()) -
         static_cast<double>(reinterpret_cast<uintptr_t>(sbrk(0))) +
         static_cast<double>(mallinfo().fordblks);
}

// wa::gemm, without accumulation: c (m,n) = op(a)·op(b).
Status gemm(bool transpose_a, bool transpose_b, uint32_t m, uint32_t n, uint32_t k, uintptr_t a,
            uint32_t lda, uintptr_t b, uint32_t ldb, uintptr_t c, uint32_t ldc) {
  return guarded([&] {
    wa::gemm(transpose_a ? wa::Transpose::yes : wa::Transpose::no,
             transpose_b ? wa::Transpose::yes : wa::Transpose::no, m, n, k, ptr<const float>(a),
             lda, ptr<const float>(b), ldb, ptr<float>(c), ldc, false, pool.get());
  });
}

// A trace whose first buffer is null is no trace (value objects cannot be null).
Status attention_forward(const wa::ConstMatrix& q, const wa::ConstMatrix& k,
                         const wa::ConstMatrix& v, const wa::Matrix& out, float scale,
                         const wa::ScoreMask& mask, const wa::AttentionTrace& trace) {
  return guarded([&] {
    wa::attention_forward(q, k, v, out, scale, mask, trace.scores ? &trace : nullptr, pool.get());
  });
}

Status attention_backward(const wa::ConstMatrix& q, const wa::ConstMatrix& k,
                          const wa::ConstMatrix& v, const wa::ConstMatrix& d_out,
                          const wa::Matrix& dq, const wa::Matrix& dk, const wa::Matrix& dv,
                          float scale, const wa::ScoreMask& mask,
                          const wa::AttentionBackwardTrace& trace, uintptr_t d_sink) {
  return guarded([&] {
    wa::attention_backward(q, k, v, d_out, dq, dk, dv, scale, mask,
                           trace.weights ? &trace : nullptr, pool.get(), ptr<float>(d_sink));
  });
}

// The multi-head calls take their rotary as a value and `rotated` saying whether to use it
// (value objects cannot be null).
Status mha_forward(const wa::MhaShape& shape, const wa::MhaWeights& w, uintptr_t x,
                   uintptr_t context, uintptr_t out, float scale, const wa::ScoreMask& mask,
                   const wa::MhaSaved& trace, const wa::Rotary& rotary, bool rotated) {
  return guarded([&] {
    wa::mha_forward(shape, w, ptr<const float>(x), ptr<const float>(context), ptr<float>(out),
                    scale, mask, trace.q ? &trace : nullptr, pool.get(),
                    rotated ? &rotary : nullptr);
  });
}

// The same over a cache (wa::mha_forward_cached), the cache by its handle.
Status mha_forward_cached(const wa::MhaShape& shape, const wa::MhaWeights& w, uintptr_t x,
                          uintptr_t cache, uintptr_t out, float scale, const wa::ScoreMask& mask,
                          const wa::Rotary& rotary, bool rotated) {
  return guarded([&] {
    wa::mha_forward_cached(shape, w, ptr<const float>(x), *ptr<wa::KvCache>(cache), ptr<float>(out),
                           scale, mask, pool.get(), rotated ? &rotary : nullptr);
  });
}

Status mha_backward(const wa::MhaShape& shape, const wa::MhaWeights& w, uintptr_t x,
                    uintptr_t context, const wa::MhaSaved& saved, uintptr_t d_out, float scale,
                    const wa::ScoreMask& mask, const wa::MhaGrads& grads, const wa::Rotary& rotary,
                    bool rotated) {
  return guarded([&] {
    wa::mha_backward(shape, w, ptr<const float>(x), ptr<const float>(context), saved,
                     ptr<const float>(d_out), scale, mask, grads, pool.get(),
                     rotated ? &rotary : nullptr);
  });
}

// Heads in 3-D or 4-D tensors (wa/attention_heads.h). A trace whose first buffer is null is
// no trace.
Status attention_heads_forward(const wa::HeadsShape& shape, const wa::HeadTensor<const float>& q,
                               const wa::HeadTensor<const float>& k,
                               const wa::HeadTensor<const float>& v,
                               const wa::HeadTensor<float>& out, float scale,
                               const wa::HeadsMask& mask, const wa::HeadsTrace& trace) {
  return guarded([&] {
    wa::attention_heads_forward(shape, q, k, v, out, scale, mask, trace.scores ? &trace : nullptr,
                                pool.get());
  });
}

// The same over a cache's keys and values (wa/kv_cache.h), the cache by its handle.
Status attention_heads_forward_cached(const wa::HeadsShape& shape,
                                      const wa::HeadTensor<const float>& q, uintptr_t cache,
                                      const wa::HeadTensor<float>& out, float scale,
                                      const wa::HeadsMask& mask, const wa::HeadsTrace& trace) {
  return guarded([&] {
    wa::attention_heads_forward(shape, q, *ptr<wa::KvCache>(cache), out, scale, mask,
                                trace.scores ? &trace : nullptr, pool.get());
  });
}

Status attention_heads_backward(const wa::HeadsShape& shape, const wa::HeadTensor<const float>& q,
                                const wa::HeadTensor<const float>& k,
                                const wa::HeadTensor<const float>& v,
                                const wa::HeadTensor<const float>& d_out,
                                const wa::HeadTensor<float>& dq, const wa::HeadTensor<float>& dk,
                                const wa::HeadTensor<float>& dv, float scale,
                                const wa::HeadsMask& mask, uintptr_t d_sinks) {
  return guarded([&] {
    wa::attention_heads_backward(shape, q, k, v, d_out, dq, dk, dv, scale, mask, nullptr,
                                 pool.get(), ptr<float>(d_sinks));
  });
}

// wa/rotary.h, in place on x (batch, heads, rows, d).
Status rotary_forward(uint32_t batch, uint32_t heads, uint32_t rows, uint32_t d,
                      const wa::HeadTensor<float>& x, const wa::Rotary& r) {
  return guarded([&] { wa::rotary_forward(batch, heads, rows, d, x, r); });
}

Status rotary_backward(uint32_t batch, uint32_t heads, uint32_t rows, uint32_t d,
                       const wa::HeadTensor<float>& dx, const wa::Rotary& r) {
  return guarded([&] { wa::rotary_backward(batch, heads, rows, d, dx, r); });
}

// wa::KvCache behind an opaque handle (its address): JS owns it from kv_cache_create to
// kv_cache_destroy. kv_cache_create writes the handle as a uint32 at handle_out.
wa::KvCache* cache_at(uintptr_t handle) { return ptr<wa::KvCache>(handle); }

// type: a wa::KvType's value (web/lib/kv_cache.js's KV_DTYPES lists them in order).
Status kv_cache_create(uint32_t batch, uint32_t kv_heads, uint32_t d_k, uint32_t d_v,
                       uint32_t capacity, uint32_t type, uintptr_t handle_out) {
  return guarded([&] {
    if (type >= wa::kKvTypeCount)
      throw std::invalid_argument("kv cache: no element type " + std::to_string(type));
    *ptr<uint32_t>(handle_out) = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(
        new wa::KvCache(batch, kv_heads, d_k, d_v, capacity, static_cast<wa::KvType>(type))));
  });
}

void kv_cache_destroy(uintptr_t handle) { delete cache_at(handle); }

uint32_t kv_cache_length(uintptr_t handle) {
  return static_cast<uint32_t>(cache_at(handle)->length());
}

Status kv_cache_append(uintptr_t handle, uint32_t n_new, const wa::HeadTensor<const float>& k_new,
                       const wa::HeadTensor<const float>& v_new) {
  return guarded([&] { cache_at(handle)->append(n_new, k_new, v_new); });
}

Status kv_cache_truncate(uintptr_t handle, uint32_t n) {
  return guarded([&] {
    if (n > cache_at(handle)->length()) throw std::invalid_argument("truncate past the length");
    cache_at(handle)->truncate(n);
  });
}

// wa::KvCache::head_bytes: bytes one (sequence, kv head) of a cache keeps; -1 when it passes
// size_t (wasm32: 4 GB) or the type is not one.
double kv_cache_head_bytes(uint32_t capacity, uint32_t d_k, uint32_t d_v, uint32_t type) {
  if (type >= wa::kKvTypeCount) return -1;
  try {
    return static_cast<double>(
        wa::KvCache::head_bytes(capacity, d_k, d_v, static_cast<wa::KvType>(type)));
  } catch (const std::bad_alloc&) {
    return -1;
  }
}

// rows [0, length) -> k (batch, hkv, length, d_k), v (batch, hkv, length, d_v); either data
// 0: not wanted
Status kv_cache_read(uintptr_t handle, const wa::HeadTensor<float>& k,
                     const wa::HeadTensor<float>& v) {
  return guarded([&] { cache_at(handle)->copy_rows(k, v); });
}

}  // namespace

EMSCRIPTEN_BINDINGS(wasm_attention) {
  using namespace emscripten;
  value_object<Status>("Status").field("kind", &Status::kind).field("message", &Status::message);

  value_object<wa::ConstMatrix>("ConstMatrix")
      .field("data", WA_OFFSET(wa::ConstMatrix::data))
      .field("rows", &wa::ConstMatrix::rows)
      .field("cols", &wa::ConstMatrix::cols)
      .field("ld", &wa::ConstMatrix::ld);
  value_object<wa::Matrix>("Matrix")
      .field("data", WA_OFFSET(wa::Matrix::data))
      .field("rows", &wa::Matrix::rows)
      .field("cols", &wa::Matrix::cols)
      .field("ld", &wa::Matrix::ld);
  value_object<wa::ScoreMask>("ScoreMask")
      .field("causal", &wa::ScoreMask::causal)
      .field("keep", WA_OFFSET(wa::ScoreMask::keep))
      .field("bias", WA_OFFSET(wa::ScoreMask::bias))
      .field("offset", &wa::ScoreMask::offset)
      .field("left", &wa::ScoreMask::left)
      .field("right", &wa::ScoreMask::right)
      .field("keyLimit", &wa::ScoreMask::key_limit)
      .field("maskLd", &wa::ScoreMask::mask_ld)
      .field("maskCols", &wa::ScoreMask::mask_cols)
      .field("softcap", &wa::ScoreMask::softcap)
      .field("sink", &wa::ScoreMask::sink);
  value_object<wa::AttentionTrace>("AttentionTrace")
      .field("scores", WA_OFFSET(wa::AttentionTrace::scores))
      .field("scaled", WA_OFFSET(wa::AttentionTrace::scaled))
      .field("masked", WA_OFFSET(wa::AttentionTrace::masked))
      .field("weights", WA_OFFSET(wa::AttentionTrace::weights))
      .field("capped", WA_OFFSET(wa::AttentionTrace::capped));
  value_object<wa::AttentionBackwardTrace>("AttentionBackwardTrace")
      .field("weights", WA_OFFSET(wa::AttentionBackwardTrace::weights))
      .field("dWeights", WA_OFFSET(wa::AttentionBackwardTrace::d_weights))
      .field("dScores", WA_OFFSET(wa::AttentionBackwardTrace::d_scores));

  value_object<wa::HeadsShape>("HeadsShape")
      .field("batch", &wa::HeadsShape::batch)
      .field("qHeads", &wa::HeadsShape::q_heads)
      .field("kvHeads", &wa::HeadsShape::kv_heads)
      .field("nQ", &wa::HeadsShape::n_q)
      .field("nK", &wa::HeadsShape::n_k)
      .field("dK", &wa::HeadsShape::d_k)
      .field("dV", &wa::HeadsShape::d_v);
  value_object<wa::HeadTensor<const float>>("ConstHeadTensor")
      .field("data", WA_OFFSET(wa::HeadTensor<const float>::data))
      .field("batchStride", &wa::HeadTensor<const float>::batch_stride)
      .field("headStride", &wa::HeadTensor<const float>::head_stride)
      .field("rowStride", &wa::HeadTensor<const float>::row_stride);
  value_object<wa::HeadTensor<float>>("HeadTensor")
      .field("data", WA_OFFSET(wa::HeadTensor<float>::data))
      .field("batchStride", &wa::HeadTensor<float>::batch_stride)
      .field("headStride", &wa::HeadTensor<float>::head_stride)
      .field("rowStride", &wa::HeadTensor<float>::row_stride);
  value_object<wa::HeadsMask>("HeadsMask")
      .field("mask", &wa::HeadsMask::mask)
      .field("batchStride", &wa::HeadsMask::batch_stride)
      .field("headStride", &wa::HeadsMask::head_stride)
      .field("kvLength", WA_OFFSET(wa::HeadsMask::kv_length))
      .field("sinks", WA_OFFSET(wa::HeadsMask::sinks));
  value_object<wa::Rotary>("Rotary")
      .field("offset", &wa::Rotary::offset)
      .field("base", &wa::Rotary::base)
      .field("dims", &wa::Rotary::dims)
      .field("interleaved", &wa::Rotary::interleaved);

  value_object<wa::MhaShape>("MhaShape")
      .field("batch", &wa::MhaShape::batch)
      .field("nQ", &wa::MhaShape::n_q)
      .field("nK", &wa::MhaShape::n_k)
      .field("dModel", &wa::MhaShape::d_model)
      .field("heads", &wa::MhaShape::heads)
      .field("dK", &wa::MhaShape::d_k)
      .field("dV", &wa::MhaShape::d_v)
      .field("kvHeads", &wa::MhaShape::kv_heads);
  value_object<wa::MhaWeights>("MhaWeights")
      .field("wq", WA_OFFSET(wa::MhaWeights::wq))
      .field("wk", WA_OFFSET(wa::MhaWeights::wk))
      .field("wv", WA_OFFSET(wa::MhaWeights::wv))
      .field("wo", WA_OFFSET(wa::MhaWeights::wo))
      .field("bq", WA_OFFSET(wa::MhaWeights::bq))
      .field("bk", WA_OFFSET(wa::MhaWeights::bk))
      .field("bv", WA_OFFSET(wa::MhaWeights::bv))
      .field("bo", WA_OFFSET(wa::MhaWeights::bo))
      .field("sinks", WA_OFFSET(wa::MhaWeights::sinks));
  value_object<wa::MhaSaved>("MhaSaved")
      .field("q", WA_OFFSET(wa::MhaSaved::q))
      .field("k", WA_OFFSET(wa::MhaSaved::k))
      .field("v", WA_OFFSET(wa::MhaSaved::v))
      .field("scores", WA_OFFSET(wa::MhaSaved::scores))
      .field("scaled", WA_OFFSET(wa::MhaSaved::scaled))
      .field("masked", WA_OFFSET(wa::MhaSaved::masked))
      .field("weights", WA_OFFSET(wa::MhaSaved::weights))
      .field("concat", WA_OFFSET(wa::MhaSaved::concat));
  value_object<wa::MhaGrads>("MhaGrads")
      .field("dx", WA_OFFSET(wa::MhaGrads::dx))
      .field("dContext", WA_OFFSET(wa::MhaGrads::d_context))
      .field("dwq", WA_OFFSET(wa::MhaGrads::dwq))
      .field("dwk", WA_OFFSET(wa::MhaGrads::dwk))
      .field("dwv", WA_OFFSET(wa::MhaGrads::dwv))
      .field("dwo", WA_OFFSET(wa::MhaGrads::dwo))
      .field("dbq", WA_OFFSET(wa::MhaGrads::dbq))
      .field("dbk", WA_OFFSET(wa::MhaGrads::dbk))
      .field("dbv", WA_OFFSET(wa::MhaGrads::dbv))
      .field("dbo", WA_OFFSET(wa::MhaGrads::dbo))
      .field("dsinks", WA_OFFSET(wa::MhaGrads::dsinks));

  function("setThreads", &set_threads);
  function("threads", &threads);
  function("simdIsa", &simd_isa);
  function("gemmKernel", &gemm_kernel);
  function("gemmKernels", &gemm_kernels);
  function("useGemmKernel", &use_gemm_kernel);
  function("allocatedBytes", &allocated_bytes);
  function("heapRoom", &heap_room);
  function("firstNonFinite", &first_non_finite);
  function("maxAbs", &max_abs);
  function("gemm", &gemm);
  function("attentionForward", &attention_forward);
  function("attentionBackward", &attention_backward);
  function("mhaForward", &mha_forward);
  function("mhaForwardCached", &mha_forward_cached);
  function("mhaBackward", &mha_backward);
  function("attentionHeadsForward", &attention_heads_forward);
  function("attentionHeadsForwardCached", &attention_heads_forward_cached);
  function("attentionHeadsBackward", &attention_heads_backward);
  function("rotaryForward", &rotary_forward);
  function("rotaryBackward", &rotary_backward);
  function("kvCacheCreate", &kv_cache_create);
  function("kvCacheDestroy", &kv_cache_destroy);
  function("kvCacheLength", &kv_cache_length);
  function("kvCacheAppend", &kv_cache_append);
  function("kvCacheTruncate", &kv_cache_truncate);
  function("kvCacheRead", &kv_cache_read);
  function("kvCacheHeadBytes", &kv_cache_head_bytes);
}
