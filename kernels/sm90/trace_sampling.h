// Which work tiles a traced SM90 kernel records under trace sampling (one tile in N, `--trace-sample
// N`), written once for the kernel (records_tile, cta_records in kernel_traits.cuh), its launch
// (which sets the rule's fields) and the tests. Plain C++; callable from device code when compiled
// by nvcc.
//
// A recorded tile runs about 20% slower than a plain one (its clock reads pin ptxas's schedule,
// kernels/sm90/README.md), and a grid's time is its slowest CTA's (persistent) or its last wave's
// (one tile per CTA). So the tiles are recorded where that time is not on the grid's critical path:
// - a static persistent grid whose tiles do not divide evenly: CTA c runs tiles c, c + grid, ...,
//   so the CTAs from num_tiles % grid on run one tile fewer than the others. Only those record
//   (one tile each, spread over the tile positions), and finish still before the CTAs with the
//   most tiles; every stride-th of them records, so that about num_tiles / N tiles are recorded.
//   A recording CTA also hands its last `shed` tiles (up to kShedTiles) to the slack CTAs right
//   after it, one each, run after their own: they then run as many tiles as the CTAs with the
//   most, and the recording CTA `shed` fewer, which leaves it shed + 1 tiles for what its traced
//   code costs. (One tile was not enough on short tiles: the recording CTA fetches its traced
//   code, which no other CTA runs, while the grid streams K/V; hd128 s256 b64 and s700 b48 on an
//   H200, 2026-12-02, the traced kernel 6.5-10.6% over the plain one, the recording CTA's
//   recorded tile about 20 us against 5 us; kernels/sm90/README.md.)
// - otherwise (a persistent grid whose tiles divide evenly, a one-tile-per-CTA grid) CTA c records
//   its tile i when (i - first_local + c) % N == 0, except, in a one-tile-per-CTA grid of several
//   waves, the CTAs of the last wave (the hardware starts CTAs in index order, so the last
//   `resident` CTAs run last): a slowed CTA before them only delays which SM takes the next CTA;
// - the dynamic tile scheduler records in the CTAs with c % N == 0 (a slower CTA takes fewer tiles)
//   every tile they take but those among the last 2 x grid of the order: each CTA's last tile or two,
//   which set when it finishes (a longest-first order in L2 sections ends on long tiles too). (Tile i
//   of CTA c as in static grids instead: hd64 s512 b64 causal 10.5% over the plain kernel against
//   3.9% for whole CTAs, at trace sample 8, H200, 2026-11-29. Whole CTAs with their last tiles: 2-2.6
//   points over one tile of the grid recorded at hd256 s2k b8 causal, hd128 s16k b1 causal and the
//   no-pingpong hd64 s1k b16 causal, trace sample 32, H200, 2026-11-30.)
// And no CTA's first tile, where every CTA runs two tiles or more (the dynamic scheduler: more than
// three; `first_local`): a first tile recorded by one CTA in N is not the plain kernel's first
// tile. The recording CTA runs the traced code, which few other CTAs fetch, at the launch's start,
// when the grid's first loads fill HBM's queues: dynamic hd128 s16k b1 causal on an H200,
// 2026-11-30, the recording CTA's first pipeline_q.full wait took 3.6-4.7 us and its first row max
// 0.6-1.2 us with one CTA in 32 recording, 2.8 us and 0.47-0.55 us with every CTA recording (the
// same code in every CTA), mostly 0.05-0.12 us and about 0.27 us in its later tiles. The launch's
// start is what end-to-end times validate.
#pragma once

#include "common/tile_order.h"  // ATTNSIM_HD, attnsim_divisor

namespace attnsim::sm90 {

/// A CTA index past every grid's: "no such CTA" in TraceSampleRule.
inline constexpr int kNoCta = 0x7fffffff;

/// The most tiles a recording CTA of an uneven static persistent grid hands to other slack CTAs
/// (TraceSampleRule::shed). What its traced code costs it over a plain CTA, on an H200
/// (2026-12-02, `validate --reps 20`, traced kernel against plain): hd128 s700 b48 about 3.3 tiles
/// of 11.8 us (27 us over the plain kernel with one tile of slack), hd128 s256 b64 about 2.7 tiles
/// of 5.4 us with 64 CTAs recording and about 5 with one (handing 3 on: 3.2-5.3% over the plain
/// kernel at --trace-sample 32, 5.9% at 1000000). Six tiles of slack cover them.
inline constexpr int kShedTiles = 5;

/// The fields of a launch's sampling rule (Params::trace_rule), made on the host by
/// make_trace_sample_rule. Counts are of CTAs and work tiles.
struct TraceSampleRule {
  int sample = 1;                ///< N: one tile in N recorded; 1 records every tile
  attnsim_divisor sample_div{};  ///< N as a divisor
  /// Static persistent grids with uneven tiles: the first CTA that runs one tile fewer
  /// (num_tiles % grid); kNoCta for other grids.
  int slack_first = kNoCta;
  int stride = 1;  ///< every stride-th slack CTA records
  attnsim_divisor stride_div{};
  int slack_tiles = 1;  ///< tiles a slack CTA runs
  /// The other static grids: CTAs from here on record nothing (a one-tile-per-CTA grid's last wave).
  int record_below = kNoCta;
  /// The dynamic scheduler's grid: tiles from here on in its order are not recorded.
  int dynamic_below = kNoCta;
  /// A CTA's tiles before its `local` index first_local are not recorded: 1 where N > 1 and every
  /// CTA runs two tiles or more (a static persistent grid) or more than three on average (the
  /// dynamic scheduler's, whose recording CTAs then record a tile past their first below
  /// dynamic_below); 0 otherwise.
  int first_local = 0;
  /// Static persistent grids with uneven tiles: the positions first_local .. slack_tiles - shed - 1
  /// a slack CTA's recorded tile is spread over, their count.
  int slack_positions = 1;
  attnsim_divisor slack_positions_div{};
  /// Static persistent grids with uneven tiles: the tiles a recording CTA hands to the slack CTAs
  /// after it (its helpers: slack CTA s + j, j = 1..shed, runs the recording CTA's tile
  /// slack_tiles - j after its own); 0 for other grids (static_next_tile).
  int shed = 0;
  /// The last slack CTA (its index among them) that records: every stride-th up to here, so that
  /// each has its `shed` helpers among the slack CTAs.
  int last_recorder = kNoCta;
};

/// The rule of one launch: `num_tiles` work tiles on `grid` CTAs, `persistent` (CTA c runs tiles
/// c, c + grid, ...) or one tile per CTA with `resident` CTAs running at once on the GPU; `sample`:
/// N (0 or 1: every tile). A dynamic scheduler's launch (`persistent` false) reads sample,
/// sample_div, dynamic_below and first_local only.
inline TraceSampleRule make_trace_sample_rule(int sample, int num_tiles, int grid, bool persistent, int resident) {
  TraceSampleRule r;
  r.sample = sample > 1 ? sample : 1;
  r.sample_div = attnsim_make_divisor(r.sample);
  r.stride_div = r.slack_positions_div = attnsim_make_divisor(1);
  if (r.sample == 1 || grid < 1 || num_tiles < 1) return r;
  // Dynamic: never below grid, so that a recording CTA records a tile of the grid's first wave
  // (its first, blockIdx.x, where the CTAs run three tiles or fewer).
  r.dynamic_below = num_tiles - 2 * grid > grid ? num_tiles - 2 * grid : grid;
  // A CTA's first tile is not recorded where it has later ones to record (one-tile grids: grid ==
  // num_tiles, none).
  r.first_local = persistent ? (num_tiles >= 2 * grid ? 1 : 0) : (r.dynamic_below > grid ? 1 : 0);
  const int extra = num_tiles % grid;  // CTAs with one tile more than the rest
  if (persistent && extra != 0 && num_tiles > grid) {
    const int slack = grid - extra, wanted = (num_tiles + r.sample - 1) / r.sample;
    r.slack_first = extra;
    r.slack_tiles = num_tiles / grid;
    // As many tiles handed on as leave the recording CTA a tile to record and helpers to take them.
    int shed = r.slack_tiles - r.first_local - 1;
    if (shed > slack - 1) shed = slack - 1;
    r.shed = shed < kShedTiles ? shed : kShedTiles;
    r.stride = slack / wanted > r.shed + 1 ? slack / wanted : r.shed + 1;
    r.stride_div = attnsim_make_divisor(r.stride);
    r.last_recorder = slack - 1 - r.shed;
    r.slack_positions = r.slack_tiles - r.shed - r.first_local;
    r.slack_positions_div = attnsim_make_divisor(r.slack_positions);
  } else if (!persistent && resident > 0 && num_tiles > resident) {
    r.record_below = num_tiles - resident;
  }
  return r;
}

/// Static grids (persistent or one tile per CTA): whether CTA `cta` records its tile `local`
/// (0, 1, ... in the order it runs them). Divisions by multiply-high (attnsim_divide).
ATTNSIM_HD bool static_records_tile(const TraceSampleRule& r, int cta, int local) {
  if (r.sample <= 1) return true;
  if (cta >= r.slack_first) {
    const int s = cta - r.slack_first, k = attnsim_divide(s, r.stride_div);
    if (s != k * r.stride || s > r.last_recorder) return false;
    return local == r.first_local + k - attnsim_divide(k, r.slack_positions_div) * r.slack_positions;
  }
  if (r.slack_first != kNoCta || cta >= r.record_below || local < r.first_local) return false;
  const int x = local - r.first_local + cta;
  return x == attnsim_divide(x, r.sample_div) * r.sample;
}

/// Static grids of `grid` CTAs and `num_tiles` tiles: whether CTA `cta` records any tile
/// (static_records_tile).
ATTNSIM_HD bool static_cta_records(const TraceSampleRule& r, int cta, int grid, int num_tiles) {
  if (r.sample <= 1) return true;
  if (cta >= r.slack_first) {
    const int s = cta - r.slack_first;
    return s == attnsim_divide(s, r.stride_div) * r.stride && s <= r.last_recorder;
  }
  if (r.slack_first != kNoCta || cta >= r.record_below) return false;
  // Its first recorded tile, first_local + (N - cta % N) % N, is one it runs (tiles cta, cta +
  // grid, ...).
  const int rem = cta - attnsim_divide(cta, r.sample_div) * r.sample;
  const long long first = r.first_local + (rem == 0 ? 0 : r.sample - rem);
  return cta + first * grid < num_tiles;
}

/// Static persistent grids of `grid` CTAs and `num_tiles` tiles: the tile CTA `cta` runs after
/// tile `t` (its first is cta), num_tiles or more when it has no more. t + grid, but where the
/// rule hands a recording CTA's last tiles on (TraceSampleRule::shed): the recording CTA stops
/// after slack_tiles - shed tiles, and its helper j (slack CTA s + j) runs its tile slack_tiles - j
/// after its own. In a launch that records nothing (shed 0) always t + grid.
ATTNSIM_HD int static_next_tile(const TraceSampleRule& r, int cta, int grid, int num_tiles, int t) {
  if (r.shed == 0 || cta < r.slack_first) return t + grid;
  const int s = cta - r.slack_first, k = attnsim_divide(s, r.stride_div), j = s - k * r.stride;
  if (k * r.stride > r.last_recorder || j > r.shed) return t + grid;  // not in a recording group
  if (j == 0) return t + grid < cta + (r.slack_tiles - r.shed) * grid ? t + grid : num_tiles;
  const int handed = cta - j + (r.slack_tiles - j) * grid;  // the recording CTA's tile slack_tiles - j
  if (t == handed) return num_tiles;
  return t + grid < num_tiles ? t + grid : handed;
}

/// Static persistent grids: the tiles CTA `cta` runs (static_next_tile).
ATTNSIM_HD int static_tile_count(const TraceSampleRule& r, int cta, int grid, int num_tiles) {
  int n = 0;
  for (int t = cta; t < num_tiles; t = static_next_tile(r, cta, grid, num_tiles, t)) ++n;
  return n;
}

/// The dynamic scheduler's grid: whether CTA `cta` records (the tiles dynamic_records_tile picks).
ATTNSIM_HD bool dynamic_cta_records(const TraceSampleRule& r, int cta) {
  return r.sample <= 1 || cta == attnsim_divide(cta, r.sample_div) * r.sample;
}

/// The dynamic scheduler's grid: whether a CTA that records records the tile of linear index
/// `tile`, its tile `local` (0, 1, ... in the order it takes them).
ATTNSIM_HD bool dynamic_records_tile(const TraceSampleRule& r, int tile, int local) {
  return local >= r.first_local && tile < r.dynamic_below;
}

}  // namespace attnsim::sm90
