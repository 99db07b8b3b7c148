// The wasm module's surface: bindings only. The core's own argument structs (ConstMatrix,
// Matrix, ScoreMask, the traces, MhaShape, MhaWeights, MhaSaved, MhaGrads, HeadsShape,
// HeadTensor, HeadsMask, Rotary) come as the address of their bytes in wasm memory, written
// there by web/lib/binding.js at the offsets struct_layouts() reports (one field at a time
// through Embind's value objects took a wasm call per field, a fifth of a small call); their
// pointer fields are byte offsets into wasm memory, 0 for null. Each call converts, calls the
// core, and returns a Status instead of throwing, because a C++ exception reaching JS would
// arrive as a bare number.
#include <emscripten/bind.h>
#include <emscripten/heap.h>

#include <malloc.h>
#include <unistd.h>

#include <cstddef>
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

// ---- the argument structs as JS writes them ----

// wasm32: a pointer, size_t and long are 32 bits, which the layouts' kinds below assume.
static_assert(sizeof(void*) == 4 && sizeof(size_t) == 4 && sizeof(long) == 4, "wasm32");

// A struct argument at byte offset `at` of wasm memory (binding.js wrote it there).
template <class T>
const T& arg(uintptr_t at) {
  return *ptr<const T>(at);
}

// How JS writes a field: "u8" (bool), "i32" (long), "u32" (size_t, or a pointer as its byte
// offset), "f32", "f64", or the name of a struct held inline.
constexpr const char* kind_of(bool*) { return "u8"; }
constexpr const char* kind_of(long*) { return "i32"; }
constexpr const char* kind_of(size_t*) { return "u32"; }
constexpr const char* kind_of(float*) { return "f32"; }
constexpr const char* kind_of(double*) { return "f64"; }
template <class P>
constexpr const char* kind_of(P**) {
  return "u32";
}
constexpr const char* kind_of(wa::ScoreMask*) { return "ScoreMask"; }

struct Field {
  const char* name;  // as JS names it
  size_t offset;
  const char* kind;
};
#define WA_FIELD(T, name, member) \
  Field { name, offsetof(T, member), kind_of(static_cast<decltype(T::member)*>(nullptr)) }

// The same bytes serve the const and the mutable form of a matrix or a head tensor.
static_assert(sizeof(wa::ConstMatrix) == sizeof(wa::Matrix) &&
                  offsetof(wa::ConstMatrix, ld) == offsetof(wa::Matrix, ld),
              "ConstMatrix and Matrix share a layout");
static_assert(sizeof(wa::HeadTensor<const float>) == sizeof(wa::HeadTensor<float>) &&
                  offsetof(wa::HeadTensor<const float>, row_stride) ==
                      offsetof(wa::HeadTensor<float>, row_stride),
              "HeadTensor's const and mutable forms share a layout");

// Every struct argument's size and fields, as JSON: { name: { size, fields: { field:
// [offset, kind] } } }, read once per instance by web/lib/binding.js.
std::string struct_layouts() {
  std::string json;
  auto add = [&](const char* name, size_t size, std::initializer_list<Field> fields) {
    json += std::string(json.empty() ? "{" : ",") + "\"" + name +
            "\":{\"size\":" + std::to_string(size) + ",\"fields\":{";
    const char* comma = "";
    for (const Field& f : fields) {
      json += std::string(comma) + "\"" + f.name + "\":[" + std::to_string(f.offset) + ",\"" +
              f.kind + "\"]";
      comma = ",";
    }
    json += "}}";
  };
  using MX = wa::Matrix;
  add("Matrix", sizeof(MX),
      {WA_FIELD(MX, "data", data), WA_FIELD(MX, "rows", rows), WA_FIELD(MX, "cols", cols),
       WA_FIELD(MX, "ld", ld)});
  using SM = wa::ScoreMask;
  add("ScoreMask", sizeof(SM),
      {WA_FIELD(SM, "causal", causal), WA_FIELD(SM, "keep", keep), WA_FIELD(SM, "bias", bias),
       WA_FIELD(SM, "offset", offset), WA_FIELD(SM, "left", left), WA_FIELD(SM, "right", right),
       WA_FIELD(SM, "keyLimit", key_limit), WA_FIELD(SM, "maskLd", mask_ld),
       WA_FIELD(SM, "maskCols", mask_cols), WA_FIELD(SM, "softcap", softcap),
       WA_FIELD(SM, "sink", sink)});
  using AT = wa::AttentionTrace;
  add("AttentionTrace", sizeof(AT),
      {WA_FIELD(AT, "scores", scores), WA_FIELD(AT, "scaled", scaled),
       WA_FIELD(AT, "masked", masked), WA_FIELD(AT, "weights", weights),
       WA_FIELD(AT, "capped", capped)});
  using BT = wa::AttentionBackwardTrace;
  add("AttentionBackwardTrace", sizeof(BT),
      {WA_FIELD(BT, "weights", weights), WA_FIELD(BT, "dWeights", d_weights),
       WA_FIELD(BT, "dScores", d_scores)});
  using HS = wa::HeadsShape;
  add("HeadsShape", sizeof(HS),
      {WA_FIELD(HS, "batch", batch), WA_FIELD(HS, "qHeads", q_heads),
       WA_FIELD(HS, "kvHeads", kv_heads), WA_FIELD(HS, "nQ", n_q), WA_FIELD(HS, "nK", n_k),
       WA_FIELD(HS, "dK", d_k), WA_FIELD(HS, "dV", d_v)});
  using HT = wa::HeadTensor<float>;
  add("HeadTensor", sizeof(HT),
      {WA_FIELD(HT, "data", data), WA_FIELD(HT, "batchStride", batch_stride),
       WA_FIELD(HT, "headStride", head_stride), WA_FIELD(HT, "rowStride", row_stride)});
  using HM = wa::HeadsMask;
  add("HeadsMask", sizeof(HM),
      {WA_FIELD(HM, "mask", mask), WA_FIELD(HM, "batchStride", batch_stride),
       WA_FIELD(HM, "headStride", head_stride), WA_FIELD(HM, "kvLength", kv_length),
       WA_FIELD(HM, "sinks", sinks)});
  using RO = wa::Rotary;
  add("Rotary", sizeof(RO),
      {WA_FIELD(RO, "offset", offset), WA_FIELD(RO, "base", base), WA_FIELD(RO, "dims", dims),
       WA_FIELD(RO, "interleaved", interleaved)});
  using MS = wa::MhaShape;
  add("MhaShape", sizeof(MS),
      {WA_FIELD(MS, "batch", batch), WA_FIELD(MS, "nQ", n_q), WA_FIELD(MS, "nK", n_k),
       WA_FIELD(MS, "dModel", d_model), WA_FIELD(MS, "heads", heads), WA_FIELD(MS, "dK", d_k),
       WA_FIELD(MS, "dV", d_v), WA_FIELD(MS, "kvHeads", kv_heads)});
  using MW = wa::MhaWeights;
  add("MhaWeights", sizeof(MW),
      {WA_FIELD(MW, "wq", wq), WA_FIELD(MW, "wk", wk), WA_FIELD(MW, "wv", wv),
       WA_FIELD(MW, "wo", wo), WA_FIELD(MW, "bq", bq), WA_FIELD(MW, "bk", bk),
       WA_FIELD(MW, "bv", bv), WA_FIELD(MW, "bo", bo), WA_FIELD(MW, "sinks", sinks)});
  using SV = wa::MhaSaved;
  add("MhaSaved", sizeof(SV),
      {WA_FIELD(SV, "q", q), WA_FIELD(SV, "k", k), WA_FIELD(SV, "v", v),
       WA_FIELD(SV, "scores", scores), WA_FIELD(SV, "scaled", scaled),
       WA_FIELD(SV, "masked", masked), WA_FIELD(SV, "weights", weights),
       WA_FIELD(SV, "concat", concat)});
  using MG = wa::MhaGrads;
  add("MhaGrads", sizeof(MG),
      {WA_FIELD(MG, "dx", dx), WA_FIELD(MG, "dContext", d_context), WA_FIELD(MG, "dwq", dwq),
       WA_FIELD(MG, "dwk", dwk), WA_FIELD(MG, "dwv", dwv), WA_FIELD(MG, "dwo", dwo),
       WA_FIELD(MG, "dbq", dbq), WA_FIELD(MG, "dbk", dbk), WA_FIELD(MG, "dbv", dbv),
       WA_FIELD(MG, "dbo", dbo), WA_FIELD(MG, "dsinks", dsinks)});
  return json + "}";
}

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

// Each struct argument is the address of its bytes (arg). A trace whose first buffer is null
// is no trace.
Status attention_forward(uintptr_t q, uintptr_t k, uintptr_t v, uintptr_t out, float scale,
                         uintptr_t mask, uintptr_t trace) {
  return guarded([&] {
    const auto& t = arg<wa::AttentionTrace>(trace);
    wa::attention_forward(arg<wa::ConstMatrix>(q), arg<wa::ConstMatrix>(k), arg<wa::ConstMatrix>(v),
                          arg<wa::Matrix>(out), scale, arg<wa::ScoreMask>(mask),
                          t.scores ? &t : nullptr, pool.get());
  });
}

Status attention_backward(uintptr_t q, uintptr_t k, uintptr_t v, uintptr_t d_out, uintptr_t dq,
                          uintptr_t dk, uintptr_t dv, float scale, uintptr_t mask, uintptr_t trace,
                          uintptr_t d_sink) {
  return guarded([&] {
    const auto& t = arg<wa::AttentionBackwardTrace>(trace);
    wa::attention_backward(
        arg<wa::ConstMatrix>(q), arg<wa::ConstMatrix>(k), arg<wa::ConstMatrix>(v),
        arg<wa::ConstMatrix>(d_out), arg<wa::Matrix>(dq), arg<wa::Matrix>(dk), arg<wa::Matrix>(dv),
        scale, arg<wa::ScoreMask>(mask), t.weights ? &t : nullptr, pool.get(), ptr<float>(d_sink));
  });
}

// The multi-head calls take a rotary and `rotated` saying whether to use it.
Status mha_forward(uintptr_t shape, uintptr_t w, uintptr_t x, uintptr_t context, uintptr_t out,
                   float scale, uintptr_t mask, uintptr_t trace, uintptr_t rotary, bool rotated) {
  return guarded([&] {
    const auto& saved = arg<wa::MhaSaved>(trace);
    wa::mha_forward(arg<wa::MhaShape>(shape), arg<wa::MhaWeights>(w), ptr<const float>(x),
                    ptr<const float>(context), ptr<float>(out), scale, arg<wa::ScoreMask>(mask),
                    saved.q ? &saved : nullptr, pool.get(),
                    rotated ? &arg<wa::Rotary>(rotary) : nullptr);
  });
}

// The same over a cache (wa::mha_forward_cached), the cache by its handle.
Status mha_forward_cached(uintptr_t shape, uintptr_t w, uintptr_t x, uintptr_t cache, uintptr_t out,
                          float scale, uintptr_t mask, uintptr_t rotary, bool rotated) {
  return guarded([&] {
    wa::mha_forward_cached(arg<wa::MhaShape>(shape), arg<wa::MhaWeights>(w), ptr<const float>(x),
                           *ptr<wa::KvCache>(cache), ptr<float>(out), scale,
                           arg<wa::ScoreMask>(mask), pool.get(),
                           rotated ? &arg<wa::Rotary>(rotary) : nullptr);
  });
}

Status mha_backward(uintptr_t shape, uintptr_t w, uintptr_t x, uintptr_t context, uintptr_t saved,
                    uintptr_t d_out, float scale, uintptr_t mask, uintptr_t grads, uintptr_t rotary,
                    bool rotated) {
  return guarded([&] {
    wa::mha_backward(arg<wa::MhaShape>(shape), arg<wa::MhaWeights>(w), ptr<const float>(x),
                     ptr<const float>(context), arg<wa::MhaSaved>(saved), ptr<const float>(d_out),
                     scale, arg<wa::ScoreMask>(mask), arg<wa::MhaGrads>(grads), pool.get(),
                     rotated ? &arg<wa::Rotary>(rotary) : nullptr);
  });
}

// Heads in 3-D or 4-D tensors (wa/attention_heads.h).
Status attention_heads_forward(uintptr_t shape, uintptr_t q, uintptr_t k, uintptr_t v,
                               uintptr_t out, float scale, uintptr_t mask, uintptr_t trace) {
  return guarded([&] {
    const auto& t = arg<wa::HeadsTrace>(trace);
    wa::attention_heads_forward(arg<wa::HeadsShape>(shape), arg<wa::HeadTensor<const float>>(q),
                                arg<wa::HeadTensor<const float>>(k),
                                arg<wa::HeadTensor<const float>>(v),
                                arg<wa::HeadTensor<float>>(out), scale, arg<wa::HeadsMask>(mask),
                                t.scores ? &t : nullptr, pool.get());
  });
}

// The same over a cache's keys and values (wa/kv_cache.h), the cache by its handle.
Status attention_heads_forward_cached(uintptr_t shape, uintptr_t q, uintptr_t cache, uintptr_t out,
                                      float scale, uintptr_t mask, uintptr_t trace) {
  return guarded([&] {
    const auto& t = arg<wa::HeadsTrace>(trace);
    wa::attention_heads_forward(arg<wa::HeadsShape>(shape), arg<wa::HeadTensor<const float>>(q),
                                *ptr<wa::KvCache>(cache), arg<wa::HeadTensor<float>>(out), scale,
                                arg<wa::HeadsMask>(mask), t.scores ? &t : nullptr, pool.get());
  });
}

Status attention_heads_backward(uintptr_t shape, uintptr_t q, uintptr_t k, uintptr_t v,
                                uintptr_t d_out, uintptr_t dq, uintptr_t dk, uintptr_t dv,
                                float scale, uintptr_t mask, uintptr_t d_sinks) {
  using In = wa::HeadTensor<const float>;
  using Out = wa::HeadTensor<float>;
  return guarded([&] {
    wa::attention_heads_backward(arg<wa::HeadsShape>(shape), arg<In>(q), arg<In>(k), arg<In>(v),
                                 arg<In>(d_out), arg<Out>(dq), arg<Out>(dk), arg<Out>(dv), scale,
                                 arg<wa::HeadsMask>(mask), nullptr, pool.get(),
                                 ptr<float>(d_sinks));
  });
}

// wa/rotary.h, in place on x (batch, heads, rows, d).
Status rotary_forward(uint32_t batch, uint32_t heads, uint32_t rows, uint32_t d, uintptr_t x,
                      uintptr_t r) {
  return guarded([&] {
    wa::rotary_forward(batch, heads, rows, d, arg<wa::HeadTensor<float>>(x), arg<wa::Rotary>(r));
  });
}

Status rotary_backward(uint32_t batch, uint32_t heads, uint32_t rows, uint32_t d, uintptr_t dx,
                       uintptr_t r) {
  return guarded([&] {
    wa::rotary_backward(batch, heads, rows, d, arg<wa::HeadTensor<float>>(dx), arg<wa::Rotary>(r));
  });
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

Status kv_cache_append(uintptr_t handle, uint32_t n_new, uintptr_t k_new, uintptr_t v_new) {
  return guarded([&] {
    cache_at(handle)->append(n_new, arg<wa::HeadTensor<const float>>(k_new),
                             arg<wa::HeadTensor<const float>>(v_new));
  });
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
Status kv_cache_read(uintptr_t handle, uintptr_t k, uintptr_t v) {
  return guarded([&] {
    const auto& kt = arg<wa::HeadTensor<float>>(k);
    const auto& vt = arg<wa::HeadTensor<float>>(v);
    cache_at(handle)->copy_rows(kt, vt);
  });
}

}  // namespace

EMSCRIPTEN_BINDINGS(wasm_attention) {
  using namespace emscripten;
  value_object<Status>("Status").field("kind", &Status::kind).field("message", &Status::message);

  function("setThreads", &set_threads);
  function("threads", &threads);
  function("simdIsa", &simd_isa);
  function("gemmKernel", &gemm_kernel);
  function("gemmKernels", &gemm_kernels);
  function("useGemmKernel", &use_gemm_kernel);
  function("allocatedBytes", &allocated_bytes);
  function("heapRoom", &heap_room);
  function("structLayouts", &struct_layouts);
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
