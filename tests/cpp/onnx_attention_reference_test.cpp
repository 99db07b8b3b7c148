// The ONNX Attention reference against numbers worked out by hand from the operator's
// specification, its properties (layouts, broadcasting, relative positions), and its backward
// against central finite differences of its forward.
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "gradient_check.h"
#include "reference.h"
#include "testing.h"

namespace wa::ref::onnx {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

Doubles random_doubles(size_t n, uint32_t seed) {
  const std::vector<float> f = test::random_floats(n, seed);
  return Doubles(f.begin(), f.end());
}

// b, hq, hkv, n_q, n_new, d_k, d_v with random q, k, v in the 4-D layout
Attention random_attention(size_t b, size_t hq, size_t hkv, size_t n_q, size_t n_new, size_t d_k,
                           size_t d_v, uint32_t seed) {
  Attention a;
  a.batch = b, a.q_heads = hq, a.kv_heads = hkv, a.n_q = n_q, a.n_new = n_new, a.d_k = d_k,
  a.d_v = d_v;
  a.q = random_doubles(b * hq * n_q * d_k, seed);
  a.k = random_doubles(b * hkv * n_new * d_k, seed + 1);
  a.v = random_doubles(b * hkv * n_new * d_v, seed + 2);
  return a;
}

// Which keys row (b, h, i) of the weights gives weight: "x" kept, "." zero.
std::string pattern(const Attention& a, const Outputs& o, size_t b, size_t h, size_t i) {
  const size_t n = a.n_past + a.n_new;
  std::string s;
  for (size_t j = 0; j < n; ++j)
    s += o.qk[3][((b * a.q_heads + h) * a.n_q + i) * n + j] > 0 ? 'x' : '.';
  return s;
}

TEST_CASE("onnx reference: one query row worked by hand (weights 1/4, 3/4; output 7)") {
  Attention a;
  a.n_q = 1, a.n_new = 2, a.d_k = 1, a.d_v = 1;  // scale 1/√1 = 1
  a.q = {1}, a.k = {0, std::log(3.0)}, a.v = {4, 8};
  const Outputs o = attention_forward(a);
  CHECK(o.qk[0][1] == doctest::Approx(std::log(3.0)));
  CHECK(o.qk[3][0] == doctest::Approx(0.25));
  CHECK(o.qk[3][1] == doctest::Approx(0.75));
  CHECK(o.y[0] == doctest::Approx(7.0));  // 4/4 + 8·3/4
}

TEST_CASE("onnx reference: causal is aligned bottom-right, by the past length or kv_length") {
  SUBCASE("a past of 2 keys: query i sees keys j <= i + 2") {
    Attention a = random_attention(1, 1, 1, 2, 2, 3, 3, 10);
    a.has_past = true, a.n_past = 2, a.causal = true;
    a.past_k = random_doubles(2 * 3, 20), a.past_v = random_doubles(2 * 3, 21);
    const Outputs o = attention_forward(a);
    CHECK(pattern(a, o, 0, 0, 0) == "xxx.");
    CHECK(pattern(a, o, 0, 0, 1) == "xxxx");
    CHECK(o.present_k.size() == 4 * 3);
    CHECK(o.present_k[0] == a.past_k[0]);
    CHECK(o.present_k[2 * 3] == a.k[0]);  // new keys follow the past
  }
  SUBCASE("kv_length per batch: offset kv_length[b] - n_q, and keys past kv_length masked") {
    Attention a = random_attention(2, 1, 1, 2, 5, 3, 3, 30);
    a.causal = true, a.kv_length = {3, 5};
    const Outputs o = attention_forward(a);
    CHECK(pattern(a, o, 0, 0, 0) == "xx...");  // offset 1
    CHECK(pattern(a, o, 0, 0, 1) == "xxx..");
    CHECK(pattern(a, o, 1, 0, 0) == "xxxx.");  // offset 3
    CHECK(pattern(a, o, 1, 0, 1) == "xxxxx");
  }
  SUBCASE("no cache: the ordinary top-left triangle") {
    Attention a = random_attention(1, 1, 1, 3, 3, 2, 2, 40);
    a.causal = true;
    const Outputs o = attention_forward(a);
    CHECK(pattern(a, o, 0, 0, 0) == "x..");
    CHECK(pattern(a, o, 0, 0, 2) == "xxx");
  }
}

TEST_CASE("onnx reference: sliding windows count from the query's absolute position") {
  Attention a = random_attention(1, 1, 1, 3, 4, 2, 2, 50);
  a.has_past = true, a.n_past = 2;
  a.past_k = random_doubles(2 * 2, 51), a.past_v = random_doubles(2 * 2, 52);
  a.left = 1, a.right = 0;  // query i at position i + 2 sees keys i + 1 .. i + 2
  const Outputs o = attention_forward(a);
  CHECK(pattern(a, o, 0, 0, 0) == ".xx...");
  CHECK(pattern(a, o, 0, 0, 2) == "...xx.");
  a.left = -1, a.right = 1;  // everything before, one after
  const Outputs o2 = attention_forward(a);
  CHECK(pattern(a, o2, 0, 0, 0) == "xxxx..");
  CHECK(pattern(a, o2, 0, 0, 2) == "xxxxxx");
}

TEST_CASE("onnx reference: GQA query head h reads kv head h / (hq / hkv)") {
  Attention a = random_attention(1, 4, 2, 3, 5, 4, 2, 60);
  for (size_t e = 0; e < a.v.size(); ++e)
    a.v[e] = e < 5 * 2 ? 1.0 : 2.0;  // kv head 0: 1, head 1: 2
  const Outputs o = attention_forward(a);
  for (size_t h = 0; h < 4; ++h)
    for (size_t e = 0; e < 3 * 2; ++e)
      CHECK(o.y[h * 3 * 2 + e] == doctest::Approx(h < 2 ? 1.0 : 2.0));
}

TEST_CASE("onnx reference: softcap bounds the scores before the mask; qk modes 0-3") {
  Attention a;
  a.n_q = 1, a.n_new = 2, a.d_k = 1, a.d_v = 1, a.scale = 2;
  a.q = {2}, a.k = {1, -1}, a.v = {1, 0};
  a.softcap = 2;                                // raw 4 and -4 -> ±2·tanh 2
  a.mask.dims = {2}, a.mask.values = {0.5, 0};  // additive
  const Outputs o = attention_forward(a);
  const double capped = 2 * std::tanh(2.0);
  CHECK(o.qk[0][0] == doctest::Approx(4.0));
  CHECK(o.qk[1][0] == doctest::Approx(capped));
  CHECK(o.qk[1][1] == doctest::Approx(-capped));
  CHECK(o.qk[2][0] == doctest::Approx(capped + 0.5));
  const double w0 = 1 / (1 + std::exp(-2 * capped - 0.5));
  CHECK(o.qk[3][0] == doctest::Approx(w0));
  CHECK(o.y[0] == doctest::Approx(w0));
}

TEST_CASE("onnx reference: a row with every key masked gives zero weights and a zero output") {
  Attention a = random_attention(1, 1, 1, 2, 3, 2, 2, 70);
  a.mask.dims = {2, 3}, a.mask.boolean = true, a.mask.values = {0, 0, 0, 1, 0, 1};
  const Outputs o = attention_forward(a);
  CHECK(o.y[0] == 0.0);
  CHECK(o.y[1] == 0.0);
  CHECK(pattern(a, o, 0, 0, 0) == "...");
  CHECK(pattern(a, o, 0, 0, 1) == "x.x");
  CHECK(o.qk[2][0] == -kInf);
}

TEST_CASE(
    "onnx reference: masks broadcast right-aligned from rank 1 to 4; short masks are padded") {
  Attention a = random_attention(2, 2, 1, 2, 3, 2, 2, 80);
  const size_t n = 3;
  // The same boolean pattern given at rank 4 in full and at lower ranks where it is uniform.
  SUBCASE("rank 1 == rank 4 repeated") {
    Attention full = a, low = a;
    low.mask = {{n}, true, {1, 0, 1}};
    full.mask.dims = {2, 2, 2, n}, full.mask.boolean = true;
    for (size_t e = 0; e < 8; ++e) full.mask.values.insert(full.mask.values.end(), {1, 0, 1});
    CHECK(attention_forward(low).y == attention_forward(full).y);
  }
  SUBCASE("rank 3 is (heads, n_q, n), not (batch, ...)") {
    Attention low = a;
    low.mask = {{2, 1, n}, true, {1, 1, 0, 0, 1, 1}};  // head 0 drops key 2, head 1 key 0
    const Outputs o = attention_forward(low);
    for (size_t b = 0; b < 2; ++b) {
      CHECK(pattern(low, o, b, 0, 1) == "xx.");
      CHECK(pattern(low, o, b, 1, 1) == ".xx");
    }
  }
  SUBCASE("a mask shorter than the keys is padded with masked columns") {
    Attention low = a;
    low.mask = {{2}, false, {0, 0}};  // additive, width 2 of 3
    const Outputs o = attention_forward(low);
    CHECK(pattern(low, o, 1, 1, 0) == "xx.");
  }
  SUBCASE("a dimension neither 1 nor its axis' size is refused") {
    Attention bad = a;
    bad.mask = {{3, n}, true, Doubles(9, 1)};
    CHECK_THROWS_AS(attention_forward(bad), std::invalid_argument);
  }
}

TEST_CASE("onnx reference: the 3-D layout is the 4-D one with heads interleaved per row") {
  Attention four = random_attention(2, 4, 2, 3, 5, 2, 3, 90);
  Attention three = four;
  three.three_d = true;
  // (b,h,s,d) -> (b,s,h·d)
  const auto to_3d = [](const Doubles& x, size_t b, size_t h, size_t s, size_t d) {
    Doubles out(x.size());
    for (size_t ib = 0; ib < b; ++ib)
      for (size_t ih = 0; ih < h; ++ih)
        for (size_t is = 0; is < s; ++is)
          for (size_t t = 0; t < d; ++t)
            out[((ib * s + is) * h + ih) * d + t] = x[((ib * h + ih) * s + is) * d + t];
    return out;
  };
  three.q = to_3d(four.q, 2, 4, 3, 2);
  three.k = to_3d(four.k, 2, 2, 5, 2);
  three.v = to_3d(four.v, 2, 2, 5, 3);
  const Outputs o4 = attention_forward(four), o3 = attention_forward(three);
  CHECK(o3.y == to_3d(o4.y, 2, 4, 3, 3));
  CHECK(o3.present_k == o4.present_k);  // present is always 4-D
}

TEST_CASE(
    "onnx reference: rotary turns pairs by position; scores depend only on relative position") {
  SUBCASE("by hand: [1, 0] at position 1 turns by 1 radian") {
    Doubles x = {1, 0, 5};  // d 3, dims 2: the third entry stays
    rotary(x, 1, 3, {1}, 10000, 2, false);
    CHECK(x[0] == doctest::Approx(std::cos(1.0)));
    CHECK(x[1] == doctest::Approx(std::sin(1.0)));
    CHECK(x[2] == 5);
  }
  SUBCASE("pairs (t, t + dims/2), or (2t, 2t + 1) when interleaved; the inverse undoes it") {
    Doubles half = {1, 2, 3, 4}, inter = {1, 3, 2, 4};
    rotary(half, 1, 4, {3}, 100, 0, false);
    rotary(inter, 1, 4, {3}, 100, 0, true);
    CHECK(half[0] == doctest::Approx(inter[0]));
    CHECK(half[2] == doctest::Approx(inter[1]));
    CHECK(half[1] == doctest::Approx(inter[2]));
    rotary(half, 1, 4, {3}, 100, 0, false, true);
    CHECK(half[3] == doctest::Approx(4));
  }
  SUBCASE("shifting every position leaves the scores as they were") {
    Attention a = random_attention(1, 2, 1, 4, 4, 6, 2, 100);
    a.rotary = true, a.rotary_base = 50;
    const Outputs o = attention_forward(a);
    a.rotary_offset = 7;
    const Outputs shifted = attention_forward(a);
    for (size_t e = 0; e < o.qk[0].size(); ++e)
      CHECK(shifted.qk[0][e] == doctest::Approx(o.qk[0][e]));
    a.rotary_offset = 0, a.rotary = false;
    const Outputs plain = attention_forward(a);
    CHECK(plain.qk[0][1] != doctest::Approx(o.qk[0][1]));
  }
}

TEST_CASE("onnx reference: bad arguments are refused") {
  Attention a = random_attention(1, 3, 2, 1, 1, 1, 1, 110);
  CHECK_THROWS_AS(attention_forward(a), std::invalid_argument);  // 3 heads over 2
  Attention w = random_attention(1, 1, 1, 1, 1, 1, 1, 111);
  w.left = -2;
  CHECK_THROWS_AS(attention_forward(w), std::invalid_argument);
  Attention k = random_attention(1, 1, 1, 1, 1, 1, 1, 112);
  k.has_past = true, k.kv_length = {1};
  CHECK_THROWS_AS(attention_forward(k), std::invalid_argument);
}

TEST_CASE("onnx reference backward: matches central differences with every option at once") {
  struct Case {
    const char* name;
    bool three_d, causal, rotary, interleaved;
    long left, right;
    double softcap;
    bool kv_length, mask;
  };
  const Case cases[] = {
      {"plain", false, false, false, false, -1, -1, 0, false, false},
      {"GQA + causal + softcap + 3-D", true, true, false, false, -1, -1, 1.5, false, false},
      {"window + rank-3 mask + rotary", false, false, true, false, 2, 1, 0, false, true},
      {"kv_length + causal + interleaved rotary", false, true, true, true, -1, -1, 0.7, true,
       false},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    Attention a = random_attention(2, 4, 2, 3, 5, 4, 3, 120);
    a.three_d = c.three_d, a.causal = c.causal, a.rotary = c.rotary,
    a.rotary_interleaved = c.interleaved;
    a.rotary_offset = 2, a.rotary_base = 30;
    a.left = c.left, a.right = c.right, a.softcap = c.softcap, a.scale = 0.8;
    if (c.kv_length) a.kv_length = {4, 5};
    if (c.mask) a.mask = {{4, 3, 5}, false, random_doubles(4 * 3 * 5, 121)};
    const Doubles dy = random_doubles(a.batch * a.q_heads * a.n_q * a.d_v, 122);
    const Grads g = attention_backward(a, dy);
    const auto loss = [&] { return test::dot(attention_forward(a).y, dy); };
    const auto check = [&](const char* name, Doubles& theta, const Doubles& grad) {
      const Doubles fd = test::central_differences(theta, loss);
      CHECK_GRADIENT(name, std::vector<float>(grad.begin(), grad.end()), fd, 1e-4, 1e-3);
    };
    check("dq", a.q, g.dq);
    check("dk", a.k, g.dk);
    check("dv", a.v, g.dv);
  }
}

}  // namespace
}  // namespace wa::ref::onnx
