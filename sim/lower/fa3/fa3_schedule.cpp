// Parsing, "auto" resolution, resource checks, tile scheduling and lowering of fa3_sm90.
#include "lower/fa3/fa3_schedule.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "common/softmax_math.h"  // exp2_emulated_elements
#include "plan/tile_scheduler.hpp"
#include "lower/families.hpp"

namespace attnsim::fa3 {

namespace {
// Registers a consumer thread needs besides its accumulators: row max and sum of its 2 rows,
// TMA/SMEM descriptors, loop state. An estimate (derived from FA3's register budgets: hd64 at
// 160 per thread holds O 32 + S 64 + P 32 with this much left), not a measurement.
constexpr int kBookkeepingRegisters = 24;

std::optional<std::pair<int, int>> read_pair_or_auto(JsonReader& r, const std::string& key, const char* a,
                                                     const char* b, long long lo, long long hi) {
  const auto& v = r.raw(key);
  if (v.is_string() && v.get<std::string>() == "auto") return std::nullopt;
  JsonReader o = r.object(key);
  std::pair<int, int> out{static_cast<int>(o.integer(a, lo, hi)), static_cast<int>(o.integer(b, lo, hi))};
  o.finish();
  return out;
}
}  // namespace

Fa3Schedule::Fa3Schedule(JsonReader& r) {
  read_header(r);
  knobs_.tile = read_pair_or_auto(r, "tile", "m_block", "n_block", 16, 256);
  if (knobs_.tile) {
    if (knobs_.tile->first % 64)
      r.fail_at("tile", "m_block must be a multiple of 64 (one consumer warpgroup per 64 rows)");
    if (knobs_.tile->second % 16) r.fail_at("tile", "n_block must be a multiple of 16 (wgmma N and K steps)");
  }
  knobs_.kv_stage = static_cast<int>(r.integer("kv_stage", 1, 16));
  {
    const auto& v = r.raw("pingpong");
    if (!(v.is_string() && v.get<std::string>() == "auto")) knobs_.pingpong = r.boolean("pingpong");
  }
  knobs_.overlap = r.boolean("intra_warpgroup_overlap");
  knobs_.warp_specialization = r.boolean("warp_specialization");
  knobs_.registers = read_pair_or_auto(r, "registers", "consumer", "producer", 24, 256);
  if (knobs_.registers && (knobs_.registers->first % 8 || knobs_.registers->second % 8))
    r.fail_at("registers", "setmaxnreg takes multiples of 8");
  for (const char* derived : {"pipelines", "named_barriers"})
    if (r.optional_raw(derived))
      r.fail_at(derived, "fa3_sm90 derives its pipelines and named barriers from the kernel's structure "
                         "(kernels/sm90/structure.h); remove this field");
  knobs_.tile_scheduler = r.choice("tile_scheduler", {"auto", "static_persistent", "lpt", "dynamic_lpt"});
  knobs_.o_staging = r.choice_or("o_staging", "auto", {"auto", "q_buffer", "own_buffer", "v_ring"});
  knobs_.l2_section_mib = static_cast<int>(r.integer_or("l2_section_mib", 8, 0, 1 << 20));
  if (r.optional_raw("rescale")) {
    JsonReader rs = r.object("rescale");
    const auto& v = rs.raw("conditional");
    knobs_.conditional_rescale =
        v.is_string() && v.get<std::string>() == "auto" ? std::nullopt : std::optional<bool>(rs.boolean("conditional"));
    knobs_.rescale_threshold_log2 = rs.number("threshold_log2", 0, 126);
    rs.finish();
  }
  if (r.optional_raw("exp2_emulation")) {
    if (r.raw("exp2_emulation").is_string()) {
      r.choice("exp2_emulation", {"off"});
    } else {
      JsonReader e = r.object("exp2_emulation");
      knobs_.exp2_emu_freq = static_cast<int>(e.integer("freq", 0, 64));
      knobs_.exp2_emu_res = static_cast<int>(e.integer("res", 0, 64));
      e.finish();
      if (knobs_.exp2_emu_freq > 0 && (knobs_.exp2_emu_res < 1 || knobs_.exp2_emu_res > knobs_.exp2_emu_freq))
        e.fail_at("res", fmt::format("expected 1 <= res <= freq ({}), got {}", knobs_.exp2_emu_freq,
                                     knobs_.exp2_emu_res));
      if (knobs_.exp2_emu_freq == 0) knobs_.exp2_emu_res = 0;
    }
  }
  if (r.optional_raw("trim_last_block")) {
    const auto& v = r.raw("trim_last_block");
    knobs_.trim_last_block = v.is_string() && v.get<std::string>() == "auto"
                                 ? std::nullopt
                                 : std::optional<bool>(r.boolean("trim_last_block"));
  }
  costs_ = CostModel::from_schedule(r);
}

Resolved Fa3Schedule::resolve(const Hardware& hw, const Problem& p) const {
  Resolved k{};
  k.head_dim = p.head_dim;
  k.head_dim_v = p.head_dim_v;
  k.tile_auto = !knobs_.tile;
  // Consumer warpgroups of 64 rows in pingpong. hd128: 128 x 128; hd256: 128 x 80 (FA3's
  // flash_fwd_sm90 tile sizes). hd64: 192 x 128 (FA3's), three warpgroups passing the GEMM turn
  // round robin: a warpgroup's softmax there takes about twice its GEMMs, so two warpgroups left
  // the tensor cores idle half the time; the third measured 6-10% faster than 128 x 176 with two
  // at every non-causal seqlen 512-16k and 2.4-7.7% at causal 1.5k-16k (H200, 2026-11-28,
  // configs/validation/h200/fa3_hd64_three_warpgroups; without pingpong, 192 rows measured
  // 8-14% slower than with). Short causal hd64 (kHd64CausalShortSeqlenK) keeps 128 x 128: the
  // diagonal wastes less of a 128-row tile (192 x 128 measured 11-13% slower at seqlen 512-1k).
  // hd128 stays at 128 wide: at 176 its O no longer fits a buffer of its own (+17-24% at seqlen
  // 512-1k). hd256 takes the narrower of its two widths (64) where it is faster
  // (narrower_kv_blocks).
  const std::pair<int, int> tile = knobs_.tile.value_or(
      p.head_dim <= 64    ? std::pair{p.causal && p.seqlen_k <= kHd64CausalShortSeqlenK ? 128 : 192, 128}
      : p.head_dim <= 128 ? std::pair{128, 128}
                          : std::pair{128, narrower_kv_blocks(p.seqlen_k, 80, 64) ? 64 : 80});
  k.m_block = tile.first;
  k.n_block = tile.second;
  k.consumers = sm90::consumer_warpgroups(k.m_block);
  k.kv_stage = knobs_.kv_stage;
  // Pingpong wherever two or three consumer warpgroups run (FA3: two, hd <= 128; our hd256 kernel
  // measured 2-5% faster with it on every problem of configs/sweeps/fa3_short_hd256.json, H100,
  // 2026-11-24; three at hd64 192 x 128 8-14% faster than without, H200, 2026-11-28).
  k.pingpong = knobs_.pingpong.value_or(k.consumers >= 2);
  k.overlap = knobs_.overlap;
  k.warp_specialization = knobs_.warp_specialization;
  // The kernel's SMEM (untraced): Q, O's own buffer (else O is staged in the V ring or in Q's
  // once the last QK has read it), the K and V rings, the mbarriers (barrier_o with O in the V
  // ring), the dynamic scheduler's tile slot and the alignment slack. o_staging auto: an own O
  // buffer where it fits (FA3 keeps O apart from Q too), else the V ring (below).
  auto smem_bytes = [&](TileScheduler sched, bool own_o, bool o_in_v = false) {
    return sm90::smem_layout(k.m_block, k.n_block, p.head_dim, p.head_dim_v, k.kv_stage,
                             static_cast<int>(p.elem_bytes()), false, sched == TileScheduler::DynamicLpt, own_o,
                             o_in_v)
        .bytes;
  };
  auto own_o_fits = [&](TileScheduler sched) {
    return knobs_.o_staging == "own_buffer" ||
           (knobs_.o_staging == "auto" && smem_bytes(sched, true) <= hw.smem_bytes_per_block);
  };
  // auto: non-causal tiles are alike, so a static persistent grid (m-blocks fastest: the CTAs
  // running together share their heads' K/V in L2). Causal tiles differ up to seqlen / m_block
  // fold: longest first, from the dynamic scheduler's counter. Also where O shares Q's buffer
  // (hd256 until 2026-11-28), although the CTA's next Q then waited for its epilogue's store: at
  // hd256 causal s512-s16k the simulator predicted 0.977-0.998x of one CTA per tile and an H100
  // measured 0.978-1.005x (kernels/sm90/README.md, 2026-11-28).
  k.scheduler = knobs_.tile_scheduler == "static_persistent" ? TileScheduler::StaticPersistent
                : knobs_.tile_scheduler == "lpt"             ? TileScheduler::Lpt
                : knobs_.tile_scheduler == "dynamic_lpt"     ? TileScheduler::DynamicLpt
                : !p.causal                                  ? TileScheduler::StaticPersistent
                                                             : TileScheduler::DynamicLpt;
  // setmaxnreg budgets (FA3 / FA4-CuTe SM90): 1 consumer WG 256/56, 2: 240/24, 3: 160/32.
  if (knobs_.registers) {
    k.reg_consumer = knobs_.registers->first;
    k.reg_producer = knobs_.registers->second;
  } else if (!k.warp_specialization) {
    k.reg_consumer = std::min(255, hw.registers_per_sm / (128 * k.consumers)) / 8 * 8;
    k.reg_producer = 0;
  } else {
    k.reg_consumer = k.consumers == 1 ? 256 : k.consumers == 2 ? 240 : 160;
    k.reg_producer = k.consumers == 1 ? 56 : k.consumers == 2 ? 24 : 32;
  }
  // Live per consumer thread: O (64 x hdv / 128), S (64 x n / 128), P of the previous block in bf16
  // pairs while the next S is computed (overlap), bookkeeping.
  k.registers_needed = p.head_dim_v / 2 + k.n_block / 2 + (k.overlap ? k.n_block / 4 : 0) + kBookkeepingRegisters;
  k.own_o_buffer = own_o_fits(k.scheduler);
  // v_ring: O in the V stages (FA3's smem_o shares smem_v), no SMEM of its own (check() rejects
  // a ring it does not fit). auto: there, where O has no buffer of its own and fits (hd256). H200,
  // 2026-11-28 (configs/validation/h200/fa3_o_in_v_ring): hd256 0.8-9.0% faster than O in Q's
  // buffer (most at seqlen 512-1k, where tiles are short and each boundary's store -> Q load ->
  // first QK was serial); where O has its own buffer, the V ring measured 2.7-3.8% slower (hd128
  // 128 x 128: its next tile's first V waits for the stores).
  k.o_in_v_ring = knobs_.o_staging == "v_ring" ||
                  (knobs_.o_staging == "auto" && !k.own_o_buffer && k.warp_specialization &&
                   sm90::o_fits_v_ring(k.n_block, k.kv_stage, k.consumers));
  k.smem_bytes = smem_bytes(k.scheduler, k.own_o_buffer, k.o_in_v_ring);
  k.l2_section_mib = knobs_.l2_section_mib;
  // auto: conditional at head_dim 256 only. H200, 2026-11-28 (configs/sweeps/
  // fa3_conditional_rescale.json, the two kernels taking turns): hd256 4-12% faster (s1k causal to
  // s16k), where O's rescale is 128 multiplies per thread per block; hd64 5-10% and hd128 0.3-1.9%
  // slower, where it is 32 and 64 (the simulator predicts 0.2-3% faster there; the traced twins
  // lose 1-6 points less than the plain kernels, fa3_conditional_rescale_ops: code generation,
  // whose SASS has not been compared yet).
  k.conditional_rescale = knobs_.conditional_rescale.value_or(p.head_dim_v >= 256);
  k.rescale_threshold_log2 = knobs_.rescale_threshold_log2;
  k.exp2_emu_freq = knobs_.exp2_emu_freq;
  k.exp2_emu_res = knobs_.exp2_emu_res;
  // auto: on causal problems at head_dim 64, where every tile's last block is the diagonal's.
  // H200, 2026-11-29 (configs/validation/h200/fa3_trim_last_block, the two kernels in one run):
  // hd64 s512-1k causal 1.7-2.6% faster; hd256 s512 2.7% faster, but its traced kernel ran 9.9%
  // slower than the plain one (1.3% without the trim), past what the per-op measurements allow.
  // Two consumer warpgroups only (they swap rows; the kernels README has the versions tried).
  k.trim_last_block =
      knobs_.trim_last_block.value_or(p.causal && p.head_dim_v == 64) && k.n_block % 32 == 0 && k.consumers == 2;
  // Of the n_block / 2 score elements a consumer thread holds per block.
  k.exp2_emu_share = exp2_emulated_elements(k.n_block / 2, k.exp2_emu_freq, k.exp2_emu_res) / (k.n_block / 2.0);
  k.l2_section = attnsim_l2_section_heads(k.l2_section_mib, p.seqlen_k, p.head_dim, p.head_dim_v,
                                          static_cast<int>(p.elem_bytes()), p.heads, p.kv_heads);
  // Who arrives on the pipelines, and how often per phase: the kernel's structure.
  RoleDecl load, consumer;
  const int first_consumer = sm90::first_consumer_warp(k.warp_specialization);
  for (int w = 0; w < sm90::kWarpsPerWarpgroup * k.consumers; ++w) consumer.warps.push_back(first_consumer + w);
  load.warps = {sm90::kLoadWarp};
  k.pipeline_roles = {{"load", load}, {"consumer", consumer}};
  auto pipeline = [&](const char* name, int stages) {
    PipelineDecl d;
    d.stages = stages ? std::to_string(stages) : "kv_stage";
    d.path = fmt::format("(kernels/sm90/structure.h) {}", name);
    d.full = {true, {{"load", 1}}, sm90::kFullArrivals, d.path + "/full"};
    d.empty = {true, {{"consumer", 1}}, sm90::empty_arrivals(k.consumers), d.path + "/empty"};
    return d;
  };
  k.pipelines = {{"pipeline_q", pipeline("pipeline_q", sm90::kQStages)},
                 {"pipeline_k", pipeline("pipeline_k", 0)},
                 {"pipeline_v", pipeline("pipeline_v", 0)}};
  k.pv_wait_under_max =
      !traced_ && k.overlap &&
      costs_.max_before_pv_wait(k.head_dim, k.pingpong, k.overlap, k.scheduler == TileScheduler::DynamicLpt,
                                k.own_o_buffer, k.n_block) >= 0.5;
  return k;
}

std::unique_ptr<Schedule> Fa3Schedule::traced_twin(const Hardware& hw, const Problem& p) const {
  if (traced_) return nullptr;
  const Resolved k = resolve(hw, p);
  const bool load_warp_records = load_warp_cost(costs_, k).block_gaps > 0;
  if (!load_warp_records && !k.pv_wait_under_max) return nullptr;
  auto twin = std::make_unique<Fa3Schedule>(*this);
  twin->traced_ = true;
  return twin;
}

void Fa3Schedule::check(const Hardware& hw, const Problem& p) const {
  const std::string& f = file_;
  if (hw.arch != "sm90")
    throw InputError(f, "/arch",
                     fmt::format("this schedule issues wgmma, which exists only on sm_90a; {} is {}", hw.name, hw.arch),
                     "arch");
  const Resolved k = resolve(hw, p);
  if (k.consumers < 1 || k.consumers > 3)
    throw InputError(f, "/tile",
                     fmt::format("m_block {} needs {} consumer warpgroups; 1 to 3 fit", k.m_block, k.consumers),
                     "threads");
  if (k.n_block > 256 || k.head_dim_v > 256)
    throw InputError(f, "/tile", "wgmma N is at most 256 (n_block for QK^T, head_dim_v for PV)", "mma_shape");
  if (k.pingpong && k.consumers < 2)
    throw InputError(f, "/pingpong",
                     fmt::format("pingpong passes the GEMM turn between two or three consumer warpgroups; this tile "
                                 "has {}",
                                 k.consumers),
                     "named_barriers");
  if (k.smem_bytes > hw.smem_bytes_per_block)
    throw InputError(
        f, knobs_.o_staging == "own_buffer" ? "/o_staging" : "/kv_stage",
        fmt::format("SMEM overflow: Q {}{} + {} K/V stages of {} B + barriers = {} B > {} B per CTA on {}",
                    k.m_block * p.head_dim * 2,
                    k.own_o_buffer ? fmt::format(" + O {}", k.m_block * p.head_dim_v * 2) : "", k.kv_stage,
                    k.n_block * (p.head_dim + p.head_dim_v) * 2, k.smem_bytes, hw.smem_bytes_per_block, hw.name),
        "smem");
  if (k.o_in_v_ring && !sm90::o_fits_v_ring(k.n_block, k.kv_stage, k.consumers))
    throw InputError(f, "/o_staging",
                     fmt::format("v_ring stages each consumer warpgroup's 64 rows of O in a V stage of its own: needs "
                                 "n_block >= 64 and kv_stage >= {} (the consumer warpgroups); this tile has n_block {}, "
                                 "kv_stage {}",
                                 k.consumers, k.n_block, k.kv_stage),
                     "smem");
  if (k.o_in_v_ring && !k.warp_specialization)
    throw InputError(f, "/o_staging",
                     "v_ring needs warp specialization: the producer's load warp holds back the next tile's V until "
                     "O's stores have read the ring",
                     "smem");
  if (k.kv_stage < 2 && !k.warp_specialization)
    throw InputError(f, "/kv_stage",
                     "without a producer warpgroup the consumers prefetch the next block: needs 2 stages", "smem");
  const long long regs = sm90::cta_registers(k.consumers, k.reg_consumer, k.reg_producer, k.warp_specialization);
  if (regs > hw.registers_per_sm)
    throw InputError(
        f, "/registers",
        fmt::format("register overflow: 128 x ({} consumer warpgroups x {}{}) = {} > {} per SM", k.consumers,
                    k.reg_consumer, k.warp_specialization ? fmt::format(" + {}", k.reg_producer) : "", regs,
                    hw.registers_per_sm),
        "registers");
  if (k.reg_consumer < k.registers_needed)
    throw InputError(f, "/registers",
                     fmt::format("a consumer thread holds O ({}), S ({}){} and bookkeeping ({}): {} registers > {}",
                                 k.head_dim_v / 2, k.n_block / 2,
                                 k.overlap ? fmt::format(", P of the previous block ({})", k.n_block / 4) : "",
                                 kBookkeepingRegisters, k.registers_needed, k.reg_consumer),
                     "registers");
}

double Fa3Schedule::executed_mma_flops(const Hardware& hw, const Problem& p, const GridPlan& plan) const {
  if (plan.cta_tiles.empty()) return flops(p);
  const Resolved k = resolve(hw, p);
  long long blocks = 0;
  for (const auto& cta : plan.cta_tiles)
    for (const TileWork& t : cta) blocks += t.n_blocks;
  // Every tile runs all its m_block rows (TMA zero-fills past seqlen_q) and whole KV blocks.
  return static_cast<double>(blocks) * 2.0 * k.m_block * k.n_block * (k.head_dim + k.head_dim_v);
}

GridPlan Fa3Schedule::plan_grid(const Hardware& hw, const Problem& p, long long max_tiles) const {
  const Resolved k = resolve(hw, p);
  TilingSpec t;
  t.rows_per_cta = k.m_block;
  t.n_block = k.n_block;
  t.scheduler = k.scheduler;
  t.l2_section = k.l2_section;
  t.next_tile_lead_blocks = sm90::next_tile_lead_blocks(k.kv_stage);  // the load warp (kernels/sm90/load.cuh)
  return plan_tiles(hw, p, t, max_tiles);
}

CtaProgram Fa3Schedule::lower(const Hardware& hw, const Problem& p, const std::vector<TileWork>& tiles) const {
  const Resolved k = resolve(hw, p);
  CtaBuilder cta;
  std::map<std::string, Pipe> pipes =
      make_pipes(cta, k.pipelines, {{"kv_stage", k.kv_stage}}, k.pipeline_roles, 1, file_);
  Context c{hw, p, k, costs_, tiles, pipes.at("pipeline_q"), pipes.at("pipeline_k"), pipes.at("pipeline_v"), {}, {}, {}, {}};
  c.traced = traced_;
  // Which warps rescale at which block depends on the data: the scores of random N(0,1) Q and K
  // (what benchmarks feed) or a given rate, as for FA4 (lower/rescale_model.hpp).
  if (k.conditional_rescale)
    c.rescale = conditional_rescale_mask(p.rescale_rate, tiles, p.head_dim, p.seqlen_k, k.n_block,
                                         k.consumers * sm90::kWarpsPerWarpgroup, k.rescale_threshold_log2,
                                         sm90::kRowsPerConsumer / sm90::kWarpsPerWarpgroup);
  for (int g = 0; g < k.consumers; ++g) {
    if (k.pingpong)
      c.pingpong_bar.push_back(cta.barrier(fmt::format("bar.pingpong[{}]", g), sm90::kPingpongThreads, true));
    c.epilogue_bar.push_back(cta.barrier(fmt::format("bar.epilogue[{}]", g), sm90::kEpilogueThreads, true));
    if (sm90::o_staged_barriers(k.o_in_v_ring, k.pingpong, k.consumers))
      c.o_staged_bar.push_back(cta.barrier(fmt::format("bar.o_staged[{}]", g), sm90::kPingpongThreads, true));
  }
  if (k.o_in_v_ring) c.barrier_o = cta.barrier("barrier_o", sm90::barrier_o_arrivals(k.consumers));
  const int warps = sm90::cta_warps(k.consumers, k.warp_specialization);
  for (int w = 0; w < warps; ++w) {
    WarpBuilder b = cta.warp(w, sm90::warp_role_name(w, k.warp_specialization));
    switch (sm90::warp_role(w, k.warp_specialization)) {
      case sm90::Role::Load:
        emit_load(c, b);
        break;
      case sm90::Role::Idle:  // setmaxnreg-ed down; no program
        break;
      case sm90::Role::Consumer:
        emit_consumer(c, b, sm90::consumer_group(w, k.warp_specialization), w % sm90::kWarpsPerWarpgroup);
        break;
    }
  }
  check_arrivers_used(pipes, [](const std::string&) { return false; });
  return cta.take();
}

std::vector<std::string> Fa3Schedule::roles() const {
  return {"load", "idle", "consumer0", "consumer1", "consumer2"};
}

std::map<std::string, double> Fa3Schedule::resources(const Hardware& hw, const Problem& p) const {
  const Resolved k = resolve(hw, p);
  return {{"smem_bytes", static_cast<double>(k.smem_bytes)},
          {"registers",
           static_cast<double>(sm90::cta_registers(k.consumers, k.reg_consumer, k.reg_producer, k.warp_specialization))},
          {"warps", static_cast<double>(sm90::cta_warps(k.consumers, k.warp_specialization))},
          {"tmem_columns", 0}};
}

KernelChoice Fa3Schedule::real_kernel(const Hardware& hw, const Problem& p) const {
  KernelChoice c;
  if (p.head_dim != 64 && p.head_dim != 128 && p.head_dim != 256) {
    c.why_not = fmt::format("head_dim {}: the kernels are built for 64, 128 and 256", p.head_dim);
    return c;
  }
  if (p.head_dim_v != p.head_dim) {
    c.why_not = "head_dim_v != head_dim is not implemented in kernels/sm90";
    return c;
  }
  if (p.dtype != "bf16") {
    c.why_not = fmt::format("dtype {}: kernels/sm90 is bf16 only", p.dtype);
    return c;
  }
  const Resolved k = resolve(hw, p);
  if (!k.warp_specialization) {
    c.why_not = "warp_specialization false (consumers issue the loads) is modelled but not implemented in kernels/sm90";
    return c;
  }
  c.supported = true;
  c.knobs = sm90::KernelKnobs{p.head_dim,
                              k.m_block,
                              k.n_block,
                              k.kv_stage,
                              k.pingpong,
                              k.overlap,
                              k.reg_consumer,
                              k.reg_producer,
                              k.scheduler == TileScheduler::DynamicLpt,
                              k.own_o_buffer,
                              k.l2_section_mib,
                              k.conditional_rescale ? static_cast<int>(std::lround(k.rescale_threshold_log2 * 1000))
                                                    : -1,
                              k.exp2_emu_freq,
                              k.exp2_emu_res,
                              k.o_in_v_ring,
                              k.trim_last_block};
  c.scheduler = k.scheduler;
  return c;
}

std::vector<std::string> Fa3Schedule::knob_lines(const Hardware& hw, const Problem& p) const {
  const Resolved k = resolve(hw, p);
  return {
      fmt::format("tile {}x{}{}, {} consumer warpgroups, kv_stage {}, registers consumer/producer {}/{}, SMEM {} B",
                  k.m_block, k.n_block, k.tile_auto ? " (auto)" : "", k.consumers, k.kv_stage, k.reg_consumer,
                  k.reg_producer, k.smem_bytes),
      fmt::format("pingpong {}, intra-warpgroup overlap {}, warp specialization {}, scheduler {}{}, O staged in {}, "
                  "O rescaled {}, exp2 {}{}",
                  k.pingpong ? "on" : "off", k.overlap ? "on" : "off", k.warp_specialization ? "on" : "off",
                  tile_scheduler_label(k.scheduler),
                  k.scheduler == TileScheduler::StaticPersistent ? ""
                  : k.l2_section > 0 ? fmt::format(" ({} heads per {} MiB L2 section)", k.l2_section, k.l2_section_mib)
                                     : " (heads fastest)",
                  k.own_o_buffer ? "its own buffer" : k.o_in_v_ring ? "the V ring" : "Q's buffer",
                  k.conditional_rescale
                      ? fmt::format("only where a row's max grew by more than {:g} (log2 units)", k.rescale_threshold_log2)
                      : "at every block",
                  k.exp2_emu_freq > 0 ? fmt::format("emulated on the FMA pipe for {} of every {} elements ({:.1f}%)",
                                                    k.exp2_emu_res, k.exp2_emu_freq, 100 * k.exp2_emu_share)
                                      : "on the MUFU",
                  k.trim_last_block ? ", the last KV block's exponentials only on the keys a warpgroup sees" : "")};
}

}  // namespace attnsim::fa3

namespace attnsim {
std::unique_ptr<Schedule> parse_fa3_schedule(JsonReader& r) { return std::make_unique<fa3::Fa3Schedule>(r); }
}  // namespace attnsim
