// FA4's softmax arithmetic (kernels/common/softmax_math.h), checked on the host: the software
// exp2's error over the inputs softmax feeds it and its effect after rounding P to bf16, which
// elements of a row use it, and the conditional rescale against a reference that always rescales.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "common/softmax_math.h"

using namespace attnsim;

TEST_CASE("emulated exp2: relative error over softmax inputs and after rounding to bf16", "[softmax_math]") {
  // Every float in [-8, 0] (the inputs that give P >= 2^-8; about 1.1e9 floats would be all of
  // [-126, 0], so the rest is sampled: 2^22 points of each binade's f grid plus random ones).
  double worst = 0, worst_bf16 = 0, worst_mufu_bf16 = 0;
  long long differs_from_exact_bf16 = 0, n = 0;
  auto visit = [&](float x) {
    const double exact = std::exp2(static_cast<double>(x));
    const float e = exp2_emulated(x);
    worst = std::max(worst, std::abs(e - exact) / exact);
    const double eb = round_to_bf16(e), xb = round_to_bf16(static_cast<float>(exact));
    worst_bf16 = std::max(worst_bf16, std::abs(eb - exact) / exact);
    worst_mufu_bf16 = std::max(worst_mufu_bf16, std::abs(xb - exact) / exact);
    if (eb != xb) ++differs_from_exact_bf16;
    ++n;
  };
  for (int i = 0; i <= (1 << 22); ++i) visit(-8.0f * static_cast<float>(i) / (1 << 22));
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-126.0f, 0.0f);
  for (int i = 0; i < (1 << 20); ++i) visit(u(rng));
  INFO("fp32 max rel err " << worst << ", bf16 " << worst_bf16 << " (exact rounded: " << worst_mufu_bf16 << "), "
                           << differs_from_exact_bf16 << " of " << n << " bf16 values differ from exact rounding");
  // FA4 paper: 8.77e-5 in fp32; both exp2s 3.9e-3 (half a bf16 ulp, 2^-8) after rounding.
  CHECK(worst < 9.0e-5);
  CHECK(worst > 8.0e-5);  // the polynomial's own error, not a trivially exact function
  CHECK(worst_bf16 <= std::ldexp(1.0, -8) * 1.01);
  CHECK(worst_mufu_bf16 <= std::ldexp(1.0, -8));
  // The polynomial moves P to the neighbouring bf16 value now and then, never further.
  CHECK(differs_from_exact_bf16 > 0);
  CHECK(differs_from_exact_bf16 < n / 10);
  // Exactly 1 at 0, a power of two at the integers (the exponent add is exact there).
  CHECK(exp2_emulated(0.0f) == 1.0f);
  CHECK(exp2_emulated(-3.0f) == 0.125f);
  CHECK(exp2_emulated(-126.0f) == std::ldexp(1.0f, -126));
}

TEST_CASE("exp2 emulation mask: pairs by freq and res - from start_frg - never the last fragment", "[softmax_math]") {
  // FA4's 2-CTA hd128 setting: freq 10, res 4, start_frg 1 over 4 fragments = 18.75% of a row.
  double row = 0;
  for (int j = 0; j < 4; ++j) row += exp2_emulated_share(j, 4, 10, 4, 1) / 4;
  CHECK(row == Approx(0.1875));
  CHECK(exp2_emulated_share(0, 4, 10, 4, 1) == 0);  // before start_frg
  CHECK(exp2_emulated_share(3, 4, 10, 4, 1) == 0);  // the last fragment is always MUFU.EX2
  // In fragment 1, pairs starting at e with e % 10 >= 6: e = 6, 8, 16, 18, 26, 28.
  std::vector<int> pairs;
  for (int e = 0; e < 32; e += 2)
    if (exp2_pair_emulated(e, 1, 4, 10, 4, 1)) pairs.push_back(e);
  CHECK(pairs == std::vector<int>{6, 8, 16, 18, 26, 28});
  CHECK_FALSE(exp2_pair_emulated(6, 1, 4, 0, 4, 1));  // freq 0: all hardware
  // One run of elements (the SM90 kernel's fragment): the last `res` of every `freq`.
  CHECK(exp2_emulated_elements(88, 4, 1) == 22);
  CHECK(exp2_emulated_elements(88, 8, 3) == 33);
  CHECK(exp2_emulated_elements(10, 4, 1) == 2);  // elements 3 and 7
  CHECK(exp2_emulated_elements(88, 0, 0) == 0);
  CHECK(exp2_element_emulated(7, 8, 1));
  CHECK_FALSE(exp2_element_emulated(6, 8, 1));
}

TEST_CASE("conditional rescale (threshold 8) gives the output of always rescaling", "[softmax_math]") {
  // Online softmax over 64 blocks of 128 scores per row, scores drifting upwards so that the max
  // grows often; P V with random V. Threshold 0 rescales at every growth (the reference).
  std::mt19937 rng(11);
  std::normal_distribution<float> n01(0.0f, 1.0f);
  const int blocks = 64, cols = 128;
  int rescales_8 = 0, rescales_0 = 0;
  for (int row = 0; row < 32; ++row) {
    std::vector<float> s(blocks * cols), v(blocks * cols);
    for (int i = 0; i < blocks * cols; ++i) {
      s[i] = 3.0f * n01(rng) + 0.02f * static_cast<float>(i);  // exp2 domain
      v[i] = n01(rng);
    }
    float p_max = 0;
    auto run = [&](float threshold, int* rescales) {
      float m = -INFINITY, l = 0, o = 0;
      for (int b = 0; b < blocks; ++b) {
        float bm = -INFINITY;
        for (int c = 0; c < cols; ++c) bm = std::max(bm, s[b * cols + c]);
        if (b == 0 || needs_rescale(m, bm, threshold)) {
          const float m_new = std::max(m, bm);
          const float scale = b == 0 ? 0.0f : std::exp2(m - m_new);
          l *= scale;
          o *= scale;
          m = m_new;
          if (b > 0) ++*rescales;
        }
        for (int c = 0; c < cols; ++c) {
          const float p = std::exp2(s[b * cols + c] - m);
          p_max = std::max(p_max, p);
          l += p;
          o += p * v[b * cols + c];
        }
      }
      return o / l;
    };
    const int before = rescales_8;
    const float cond = run(8.0f, &rescales_8);
    // A kept max lets P grow to 2^threshold at most.
    CHECK(p_max <= 256.0f);
    const float always = run(0.0f, &rescales_0);
    CHECK(cond == Approx(always).epsilon(1e-4).margin(1e-5));
    // Each rescale at threshold 8 follows a growth of the max by more than 8, so a row rescales
    // at most (its max's total growth) / 8 times.
    float first = -INFINITY, last = -INFINITY;
    for (int c = 0; c < cols; ++c) first = std::max(first, s[c]);
    for (float x : s) last = std::max(last, x);
    CHECK(rescales_8 - before <= static_cast<int>((last - first) / 8.0f));
  }
  CHECK(rescales_0 > 2 * rescales_8);  // threshold 8 skips most rescales: the point of it
  CHECK(rescales_8 > 0);
}
