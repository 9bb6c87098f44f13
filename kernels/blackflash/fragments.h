// Where the BlackFlash kernel's lanes read and write SMEM: the 128B-swizzled address of an element
// of a 64 x 64 bf16 tile, the row addresses each lane gives ldmatrix for the A and B operands of
// mma.sync.m16n8k16, and the tile elements a lane's accumulator holds. Fragment layouts as the
// PTX ISA documents them ("Matrix Fragments for mma.m16n8k16 with floating point type",
// "ldmatrix"). Plain C++ (constexpr), so that tests/unit/test_blackflash.cpp can run the kernel's
// addressing against an emulation of ldmatrix and mma.sync on the CPU.
#pragma once

#include <cstdint>

#include "common/tile_order.h"  // ATTNSIM_HD

namespace attnsim::blackflash {

/// A (row, column) position in a tile.
struct RowCol {
  int row, col;
};

/// Byte offset of element (row, col) of a 64 x 64 bf16 tile whose 128-byte rows are
/// 128B-swizzled, the layout TMA writes with CU_TENSOR_MAP_SWIZZLE_128B: within each 1024-byte
/// group of 8 rows, the 16-byte chunk c of a row is stored at chunk c ^ (row % 8) (CUTLASS's
/// Swizzle<3, 4, 3>). The tile's base must be 1024-byte aligned.
ATTNSIM_HD constexpr uint32_t swizzled(int row, int col) {
  return static_cast<uint32_t>(row * 128 + ((((col >> 3) ^ row) & 7) << 4) + 2 * (col & 7));
}

/// ldmatrix.x4 of the 16 x 16 A operand at rows r0.., columns k0.. of a row-major tile: the row
/// lane `lane` addresses. Matrices 0-3 (lanes 8i..8i+7) are (rows +0..7, k +0..7), (+8..15,
/// +0..7), (+0..7, +8..15), (+8..15, +8..15): registers a0..a3 of mma.m16n8k16.
ATTNSIM_HD constexpr RowCol ldsm_a(int lane, int r0, int k0) { return {r0 + lane % 16, k0 + 8 * (lane / 16)}; }

/// ldmatrix.x4 of the B operands of two n-tiles (n0.., n0 + 8..) from a tile stored [n][k] (K: a
/// key per row): matrices (n +0..7, k +0..7), (n +0..7, k +8..15), (n +8..15, k +0..7),
/// (n +8..15, k +8..15) are b0, b1 of n-tile 0 and b0, b1 of n-tile 1.
ATTNSIM_HD constexpr RowCol ldsm_b_nk(int lane, int n0, int k0) {
  return {n0 + lane % 8 + 8 * (lane / 16), k0 + 8 * ((lane / 8) % 2)};
}

/// ldmatrix.x4.trans of the B operands of two n-tiles from a tile stored [k][n] (V: a key per
/// row): matrices (k +0..7, n +0..7), (k +8..15, n +0..7), (k +0..7, n +8..15), (k +8..15,
/// n +8..15), each transposed, are b0, b1 of n-tile 0 and b0, b1 of n-tile 1.
ATTNSIM_HD constexpr RowCol ldsm_b_kn_trans(int lane, int k0, int n0) {
  return {k0 + lane % 8 + 8 * ((lane / 8) % 2), n0 + 8 * (lane / 16)};
}

/// Element e (0-3) of lane `lane`'s m16n8 accumulator: rows lane / 4 (e < 2) and lane / 4 + 8,
/// columns 2 (lane % 4) + e % 2.
ATTNSIM_HD constexpr RowCol acc_elem(int lane, int e) { return {lane / 4 + 8 * (e / 2), 2 * (lane % 4) + e % 2}; }

/// The O copy-out: piece i (0-1023) of the 64 x 64 bf16 tile is 4 elements (8 bytes) at row
/// i / 16, columns 4 (i % 16) ..; thread t of the 256 consumers copies pieces t + 256 k, k < 4.
ATTNSIM_HD constexpr RowCol out_piece(int i) { return {i / 16, 4 * (i % 16)}; }

}  // namespace attnsim::blackflash
