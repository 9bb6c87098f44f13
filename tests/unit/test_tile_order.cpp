// kernels/common/tile_order.h, which the SM90 kernel and the simulator's tile scheduler share:
// the first KV block of a tile that needs the mask, checked against a brute-force scan of
// every (row, key) of small problems; and its multiply-high division (attnsim_divide).
#include <catch2/catch.hpp>
#include <vector>

#include "common/tile_order.h"

namespace {
/// Whether any (row, key) of rows [row0, row0 + rows) and keys of block j is masked: past
/// seqlen_k, or (causal, bottom-right aligned) right of the row's diagonal. Rows past seqlen_q
/// are padding and not asked about.
bool block_needs_mask(int row0, int rows, int j, int n_block, int sq, int sk, bool causal) {
  for (int r = row0; r < row0 + rows && r < sq; ++r)
    for (int key = j * n_block; key < (j + 1) * n_block; ++key)
      if (key >= sk || (causal && key > r + sk - sq)) return true;
  return false;
}
}  // namespace

TEST_CASE("first masked block: hand-computed cases", "[tile_order]") {
  // Non-causal: only a ragged tail block is masked.
  CHECK(attnsim_first_masked_block(0, 128, 8, 1024, 1024, false) == 8);
  CHECK(attnsim_first_masked_block(0, 128, 8, 1000, 1000, false) == 7);
  // Causal, square: rows 256..383 of a 128-row tile see keys up to their own index; block 2
  // (keys 256..383) crosses the diagonal, blocks 0 and 1 do not.
  CHECK(attnsim_first_masked_block(256, 128, attnsim_kv_blocks(256, 128, 128, 1024, 1024, true), 1024, 1024, true) == 2);
  // Causal with seqlen_q < seqlen_k (bottom-right aligned): shift 512, rows 0..127 see keys <= r + 512.
  CHECK(attnsim_first_masked_block(0, 128, attnsim_kv_blocks(0, 128, 128, 512, 1024, true), 512, 1024, true) == 4);
  // Rows that see no key (seqlen_q > seqlen_k, causal): the one block they visit is masked.
  CHECK(attnsim_first_masked_block(0, 64, attnsim_kv_blocks(0, 64, 128, 200, 77, true), 200, 77, true) == 0);
}

TEST_CASE("first masked block: the blocks before it need no mask and it does (brute force)", "[tile_order]") {
  int checked = 0;
  for (bool causal : {false, true})
    for (int n_block : {64, 80, 128})
      for (int rows : {64, 128, 192})
        for (int sq : {1, 77, 200, 333, 517})
          for (int sk : {1, 77, 200, 411, 517}) {
            for (int row0 = 0; row0 < sq; row0 += rows) {
              const int n = attnsim_kv_blocks(row0, rows, n_block, sq, sk, causal);
              const int first = attnsim_first_masked_block(row0, n_block, n, sq, sk, causal);
              INFO("causal " << causal << " n_block " << n_block << " rows " << rows << " sq " << sq << " sk " << sk
                             << " row0 " << row0 << " n " << n << " first " << first);
              REQUIRE(first >= 0);
              REQUIRE(first <= n);
              for (int j = 0; j < first; ++j) REQUIRE_FALSE(block_needs_mask(row0, rows, j, n_block, sq, sk, causal));
              if (first < n) REQUIRE(block_needs_mask(row0, rows, first, n_block, sq, sk, causal));
              ++checked;
            }
          }
  CHECK(checked > 1000);
}

TEST_CASE("attnsim_divide: the multiply-high division is exact for every divisor and dividend tried", "[tile_order]") {
  // Divisors: every m-block and head count up to 4096, then powers of 2 and their neighbours up to
  // 2^30; dividends: 0 to 4096, around multiples of d, and near 2^31 (tile indices fit an int).
  std::vector<int> divisors;
  for (int d = 1; d <= 4096; ++d) divisors.push_back(d);
  for (int s = 12; s <= 30; ++s)
    for (int k : {-1, 0, 1}) divisors.push_back((1 << s) + k);
  for (int d : divisors) {
    const attnsim_divisor v = attnsim_make_divisor(d);
    auto check = [&](long long n) {
      if (n < 0 || n > 0x7fffffffLL) return;
      const int q = attnsim_divide(static_cast<int>(n), v);
      if (q != n / d) FAIL("d " << d << " n " << n << ": " << q << " != " << n / d);
    };
    for (long long n = 0; n <= 4096; ++n) check(n);
    for (long long k = 1; k < 64; ++k)
      for (long long e : {-1LL, 0LL, 1LL}) check(k * d + e);
    for (long long n = 0x7fffffffLL - 4096; n <= 0x7fffffffLL; ++n) check(n);
  }
  SUCCEED("all exact");
}
