// Exact timings of hand-computable micro-schedules (tests/schedules/), deadlock
// reports, and the engine's conservation and determinism properties.
#include <catch2/catch.hpp>
#include <sstream>

#include "core/engine.hpp"
#include "core/tmem_allocator.hpp"
#include "lower/builder.hpp"
#include "report/chrome_trace.hpp"
#include "test_support.hpp"

using namespace attnsim;
using attnsim::test::b200;
using attnsim::test::micro;

namespace {
double end_of(const std::string& file) {
  return test::run(micro(file), test::without_fixed_costs(b200()), Problem{}).cycles;
}
double warp_end(const Prediction& p, int warp) {
  for (size_t i = 0; i < p.critical.timeline.warps.size(); ++i)
    if (p.critical.timeline.warps[i].warp == warp) return p.critical.warps[i].end;
  FAIL("no such warp");
  return 0;
}
}  // namespace

TEST_CASE("1-stage producer/consumer pipeline: every handoff pays the mbarrier latency", "[engine]") {
  const double L = b200().mbarrier_latency;  // arrive -> waiting warp resumes
  // producer 100 cycles, consumer 200 cycles (FMA lanes / 32 per clock), 4 items, one buffer:
  // 100 + L + 200, then 3 more rounds of (L + 100 + L + 200).
  CHECK(end_of("pc_1stage.json") == Approx(100 + L + 200 + 3 * (2 * L + 300)).epsilon(1e-12));
}

TEST_CASE("2-stage producer/consumer pipeline: the producer runs ahead - the consumer bounds it", "[engine]") {
  const double L = b200().mbarrier_latency;
  CHECK(end_of("pc_2stage.json") == Approx(100 + L + 4 * 200).epsilon(1e-12));
  CHECK(end_of("pc_2stage.json") < end_of("pc_1stage.json"));
}

TEST_CASE("two warps on one SMSP share its MUFU - on two SMSPs they do not", "[engine][sharing]") {
  const Hardware hw = b200();
  REQUIRE(hw.mufu_lanes_per_clk_smsp == 4);  // 16 ex2/clk/SM over 4 SMSPs
  const Prediction same = test::run(micro("mufu_same_smsp.json"), hw, Problem{});
  CHECK(warp_end(same, 0) == Approx(1600));  // 3200 lanes each, 4 lanes/clk shared by two warps
  CHECK(warp_end(same, 4) == Approx(1600));
  CHECK(warp_end(same, 8) == Approx(100));  // FMA pipe: not shared with MUFU work
  const Prediction two = test::run(micro("mufu_two_smsp.json"), hw, Problem{});
  CHECK(warp_end(two, 0) == Approx(800));
  CHECK(warp_end(two, 1) == Approx(800));
}

TEST_CASE("TMA loads - MMA groups and tcgen05.commit releases follow the unit models", "[engine]") {
  const Hardware hw = test::without_fixed_costs(b200());
  const double tma = 32768 / hw.tma_bytes_per_clk_sm;    // per load, FIFO
  const double mma = 4194304 / hw.tensor_flops_per_clk;  // 512 cycles
  const double L = hw.mbarrier_latency;
  // One CTA alone on the GPU: no other SM loads (no queueing, the SM's full port), and a tile
  // one CTA reads comes from HBM (K/V sharing 1). Load 0 lands at tma + latency, load 1 at
  // 2 tma + latency. MMA 0 starts when the MMA warp wakes, MMA 1 when load 1 has landed and the
  // warp woke (after MMA 0 ended here); the last commit lands mma_latency after MMA 1 ends.
  const double lat = hw.tma_latency_hbm;
  const double mma0_start = tma + lat + L;
  const double mma1_start = std::max(mma0_start + mma, 2 * tma + lat + L);
  CHECK(end_of("tma_mma.json") == Approx(mma1_start + mma + hw.mma_latency).epsilon(1e-12));
}

TEST_CASE("a compute block lasts the longer of its pipe work and its dependency chain", "[engine][latency]") {
  const Hardware hw = test::without_fixed_costs(b200());
  const Prediction p = test::run(micro("chain.json"), hw, Problem{});
  CHECK(warp_end(p, 0) == Approx(300));        // 100 cycles of FMA work, a 300-cycle chain
  CHECK(warp_end(p, 1) == Approx(400 + 50));  // 400 cycles of FMA work outlast the chain; then a 50-cycle tail
}

TEST_CASE("a wait that is already satisfied costs mbarrier_ready_cycles", "[engine][latency]") {
  Hardware hw = test::without_fixed_costs(b200());
  hw.mbarrier_ready_cycles = 30;
  CHECK(test::run(micro("ready_wait.json"), hw, Problem{}).cycles == Approx(2 * 30 + 100));
  hw.mbarrier_ready_cycles = 0;
  CHECK(test::run(micro("ready_wait.json"), hw, Problem{}).cycles == Approx(100));
}

TEST_CASE("an MMA group stalls its issuing warp while the tensor core's queue is full", "[engine][mma]") {
  Hardware hw = test::without_fixed_costs(b200());
  hw.tmem_columns = 0;  // SM90-style: per-SMSP tensor cores, a quarter of the SM's rate each
  hw.mma_queue_depth = 2;
  const Prediction p = test::run(micro("mma_issue.json"), hw, Problem{});
  const double instr = 2 * 16.0 * 128 * 16 / (hw.tensor_flops_per_clk / hw.smsp_per_sm);  // one m64n128k16 quarter
  // Group 1 (8 instructions) into an idle queue: its last instruction is accepted when the 5th
  // starts (8 - 1 - 2 ahead). Group 2 queues behind group 1: accepted 2 instructions before its
  // last starts, i.e. at 8 + 5 instruction times; then 100 cycles of FMA work.
  CHECK(warp_end(p, 0) == Approx((8 + 8 - 1 - 2) * instr + 100));
}

TEST_CASE("two warps issuing MMA groups at once on one SMSP interleave their instructions", "[engine][mma]") {
  Hardware hw = test::without_fixed_costs(b200());
  hw.tmem_columns = 0;      // SM90-style: per-SMSP tensor cores, a quarter of the SM's rate each
  hw.mma_queue_depth = 64;  // no issue back-pressure here
  const double instr = 2 * 16.0 * 128 * 16 / (hw.tensor_flops_per_clk / hw.smsp_per_sm);
  const double lat = hw.mma_latency;
  // Both issue blocks span [0, 80): instruction i of each group is issued at 10 (i + 1) and runs
  // from then, or when the one before it finished. The queue runs A0 B0 A1 B1 ... A7 B7 from 10
  // on: warp 0's group ends after 15 instructions, warp 4's after 16 (measured on an H100: 1.58x
  // and 1.80x one group's time, wgmma_share).
  const Prediction together = test::run(micro("mma_share.json"), hw, Problem{});
  CHECK(warp_end(together, 0) == Approx(10 + 15 * instr + lat));
  CHECK(warp_end(together, 4) == Approx(10 + 16 * instr + lat));
  // Warp 4 issues over [200, 280), after all of warp 0's group: first come, first served.
  const Prediction staggered = test::run(micro("mma_share_staggered.json"), hw, Problem{});
  CHECK(warp_end(staggered, 0) == Approx(10 + 8 * instr + lat));
  CHECK(warp_end(staggered, 4) == Approx(std::max(210.0, 10 + 8 * instr) + 8 * instr + lat));
}

TEST_CASE("an MMA instruction runs from when it was issued - issue back-pressure counts from then", "[engine][mma]") {
  Hardware hw = test::without_fixed_costs(b200());
  hw.tmem_columns = 0;
  hw.mma_queue_depth = 2;
  const double instr = 2 * 16.0 * 128 * 16 / (hw.tensor_flops_per_clk / hw.smsp_per_sm);
  const Prediction p = test::run(micro("mma_share_staggered.json"), hw, Problem{});
  // Warp 0's first instruction was issued at 10 and runs from then, though its group reaches the
  // engine at 80 (the end of its issue block). Its last is accepted when 8 - 1 - 2 instructions
  // have run: the warp's issue span (compute block + stall) ends at 10 + 5 instr.
  double issue_end = 0;
  for (const auto& s : p.critical.timeline.warps[0].spans)
    if (s.op == ATTNSIM_OP_MMA_QK) issue_end = s.end;
  CHECK(issue_end == Approx(std::max(80.0, 10 + 5 * instr)));
}

TEST_CASE("SM90: a warpgroup's wgmma issues once its last warp reaches it - SM100 does not wait", "[engine][mma]") {
  Hardware hw = test::without_fixed_costs(b200());
  hw.tmem_columns = 0;      // SM90-style: per-SMSP tensor cores, each warp's quarter on its own
  hw.mma_queue_depth = 64;  // no issue back-pressure here
  const double instr = 2 * 16.0 * 128 * 16 / (hw.tensor_flops_per_clk / hw.smsp_per_sm);
  REQUIRE(instr >= 10);  // each instruction runs from its issue: the group ends 8 instructions after the first
  const double lat = hw.mma_latency;
  // Warps 4-6 reach the group at 80 and wait for warp 7 (at 380); all issue over its window.
  const Prediction p = test::run(micro("wgmma_rendezvous.json"), hw, Problem{});
  for (int w : {4, 5, 6, 7}) CHECK(warp_end(p, w) == Approx(310 + 8 * instr + lat));
  // The early warps' wait is part of their issue span, as the kernel records mma_qk.
  REQUIRE(p.critical.timeline.warps[0].warp == 4);
  double issue_end = 0;
  for (const auto& s : p.critical.timeline.warps[0].spans)
    if (s.op == ATTNSIM_OP_MMA_QK) issue_end = s.end;
  CHECK(issue_end == Approx(380));
  // With TMEM (SM100) no warpgroup meets: warp 4 issues alone over [0, 80).
  const Prediction alone = test::run(micro("wgmma_rendezvous.json"), test::without_fixed_costs(b200()), Problem{});
  CHECK(warp_end(alone, 4) < warp_end(alone, 7));
}

TEST_CASE("the warp whose bar.sync fills a named barrier is released with the waiting ones", "[engine]") {
  Hardware hw = test::without_fixed_costs(b200());
  hw.named_barrier_latency = 30;
  const Prediction p = test::run(micro("named_sync.json"), hw, Problem{});
  CHECK(warp_end(p, 0) == Approx(200 + 30));
  CHECK(warp_end(p, 1) == Approx(200 + 30));
}

TEST_CASE("CUDA-core pipes slow while their SMSP's tensor core runs wgmma", "[engine][mma]") {
  Hardware hw = test::without_fixed_costs(b200());
  hw.tmem_columns = 0;  // SM90-style: per-SMSP tensor cores with register accumulators
  hw.fma_rate_beside_mma = 0.5;
  const Prediction p = test::run(micro("mma_beside.json"), hw, Problem{});
  CHECK(warp_end(p, 4) == Approx(200));  // 100 cycles of FMA work at half rate beside the MMA
  CHECK(warp_end(p, 5) == Approx(100));  // SMSP 1's tensor core is idle
  Hardware b = test::without_fixed_costs(b200());
  b.fma_rate_beside_mma = 0.5;
  const Prediction sm100 = test::run(micro("mma_beside.json"), b, Problem{});
  CHECK(warp_end(sm100, 4) == Approx(100));  // SM100 accumulates in TMEM: no interference modelled
}

TEST_CASE("a block with a measured timing stretches beside wgmma and holds its pipes as long", "[engine][mma]") {
  Hardware hw = test::without_fixed_costs(b200());
  hw.tmem_columns = 0;  // SM90-style: per-SMSP tensor cores with register accumulators
  hw.mufu_lanes_per_clk_smsp = 4;
  hw.mufu_rate_beside_mma = 0.5;  // for blocks without a measurement only
  const Prediction p = test::run(micro("measured_beside.json"), hw, Problem{});
  CHECK(warp_end(p, 4) == Approx(750));   // alone 500 x 1.5 beside SS wgmma
  CHECK(warp_end(p, 5) == Approx(1200));  // two beside SS: 0.8 + 0.8 of the MUFU -> 750 x 1.6
  CHECK(warp_end(p, 9) == Approx(1200));
  CHECK(warp_end(p, 6) == Approx(800));  // two, no wgmma: 500 x 1.6
  CHECK(warp_end(p, 10) == Approx(800));
  CHECK(warp_end(p, 7) == Approx(1000));  // beside RS wgmma: x 2
}

TEST_CASE("a block measured while copies land slows while a TMA load's bytes reach shared memory", "[engine][memory]") {
  const Hardware hw = test::without_fixed_costs(b200());
  // The 8 KiB copy moves at the SM's port and lands a latency later: its bytes reach shared memory
  // over [latency, latency + fill] (alone on the GPU, K/V sharing 1: the HBM latency).
  const double fill = 8192 / hw.tma_bytes_per_clk_sm, lat = hw.tma_latency_hbm;
  REQUIRE(lat + fill < 2000);  // the copy lands inside the 2000-cycle blocks
  const Prediction p = test::run(micro("copies_landing.json"), hw, Problem{});
  CHECK(warp_end(p, 4) == Approx(2000 + fill / 2));  // half speed (x2) while the bytes land
  CHECK(warp_end(p, 5) == Approx(2000));             // no measured slowdown: unaffected
}

TEST_CASE("predict adds the CTA prologue and the launch to the CTA's program time", "[engine][fixed]") {
  const Hardware bare = test::without_fixed_costs(b200());
  Hardware hw = bare;
  hw.cta_prologue_cycles = 400;
  hw.launch_ns = 2000;
  const double base = test::run(micro("pc_1stage.json"), bare, Problem{}).cycles;
  CHECK(test::run(micro("pc_1stage.json"), hw, Problem{}).cycles == Approx(base + 400 + 2000 * hw.clock_ghz));
}

TEST_CASE("a deadlock reports every waiting warp and the wait-for cycle", "[engine][deadlock]") {
  try {
    test::run(micro("deadlock_cycle.json"), b200(), Problem{});
    FAIL("expected a deadlock");
  } catch (const DeadlockError& e) {
    CHECK(e.cycle == std::vector<int>{0, 1, 0});
    REQUIRE(e.blocked.size() == 3);
    CHECK(e.blocked[0].barrier == "b.full[0]");
    CHECK(e.blocked[0].parity == 0);
    CHECK(e.blocked[1].barrier == "a.full[0]");
    CHECK(e.blocked[2].barrier == "c.full[0]");
    const std::string report = e.what();
    CHECK_THAT(report, Catch::Contains("wait-for cycle: ping w0 [b.full[0]] -> pong w1 [a.full[0]] -> ping w0"));
    CHECK_THAT(report, Catch::Contains("waiter w2 (op 0) waits on c.full[0] phase parity 0"));
  }
}

TEST_CASE("arrivals beyond a barrier's count and partial phases are errors - not silent", "[engine]") {
  const Hardware hw = b200();
  CtaBuilder cta;
  const int bar = cta.barrier("x.full[0]", 1);
  WarpBuilder w = cta.warp(0, "w");
  w.arrive(bar, 2);  // two arrivals on a count-1 barrier in one step
  CHECK_THROWS_WITH(simulate_cta(hw, cta.take()),
                    Catch::Contains("x.full[0]: 2 arrivals in one phase but its count is 1"));

  CtaBuilder cta2;
  const int bar2 = cta2.barrier("y.full[0]", 2);
  WarpBuilder w2 = cta2.warp(0, "w");
  w2.arrive(bar2, 1);  // half a phase, never completed
  CHECK_THROWS_WITH(simulate_cta(hw, cta2.take()), Catch::Contains("y.full[0] ended with a partial phase: 1 of 2"));
}

TEST_CASE("a synchronous copy is a wait of its own cycles on cp.async.wait_group", "[engine]") {
  const Hardware hw = b200();
  CtaBuilder cta;
  WarpBuilder w = cta.warp(0, "w");
  Work fma;
  fma.issue = fma.fma_lanes = 32 * 100;  // 100 FFMAs: 100 cycles alone at 1 per cycle (b200: 32 lanes)
  w.sync_copy(750);
  w.compute(ATTNSIM_OP_MMA_QK, fma);
  const SimResult r = simulate_cta(hw, cta.take());
  REQUIRE(r.timeline.warps.size() == 1);
  const auto& spans = r.timeline.warps[0].spans;
  REQUIRE(spans.size() == 2);
  CHECK(spans[0].kind == SpanKind::Wait);
  CHECK(spans[0].end - spans[0].start == Approx(750));
  CHECK(r.timeline.labels.at(static_cast<size_t>(spans[0].label)) == "cp.async.wait_group");
  CHECK(spans[1].start == Approx(750));
}

TEST_CASE("a TMA store holds its warp until it has read SMEM - an asynchronous one does not", "[engine]") {
  const Hardware hw = test::without_fixed_costs(b200());
  Work fma;
  fma.issue = fma.fma_lanes = 32 * 100;
  auto run_store = [&](bool wait) {
    CtaBuilder cta;
    WarpBuilder w = cta.warp(0, "w");
    w.tma_store(ATTNSIM_OP_STORE_O, 16384, wait);
    w.compute(ATTNSIM_OP_FINAL_O, fma);
    return simulate_cta(hw, cta.take());
  };
  // Alone on the chip: the copy moves at the SM's port rate, then the store's own latency.
  const double read = 16384 / hw.tma_bytes_per_clk_sm + hw.tma_store_latency;
  const SimResult waited = run_store(true), async = run_store(false);
  const auto& ws = waited.timeline.warps[0].spans;
  const auto& as = async.timeline.warps[0].spans;
  REQUIRE(ws.size() == 2);
  REQUIRE(as.size() == 1);  // no store span: the warp went on at once
  CHECK(ws[1].start == Approx(read));
  CHECK(as[0].start == Approx(0));
  CHECK(as[0].end - as[0].start == Approx(ws[1].end - ws[1].start));  // the same block, only earlier
}

TEST_CASE("repeated runs give byte-identical traces", "[engine][determinism]") {
  const Hardware hw = b200();
  Problem p = test::default_problem();
  p.batch = 1;
  p.heads = 8;
  p.seqlen_q = p.seqlen_k = 2048;
  std::string first;
  for (int i = 0; i < 3; ++i) {
    const Prediction r = test::run(test::fa4(), hw, p);
    std::ostringstream os;
    write_chrome_trace(r.critical.timeline, TraceOptions{}, os);
    if (i == 0)
      first = os.str();
    else
      CHECK(os.str() == first);
    CHECK(os.str().size() > 10000);
  }
}

TEST_CASE("work is conserved: tensor-core FLOP equal the attention FLOP of the CTA's tiles", "[engine][fa4]") {
  const Hardware hw = b200();
  Problem p = test::default_problem();
  p.seqlen_q = p.seqlen_k = 1024;
  const Prediction r = test::run(test::fa4(), hw, p);
  // Per SM: 128 rows per Q stage, 2 stages, n KV blocks, QK and PV each 2 * 128 * 128 * 128 per block.
  const double per_tile = 2.0 * 2 * (2.0 * 128 * 128 * 128) * (1024 / 128);
  CHECK(r.critical.units.tensor_flops == Approx(per_tile * r.critical_tiles));
}

TEST_CASE("TMEM allocations are powers of two from 32 columns - aligned - within 512", "[tmem]") {
  TmemAllocator t(512);
  CHECK(TmemAllocator::round_up(1) == 32);
  CHECK(TmemAllocator::round_up(96) == 128);
  CHECK(t.allocate(32) == 0);
  CHECK(t.allocate(64) == 64);  // aligned to its size: columns 32-63 stay free
  CHECK(t.allocate(20) == 32);
  CHECK(t.allocate(256) == 256);
  CHECK(t.allocate(128) == 128);
  CHECK_FALSE(t.allocate(32).has_value());  // full
  t.free(256);
  CHECK(t.allocate(200) == 256);
  CHECK_FALSE(TmemAllocator(512).allocate(513).has_value());
}

namespace {
/// tests/schedules/tma_bursts.json on one SM of `active_sms` running alike, on a GPU whose chip
/// rate at K/V sharing 1 is 1000 B/clk (clock 1 GHz, L2 and fill rates 2e12 B/s each), whose HBM
/// moves 1000 B/clk too, and whose SM port moves 100 B/clk; the consumer computes 10000 cycles per
/// tile.
SimResult tma_bursts(int active_sms, double queue_factor, double kv_sharing = 1) {
  Hardware hw = test::without_fixed_costs(b200());
  hw.clock_ghz = 1;
  hw.l2_hit_bytes_per_s = hw.kv_fill_bytes_per_s = 2e12;
  hw.hbm_bytes_per_s = 1e12;
  hw.tma_bytes_per_clk_sm = 100;
  hw.tma_latency = 300;
  hw.tma_latency_hbm = 500;
  hw.tma_queue_factor = queue_factor;
  REQUIRE(hw.fma_lanes_per_clk_smsp == 32);
  const auto s = load_schedule(micro("tma_bursts.json"), {}, "");
  EngineOptions eo;
  eo.active_sms = active_sms;
  eo.kv_sharing = kv_sharing;
  return simulate_cta(hw, s->lower(hw, Problem{}, {TileWork{}}), eo);
}
}  // namespace

TEST_CASE("a TMA copy shares the chip's rate with the SMs that transfer at the same moment", "[engine][memory]") {
  const double L = b200().mbarrier_latency, bytes = 32768, chip = 1000, T = 10000;
  // Alone on the GPU: the SM's port, the HBM latency (sharing 1), no queueing.
  const double alone_land = bytes / 100 + 500;
  CHECK(tma_bursts(1, 0.5).end_cycles == Approx(2 * (alone_land + L + T) + L).epsilon(1e-12));
  // 21 SMs: at the start every SM loads at once, so copy 0 gets a 21st of the chip. Copy 1 is issued
  // after the consumer's 10000 cycles; the SM's TMA has been busy d0 / t1 of the time, and so have
  // (mean field) each of the 20 others: 1 + 20 d0 / t1 SMs share the chip.
  const double d0 = bytes / (chip / 21);
  const double t1 = d0 + 500 + L + T + L;
  const double rate1 = std::min(100.0, chip / (1 + 20 * d0 / t1));
  REQUIRE(rate1 == Approx(100));  // a lone burst gets the port while the chip has room
  CHECK(tma_bursts(21, 0).end_cycles == Approx(t1 + bytes / rate1 + 500 + L + T).epsilon(1e-12));
  // Busier neighbours: 201 SMs leave a burst less than its port.
  const double d0b = bytes / (chip / 201);
  const double t1b = d0b + 500 + L + T + L;
  const double rate1b = chip / (1 + 200 * d0b / t1b);
  REQUIRE(rate1b < 100);
  CHECK(tma_bursts(201, 0).end_cycles == Approx(t1b + bytes / rate1b + 500 + L + T).epsilon(1e-12));
}

TEST_CASE("a TMA load's latency grows with the other SMs' HBM traffic and falls with K/V sharing", "[engine][memory]") {
  const double L = b200().mbarrier_latency, bytes = 32768, chip = 1000, T = 10000, k = 0.5;
  auto factor = [&](double rho) { return 1 + k * rho / std::sqrt(1 - rho); };
  // 21 SMs, sharing 1 (every tile from HBM). Copy 0 ends its transfer at d0 with the 20 others
  // having drawn 20 x 32 KiB from HBM meanwhile: HBM utilisation 20 x 32768 / d0 / 1000 = 20 / 21,
  // under the fitted range's 0.96. Copy 1 ends its transfer at t1 + 32768 / 100, two copies moved.
  const double d0 = bytes / (chip / 21);
  const double rho0 = 20 * bytes / d0 / chip;
  REQUIRE(rho0 == Approx(20.0 / 21));
  const double land0 = d0 + 500 * factor(rho0);
  const double t1 = land0 + L + T + L;
  const double e1 = t1 + bytes / 100;
  const double rho1 = 20 * 2 * bytes / e1 / chip;
  CHECK(tma_bursts(21, k).end_cycles == Approx(e1 + 500 * factor(rho1) + L + T).epsilon(1e-12));
  CHECK(tma_bursts(21, k).end_cycles > tma_bursts(21, 0).end_cycles);
  // Shared by 4 CTAs: one fills each tile from HBM, three hit L2: latency 300 + (500 - 300) / 4
  // before queueing; the chip's rate rises to 1 / (1 / 2e12 + 1 / 8e12) = 1600 B/clk.
  const SimResult shared = tma_bursts(21, 0, 4);
  const double chip4 = 1600, d0s = bytes / (chip4 / 21), lat4 = 300 + 200 / 4.0;
  const double t1s = d0s + lat4 + L + T + L;
  CHECK(shared.end_cycles == Approx(t1s + bytes / 100 + lat4 + L + T).epsilon(1e-12));
}
