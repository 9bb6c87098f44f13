#include "core/tmem_allocator.hpp"

namespace attnsim {

int TmemAllocator::round_up(int columns) {
  int n = 32;
  while (n < columns) n *= 2;
  return n;
}

std::optional<int> TmemAllocator::allocate(int columns) {
  const int size = round_up(columns);
  for (int base = 0; base + size <= columns_; base += size) {
    bool free = true;
    for (const auto& [b, s] : used_)
      if (b < base + size && base < b + s) {
        free = false;
        break;
      }
    if (free) {
      used_[base] = size;
      return base;
    }
  }
  return std::nullopt;
}

}  // namespace attnsim
