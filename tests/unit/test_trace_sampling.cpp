// kernels/sm90/trace_sampling.h: which work tiles a traced SM90 launch records, the rule the
// kernel's records_tile / cta_records read (tests/gpu/trace_sampling.cpp checks the kernel against
// it on a GPU). Hand-computed grids of the validation problems, and properties over many grids.
#include <algorithm>
#include <catch2/catch.hpp>
#include <set>
#include <vector>

#include "sm90/trace_sampling.h"

using namespace attnsim::sm90;

namespace {
/// Tiles CTA c of a static persistent grid runs: c, c + grid, ... below num_tiles.
int tiles_of(int c, int grid, int num_tiles) { return c < num_tiles ? (num_tiles - 1 - c) / grid + 1 : 0; }

/// Per CTA, the local tiles the rule records (persistent grid, or one tile per CTA), among the tiles
/// c, c + grid, ... it would run without handing any on.
std::vector<std::set<int>> recorded(const TraceSampleRule& r, int grid, int num_tiles, bool persistent) {
  std::vector<std::set<int>> out(grid);
  for (int c = 0; c < grid; ++c) {
    const int n = persistent ? tiles_of(c, grid, num_tiles) : 1;
    for (int i = 0; i < n; ++i)
      if (static_records_tile(r, c, i)) out[c].insert(i);
  }
  return out;
}
}  // namespace

TEST_CASE("trace sampling: an uneven persistent grid records in slack CTAs that hand their last tiles on",
          "[trace_sampling]") {
  // hd64 s512 b32 on an H200: 3 m-blocks of 192 rows x 512 (batch, head) pairs = 1536 tiles on 132
  // CTAs: CTAs 0-83 run 12 tiles, 84-131 (48 slack CTAs) 11. One in 32: 48 tiles wanted. Each
  // recording CTA hands its last 5 tiles to the 5 slack CTAs after it: every 6th records.
  static_assert(kShedTiles == 5, "the figures below are for 5 tiles handed on");
  const TraceSampleRule r = make_trace_sample_rule(32, 1536, 132, true, 132);
  CHECK(r.slack_first == 84);
  CHECK(r.slack_tiles == 11);
  CHECK(r.shed == 5);
  CHECK(r.stride == 6);
  CHECK(r.last_recorder == 42);
  CHECK(r.first_local == 1);               // no CTA's first tile
  CHECK(r.slack_positions == 11 - 5 - 1);  // its tiles 1..5: 6..10 run elsewhere
  const auto rec = recorded(r, 132, 1536, true);
  std::set<int> positions;
  int total = 0;
  for (int c = 0; c < 132; ++c) {
    INFO("CTA " << c);
    const bool records = c >= 84 && (c - 84) % 6 == 0;
    CHECK(rec[c].size() == (records ? 1u : 0u));
    CHECK(static_cta_records(r, c, 132, 1536) == records);
    // 12 tiles each but for the recording CTAs: 6.
    CHECK(static_tile_count(r, c, 132, 1536) == (records ? 6 : 12));
    for (int i : rec[c]) positions.insert(i);
    total += static_cast<int>(rec[c].size());
  }
  CHECK(total == 8);  // CTAs 84, 90, ..., 126
  // CTA 84 + 6k records its tile 1 + k % 5.
  CHECK(*rec[84].begin() == 1);
  CHECK(*rec[90].begin() == 2);
  CHECK(*rec[108].begin() == 5);
  CHECK(*rec[114].begin() == 1);
  CHECK(positions.size() == 5u);
  // CTA 84 runs 84, 216, ..., 84 + 5 x 132 and stops; CTA 85 runs its 11 tiles, then CTA 84's
  // tile 10 (84 + 10 x 132 = 1404); CTA 89 CTA 84's tile 6; CTA 90 records again.
  CHECK(static_next_tile(r, 84, 132, 1536, 84 + 4 * 132) == 84 + 5 * 132);
  CHECK(static_next_tile(r, 84, 132, 1536, 84 + 5 * 132) >= 1536);
  CHECK(static_next_tile(r, 85, 132, 1536, 85 + 10 * 132) == 1404);
  CHECK(static_next_tile(r, 85, 132, 1536, 1404) >= 1536);
  CHECK(static_next_tile(r, 89, 132, 1536, 89 + 10 * 132) == 84 + 6 * 132);
  CHECK(static_next_tile(r, 90, 132, 1536, 90 + 4 * 132) == 90 + 5 * 132);
  CHECK(static_next_tile(r, 0, 132, 1536, 0) == 132);
}

TEST_CASE("trace sampling: a launch that records every tile or nothing runs c then c + grid and so on",
          "[trace_sampling]") {
  const TraceSampleRule plain{};  // the plain kernel's launch
  CHECK(plain.shed == 0);
  CHECK(static_next_tile(plain, 100, 132, 1536, 100 + 10 * 132) == 100 + 11 * 132);
  CHECK(static_tile_count(plain, 100, 132, 1536) == 11);
  const TraceSampleRule all = make_trace_sample_rule(1, 1536, 132, true, 132);
  CHECK(all.shed == 0);
  CHECK(static_tile_count(all, 100, 132, 1536) == 11);
  // Two tiles per slack CTA, its first not recorded: none left to hand on.
  const TraceSampleRule two = make_trace_sample_rule(32, 271, 132, true, 132);
  CHECK(two.shed == 0);
  // One slack CTA: no other to hand tiles to.
  const TraceSampleRule one = make_trace_sample_rule(32, 4 * 132 - 1, 132, true, 132);
  CHECK(one.slack_first == 131);
  CHECK(one.shed == 0);
  CHECK(static_cta_records(one, 131, 132, 4 * 132 - 1));
}

TEST_CASE("trace sampling: more slack CTAs than tiles wanted: every stride-th records", "[trace_sampling]") {
  // 271 tiles on 132 CTAs: 7 CTAs run 3 tiles, 125 run 2; one in 32 wants 9 tiles: stride 13.
  const TraceSampleRule r = make_trace_sample_rule(32, 271, 132, true, 132);
  CHECK(r.slack_first == 7);
  CHECK(r.stride == 13);
  const auto rec = recorded(r, 132, 271, true);
  int total = 0;
  for (int c = 0; c < 132; ++c) {
    INFO("CTA " << c);
    const bool records = c >= 7 && (c - 7) % 13 == 0;
    CHECK(rec[c].size() == (records ? 1u : 0u));
    CHECK(static_cta_records(r, c, 132, 271) == records);
    total += static_cast<int>(rec[c].size());
  }
  CHECK(total == 10);            // CTAs 7, 20, ..., 124
  CHECK(*rec[20].begin() == 1);  // the second recording CTA, its second tile
}

TEST_CASE("trace sampling: an even persistent grid records tiles i >= 1 of CTA c with (i - 1 + c) % N == 0",
          "[trace_sampling]") {
  const TraceSampleRule r = make_trace_sample_rule(3, 528, 132, true, 132);  // 4 tiles per CTA
  CHECK(r.slack_first == kNoCta);
  CHECK(r.first_local == 1);
  const auto rec = recorded(r, 132, 528, true);
  for (int c = 0; c < 132; ++c) {
    std::set<int> expected;
    for (int i = 1; i < 4; ++i)
      if ((i - 1 + c) % 3 == 0) expected.insert(i);
    INFO("CTA " << c);
    CHECK(rec[c] == expected);
    CHECK(static_cta_records(r, c, 132, 528));
  }
}

TEST_CASE("trace sampling: a one-tile-per-CTA grid records no CTA of its last wave", "[trace_sampling]") {
  // 1536 CTAs, 132 resident at once: CTAs 1404 on start last. One in 32 below them: 0, 32, ..., 1376.
  const TraceSampleRule r = make_trace_sample_rule(32, 1536, 1536, false, 132);
  CHECK(r.record_below == 1404);
  CHECK(r.first_local == 0);  // its CTAs' only tiles
  int total = 0;
  for (int c = 0; c < 1536; ++c) {
    const bool records = c % 32 == 0 && c < 1404;
    INFO("CTA " << c);
    CHECK(static_records_tile(r, c, 0) == records);
    CHECK(static_cta_records(r, c, 1536, 1536) == records);
    total += records;
  }
  CHECK(total == 44);
  // One wave or less: every CTA is in the last wave; the rule is then c % N == 0.
  const TraceSampleRule one_wave = make_trace_sample_rule(32, 100, 100, false, 132);
  CHECK(one_wave.record_below == kNoCta);
  CHECK(static_records_tile(one_wave, 64, 0));
  CHECK_FALSE(static_records_tile(one_wave, 65, 0));
}

TEST_CASE("trace sampling: sample 1 records everything and the dynamic grid records CTAs c % N == 0",
          "[trace_sampling]") {
  const TraceSampleRule all = make_trace_sample_rule(1, 1536, 132, true, 132);
  for (int c : {0, 50, 131})
    for (int i : {0, 5, 11}) CHECK(static_records_tile(all, c, i));
  CHECK(static_cta_records(all, 7, 132, 1536));
  CHECK(dynamic_cta_records(all, 7));
  CHECK(dynamic_records_tile(all, 2047, 0));
  CHECK(dynamic_records_tile(all, 0, 0));
  const TraceSampleRule dyn = make_trace_sample_rule(8, 2048, 132, false, 132);
  for (int c = 0; c < 132; ++c) CHECK(dynamic_cta_records(dyn, c) == (c % 8 == 0));
}

TEST_CASE("trace sampling: the dynamic grid's recording CTAs skip their first tile and the last 2 x grid of the order",
          "[trace_sampling]") {
  // hd256 s2k b8 causal: 2048 tiles on 132 CTAs: a CTA's first tile (blockIdx.x) and tiles 1784
  // on, each CTA's last one or two, are not recorded.
  const TraceSampleRule r = make_trace_sample_rule(32, 2048, 132, false, 132);
  CHECK(r.dynamic_below == 2048 - 264);
  CHECK(r.first_local == 1);
  CHECK_FALSE(dynamic_records_tile(r, 0, 0));
  CHECK_FALSE(dynamic_records_tile(r, 131, 0));
  CHECK(dynamic_records_tile(r, 132, 1));
  CHECK(dynamic_records_tile(r, 1783, 9));
  CHECK_FALSE(dynamic_records_tile(r, 1784, 10));
  CHECK_FALSE(dynamic_records_tile(r, 2047, 14));
  // Three tiles per CTA or fewer: only the CTAs' first tiles (blockIdx.x < grid).
  const TraceSampleRule short_grid = make_trace_sample_rule(32, 300, 132, false, 132);
  CHECK(short_grid.dynamic_below == 132);
  CHECK(short_grid.first_local == 0);
  CHECK(dynamic_records_tile(short_grid, 131, 0));
  CHECK_FALSE(dynamic_records_tile(short_grid, 132, 1));
}

TEST_CASE("trace sampling: properties over many grids", "[trace_sampling]") {
  int grids = 0;
  for (int sample : {2, 3, 8, 16, 32, 100000})
    for (int grid : {1, 7, 66, 132, 144})
      for (int num_tiles : {1, 5, 131, 132, 133, 271, 528, 1408, 1536, 2048, 2816, 4097}) {
        const bool persistent = true;
        const int g = std::min(grid, num_tiles);
        const TraceSampleRule r = make_trace_sample_rule(sample, num_tiles, g, persistent, g);
        const auto rec = recorded(r, g, num_tiles, persistent);
        const int most = tiles_of(0, g, num_tiles);
        const int wanted = (num_tiles + sample - 1) / sample;
        int total = 0;
        std::vector<int> runs(num_tiles, 0);  // how many CTAs run each tile
        for (int c = 0; c < g; ++c) {
          INFO("sample " << sample << ", " << num_tiles << " tiles on " << g << " CTAs, CTA " << c);
          const int n = static_tile_count(r, c, g, num_tiles);
          for (int t = c; t < num_tiles; t = static_next_tile(r, c, g, num_tiles, t)) ++runs[t];
          // Handing tiles on makes no CTA run more than the most of c, c + grid, ...; a recording
          // CTA runs `shed` fewer than the other slack CTAs.
          CHECK(n <= most);
          if (r.shed > 0 && static_cta_records(r, c, g, num_tiles)) CHECK(n == r.slack_tiles - r.shed);
          // The decision per CTA agrees with the per-tile one, and a recorded tile is one it runs.
          CHECK(static_cta_records(r, c, g, num_tiles) == !rec[c].empty());
          for (int i : rec[c]) CHECK(i < n);
          // No CTA's first tile where every CTA runs two or more.
          if (num_tiles >= 2 * g) CHECK(rec[c].count(0) == 0u);
          // With uneven tiles only the CTAs that run fewer than the most record, one tile each.
          if (num_tiles % g != 0 && num_tiles > g) {
            CHECK(rec[c].size() <= 1u);
            if (!rec[c].empty()) CHECK(n < most);
          }
          total += static_cast<int>(rec[c].size());
        }
        // Every tile runs exactly once, wherever it was handed.
        CHECK(std::count(runs.begin(), runs.end(), 1) == num_tiles);
        // Some tile is recorded whenever N is at most the tiles; an uneven grid records at most
        // about twice the tiles wanted (every stride-th of its slack CTAs), and as many as its
        // slack CTAs allow, each recording one with its `shed` helpers.
        if (sample <= num_tiles) CHECK(total > 0);
        if (num_tiles % g != 0 && num_tiles > g) {
          const int slack = g - num_tiles % g;
          CHECK(total >= std::min(wanted, slack / (r.shed + 1)));
          if (slack >= wanted) CHECK(total < 2 * wanted);
        }
        ++grids;
      }
  CHECK(grids == 360);
}
