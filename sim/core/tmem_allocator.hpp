// Tensor memory of one SM (SM100): 128 lanes x 512 columns of 32-bit cells.
// tcgen05.alloc hands out a power-of-two number of columns, at least 32, contiguous
// and aligned to its size (CUTLASS include/cute/arch/tmem_allocator_sm100.hpp).
#pragma once
#include <map>
#include <optional>

namespace attnsim {

/// First-fit allocator over TMEM columns with tcgen05.alloc's size rules.
class TmemAllocator {
 public:
  explicit TmemAllocator(int columns) : columns_(columns) {}
  /// Columns an allocation of `columns` really takes: the next power of two, at least 32.
  static int round_up(int columns);
  /// Base column of a new allocation, or nullopt when no aligned free range is left.
  std::optional<int> allocate(int columns);
  /// Frees the allocation starting at `base` (no effect if there is none).
  void free(int base) { used_.erase(base); }
  int columns() const { return columns_; }

 private:
  int columns_;
  std::map<int, int> used_;  ///< base -> size
};

}  // namespace attnsim
