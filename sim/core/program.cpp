#include "core/program.hpp"

#include <algorithm>

namespace attnsim {

Work& Work::operator+=(const Work& o) {
  mma_sync_flops += o.mma_sync_flops;
  issue += o.issue;
  fma_lanes += o.fma_lanes;
  alu_lanes += o.alu_lanes;
  mufu_lanes += o.mufu_lanes;
  tmem_bytes += o.tmem_bytes;
  smem_bytes += o.smem_bytes;
  return *this;
}

Work Work::scaled(double f) const {
  Work w{issue * f, fma_lanes * f, alu_lanes * f, mufu_lanes * f, 0, tmem_bytes * f, smem_bytes * f};
  w.mma_sync_flops = mma_sync_flops * f;
  return w;
}

bool Work::empty() const {
  return issue == 0 && fma_lanes == 0 && alu_lanes == 0 && mufu_lanes == 0 && mma_sync_flops == 0 && tmem_bytes == 0 &&
         smem_bytes == 0;
}

CtaProgram merge_ctas(const std::vector<CtaProgram>& ctas) {
  CtaProgram out;
  int warp_base = 0;
  for (size_t c = 0; c < ctas.size(); ++c) {
    const int slot_base = static_cast<int>(out.warps.size());
    const int barrier_base = static_cast<int>(out.barriers.size());
    int max_warp = -1;
    for (const auto& w : ctas[c].warps) {
      WarpProgram m = w;
      m.warp += warp_base;
      if (c > 0) m.role = "cta" + std::to_string(c) + " " + m.role;
      for (auto& op : m.ops) {
        if (op.barrier >= 0) op.barrier += barrier_base;
        op.cta_rank = static_cast<int32_t>(c);
      }
      max_warp = std::max(max_warp, w.warp);
      out.warps.push_back(std::move(m));
    }
    out.compute_blocks.insert(out.compute_blocks.end(), ctas[c].compute_blocks.begin(), ctas[c].compute_blocks.end());
    for (const auto& b : ctas[c].barriers) {
      BarrierDecl d = b;
      if (c > 0) d.name = "cta" + std::to_string(c) + " " + d.name;
      for (int& a : d.arrivers) a += slot_base;
      out.barriers.push_back(std::move(d));
    }
    warp_base += max_warp + 1;
  }
  return out;
}

}  // namespace attnsim
