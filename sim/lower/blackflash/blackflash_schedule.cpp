// Parsing, checks, tile scheduling and lowering of the blackflash family.
#include "lower/blackflash/blackflash_schedule.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "lower/families.hpp"
#include "plan/tile_scheduler.hpp"

namespace attnsim::blackflash {

BlackFlashSchedule::BlackFlashSchedule(JsonReader& r) {
  read_header(r);
  kv_stage_ = static_cast<int>(r.integer("kv_stage", 1, 8));
  registers_ = static_cast<int>(r.integer("registers_per_thread", 32, 255));
  if (registers_ % 8)
    r.fail_at("registers_per_thread", fmt::format("expected a multiple of 8 (the kernel's __maxnreg__ is allocated in "
                                                  "units of 8 registers per thread), got {}",
                                                  registers_));
  p_over_k_ = r.boolean_or("p_over_k", true);
  const auto& c = r.raw("ctas_per_sm");
  if (!(c.is_string() && c.get<std::string>() == "auto"))
    ctas_per_sm_ = static_cast<int>(r.integer("ctas_per_sm", 1, 32));
  RoleDecl load, consumer;
  load.warps = {kLoadWarp};
  for (int w = 1; w <= kConsumerWarps; ++w) consumer.warps.push_back(w);
  roles_ = {{warp_role(kLoadWarp), load}, {warp_role(1), consumer}};
  for (const char* derived : {"pipelines", "named_barriers"})
    if (r.optional_raw(derived))
      r.fail_at(derived,
                "blackflash derives its pipelines and named barriers from its fixed warp layout "
                "(1 load warp + 8 consumer warps); remove this field");
  // mbar_q: the Q tile landed (the load warp's arrive.expect_tx + TMA bytes); no empty side, as
  // the buffer is reused for O at the end. mbar_kv: K_j and V_j landed / every consumer thread
  // is done with them.
  auto pipeline = [](const char* name, const char* stages, bool with_empty) {
    PipelineDecl d;
    d.stages = stages;
    d.path = fmt::format("(sim/lower/blackflash) {}", name);
    d.full = {true, {{"load", 1}}, std::nullopt, d.path + "/full"};
    if (with_empty) d.empty = {true, {{"consumer", 32}}, std::nullopt, d.path + "/empty"};
    return d;
  };
  pipelines_ = {{"mbar_q", pipeline("mbar_q", "1", false)}, {"mbar_kv", pipeline("mbar_kv", "kv_stage", true)}};
  costs_ = CostModel::from_schedule(r);
  issue_ = IssueTimings::from_schedule(r, issue_name_);
}

int occupancy(const Hardware& hw, int kv_stage, bool p_over_k, int registers) {
  const long long smem = smem_layout(kv_stage, p_over_k).bytes;
  return std::max(
      1, std::min({static_cast<int>(hw.smem_bytes_per_block / smem), hw.ctas_per_sm_by_registers(kThreads, registers),
                   hw.max_warps_per_sm / (kConsumerWarps + 1)}));
}

Resolved BlackFlashSchedule::resolve(const Hardware& hw, const Problem& p) const {
  Resolved k{};
  k.kv_stage = kv_stage_;
  k.registers = registers_;
  k.p_over_k = p_over_k_;
  // sQ + kv_stage x (sK + sV) (+ sP unless P goes over K), bf16 64 x 64 tiles; 1 + 2 kv_stage
  // mbarriers; 4 Br floats of row stats; 1024 bytes to align the swizzled tiles.
  k.smem_bytes = smem_layout(k.kv_stage, k.p_over_k).bytes;
  k.occupancy = occupancy(hw, k.kv_stage, k.p_over_k, k.registers);
  const long long ctas = static_cast<long long>(p.batch) * p.heads * ((p.seqlen_q + kTile - 1) / kTile);
  k.ctas_per_sm = ctas_per_sm_.value_or(std::min<long long>(k.occupancy, (ctas + hw.num_sms - 1) / hw.num_sms));
  return k;
}

void BlackFlashSchedule::check(const Hardware& hw, const Problem& p) const {
  const Resolved k = resolve(hw, p);
  if (p.head_dim != kTile || p.head_dim_v != kTile)
    throw InputError(file_, "/family",
                     fmt::format("BlackFlash is written for head_dim 64 (Br = Bc = d = 64): expected a problem with "
                                 "head_dim and head_dim_v 64 (--head-dim 64), got {} ({})",
                                 p.head_dim_v != p.head_dim ? fmt::format("{}/{}", p.head_dim, p.head_dim_v)
                                                            : std::to_string(p.head_dim),
                                 p.describe()),
                     "mma_shape");
  if (k.smem_bytes > hw.smem_bytes_per_block)
    throw InputError(file_, "/kv_stage",
                     fmt::format("SMEM overflow: {} K/V stages{} need {} B per CTA, {} has {} B", k.kv_stage,
                                 k.p_over_k ? "" : " and P's own tile", k.smem_bytes, hw.name, hw.smem_bytes_per_block),
                     "smem");
  if (k.ctas_per_sm > k.occupancy)
    throw InputError(file_, "/ctas_per_sm",
                     fmt::format("{} CTAs do not fit on one SM ({} do)", k.ctas_per_sm, k.occupancy), "registers");
}

GridPlan BlackFlashSchedule::plan_grid(const Hardware& hw, const Problem& p, long long max_tiles) const {
  const Resolved k = resolve(hw, p);
  TilingSpec t;
  t.rows_per_cta = kTile;
  t.n_block = kTile;
  t.scheduler = TileScheduler::Lpt;
  t.ctas_per_sm = k.ctas_per_sm;
  return plan_tiles(hw, p, t, max_tiles);
}

CtaProgram BlackFlashSchedule::lower(const Hardware& hw, const Problem& p, const std::vector<TileWork>& tiles) const {
  const Resolved k = resolve(hw, p);
  CtaBuilder cta;
  std::map<std::string, Pipe> pipes = make_pipes(cta, pipelines_, {{"kv_stage", k.kv_stage}}, roles_, 1, file_);
  Context c{hw,
            p,
            k,
            costs_,
            tiles,
            pipes.at("mbar_q"),
            pipes.at("mbar_kv"),
            cta.barrier("bar.consumers", 32 * kConsumerWarps, true),
            issue_
                ? issue_->find(kTile, kTile, kTile,
                               {{"kv_stage", k.kv_stage}, {"p_over_k", k.p_over_k ? 1 : 0}, {"registers", k.registers}},
                               k.ctas_per_sm)
                : nullptr};
  if (issue_ && !c.sass)
    throw InputError(issue_->file(), "/kernels",
                     fmt::format("no blackflash instance with kv_stage {}, p_over_k {}, {} registers timed at {} "
                                 "CTA(s) per SM: regenerate it with attnsim sass-costs --family blackflash --into",
                                 k.kv_stage, k.p_over_k, k.registers, k.ctas_per_sm));
  if (c.sass)
    for (const char* block : kTimedBlocks)
      if (!c.sass->blocks.count(block))
        throw InputError(issue_->file(), "/kernels", fmt::format("{} has no block {}", c.sass->kernel, block));
  WarpBuilder load = cta.warp(0, "load");
  emit_load(c, load);
  for (int i = 0; i < kConsumerWarps; ++i) {
    WarpBuilder w = cta.warp(1 + i, "consumer");
    emit_consumer(c, w, i);
  }
  check_arrivers_used(pipes, [](const std::string&) { return false; });
  return cta.take();
}

std::vector<std::string> BlackFlashSchedule::knob_lines(const Hardware& hw, const Problem& p) const {
  const Resolved k = resolve(hw, p);
  std::vector<std::string> lines = {
      fmt::format("Br = Bc = d = 64, 1 TMA producer warp + 8 consumer warps (4 x 2), {}-stage K/V buffer, mma.sync "
                  "m16n8k16, P through SMEM ({}), {} registers, SMEM {} B, {} CTA{} per SM (occupancy {})",
                  k.kv_stage, k.p_over_k ? "over K" : "own tile", k.registers, k.smem_bytes, k.ctas_per_sm,
                  k.ctas_per_sm > 1 ? "s" : "", k.occupancy)};
  if (issue_)
    lines.push_back(
        fmt::format("consumer blocks timed from the SASS of the SM's {} consumer warps issuing together ({})",
                    8 * k.ctas_per_sm, issue_name_));
  return lines;
}

std::map<std::string, double> BlackFlashSchedule::resources(const Hardware& hw, const Problem& p) const {
  const Resolved k = resolve(hw, p);
  return {{"smem_bytes", static_cast<double>(k.smem_bytes)},
          {"registers", static_cast<double>(kThreads) * k.registers},
          {"warps", static_cast<double>(kWarps)},
          {"tmem_columns", 0}};
}

KernelChoice BlackFlashSchedule::real_kernel(const Hardware& hw, const Problem& p) const {
  KernelChoice c;
  if (p.head_dim != kTile || p.head_dim_v != kTile || p.dtype != "bf16") {
    c.why_not =
        fmt::format("kernels/blackflash implements bf16 with head_dim = head_dim_v = 64 only (got {})", p.describe());
    return c;
  }
  const Resolved k = resolve(hw, p);
  c.supported = true;
  c.knobs = KernelKnobs{kTile, k.kv_stage, k.p_over_k, k.registers};
  c.scheduler = TileScheduler::Lpt;  // one CTA per Q tile, longest first
  return c;
}

}  // namespace attnsim::blackflash

namespace attnsim {
std::unique_ptr<Schedule> parse_blackflash_schedule(JsonReader& r) {
  return std::make_unique<blackflash::BlackFlashSchedule>(r);
}
}  // namespace attnsim
