// The "fa2_sm80" family: a FlashAttention-2-style kernel without warp specialization, as
// CuFlash-Attn (github.com/LessUp/cuflash-attn, Kernel Deep Dive): 128 threads (4 warps) per
// CTA, one CTA per (batch, head) that walks every Q tile of Br rows; per KV tile of Bc rows
// warps 0-1 copy K and V to SMEM and everyone waits (__syncthreads), then each warp computes
// Br/4 rows: S = Q K^T, online softmax, O += P V (on the CUDA cores, or with mma.sync), and
// __syncthreads again before the tile is overwritten. Causal tiles past the diagonal are skipped.
// Runs on any SM80+ GPU; several CTAs share an SM as occupancy allows.
#include <fmt/format.h>

#include <algorithm>

#include "lower/builder.hpp"
#include "lower/costs.hpp"
#include "lower/families.hpp"
#include "lower/issue_timing.hpp"
#include "plan/tile_scheduler.hpp"

namespace attnsim {
namespace {

using fa2::kWarps;  // the kernel's structure (kernels/fa2/structure.h)

class Fa2Schedule : public Schedule {
 public:
  explicit Fa2Schedule(JsonReader& r) {
    read_header(r);
    const auto& b = r.raw("block");
    if (!(b.is_string() && b.get<std::string>() == "auto")) {
      JsonReader o = r.object("block");
      br_ = static_cast<int>(o.integer("Br", 16, 256));
      bc_ = static_cast<int>(o.integer("Bc", 8, 256));
      o.finish();
      if (*br_ % (16 * kWarps)) r.fail_at("block", "Br must be a multiple of 64 (4 warps x 16 rows)");
    }
    gemm_ = r.choice("gemm", {"fma", "mma_sync"});
    registers_ = static_cast<int>(r.integer("registers_per_thread", 32, 255));
    const auto& c = r.raw("ctas_per_sm");
    if (!(c.is_string() && c.get<std::string>() == "auto"))
      ctas_per_sm_ = static_cast<int>(r.integer("ctas_per_sm", 1, 32));
    costs_ = CostModel::from_schedule(r);
    issue_ = IssueTimings::from_schedule(r, issue_name_);
  }

  struct Resolved {
    int br, bc, ctas_per_sm, occupancy;
    long long smem_bytes;
  };

  Resolved resolve(const Hardware& hw, const Problem& p) const {
    Resolved k{};
    // CuFlash: Br = 64; Bc = 64 at d = 64, 32 at d = 128 (SMEM); 16 beyond.
    k.br = br_.value_or(64);
    k.bc = bc_.value_or(p.head_dim <= 64 ? 64 : p.head_dim <= 128 ? 32 : 16);
    // Q, K, V tiles (16-bit) and the S tile (fp32) in SMEM: the kernel's layout.
    k.smem_bytes = fa2::smem_layout(k.br, k.bc, p.head_dim, p.head_dim_v, 2).bytes;
    const int by_smem = static_cast<int>(hw.smem_bytes_per_block / std::max(1LL, k.smem_bytes));
    const int by_regs = hw.ctas_per_sm_by_registers(kWarps * 32, registers_);
    const int by_warps = hw.max_warps_per_sm / kWarps;
    k.occupancy = std::max(1, std::min({by_smem, by_regs, by_warps}));
    const long long ctas = static_cast<long long>(p.batch) * p.heads;
    const int needed = static_cast<int>((ctas + hw.num_sms - 1) / hw.num_sms);  // do not co-schedule more than exist
    k.ctas_per_sm = ctas_per_sm_.value_or(std::min(k.occupancy, needed));
    return k;
  }

  void check(const Hardware& hw, const Problem& p) const override {
    const Resolved k = resolve(hw, p);
    if (k.smem_bytes > hw.smem_bytes_per_block)
      throw InputError(
          file_, "/block",
          fmt::format("SMEM overflow: Q, K, V and S tiles take {} B > {} B", k.smem_bytes, hw.smem_bytes_per_block),
          "smem");
    if (k.ctas_per_sm > k.occupancy)
      throw InputError(
          file_, "/ctas_per_sm",
          fmt::format("{} CTAs do not fit on one SM (SMEM, registers, warps allow {})", k.ctas_per_sm, k.occupancy),
          "registers");
    if (gemm_ == "mma_sync" && (k.bc % 8 || p.head_dim % 16))
      throw InputError(file_, "/gemm", "mma.sync m16n8k16 needs Bc a multiple of 8 and head_dim a multiple of 16",
                       "mma_shape");
  }

  GridPlan plan_grid(const Hardware& hw, const Problem& p, long long max_tiles) const override {
    const Resolved k = resolve(hw, p);
    TilingSpec t;
    t.rows_per_cta = k.br;
    t.n_block = k.bc;
    t.scheduler = TileScheduler::Lpt;
    t.tiles_per_head = true;
    t.ctas_per_sm = k.ctas_per_sm;
    return plan_tiles(hw, p, t, max_tiles);
  }

  CtaProgram lower(const Hardware& hw, const Problem& p, const std::vector<TileWork>& tiles) const override {
    const Resolved k = resolve(hw, p);
    CtaBuilder cta;
    const int sync = cta.barrier("bar.syncthreads", kWarps * 32, true);
    const double eb = p.elem_bytes();
    const int rows = k.br / kWarps;  // rows per warp
    const double per_thread_scores = static_cast<double>(rows) * k.bc / 32;
    const double per_thread_out = static_cast<double>(rows) * p.head_dim_v / 32;
    // The compiled kernel's blocks timed from its SASS (in-order issue of one warp), when the
    // schedule names an issue-timing file that has this tile shape; instruction counts otherwise.
    const KernelIssue* sass = issue_ && gemm_ == "fma" ? issue_->find(p.head_dim, k.br, k.bc) : nullptr;
    auto timed = [&](WarpBuilder& w, int op, const Work& counted, double latency = 0) {
      if (!sass) return w.compute(op, counted, latency);
      const auto b = sass->blocks.find(attnsim_op_name(op));
      if (b == sass->blocks.end())
        throw InputError(issue_->file(), "/kernels", fmt::format("{} has no block {}", sass->kernel, attnsim_op_name(op)));
      w.compute(op, b->second.work(), 0, 0, b->second.timing());
    };
    Work qk, pv;
    if (gemm_ == "fma") {
      qk = costs_.work("fma_qk", per_thread_scores * p.head_dim);
      pv = costs_.work("fma_pv", per_thread_out * k.bc);
    } else {  // mma.sync m16n8k16 with ldmatrix operand loads (16 B per thread per x4)
      qk.mma_sync_flops = 2.0 * rows * k.bc * p.head_dim;
      qk.issue = qk.mma_sync_flops / 4096;
      qk.smem_bytes = (static_cast<double>(rows) * p.head_dim + static_cast<double>(k.bc) * p.head_dim) * eb;
      pv.mma_sync_flops = 2.0 * rows * p.head_dim_v * k.bc;
      pv.issue = pv.mma_sync_flops / 4096;
      pv.smem_bytes = static_cast<double>(k.bc) * p.head_dim_v * eb;
    }
    const Work max_w = costs_.work("softmax_max", per_thread_scores, rows / 32.0 * 2);
    Work exp_w = costs_.work("softmax_exp", per_thread_scores, rows / 32.0 * 2);
    exp_w += costs_.work("pack_p", per_thread_scores, 0);
    const Work mask_w = costs_.work("softmax_mask", per_thread_scores, 0);
    const Work rescale_w = costs_.work("rescale_o", per_thread_out, 0);
    const Work final_w = costs_.work("final_o", per_thread_out, rows / 32.0 * 2);
    for (int wi = 0; wi < kWarps; ++wi) {
      WarpBuilder w = cta.warp(wi, fa2::kWarpRole);
      for (size_t t = 0; t < tiles.size(); ++t) {
        const int tile = static_cast<int>(t), n = tiles[t].n_blocks;
        w.tags(-1, -1, tile);
        w.cp_async(ATTNSIM_OP_LOAD_Q, static_cast<double>(rows) * p.head_dim * eb);  // each warp its Q rows
        w.wait_cp_async(0);
        for (int j = 0; j < n; ++j) {
          w.tags(-1, j, tile);
          if (wi < fa2::kLoadWarps) {  // warps 0-1 bring K and V (half of each tile each)
            const auto copy = sass ? sass->blocks.find("copy_kv") : decltype(sass->blocks.end()){};
            if (sass && copy != sass->blocks.end()) {
              // 16-byte loads and shared stores, each group of loads waiting out its L2 latency.
              w.sync_copy(copy->second.cycles);
            } else {
              w.cp_async(ATTNSIM_OP_LOAD_K, k.bc * p.head_dim * eb / 2);
              w.cp_async(ATTNSIM_OP_LOAD_V, k.bc * p.head_dim_v * eb / 2);
              w.wait_cp_async(0);
            }
          }
          w.bar_sync(sync, 32);
          timed(w, ATTNSIM_OP_MMA_QK, qk);
          Work m = max_w;
          // (Timed from the SASS, the mask is part of every block: the kernel tests each element.)
          if (j >= n - tiles[t].masked_blocks) m += mask_w;
          timed(w, ATTNSIM_OP_SOFTMAX_MAX, m, costs_.latency("softmax_max"));
          timed(w, ATTNSIM_OP_SOFTMAX_EXP, exp_w);
          if (j > 0) timed(w, ATTNSIM_OP_RESCALE_O, rescale_w);
          timed(w, ATTNSIM_OP_MMA_PV, pv);
          w.bar_sync(sync, 32);  // the K/V tile may be overwritten
        }
        w.tags(-1, -1, tile);
        w.compute(ATTNSIM_OP_FINAL_O, final_w, costs_.latency("final_o"));
        w.tma_store(ATTNSIM_OP_STORE_O, static_cast<double>(rows) * p.head_dim_v * eb);  // vectorised global stores
      }
    }
    return cta.take();
  }

  std::vector<std::string> knob_lines(const Hardware& hw, const Problem& p) const override {
    const Resolved k = resolve(hw, p);
    const KernelIssue* sass = issue_ && gemm_ == "fma" ? issue_->find(p.head_dim, k.br, k.bc) : nullptr;
    return {fmt::format(
                "Br {} x Bc {}{}, 4 warps (no warp specialization), GEMMs on {}, SMEM {} B, {} CTA{} per SM (occupancy {})",
                k.br, k.bc, br_ ? "" : " (auto)", gemm_ == "fma" ? "the CUDA cores (FFMA)" : "mma.sync m16n8k16",
                k.smem_bytes, k.ctas_per_sm, k.ctas_per_sm > 1 ? "s" : "", k.occupancy),
            sass ? fmt::format("compute blocks timed from the SASS of {} ({})", sass->kernel, issue_name_)
                 : "compute blocks priced by instruction counts (no SASS timing for this tile shape)"};
  }
  std::vector<std::string> roles() const override { return {fa2::kWarpRole}; }
  Hardware::ClockLoad clock_load() const override {
    return gemm_ == "fma" ? Hardware::ClockLoad::cuda_cores : Hardware::ClockLoad::mma_sync;
  }
  KernelChoice real_kernel(const Hardware& hw, const Problem& p) const override {
    KernelChoice c;
    if (gemm_ != "fma") {
      c.why_not = "gemm mma_sync is modelled but not implemented in kernels/fa2 (CUDA cores only)";
      return c;
    }
    if (p.head_dim != 64 && p.head_dim != 128) {
      c.why_not = fmt::format("head_dim {}: kernels/fa2 is built for 64 and 128", p.head_dim);
      return c;
    }
    if (p.head_dim_v != p.head_dim || p.dtype != "bf16") {
      c.why_not = "kernels/fa2 implements bf16 with head_dim_v = head_dim only";
      return c;
    }
    const Resolved k = resolve(hw, p);
    if (k.br != 64) {
      c.why_not = fmt::format("Br {}: kernels/fa2 is built for Br = 64 (16 rows per warp)", k.br);
      return c;
    }
    c.supported = true;
    c.knobs = fa2::KernelKnobs{p.head_dim, k.br, k.bc};
    return c;
  }
  std::map<std::string, double> resources(const Hardware& hw, const Problem& p) const override {
    const Resolved k = resolve(hw, p);
    return {{"smem_bytes", static_cast<double>(k.smem_bytes)},
            {"registers", 128.0 * registers_},
            {"warps", kWarps},
            {"tmem_columns", 0}};
  }

 private:
  std::optional<int> br_, bc_, ctas_per_sm_;
  std::string gemm_;
  int registers_ = 112;
  CostModel costs_;
  const IssueTimings* issue_ = nullptr;  ///< the kernel's blocks timed from its SASS (optional)
  std::string issue_name_;               ///< its path as the schedule gives it
};

}  // namespace

std::unique_ptr<Schedule> parse_fa2_schedule(JsonReader& r) { return std::make_unique<Fa2Schedule>(r); }

}  // namespace attnsim
