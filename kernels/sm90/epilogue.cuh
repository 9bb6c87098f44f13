// Epilogue of a consumer warpgroup: O / row_sum in bf16, staged in this warpgroup's 64 rows of
// Q's buffer (Q is no longer read: its last QK wgmma has completed), then one TMA store per
// 64-column chunk; LSE = max * scale + ln(sum) per row. Rows past seqlen_q are clipped by TMA.
#pragma once

#include "device.cuh"
#include "kernel_traits.cuh"
#include "smem.cuh"
#include "softmax.cuh"

namespace attnsim::sm90 {

template <class T, bool kRecord>
__device__ __forceinline__ void epilogue(const Params& p, const Smem<T>& s, TraceRecorder<kRecord>& tr, const Tile& c,
                                         int group, int warp, int lane, const float (&o)[T::kHeadDim / 2], RowStats& st,
                                         int tile) {
  constexpr int D = T::kHeadDim;
  uint32_t t0 = tr.now();
  float inv[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    st.sum[r] += __shfl_xor_sync(0xffffffffu, st.sum[r], 1);
    st.sum[r] += __shfl_xor_sync(0xffffffffu, st.sum[r], 2);
    inv[r] = st.sum[r] > 0.f ? 1.f / st.sum[r] : 0.f;
  }
  // Rows of this thread inside the Q box: r = 64 * group + 16 * warp + lane / 4 (+ 8). 128B
  // swizzle: the 16-byte unit u of box row r lives at unit u ^ (r % 8). row[h] is the 32-bit
  // shared address of row r_h's first chunk with the swizzle term (r % 8) << 4 in bits 4-6 (the
  // buffer is 1024-aligned, so nothing else sets them): unit u is at row[h] ^ (u << 4). Two
  // 32-bit registers instead of a 64-bit generic pointer per (row, unit), which ptxas kept live
  // across the whole KV loop (16 registers) or spilled.
  const int rbox = group * 64 + 16 * warp + lane / 4;
  uint32_t row[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int r = rbox + 8 * h;
    row[h] = smem_u32(s.q) + r * 128 + ((r % 8) << 4) + 4 * (lane % 4);
  }
#pragma unroll
  for (int i = 0; i < D / 2; i += 2) {
    const int h = (i / 2) % 2, unit = (i / 4) % 8, chunk = i / 32;  // column 8 * (i / 4) + 2 * (lane % 4)
    const uint32_t dst = (row[h] ^ (unit << 4)) + chunk * T::kMBlock * 128;
    asm volatile("st.shared.b32 [%0], %1;" ::"r"(dst), "r"(pack_bf16(o[i] * inv[h], o[i + 1] * inv[h])) : "memory");
  }
  cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);  // generic-proxy stores -> TMA reads
  tr.span(ATTNSIM_OP_FINAL_O, t0, tr.now(), -1, tile);
  t0 = tr.now();
  named_sync(kBarEpilogue + group, kEpilogueThreads);
  tr.span(ATTNSIM_OP_WAIT, t0, tr.now_after_barrier(s.trace), -1, tile, ATTNSIM_WAIT_EPILOGUE, group);
  if (warp == 0 && lane == 0) {
    t0 = tr.now();
#pragma unroll
    for (int ch = 0; ch < D / 64; ++ch)
      tma_store(&p.tm_o, s.q + ch * T::kMBlock * 128 + group * 64 * 128, ch * 64, c.m * T::kMBlock + group * 64,
                c.head, c.batch);
    cuda::ptx::cp_async_bulk_commit_group();
    cuda::ptx::cp_async_bulk_wait_group_read(cuda::ptx::n32_t<0>{});  // SMEM read: Q's buffer reusable
    tr.span(ATTNSIM_OP_STORE_O, t0, tr.now(), -1, tile);
  }
  if (lane % 4 == 0) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int row = c.m * T::kMBlock + rbox + 8 * r;
      if (row < p.seqlen_q)
        p.lse[(static_cast<long long>(c.batch) * p.heads + c.head) * p.seqlen_q + row] =
            st.sum[r] > 0.f ? st.max[r] * p.scale + logf(st.sum[r]) : -INFINITY;
    }
  }
  t0 = tr.now();
  named_sync(kBarEpilogue + group, kEpilogueThreads);
  tr.span(ATTNSIM_OP_WAIT, t0, tr.now_after_barrier(s.trace), -1, tile, ATTNSIM_WAIT_EPILOGUE, group);
}

}  // namespace attnsim::sm90
