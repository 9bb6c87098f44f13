// attnsim_trace_sampling_tests: which work tiles a traced SM90 kernel records under trace sampling
// (kernels/sm90/trace_sampling.h, read by records_tile / cta_records), on the GPU at hand. For a
// static persistent fa3_sm90 kernel (two shapes: tiles that do not divide evenly over the grid, and
// 4 tiles per CTA) and a dynamic-scheduler one with traced builds, one launch each with
// --trace-sample 3 (trace_kernel, every span fitting its buffer), checked per CTA c and recording
// warp (the load warp and the first warp of each consumer warpgroup):
// - static grid: the warp's records name exactly the CTA's tiles that static_records_tile picks
//   (uneven tiles: one tile of each CTA that runs one tile fewer, not its first; even: tiles i >= 1
//   with (i - 1 + c) % 3 == 0), and a CTA that records none writes no end anchor;
// - dynamic scheduler: CTAs with c % 3 == 0 record the tiles they ran but their first (where the
//   grid runs more than three tiles per CTA: TraceSampleRule::first_local) and those among the last
//   2 x grid of the order: a CTA takes its tiles in the order, so a run of its own from its tile
//   first_local on; some CTA records fewer than that; the other CTAs record nothing (no counts, no
//   end anchor);
// - nothing dropped (records written == spans run), each span's end not before its start, and in
//   each recorded tile a consumer warp issued as many QK as PV wgmma groups, at least one.
// The recorders keep their state in shared memory between the tiles they record
// (TraceRecorder::Cursor): a cursor not carried from one recorded tile to the next would show as
// records of one tile overwriting another's. Exits 0 when all hold, 1 on a failure, 77 (ctest:
// skipped) with the reason when no GPU runs such kernels.
#include "sm90/trace_sampling.h"

#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <variant>

#include "common/op_names.h"
#include "expect.h"
#include "sm90/fa3_api.h"
#include "sm90/structure.h"

using namespace attnsim::sm90;
using attnsim::gpu_test::expect;
using attnsim::gpu_test::failures;

namespace {

constexpr uint32_t kSample = 3;

/// The checks above on one traced launch of kernel `k` (scheduler `sched`).
void check(const CompiledKernel& k, TileScheduler sched, const Shape& shape) {
  const std::string name = attnsim::describe(k.knobs);
  DeviceProblem prob(shape, 11);
  const MeasuredTrace m = trace_kernel(k, prob, sched, 0, kTraceWarpsFirst, kSample);
  const int grid = m.launch.grid, warps = m.warps_per_cta;
  const bool dynamic = sched == TileScheduler::DynamicLpt;
  // The launch's rule, as launch<T> makes it (a persistent grid: `resident` is not read).
  const TraceSampleRule rule = make_trace_sample_rule(kSample, m.launch.num_tiles, grid, !dynamic, 0);
  int recorded_tiles = 0;
  bool dynamic_tail_skipped = false;  // some recording CTA of a dynamic grid left tiles unrecorded
  for (int c = 0; c < grid; ++c) {
    const std::string cta = name + " CTA " + std::to_string(c);
    const bool cta_records =
        dynamic ? dynamic_cta_records(rule, c) : static_cta_records(rule, c, grid, m.launch.num_tiles);
    // Tiles the CTA ran: static, c, c + grid, ... (static_next_tile: a recording CTA hands its
    // last ones to the slack CTAs after it); dynamic, as its load warp counted them.
    const int tiles =
        dynamic ? static_cast<int>(m.ctas[c].tiles) : static_tile_count(rule, c, grid, m.launch.num_tiles);
    std::set<int> expected;  // dynamic: the tiles before the first one the load warp did not record
    if (cta_records && dynamic) {
      const size_t load_slot = static_cast<size_t>(c) * warps + kLoadWarp;
      std::set<int> loaded;
      for (uint32_t r = 0; r < m.counts[load_slot]; ++r) loaded.insert(m.records[load_slot * m.cap + r].tile);
      for (int i = rule.first_local; i < tiles && loaded.count(i); ++i) expected.insert(i);
      expect(expected.size() == loaded.size(),
             cta + ": the load warp's recorded tiles are not a run of its tiles from its tile " +
                 std::to_string(rule.first_local) + " on");
      dynamic_tail_skipped |= rule.first_local + static_cast<int>(expected.size()) < tiles;
    } else if (cta_records) {
      for (int i = 0; i < tiles; ++i)
        if (static_records_tile(rule, c, i)) expected.insert(i);
    }
    if (!cta_records) expect(m.ctas[c].ns1 == 0, cta + ": an end anchor from a CTA that records nothing");
    if (!dynamic) expect(cta_records == !expected.empty(), cta + ": static_cta_records disagrees with its tiles");
    for (int w = 0; w < warps; ++w) {
      if (!((kTraceWarpsFirst >> w) & 1u)) continue;
      const size_t slot = static_cast<size_t>(c) * warps + w;
      const std::string warp = cta + " warp " + std::to_string(w);
      const uint32_t n = m.counts[slot];
      expect(m.spans.empty() || m.spans[slot] == n, warp + ": spans dropped");
      std::set<int> seen;
      std::map<int, int> qk, pv;  // per tile
      for (uint32_t r = 0; r < n; ++r) {
        const attnsim_trace_record& rec = m.records[slot * m.cap + r];
        expect(rec.t1 >= rec.t0, warp + ": a span ending before it starts");
        seen.insert(rec.tile);
        if (rec.op == ATTNSIM_OP_MMA_QK) ++qk[rec.tile];
        if (rec.op == ATTNSIM_OP_MMA_PV) ++pv[rec.tile];
      }
      const bool is_consumer = warp_role(w) == Role::Consumer;
      if (warp_role(w) == Role::Idle) continue;
      expect(seen == expected,
             warp + ": records " + std::to_string(seen.size()) + " tiles, expected " + std::to_string(expected.size()));
      if (is_consumer) {
        for (int i : expected)
          expect(qk[i] > 0 && qk[i] == pv[i], warp + " tile " + std::to_string(i) + ": " + std::to_string(qk[i]) +
                                                  " QK and " + std::to_string(pv[i]) + " PV spans");
        recorded_tiles += static_cast<int>(expected.size());
      }
    }
  }
  expect(recorded_tiles > 0, name + ": no tile recorded at all");
  if (dynamic && m.launch.num_tiles > 3 * grid)
    expect(dynamic_tail_skipped, name + ": every recording CTA recorded all its tiles, its last ones too");
  std::printf("%s (%s, %d tiles): %d CTAs, %d consumer warp-tiles recorded\n", name.c_str(),
              dynamic ? "dynamic_lpt" : "static persistent", m.launch.num_tiles, grid, recorded_tiles);
}
}  // namespace

int main() {
  const GpuInfo gpu = gpu_info();
  if (!gpu.usable) {
    std::printf("SKIPPED: %s\n", gpu.why.c_str());
    return 77;
  }
  // The first runnable hd128 fa3_sm90 kernel with a traced build of each scheduler.
  const CompiledKernel *static_k = nullptr, *dynamic_k = nullptr;
  for (const CompiledKernel& k : compiled_kernels()) {
    const auto* s = std::get_if<KernelKnobs>(&k.knobs);
    if (!s || s->head_dim != 128 || !k.launch_traced || !kernel_unrunnable(k.knobs, gpu).empty()) continue;
    const CompiledKernel*& slot = s->dynamic ? dynamic_k : static_k;
    if (!slot) slot = &k;
  }
  if (!static_k || !dynamic_k) {
    std::printf("SKIPPED: this build has no runnable hd128 fa3_sm90 kernels with traced builds of both schedulers\n");
    return 77;
  }
  // 8 m-blocks of 128 rows x 64 (batch, head) pairs: 512 tiles, 3-4 per CTA of a persistent grid
  // of 132 (H100 SXM, H200): every other CTA with 3 records one tile and hands its last to the CTA
  // after it, the others record none.
  const Shape shape{.batch = 4, .heads = 16, .kv_heads = 16, .seqlen_q = 1000, .seqlen_k = 1000, .head_dim = 128};
  std::printf("GPU: %s, --trace-sample %u\n", gpu.name.c_str(), kSample);
  check(*static_k, TileScheduler::StaticPersistent, shape);
  // 8 m-blocks x 2 x sm_count / 4 (batch, head) pairs: 4 tiles per CTA, none running fewer.
  if (gpu.sm_count % 4 == 0) {
    Shape even = shape;
    even.batch = 2;
    even.heads = even.kv_heads = gpu.sm_count / 4;
    check(*static_k, TileScheduler::StaticPersistent, even);
  }
  Shape causal = shape;
  causal.causal = true;
  check(*dynamic_k, TileScheduler::DynamicLpt, causal);
  std::printf(failures ? "%d check(s) failed\n" : "all trace sampling checks passed\n", failures);
  return failures ? 1 : 0;
}
