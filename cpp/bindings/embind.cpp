// The wasm module's surface: bindings only. Arguments arrive as plain numbers and byte
// offsets into wasm memory (the JS layer allocates, copies in and validates); each call
// converts them, calls the core, and returns "" or the error message as a string, because
// a C++ exception reaching JS would arrive as a bare number.
#include <emscripten/bind.h>

#include <malloc.h>

#include <cstdint>
#include <exception>
#include <memory>
#include <new>
#include <string>

#include "wa/attention.h"
#include "wa/build_info.h"
#include "wa/finite.h"
#include "wa/gemm.h"
#include "wa/thread_pool.h"
#include "../src/scratch.h"  // release_large_scratch: internal, called when each call ends

namespace {

std::unique_ptr<wa::ThreadPool> pool;  // one per module instance, started by set_threads

template <class T>
T* ptr(uintptr_t offset) {
  return reinterpret_cast<T*>(offset);
}

// Runs a call; whatever it left, scratch past kScratchKeepBytes goes back to malloc.
template <class F>
std::string guarded(F&& call) {
  std::string error;
  try {
    call();
  } catch (const std::bad_alloc&) {
    error = "out of memory: the inputs and their intermediates do not fit in wasm memory";
  } catch (const std::exception& e) {
    error = e.what();
  }
  wa::release_large_scratch();
  return error;
}

struct MatmulArgs {
  uintptr_t a, b, c;  // op(a) (m,k), op(b) (k,n) -> c (m,n)
  uint32_t m, n, k;
  bool transpose_a, transpose_b;  // a stored (k,m) / b stored (n,k)
};

struct AttentionArgs {
  uintptr_t q, k, v, out;  // (n_q,d_k), (n_k,d_k), (n_k,d_v) -> (n_q,d_v)
  uint32_t n_q, n_k, d_k, d_v;
  float scale;
  bool causal;
  uintptr_t keep, bias;                        // (n_q,n_k) or 0
  uintptr_t scores, scaled, masked, weights;   // trace, all (n_q,n_k), or all 0
};

struct MhaArgs {
  uint32_t batch, n_q, n_k, d_model, heads, d_k, d_v;
  uintptr_t x, context, out;
  uintptr_t wq, wk, wv, wo, bq, bk, bv, bo;
  float scale;
  bool causal;
  uintptr_t keep, bias;
  // trace: q, k, v, concat set together (or all 0), and scores..weights all set or all 0
  uintptr_t q, k, v, scores, scaled, masked, weights, concat;
};

// The gradient side of a backward call: d_out in, gradients out (0 where absent).
struct AttentionGradArgs {
  uintptr_t d_out, dq, dk, dv;
  uintptr_t weights, d_weights, d_scores;  // the backward's trace, all (n_q,n_k), or all 0
};
struct MhaGradArgs {
  uintptr_t d_out, dx, d_context, dwq, dwk, dwv, dwo, dbq, dbk, dbv, dbo;
};

std::string set_threads(int threads) {
  return guarded([&] {
    pool.reset();
    if (threads > 1) pool = std::make_unique<wa::ThreadPool>(threads);
  });
}

int threads() { return pool ? pool->threads() : 1; }

std::string simd_isa() { return wa::simd_isa(); }

// The index of the first NaN or ±inf among n floats at offset x, or -1.
double first_non_finite(uintptr_t x, uint32_t n) {
  const size_t i = wa::first_non_finite(ptr<const float>(x), n);
  return i == n ? -1.0 : static_cast<double>(i);
}

// Bytes malloc has handed out and not had back: the leak checks watch this.
double allocated_bytes() { return static_cast<double>(mallinfo().uordblks); }

wa::ScoreMask score_mask(float scale, bool causal, uintptr_t keep, uintptr_t bias) {
  wa::ScoreMask m;
  m.scale = scale;
  m.causal = causal;
  m.keep = ptr<const uint8_t>(keep);
  m.bias = ptr<const float>(bias);
  return m;
}

std::string matmul(const MatmulArgs& a) {
  return guarded([&] {
    const wa::Transpose ta = a.transpose_a ? wa::Transpose::yes : wa::Transpose::no;
    const wa::Transpose tb = a.transpose_b ? wa::Transpose::yes : wa::Transpose::no;
    wa::gemm(ta, tb, a.m, a.n, a.k, ptr<const float>(a.a), a.transpose_a ? a.m : a.k,
             ptr<const float>(a.b), a.transpose_b ? a.k : a.n, ptr<float>(a.c), a.n, false,
             pool.get());
  });
}

std::string attention_forward(const AttentionArgs& a) {
  return guarded([&] {
    const wa::AttentionTrace trace{ptr<float>(a.scores), ptr<float>(a.scaled),
                                   ptr<float>(a.masked), ptr<float>(a.weights)};
    wa::attention_forward({ptr<const float>(a.q), a.n_q, a.d_k, a.d_k},
                          {ptr<const float>(a.k), a.n_k, a.d_k, a.d_k},
                          {ptr<const float>(a.v), a.n_k, a.d_v, a.d_v},
                          {ptr<float>(a.out), a.n_q, a.d_v, a.d_v},
                          score_mask(a.scale, a.causal, a.keep, a.bias),
                          a.scores ? &trace : nullptr, pool.get());
  });
}

wa::MhaShape mha_shape(const MhaArgs& a) {
  return {a.batch, a.n_q, a.n_k, a.d_model, a.heads, a.d_k, a.d_v};
}
wa::MhaWeights mha_weights(const MhaArgs& a) {
  return {ptr<const float>(a.wq), ptr<const float>(a.wk), ptr<const float>(a.wv),
          ptr<const float>(a.wo), ptr<const float>(a.bq), ptr<const float>(a.bk),
          ptr<const float>(a.bv), ptr<const float>(a.bo)};
}
wa::MhaTrace mha_trace(const MhaArgs& a) {
  return {ptr<float>(a.q),      ptr<float>(a.k),      ptr<float>(a.v),
          ptr<float>(a.scores), ptr<float>(a.scaled), ptr<float>(a.masked),
          ptr<float>(a.weights), ptr<float>(a.concat)};
}

std::string attention_backward(const AttentionArgs& a, const AttentionGradArgs& g) {
  return guarded([&] {
    const wa::AttentionBackwardTrace trace{ptr<float>(g.weights), ptr<float>(g.d_weights),
                                           ptr<float>(g.d_scores)};
    wa::attention_backward({ptr<const float>(a.q), a.n_q, a.d_k, a.d_k},
                           {ptr<const float>(a.k), a.n_k, a.d_k, a.d_k},
                           {ptr<const float>(a.v), a.n_k, a.d_v, a.d_v},
                           {ptr<const float>(g.d_out), a.n_q, a.d_v, a.d_v},
                           {ptr<float>(g.dq), a.n_q, a.d_k, a.d_k},
                           {ptr<float>(g.dk), a.n_k, a.d_k, a.d_k},
                           {ptr<float>(g.dv), a.n_k, a.d_v, a.d_v},
                           score_mask(a.scale, a.causal, a.keep, a.bias),
                           g.weights ? &trace : nullptr, pool.get());
  });
}

// a's q, k, v and concat hold what the forward saved (its trace).
std::string mha_backward(const MhaArgs& a, const MhaGradArgs& g) {
  return guarded([&] {
    const wa::MhaGrads grads{ptr<float>(g.dx),  ptr<float>(g.d_context), ptr<float>(g.dwq),
                             ptr<float>(g.dwk), ptr<float>(g.dwv),       ptr<float>(g.dwo),
                             ptr<float>(g.dbq), ptr<float>(g.dbk),       ptr<float>(g.dbv),
                             ptr<float>(g.dbo)};
    wa::mha_backward(mha_shape(a), mha_weights(a), ptr<const float>(a.x),
                     ptr<const float>(a.context), mha_trace(a), ptr<const float>(g.d_out),
                     score_mask(a.scale, a.causal, a.keep, a.bias), grads, pool.get());
  });
}

std::string mha_forward(const MhaArgs& a) {
  return guarded([&] {
    const wa::MhaTrace trace = mha_trace(a);
    wa::mha_forward(mha_shape(a), mha_weights(a), ptr<const float>(a.x),
                    ptr<const float>(a.context), ptr<float>(a.out),
                    score_mask(a.scale, a.causal, a.keep, a.bias), a.q ? &trace : nullptr,
                    pool.get());
  });
}

}  // namespace

EMSCRIPTEN_BINDINGS(wasm_attention) {
  using namespace emscripten;
  value_object<MatmulArgs>("MatmulArgs")
      .field("a", &MatmulArgs::a).field("b", &MatmulArgs::b).field("c", &MatmulArgs::c)
      .field("m", &MatmulArgs::m).field("n", &MatmulArgs::n).field("k", &MatmulArgs::k)
      .field("transposeA", &MatmulArgs::transpose_a).field("transposeB", &MatmulArgs::transpose_b);
  value_object<AttentionArgs>("AttentionArgs")
      .field("q", &AttentionArgs::q).field("k", &AttentionArgs::k).field("v", &AttentionArgs::v)
      .field("out", &AttentionArgs::out)
      .field("nQ", &AttentionArgs::n_q).field("nK", &AttentionArgs::n_k)
      .field("dK", &AttentionArgs::d_k).field("dV", &AttentionArgs::d_v)
      .field("scale", &AttentionArgs::scale).field("causal", &AttentionArgs::causal)
      .field("keep", &AttentionArgs::keep).field("bias", &AttentionArgs::bias)
      .field("scores", &AttentionArgs::scores).field("scaled", &AttentionArgs::scaled)
      .field("masked", &AttentionArgs::masked).field("weights", &AttentionArgs::weights);
  value_object<MhaArgs>("MhaArgs")
      .field("batch", &MhaArgs::batch).field("nQ", &MhaArgs::n_q).field("nK", &MhaArgs::n_k)
      .field("dModel", &MhaArgs::d_model).field("heads", &MhaArgs::heads)
      .field("dK", &MhaArgs::d_k).field("dV", &MhaArgs::d_v)
      .field("x", &MhaArgs::x).field("context", &MhaArgs::context).field("out", &MhaArgs::out)
      .field("wq", &MhaArgs::wq).field("wk", &MhaArgs::wk).field("wv", &MhaArgs::wv)
      .field("wo", &MhaArgs::wo).field("bq", &MhaArgs::bq).field("bk", &MhaArgs::bk)
      .field("bv", &MhaArgs::bv).field("bo", &MhaArgs::bo)
      .field("scale", &MhaArgs::scale).field("causal", &MhaArgs::causal)
      .field("keep", &MhaArgs::keep).field("bias", &MhaArgs::bias)
      .field("q", &MhaArgs::q).field("k", &MhaArgs::k).field("v", &MhaArgs::v)
      .field("scores", &MhaArgs::scores).field("scaled", &MhaArgs::scaled)
      .field("masked", &MhaArgs::masked).field("weights", &MhaArgs::weights)
      .field("concat", &MhaArgs::concat);
  value_object<AttentionGradArgs>("AttentionGradArgs")
      .field("dOut", &AttentionGradArgs::d_out).field("dq", &AttentionGradArgs::dq)
      .field("dk", &AttentionGradArgs::dk).field("dv", &AttentionGradArgs::dv)
      .field("weights", &AttentionGradArgs::weights)
      .field("dWeights", &AttentionGradArgs::d_weights)
      .field("dScores", &AttentionGradArgs::d_scores);
  value_object<MhaGradArgs>("MhaGradArgs")
      .field("dOut", &MhaGradArgs::d_out).field("dx", &MhaGradArgs::dx)
      .field("dContext", &MhaGradArgs::d_context)
      .field("dwq", &MhaGradArgs::dwq).field("dwk", &MhaGradArgs::dwk)
      .field("dwv", &MhaGradArgs::dwv).field("dwo", &MhaGradArgs::dwo)
      .field("dbq", &MhaGradArgs::dbq).field("dbk", &MhaGradArgs::dbk)
      .field("dbv", &MhaGradArgs::dbv).field("dbo", &MhaGradArgs::dbo);
  function("setThreads", &set_threads);
  function("threads", &threads);
  function("simdIsa", &simd_isa);
  function("allocatedBytes", &allocated_bytes);
  function("firstNonFinite", &first_non_finite);
  function("matmul", &matmul);
  function("attentionForward", &attention_forward);
  function("mhaForward", &mha_forward);
  function("attentionBackward", &attention_backward);
  function("mhaBackward", &mha_backward);
}
