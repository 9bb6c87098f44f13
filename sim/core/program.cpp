#include "core/program.hpp"

namespace attnsim {

Work& Work::operator+=(const Work& o) {
  issue += o.issue;
  fma_lanes += o.fma_lanes;
  alu_lanes += o.alu_lanes;
  mufu_lanes += o.mufu_lanes;
  tmem_bytes += o.tmem_bytes;
  smem_bytes += o.smem_bytes;
  return *this;
}

Work Work::scaled(double f) const {
  return {issue * f, fma_lanes * f, alu_lanes * f, mufu_lanes * f, tmem_bytes * f, smem_bytes * f};
}

bool Work::empty() const {
  return issue == 0 && fma_lanes == 0 && alu_lanes == 0 && mufu_lanes == 0 && tmem_bytes == 0 &&
         smem_bytes == 0;
}

}  // namespace attnsim
