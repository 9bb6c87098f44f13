// Parsing, "auto" resolution, resource checks and tile scheduling of the fa4_sm100
// family. Facts from Dao-AILab/flash-attention flash_attn/cute/ (fa4-v4.0.0.beta27) and
// the FA4 paper (arXiv 2603.05451); docs/sources.md.
#include "lower/fa4/fa4_schedule.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <numeric>
#include <set>

#include "common/softmax_math.h"
#include "core/tmem_allocator.hpp"
#include "plan/tile_scheduler.hpp"
#include "lower/families.hpp"

namespace attnsim::fa4 {

std::optional<RoleId> parse_role(const std::string& name) {
  static const std::map<std::string, Role> fixed = {{"correction", Role::Correction}, {"mma", Role::Mma},
                                                    {"epilogue", Role::Epilogue},     {"load", Role::Load},
                                                    {"empty", Role::Empty}};
  if (auto it = fixed.find(name); it != fixed.end()) return RoleId{it->second, -1};
  const std::string prefix = "softmax";
  if (name.size() == prefix.size() + 1 && name.compare(0, prefix.size(), prefix) == 0 && std::isdigit(name.back()))
    return RoleId{Role::Softmax, name.back() - '0'};
  return std::nullopt;
}

namespace {
constexpr long long kKiB = 1024;

}  // namespace

Fa4Schedule::Fa4Schedule(JsonReader& r) {
  read_header(r);
  knob_path_ = r.file();
  {
    JsonReader t = r.object("tile");
    knobs_.m_block = static_cast<int>(t.integer("m_block", 64, 128));
    knobs_.n_block = static_cast<int>(t.integer("n_block", 32, 256));
    if (knobs_.m_block != 128)
      t.fail_at("m_block", "expected 128: one softmax thread owns one row of the 128 TMEM lanes");
    if (knobs_.n_block % 32) t.fail_at("n_block", "expected a multiple of 32 (softmax works in 32-column fragments)");
    t.finish();
  }
  knobs_.q_stage = static_cast<int>(r.integer("q_stage", 1, 4));
  auto auto_int = [&](const std::string& key, long long lo, long long hi) -> std::optional<int> {
    const auto& v = r.raw(key);
    if (v.is_string() && v.get<std::string>() == "auto") return std::nullopt;
    return static_cast<int>(r.integer(key, lo, hi));
  };
  knobs_.kv_stage = auto_int("kv_stage", 1, 32);
  knobs_.cta_group = auto_int("cta_group", 1, 2);
  {
    const auto& v = r.raw("registers");
    if (!(v.is_string() && v.get<std::string>() == "auto")) {
      JsonReader g = r.object("registers");
      std::map<std::string, int> regs;
      for (const char* k : {"softmax", "correction", "other"}) {
        regs[k] = static_cast<int>(g.integer(k, 24, 256));
        if (regs[k] % 8) g.fail_at(k, fmt::format("expected a multiple of 8 (setmaxnreg), got {}", regs[k]));
      }
      g.finish();
      knobs_.registers = regs;
    }
  }
  {
    JsonReader w = r.object("warps");
    for (const auto& role : w.keys()) {
      JsonReader rr = w.object(role);
      RoleDecl d;
      for (long long id : rr.int_array("ids", 0, 31)) d.warps.push_back(static_cast<int>(id));
      for (const char* derived : {"q_stage", "leader_only"})
        if (rr.optional_raw(derived))
          rr.fail_at(derived, "derived from the role (a softmax<s> warpgroup serves Q stage s; the MMA warp runs "
                              "in the leader CTA only); remove this field");
      rr.string_or("does", "");
      rr.finish();
      roles_[role] = d;
    }
    static const std::vector<std::string> required = {"softmax0", "correction", "mma", "epilogue", "load"};
    for (const auto& role : required)
      if (!roles_.count(role))
        w.fail_at(role, "missing role: the fa4_sm100 family needs softmax0.., correction, mma, epilogue, load");
    for (auto& [role, d] : roles_) {
      const std::optional<RoleId> id = parse_role(role);
      if (!id) w.fail_at(role, "unknown role: expected softmax<stage>, correction, mma, epilogue, load or empty");
      role_ids_[role] = *id;
      d.q_stage = id->role == Role::Softmax ? id->stage : -1;
      d.leader_only = id->role == Role::Mma;  // one thread of the leader CTA issues the cluster's tcgen05.mma
      if (d.warps.empty()) w.fail_at(role, "expected at least one warp id");
    }
    std::set<int> seen;
    for (const auto& [role, d] : roles_)
      for (int id : d.warps)
        if (!seen.insert(id).second) w.fail_at(role, fmt::format("warp {} is given to two roles", id));
    for (int i = 0; i < static_cast<int>(seen.size()); ++i)
      if (!seen.count(i)) w.fail(fmt::format("warp ids must be 0..{} without gaps; {} is missing", seen.size() - 1, i));
    for (const auto& [role, d] : roles_) {
      const RoleId id = role_ids_.at(role);
      if (id.role == Role::Softmax && d.warps.size() != 4)
        w.fail_at(role, "expected 4 warps: a softmax warpgroup owns the 128 TMEM lanes, one row per thread");
      if (id.role == Role::Correction && d.warps.size() != 4)
        w.fail_at(role, "expected 4 warps: the correction warpgroup reaches all 128 TMEM lanes");
      if ((id.role == Role::Mma || id.role == Role::Load || id.role == Role::Epilogue) && d.warps.size() != 1)
        w.fail_at(role, "expected exactly 1 warp");
    }
    for (int s = 0; s < knobs_.q_stage; ++s)
      if (!roles_.count("softmax" + std::to_string(s)))
        w.fail(fmt::format("q_stage is {} but no softmax{} role is declared", knobs_.q_stage, s));
  }
  if (r.optional_raw("pipelines"))
    r.fail_at("pipelines", "fa4_sm100 derives its pipelines (who arrives, how often) from its warp roles and "
                           "knobs (sim/lower/fa4/pipelines.cpp); remove this field");
  if (r.optional_raw("named_barriers"))
    r.fail_at("named_barriers", "fa4_sm100 derives its named barriers (softmax_stats: one softmax warp + one "
                                "correction warp, 64 threads; exp_order: two softmax warpgroups, 256) from its "
                                "roles; remove this field");
  // softmax_stats: softmax warp w of a stage + correction warp w; exp_order: both softmax warpgroups.
  named_threads_ = {{"softmax_stats", 64}, {"exp_order", 256}};
  {
    JsonReader t = r.object("tmem");
    for (const auto& name : t.keys()) {
      JsonReader reg = t.object(name);
      TmemRegion tr;
      tr.start = static_cast<int>(reg.integer("start", 0, 4096));
      tr.columns = static_cast<int>(reg.integer("columns", 1, 4096));
      if (reg.optional_raw("alias_of"))
        reg.fail_at("alias_of", "derived: P<s> is written over the S<s> it came from; remove this field");
      // P of a stage is written over its S (tcgen05.st of bf16 P into S's columns).
      if (name.size() == 2 && name[0] == 'P' && std::isdigit(static_cast<unsigned char>(name[1])))
        tr.alias_of = fmt::format("S{}", name[1]);
      reg.string_or("holds", "");
      reg.finish();
      tmem_[name] = tr;
    }
    for (const auto& [name, tr] : tmem_)
      if (!tr.alias_of.empty() && !tmem_.count(tr.alias_of))
        t.fail_at(name, fmt::format("{} is written over {}, which the map does not declare", name, tr.alias_of));
  }
  {
    JsonReader sp = r.object("split_p");
    knobs_.split_p = sp.boolean("enabled");
    knobs_.split_p_columns = static_cast<int>(sp.integer("first_columns", 32, 256));
    sp.finish();
    if (knobs_.split_p && (knobs_.split_p_columns % 32 || knobs_.split_p_columns >= knobs_.n_block))
      sp.fail_at("first_columns", fmt::format("expected a multiple of 32 below n_block ({}), got {}", knobs_.n_block,
                                              knobs_.split_p_columns));
  }
  {
    const auto& v = r.raw("exp2_emulation");
    if (v.is_string()) {
      const std::string s = r.choice("exp2_emulation", {"auto", "off"});
      if (s == "off") knobs_.ex2_emu = std::array<int, 3>{0, 0, 0};
    } else {
      JsonReader e = r.object("exp2_emulation");
      const int freq = static_cast<int>(e.integer("freq", 0, 64));
      const int res = static_cast<int>(e.integer("res", 0, 64));
      const int frg = static_cast<int>(e.integer("start_frg", 0, 8));
      e.finish();
      if (freq > 0 && (res > freq)) e.fail_at("res", fmt::format("expected res <= freq ({}), got {}", freq, res));
      if (freq > 0 && freq % 2) e.fail_at("freq", "expected an even number (elements are emulated in pairs)");
      knobs_.ex2_emu = std::array<int, 3>{freq, res, frg};
    }
  }
  {
    JsonReader rs = r.object("rescale");
    knobs_.conditional_rescale = rs.boolean("conditional");
    knobs_.rescale_threshold_log2 = rs.number("threshold_log2", 0, 126);
    rs.finish();
  }
  knobs_.correction_warpgroup = r.boolean("correction_warpgroup");
  pipelines_ = derived_pipelines(roles_, role_ids_, knobs_.correction_warpgroup);
  knobs_.exp_order_barrier = r.boolean("exp_order_barrier");
  knobs_.tile_scheduler = r.choice("tile_scheduler", {"auto", "static_persistent", "lpt"});
  costs_ = CostModel::from_schedule(r);
}

std::vector<std::string> Fa4Schedule::roles() const {
  std::vector<std::string> out = {"load", "mma"};
  for (int s = 0; s < 4; ++s)
    if (roles_.count("softmax" + std::to_string(s))) out.push_back("softmax" + std::to_string(s));
  for (const char* r : {"correction", "epilogue", "empty"})
    if (roles_.count(r)) out.push_back(r);
  return out;
}

Resolved Fa4Schedule::resolve(const Hardware& hw, const Problem& p) const {
  Resolved k{};
  k.m_block = knobs_.m_block;
  k.n_block = knobs_.n_block;
  k.q_stage = knobs_.q_stage;
  k.head_dim = p.head_dim;
  k.head_dim_v = p.head_dim_v;
  // 2-CTA only for non-causal, hd in {128, 192} with hdv 128, seqlen_q > 256 (FA4 interface.py).
  k.cta_group_auto = !knobs_.cta_group;
  k.cta_group = knobs_.cta_group.value_or(
      (!p.causal && (p.head_dim == 128 || p.head_dim == 192) && p.head_dim_v == 128 && p.seqlen_q > 256) ? 2 : 1);
  const long long eb = p.elem_bytes();
  const long long q_bytes = static_cast<long long>(k.q_stage) * k.m_block * p.head_dim * eb;
  const long long o_bytes = static_cast<long long>(k.q_stage) * k.m_block * p.head_dim_v * eb;
  const long long stage_bytes =
      static_cast<long long>(k.n_block / k.cta_group) * std::max(p.head_dim, p.head_dim_v) * eb;
  k.kv_stage_auto = !knobs_.kv_stage;
  // FA4: kv_stage = min((224 KiB - smem(Q) - smem(O)) / smem_per_stage, 32).
  k.kv_stage =
      knobs_.kv_stage.value_or(static_cast<int>(std::clamp((224 * kKiB - q_bytes - o_bytes) / stage_bytes, 1LL, 32LL)));
  const long long stats_bytes = static_cast<long long>(k.q_stage) * 2 * k.m_block * 4;  // sScale: max and sum
  const long long barrier_bytes = 1024;
  k.smem_bytes = q_bytes + o_bytes + k.kv_stage * stage_bytes + stats_bytes + barrier_bytes;
  k.registers_auto = !knobs_.registers;
  if (knobs_.registers) {
    k.reg_softmax = knobs_.registers->at("softmax");
    k.reg_correction = knobs_.registers->at("correction");
    k.reg_other = knobs_.registers->at("other");
  } else if (p.head_dim == 128 && k.cta_group == 2 && !p.causal) {
    k.reg_softmax = 176, k.reg_correction = 88, k.reg_other = 72;
  } else if (p.head_dim == 128 && p.causal) {
    k.reg_softmax = 192, k.reg_correction = 72, k.reg_other = 56;
  } else {
    k.reg_softmax = 192, k.reg_correction = 80, k.reg_other = 48;
  }
  k.split_columns = knobs_.split_p ? knobs_.split_p_columns : k.n_block;
  k.ex2_auto = !knobs_.ex2_emu;
  std::array<int, 3> emu{0, 0, 0};
  if (knobs_.ex2_emu)
    emu = *knobs_.ex2_emu;
  else if (k.cta_group == 2 && !p.causal && p.head_dim == 128)
    emu = {10, 4, 1};
  else if (k.cta_group == 1 && p.causal && p.head_dim == 128)
    emu = {16, 4, 1};
  else if (k.cta_group == 2 && !p.causal && p.head_dim == 192)
    emu = {16, 4, 0};
  k.emu_freq = emu[0], k.emu_res = emu[1], k.emu_start_frg = emu[2];
  // Which pairs of each 32-element fragment take the emulated exp2 (kernels/common/softmax_math.h).
  const int frags = k.n_block / 32;
  double total = 0;
  for (int j = 0; j < frags; ++j) {
    const double share = exp2_emulated_share(j, frags, k.emu_freq, k.emu_res, k.emu_start_frg);
    k.emu_share_per_fragment.push_back(share);
    total += 32 * share;
  }
  k.emu_share = total / k.n_block;
  k.persistent = knobs_.tile_scheduler == "static_persistent" || (knobs_.tile_scheduler == "auto" && !p.causal);
  return k;
}

void Fa4Schedule::check(const Hardware& hw, const Problem& p) const {
  const std::string& f = file_;
  if (hw.arch != "sm100")
    throw InputError(f, "/arch",
                     fmt::format("this schedule needs SM100 (tcgen05.mma, TMEM, 2-CTA MMA); {} ({}) has no "
                                 "TMEM and no tcgen05: use an SM90 schedule on it",
                                 hw.name, hw.arch),
                     "arch");
  const Resolved k = resolve(hw, p);
  // MMA shape rules, tcgen05.mma kind::f16 (CUTLASS mma_sm100_umma.hpp): M = m_block * cta_group.
  const int M = k.m_block * k.cta_group;
  if (k.cta_group == 2 && !(M == 128 || M == 256))
    throw InputError(f, "/cta_group", fmt::format("2-CTA MMA needs M in {{128, 256}}, got {}", M), "mma_shape");
  for (const auto& [what, n] :
       std::vector<std::pair<std::string, int>>{{"n_block (QK^T N)", k.n_block}, {"head_dim_v (PV N)", k.head_dim_v}}) {
    if (n > 256 || n % 16)
      throw InputError(f, "/tile",
                       fmt::format("tcgen05.mma with M = 128 needs N a multiple of 16 up to 256; {} = {}", what, n),
                       "mma_shape");
  }
  if (k.head_dim % 16) throw InputError(f, "/tile", "head_dim must be a multiple of the MMA K step (16)", "mma_shape");
  if (k.n_block % k.cta_group)
    throw InputError(f, "/cta_group", "n_block must split evenly across the CTAs of the cluster", "mma_shape");
  // SMEM
  if (k.smem_bytes > hw.smem_bytes_per_block)
    throw InputError(
        f, k.kv_stage_auto ? "/q_stage" : "/kv_stage",
        fmt::format("SMEM overflow: Q {} + O {} + {} K/V stages of {} B + stats/barriers = {} B > {} B per CTA on {}",
                    k.q_stage * k.m_block * k.head_dim * 2, k.q_stage * k.m_block * k.head_dim_v * 2, k.kv_stage,
                    (k.n_block / k.cta_group) * std::max(k.head_dim, k.head_dim_v) * 2, k.smem_bytes,
                    hw.smem_bytes_per_block, hw.name),
        "smem");
  if (k.kv_stage < 2)
    throw InputError(f, "/kv_stage",
                     "expected at least 2 K/V stages: K_j and V_j share one ring and are in flight together", "smem");
  // Registers (setmaxnreg): 32-bit registers per SM.
  int softmax_warps = 0, correction_warps = 0, other_warps = 0;
  for (const auto& [role, d] : roles_) {
    const Role r = role_ids_.at(role).role;
    if (r == Role::Softmax)
      softmax_warps += static_cast<int>(d.warps.size());
    else if (r == Role::Correction)
      correction_warps += static_cast<int>(d.warps.size());
    else
      other_warps += static_cast<int>(d.warps.size());
  }
  const long long regs =
      32LL * (softmax_warps * k.reg_softmax + correction_warps * k.reg_correction + other_warps * k.reg_other);
  if (regs > hw.registers_per_sm)
    throw InputError(
        f, "/registers",
        fmt::format(
            "register overflow: 32 x ({} softmax warps x {} + {} correction x {} + {} other x {}) = {} > {} per SM",
            softmax_warps, k.reg_softmax, correction_warps, k.reg_correction, other_warps, k.reg_other, regs,
            hw.registers_per_sm),
        "registers");
  if (k.reg_softmax < k.n_block)
    throw InputError(
        f, "/registers/softmax",
        fmt::format("a softmax thread holds its row of S (n_block = {} fp32) in registers; {} registers cannot",
                    k.n_block, k.reg_softmax),
        "registers");
  const int warps_total = softmax_warps + correction_warps + other_warps;
  if (warps_total * 32 > 1024) throw InputError(f, "/warps", "more than 1024 threads per CTA", "threads");
  // Named barriers: 16 per CTA, barrier 0 is __syncthreads.
  const int named = k.q_stage * 4 + (knobs_.exp_order_barrier ? k.q_stage : 0);
  if (named > 15)
    throw InputError(f, "/named_barriers", fmt::format("{} named barriers needed, 15 available", named),
                     "named_barriers");
  if (knobs_.exp_order_barrier && k.q_stage != 2)
    throw InputError(f, "/exp_order_barrier",
                     "the exp-ordering barrier alternates two softmax warpgroups: needs q_stage 2", "named_barriers");
  // TMEM: regions needed for this q_stage, sizes, overlaps, allocation.
  if (!hw.has_tmem()) throw InputError(f, "/tmem", fmt::format("{} has no tensor memory", hw.name), "arch");
  int max_end = 0;
  for (int s = 0; s < k.q_stage; ++s) {
    // (fmt, not "S" + to_string: GCC 12 warns -Wrestrict on that at -O3, a known false positive.)
    const std::string S = fmt::format("S{}", s), P = fmt::format("P{}", s), O = fmt::format("O{}", s);
    for (const auto& [name, need] :
         std::vector<std::pair<std::string, int>>{{S, k.n_block}, {P, k.n_block / 2}, {O, k.head_dim_v}}) {
      auto it = tmem_.find(name);
      if (it == tmem_.end())
        throw InputError(f, "/tmem",
                         fmt::format("q_stage {} needs a TMEM region {} ({} columns)", k.q_stage, name, need), "tmem");
      if (it->second.columns < need)
        throw InputError(f, "/tmem/" + name + "/columns",
                         fmt::format("expected at least {} columns ({}), got {}", need,
                                     name[0] == 'S'   ? "n_block fp32 scores"
                                     : name[0] == 'P' ? "n_block bf16 probabilities, 2 per column"
                                                      : "head_dim_v fp32 accumulators",
                                     it->second.columns),
                         "tmem");
    }
  }
  for (const auto& [name, r] : tmem_) {
    max_end = std::max(max_end, r.start + r.columns);
    if (r.start + r.columns > hw.tmem_columns)
      throw InputError(f, "/tmem/" + name,
                       fmt::format("TMEM overflow: columns [{}, {}) exceed the {} columns of {}", r.start,
                                   r.start + r.columns, hw.tmem_columns, hw.name),
                       "tmem");
    if (!r.alias_of.empty()) {
      const TmemRegion& base = tmem_.at(r.alias_of);
      if (r.start < base.start || r.start + r.columns > base.start + base.columns)
        throw InputError(f, "/tmem/" + name,
                         fmt::format("alias of {} must lie inside it: [{}, {}) vs [{}, {})", r.alias_of, r.start,
                                     r.start + r.columns, base.start, base.start + base.columns),
                         "tmem");
    }
  }
  for (auto a = tmem_.begin(); a != tmem_.end(); ++a)
    for (auto b = std::next(a); b != tmem_.end(); ++b) {
      const bool overlap = a->second.start < b->second.start + b->second.columns &&
                           b->second.start < a->second.start + a->second.columns;
      const bool aliased = a->second.alias_of == b->first || b->second.alias_of == a->first;
      if (overlap && !aliased)
        throw InputError(f, "/tmem/" + b->first,
                         fmt::format("TMEM columns [{}, {}) overlap {} [{}, {}); only P<s> may lie over S<s>",
                                     b->second.start, b->second.start + b->second.columns, a->first, a->second.start,
                                     a->second.start + a->second.columns),
                         "tmem");
    }
  // One CTA per SM allocates every column its regions use (FA4 allocates all 512).
  TmemAllocator tmem(hw.tmem_columns);
  if (!tmem.allocate(max_end))
    throw InputError(f, "/tmem",
                     fmt::format("TMEM allocation of {} columns (regions end at {}) exceeds {}",
                                 TmemAllocator::round_up(max_end), max_end, hw.tmem_columns),
                     "tmem");
  // Pipeline counts are derived (pipelines.cpp); the lowering checks its arrivals against them.
}

std::map<std::string, double> Fa4Schedule::resources(const Hardware& hw, const Problem& p) const {
  const Resolved k = resolve(hw, p);
  double regs = 0, warps = 0, max_end = 0;
  for (const auto& [role, d] : roles_) {
    const Role id = role_ids_.at(role).role;
    const int r = id == Role::Softmax ? k.reg_softmax : id == Role::Correction ? k.reg_correction : k.reg_other;
    regs += 32.0 * r * static_cast<double>(d.warps.size());
    warps += static_cast<double>(d.warps.size());
  }
  for (const auto& [name, r] : tmem_) max_end = std::max<double>(max_end, r.start + r.columns);
  return {{"smem_bytes", static_cast<double>(k.smem_bytes)},
          {"tmem_columns", static_cast<double>(TmemAllocator::round_up(static_cast<int>(max_end)))},
          {"registers", regs},
          {"warps", warps}};
}

KernelChoice Fa4Schedule::real_kernel(const Hardware& hw, const Problem& p) const {
  KernelChoice c;
  const Resolved k = resolve(hw, p);
  auto no = [&](std::string why) {
    c.why_not = std::move(why);
    return c;
  };
  if (p.head_dim != 64 && p.head_dim != 128)
    return no(fmt::format("head_dim {}: kernels/sm100 is built for 64 and 128", p.head_dim));
  if (p.head_dim_v != p.head_dim || p.dtype != "bf16")
    return no("kernels/sm100 implements bf16 with head_dim_v = head_dim only");
  if (k.cta_group == 2 && p.head_dim != 128)
    return no(
        fmt::format("cta_group 2{} at head_dim {}: kernels/sm100 builds 2-CTA tcgen05.mma for head_dim 128 only "
                    "(each CTA holds 64 of V's columns, one 128-byte swizzle row); with cta_group 1 it runs "
                    "(--set /cta_group=1)",
                    k.cta_group_auto ? " (auto)" : "", p.head_dim));
  if (k.m_block != sm100::kMBlock || k.n_block != sm100::kNBlock)
    return no(fmt::format("tile {}x{}: kernels/sm100 is built for 128x128", k.m_block, k.n_block));
  if (k.q_stage > 2) return no(fmt::format("q_stage {}: kernels/sm100 has two softmax warpgroups", k.q_stage));
  // The kernel's warp roles are FA4's fixed layout (kernels/sm100/structure.h warp_role).
  for (const auto& [role, d] : roles_)
    for (int w : d.warps) {
      const std::string kernel_role = w < sm100::kWarps ? sm100::warp_role_name(w) : "none";
      if (kernel_role != role)
        return no(fmt::format("warp {} is {} here but {} in kernels/sm100 (FA4's layout: softmax0 0-3, softmax1 "
                              "4-7, correction 8-11, mma 12, epilogue 13, load 14, empty 15)",
                              w, role, kernel_role));
    }
  int max_end = 0;
  for (const auto& [name, r] : tmem_) max_end = std::max(max_end, r.start + r.columns);
  auto start = [&](const std::string& region, int fallback) {
    auto it = tmem_.find(region);
    return it == tmem_.end() ? fallback : it->second.start;
  };
  sm100::KernelKnobs kk;
  kk.head_dim = p.head_dim;
  kk.q_stage = k.q_stage;
  kk.kv_stage = k.kv_stage;
  kk.cta_group = k.cta_group;
  kk.split_columns = k.split_columns;
  kk.emu_freq = k.emu_freq, kk.emu_res = k.emu_res, kk.emu_start_frg = k.emu_start_frg;
  kk.conditional_rescale = knobs_.conditional_rescale;
  kk.rescale_threshold_milli = knobs_.conditional_rescale ? static_cast<int>(std::lround(knobs_.rescale_threshold_log2 * 1000))
                                                         : 0;
  kk.correction_warpgroup = knobs_.correction_warpgroup;
  kk.reg_softmax = k.reg_softmax, kk.reg_correction = k.reg_correction, kk.reg_other = k.reg_other;
  kk.exp_order_barrier = knobs_.exp_order_barrier;
  // Stage 1's regions are unused with q_stage 1; stage 0's stand in when the map omits them.
  kk.tmem_s0 = start("S0", 0), kk.tmem_p0 = start("P0", 0), kk.tmem_o0 = start("O0", 0);
  kk.tmem_s1 = start("S1", kk.tmem_s0), kk.tmem_p1 = start("P1", kk.tmem_p0), kk.tmem_o1 = start("O1", kk.tmem_o0);
  kk.tmem_alloc = TmemAllocator::round_up(max_end);
  c.supported = true;
  c.knobs = kk;
  c.scheduler = k.persistent ? TileScheduler::StaticPersistent : TileScheduler::Lpt;
  return c;
}

GridPlan Fa4Schedule::plan_grid(const Hardware& hw, const Problem& p, long long max_tiles) const {
  const Resolved k = resolve(hw, p);
  TilingSpec t;
  t.rows_per_cta = k.m_block * k.q_stage;  // two ping-ponged Q tiles per CTA
  t.n_block = k.n_block;
  t.cta_group = k.cta_group;
  t.scheduler = k.persistent ? TileScheduler::StaticPersistent : TileScheduler::Lpt;
  return plan_tiles(hw, p, t, max_tiles);
}

std::vector<std::string> Fa4Schedule::knob_lines(const Hardware& hw, const Problem& p) const {
  const Resolved k = resolve(hw, p);
  auto a = [](bool is_auto) { return is_auto ? " (auto)" : ""; };
  std::vector<std::string> out;
  out.push_back(fmt::format("tile {}x{}, q_stage {}, kv_stage {}{}, cta_group {}{}", k.m_block, k.n_block, k.q_stage,
                            k.kv_stage, a(k.kv_stage_auto), k.cta_group, a(k.cta_group_auto)));
  out.push_back(fmt::format("registers softmax/correction/other {}/{}/{}{}, SMEM {} B", k.reg_softmax, k.reg_correction,
                            k.reg_other, a(k.registers_auto), k.smem_bytes));
  out.push_back(
      fmt::format("split P {}, exp2 emulation {}{}, rescale {} (threshold {} log2), correction warpgroup {}, "
                  "exp-order barrier {}, scheduler {}",
                  knobs_.split_p ? fmt::format("at {} of {} columns", k.split_columns, k.n_block) : "off",
                  k.emu_freq ? fmt::format("freq {} res {} start_frg {} = {:.2f}% of exp2", k.emu_freq, k.emu_res,
                                           k.emu_start_frg, 100 * k.emu_share)
                             : "off",
                  a(k.ex2_auto), knobs_.conditional_rescale ? "conditional" : "every block",
                  knobs_.rescale_threshold_log2, knobs_.correction_warpgroup ? "on" : "off",
                  knobs_.exp_order_barrier ? "on" : "off", k.persistent ? "static persistent" : "LPT single-tile"));
  if (!knobs_.conditional_rescale)
    out.push_back("O rescaled at every KV block after the first");
  else if (p.rescale_rate)
    out.push_back(fmt::format("O rescale rate {:.2f}% of (warp, KV block) steps (given)", 100 * *p.rescale_rate));
  else
    out.push_back(fmt::format(
        "O rescale rate {:.2f}% of (warp, KV block) steps (from random N(0,1) Q, K scores at hd {}, seqlen_k {})",
        100 * rescale_from_random_scores(p.head_dim, p.seqlen_k, k.n_block, 4, knobs_.rescale_threshold_log2).rate(),
        p.head_dim, p.seqlen_k));
  return out;
}

}  // namespace attnsim::fa4

namespace attnsim {
std::unique_ptr<Schedule> parse_fa4_schedule(JsonReader& r) { return std::make_unique<fa4::Fa4Schedule>(r); }
}  // namespace attnsim
