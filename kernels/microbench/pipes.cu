// Throughput of the SM's arithmetic pipes: MUFU.EX2, FFMA (and packed FFMA2 on sm_100a),
// integer ALU (LOP3), the issue rate (an FFMA/LOP3 mix), the degree-3 polynomial exp2
// emulation of FA4, and MUFU and emulation running together.
//
// Method (all of them): one block per SM on every SM (the block asks for more than half of the
// SM's shared memory, so no second block fits), a chosen set of warps active in the block, each
// active warp running independent dependency chains (ILP 8) of the instruction under test in an
// unrolled loop. Warp w is taken to run on SM sub-partition (SMSP) w % 4; the
// "2_warps_same_smsp" (warps 0 and 4) and "2_warps_diff_smsp" (warps 0 and 1) configurations
// test that assumption. Rates are lane-operations per SM clock: clock64 deltas inside the
// kernel, so they do not depend on the clock the SM happened to run at.
#include "microbench.cuh"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

namespace mb {
namespace {

// Chain steps per loop iteration (kSteps, per op): 16 for MUFU and the exp2 ops, 32-64 for the
// single-cycle FFMA/LOP3 ops, so that the 3 loop instructions (UIADD3, ISETP, BRA in the sm_90a
// SASS) cost under 1% of the issue slots there.
constexpr int kMaxWarps = 32;   // warps per block at most
constexpr float kMagic = 1234567.0f;  // no chain ever reaches it: guards the sink store

/// Run-time operands, so that the compiler cannot fold the chains.
struct PipeArgs {
  float fa, fb;     // FFMA multiplier and addend
  uint32_t k1, k2;  // LOP3 operands
};

// --- the instructions under test ------------------------------------------------------------

/// MUFU.EX2 (ex2.approx.ftz.f32: the ftz form is one MUFU instruction, without the denormal
/// fix-up that the non-ftz form adds).
__device__ __forceinline__ float ex2_mufu(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// FA4's degree-3 minimax polynomial for 2^f on [0, 1) (fa4_sm100_schedule.md).
constexpr float kC1 = 0.695146143436431884765625f;
constexpr float kC2 = 0.227564394474029541015625f;
constexpr float kC3 = 0.077119089663028717041015625f;

/// exp2 emulated on the FMA/ALU pipes as in FA4, one element at a time (sm_90 has no packed
/// f32x2 FMA): clamp, floor by adding 1.5*2^23 rounding down (t then holds floor(x) in its low
/// mantissa bits), f = x - floor, p(f) by Horner, then floor(x) shifted into p's exponent bits.
__device__ __forceinline__ float ex2_emu(float x) {
  x = fmaxf(x, -127.0f);
  const float kRound = 12582912.0f;  // 1.5 * 2^23
  float t = __fadd_rd(x, kRound);
  float j = __fsub_rn(t, kRound);
  float f = __fsub_rn(x, j);
  float p = __fmaf_rn(__fmaf_rn(__fmaf_rn(kC3, f, kC2), f, kC1), f, 1.0f);
  return __int_as_float(__float_as_int(p) + (__float_as_int(t) << 23));
}

/// FFMA (fma.rn.f32) as inline PTX, so it stays one FFMA.
__device__ __forceinline__ float ffma(float x, float a, float b) {
  float y;
  asm("fma.rn.f32 %0, %1, %2, %3;" : "=f"(y) : "f"(x), "f"(a), "f"(b));
  return y;
}

/// LOP3 with a compile-time truth table (0x96: a^b^c, 0xE8: majority).
template <int kLut>
__device__ __forceinline__ uint32_t lop3(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t d;
  asm("lop3.b32 %0, %1, %2, %3, %4;" : "=r"(d) : "r"(a), "r"(b), "r"(c), "n"(kLut));
  return d;
}

// --- ops: per-thread state and one loop iteration ---------------------------------------------
// kCounted: counted operations per thread per iteration (what the rate is reported in).

/// MUFU.EX2 chains: v = ex2(-v) stays in [0.5, 1], no special values.
struct MufuOp {
  static constexpr int kChains = 8, kSteps = 16, kCounted = kChains * kSteps;
  static constexpr double kEstCyclesPerIter = kCounted * 8.0;  // 4 lanes/clk/SMSP guess
  float v[kChains];
  __device__ void init(const PipeArgs&, unsigned t) {
#pragma unroll
    for (int i = 0; i < kChains; ++i) v[i] = 0.5f + 0.03f * i + (t & 255) * 1e-4f;
  }
  __device__ void body(const PipeArgs&, int) {
#pragma unroll
    for (int u = 0; u < kSteps; ++u)
#pragma unroll
      for (int i = 0; i < kChains; ++i) v[i] = ex2_mufu(-v[i]);
  }
  __device__ float result() const {
    float s = 0;
#pragma unroll
    for (int i = 0; i < kChains; ++i) s += v[i];
    return s;
  }
};

/// Emulated exp2 chains, same recurrence as MufuOp.
struct EmuOp : MufuOp {
  static constexpr double kEstCyclesPerIter = kCounted * 9.0;
  __device__ void body(const PipeArgs&, int) {
#pragma unroll
    for (int u = 0; u < kSteps; ++u)
#pragma unroll
      for (int i = 0; i < kChains; ++i) v[i] = ex2_emu(-v[i]);
  }
};

/// kMufu chains on MUFU and kEmu chains emulated, interleaved in every warp (FA4's way of
/// sharing the exp2 work between the pipes).
template <int kMufu, int kEmu>
struct MixOp {
  static constexpr int kChains = kMufu + kEmu, kSteps = 16, kCounted = kChains * kSteps;
  static constexpr double kEstCyclesPerIter = kSteps * (kMufu * 8.0 + kEmu * 9.0);
  float v[kChains];
  __device__ void init(const PipeArgs&, unsigned t) {
#pragma unroll
    for (int i = 0; i < kChains; ++i) v[i] = 0.5f + 0.03f * i + (t & 255) * 1e-4f;
  }
  __device__ void body(const PipeArgs&, int) {
#pragma unroll
    for (int u = 0; u < kSteps; ++u) {
#pragma unroll
      for (int i = 0; i < kMufu; ++i) v[i] = ex2_mufu(-v[i]);
#pragma unroll
      for (int i = kMufu; i < kChains; ++i) v[i] = ex2_emu(-v[i]);
    }
  }
  __device__ float result() const {
    float s = 0;
#pragma unroll
    for (int i = 0; i < kChains; ++i) s += v[i];
    return s;
  }
};

/// Warps split by role: warps with (warp & 4) == 0 use MUFU, the others emulate, so every SMSP
/// holds both kinds (warp w on SMSP w % 4).
struct SplitOp : MufuOp {
  static constexpr double kEstCyclesPerIter = kCounted * 8.5;
  __device__ void body(const PipeArgs&, int warp) {
    if ((warp & 4) == 0) {
#pragma unroll
      for (int u = 0; u < kSteps; ++u)
#pragma unroll
        for (int i = 0; i < kChains; ++i) v[i] = ex2_mufu(-v[i]);
    } else {
#pragma unroll
      for (int u = 0; u < kSteps; ++u)
#pragma unroll
        for (int i = 0; i < kChains; ++i) v[i] = ex2_emu(-v[i]);
    }
  }
};

/// float -> int conversion (cvt.rzi.s32.f32: one F2I.TRUNC.NTZ), the floor of an emulated exp2
/// that builds its exponent with a conversion. Chain: v = float bits of (F2I(v * 2^20) & mask)
/// | 0x3F000000, in [0.5, 1): an F2I, an FMUL and a LOP3 per step, the F2I counted.
__device__ __forceinline__ float f2i_step(float v) {
  int i;
  asm("cvt.rzi.s32.f32 %0, %1;" : "=r"(i) : "f"(v * 1048576.0f));
  return __int_as_float((i & 0x007FFFFF) | 0x3F000000);
}

struct F2iOp : MufuOp {
  static constexpr double kEstCyclesPerIter = kCounted * 8.0;
  __device__ void body(const PipeArgs&, int) {
#pragma unroll
    for (int u = 0; u < kSteps; ++u)
#pragma unroll
      for (int i = 0; i < kChains; ++i) v[i] = f2i_step(v[i]);
  }
};

/// 4 MUFU.EX2 chains and 4 F2I chains interleaved in every warp, both counted: if F2I has a pipe
/// of its own the pair runs at about the sum of their rates, if it shares MUFU's at MUFU's rate.
struct MufuF2iOp : MufuOp {
  static constexpr double kEstCyclesPerIter = kCounted * 8.0;
  __device__ void body(const PipeArgs&, int) {
#pragma unroll
    for (int u = 0; u < kSteps; ++u) {
#pragma unroll
      for (int i = 0; i < kChains / 2; ++i) v[i] = ex2_mufu(-v[i]);
#pragma unroll
      for (int i = kChains / 2; i < kChains; ++i) v[i] = f2i_step(v[i]);
    }
  }
};

/// FFMA chains v = v * a + b (a just under 1: no overflow, no denormals).
struct FfmaOp {
  static constexpr int kChains = 8, kSteps = 64, kCounted = kChains * kSteps;
  static constexpr double kEstCyclesPerIter = kCounted * 1.0;
  float v[kChains];
  __device__ void init(const PipeArgs&, unsigned t) {
#pragma unroll
    for (int i = 0; i < kChains; ++i) v[i] = 1.0f + 0.1f * i + (t & 255) * 1e-4f;
  }
  __device__ void body(const PipeArgs& a, int) {
#pragma unroll
    for (int u = 0; u < kSteps; ++u)
#pragma unroll
      for (int i = 0; i < kChains; ++i) v[i] = ffma(v[i], a.fa, a.fb);
  }
  __device__ float result() const {
    float s = 0;
#pragma unroll
    for (int i = 0; i < kChains; ++i) s += v[i];
    return s;
  }
};

/// fp32 pair -> bf16x2 (cvt.rn.bf16x2.f32: one F2FP.BF16.F32.PACK_AB), the instruction that
/// packs P for the PV wgmma and O for its store. Chain: v = the packed word read as a float, its
/// upper half bf16(v) and its lower half bf16(w): about v again (stays in (0.5, 2)), no other
/// instruction per step.
__device__ __forceinline__ float f2fp_step(float v, float w) {
  uint32_t d;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(v), "f"(w));
  return __uint_as_float(d);
}

/// F2FP chains alone (kCounted: the F2FPs): FfmaOp's chains, seeds and result; another body.
struct F2fpOp : FfmaOp {
  static constexpr double kEstCyclesPerIter = kCounted * 2.0;
  __device__ void body(const PipeArgs& a, int) {
#pragma unroll
    for (int u = 0; u < kSteps; ++u)
#pragma unroll
      for (int i = 0; i < kChains; ++i) v[i] = f2fp_step(v[i], a.fa);
  }
};

/// 4 F2FP chains interleaved with 4 chains of another instruction (kOther: 0 FFMA, 1 LOP3, 2
/// MUFU.EX2), both counted: a pair that shares a pipe runs at that pipe's rate, a pair on two
/// pipes near the sum of their rates (or the issue slot's one instruction a clock).
template <int kOther>
struct F2fpMixOp {
  static constexpr int kChains = 8, kSteps = kOther == 2 ? 16 : 64, kCounted = kChains * kSteps;
  static constexpr double kEstCyclesPerIter = kCounted * (kOther == 2 ? 5.0 : 2.0);
  float v[kChains];
  uint32_t g[kChains / 2];
  __device__ void init(const PipeArgs&, unsigned t) {
#pragma unroll
    for (int i = 0; i < kChains; ++i) v[i] = (kOther == 2 ? 0.5f : 1.0f) + 0.03f * i + (t & 255) * 1e-4f;
#pragma unroll
    for (int i = 0; i < kChains / 2; ++i) g[i] = hash32(t * 8 + i);
  }
  __device__ void body(const PipeArgs& a, int) {
#pragma unroll
    for (int u = 0; u < kSteps; ++u) {
#pragma unroll
      for (int i = 0; i < kChains / 2; ++i) v[i] = f2fp_step(v[i], a.fa);
#pragma unroll
      for (int i = 0; i < kChains / 2; ++i) {
        if constexpr (kOther == 0)
          v[kChains / 2 + i] = ffma(v[kChains / 2 + i], a.fa, a.fb);
        else if constexpr (kOther == 1)
          g[i] = lop3<0x96>(g[i], g[(i + 1) % (kChains / 2)], (u & 1) ? a.k1 : a.k2);
        else
          v[kChains / 2 + i] = ex2_mufu(-v[kChains / 2 + i]);
      }
    }
  }
  __device__ float result() const {
    float s = 0;
    uint32_t x = 0;
#pragma unroll
    for (int i = 0; i < kChains; ++i) s += v[i];
#pragma unroll
    for (int i = 0; i < kChains / 2; ++i) x ^= g[i];
    return s + __uint_as_float(x & 0x3F7FFFFFu);
  }
};

/// Packed FFMA2 (fma.rn.f32x2, sm_100 and later). Counted per instruction; each does 2 FMAs.
/// Compiled to nothing for sm_90, where the host never launches it.
struct Ffma2Op {
  static constexpr int kChains = 8, kSteps = 64, kCounted = kChains * kSteps;
  static constexpr double kEstCyclesPerIter = kCounted * 1.0;
  float2 v[kChains];
  __device__ void init(const PipeArgs&, unsigned t) {
#pragma unroll
    for (int i = 0; i < kChains; ++i) v[i] = make_float2(1.0f + 0.1f * i, 1.05f + (t & 255) * 1e-4f);
  }
  __device__ void body(const PipeArgs& a, int) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000
    const float2 m = make_float2(a.fa, a.fa), c = make_float2(a.fb, a.fb);
#pragma unroll
    for (int u = 0; u < kSteps; ++u)
#pragma unroll
      for (int i = 0; i < kChains; ++i) v[i] = __ffma2_rn(v[i], m, c);
#endif
  }
  __device__ float result() const {
    float s = 0;
#pragma unroll
    for (int i = 0; i < kChains; ++i) s += v[i].x + v[i].y;
    return s;
  }
};

/// LOP3 chains; each step mixes in the next chain and alternates xor3 and majority, so ptxas
/// cannot merge two steps into one LOP3 (the merged function would need four inputs).
struct AluOp {
  static constexpr int kChains = 8, kSteps = 64, kCounted = kChains * kSteps;
  static constexpr double kEstCyclesPerIter = kCounted * 2.0;
  uint32_t v[kChains];
  __device__ void init(const PipeArgs&, unsigned t) {
#pragma unroll
    for (int i = 0; i < kChains; ++i) v[i] = hash32(t * 8 + i);
  }
  __device__ void body(const PipeArgs& a, int) {
#pragma unroll
    for (int u = 0; u < kSteps; ++u)
#pragma unroll
      for (int i = 0; i < kChains; ++i)
        v[i] = (i & 1) ? lop3<0xE8>(v[i], v[(i + 1) % kChains], (u & 1) ? a.k1 : a.k2)
                       : lop3<0x96>(v[i], v[(i + 1) % kChains], (u & 1) ? a.k2 : a.k1);
  }
  __device__ float result() const {
    uint32_t s = 0;
#pragma unroll
    for (int i = 0; i < kChains; ++i) s ^= v[i];
    return __uint_as_float(s);
  }
};

/// Integer instructions other than LOP3, each in 8 independent chains that mix in the next chain
/// so ptxas cannot fold steps: IADD3 (a + b + c), SHF.L.U32 (shf.l.clamp, funnel shift by a
/// register amount), PRMT (byte permute by a register selector), (a << 3) + b (which ptxas
/// compiles to LEA and IMAD about half each: LEA on the ALU pipe, IMAD on the FMA pipe, so the
/// pair runs near twice the ALU's rate). kLop3Iadd3 alternates LOP3 and IADD3 to tell whether
/// they share a pipe; kShfIadd3, kPrmtIadd3 and kShfPrmt do the same for SHF and PRMT (the
/// FA2-style kernel's S = Q K^T is a third SHF and PRMT, its bf16 unpacking).
enum IntKind { kIadd3, kShf, kPrmt, kLeaImad, kLop3Iadd3, kShfIadd3, kPrmtIadd3, kShfPrmt };

template <IntKind kKind>
struct IntOp : AluOp {  // AluOp's chains, seeds and result; another body
  __device__ void body(const PipeArgs& a, int) {
#pragma unroll
    for (int u = 0; u < kSteps; ++u)
#pragma unroll
      for (int i = 0; i < kChains; ++i) {
        const uint32_t n = v[(i + 1) % kChains], k = (u & 1) ? a.k1 : a.k2;
        uint32_t d;
        if constexpr (kKind == kIadd3) {
          asm("{ .reg .u32 t; add.u32 t, %1, %2; add.u32 %0, t, %3; }" : "=r"(d) : "r"(v[i]), "r"(n), "r"(k));
        } else if constexpr (kKind == kShf) {
          asm("shf.l.clamp.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(n), "r"(v[i]), "r"(k & 31u));
        } else if constexpr (kKind == kPrmt) {
          asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(v[i]), "r"(n), "r"(k));
        } else if constexpr (kKind == kLeaImad) {
          d = (v[i] << 3) + n;
        } else if constexpr (kKind == kShfIadd3 || kKind == kPrmtIadd3 || kKind == kShfPrmt) {
          // Alternating chains: odd ones the first instruction of the pair, even ones the second.
          constexpr bool kFirstShf = kKind != kPrmtIadd3, kSecondPrmt = kKind == kShfPrmt;
          if (i & 1) {
            if constexpr (kFirstShf)
              asm("shf.l.clamp.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(n), "r"(v[i]), "r"(k & 31u));
            else
              asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(v[i]), "r"(n), "r"(k));
          } else if constexpr (kSecondPrmt) {
            asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(v[i]), "r"(n), "r"(k));
          } else {
            asm("{ .reg .u32 t; add.u32 t, %1, %2; add.u32 %0, t, %3; }" : "=r"(d) : "r"(v[i]), "r"(n), "r"(k));
          }
        } else {  // one LOP3 or one IADD3 per step, alternating chains
          if (i & 1)
            d = lop3<0x96>(v[i], n, k);
          else
            asm("{ .reg .u32 t; add.u32 t, %1, %2; add.u32 %0, t, %3; }" : "=r"(d) : "r"(v[i]), "r"(n), "r"(k));
        }
        v[i] = d;
      }
  }
};

/// Issue-rate probe: 2 FFMA for every LOP3. At 32 FMA and 16 ALU lanes/clk/SMSP the pipes
/// alone would allow 1.5 warp instructions/clk; one issue slot per clock caps it at 1.0.
struct IssueOp {
  static constexpr int kF = 8, kA = 4, kSteps = 32, kCounted = (kF + kA) * kSteps;
  static constexpr double kEstCyclesPerIter = kCounted * 1.0;
  float f[kF];
  uint32_t g[kA];
  __device__ void init(const PipeArgs&, unsigned t) {
#pragma unroll
    for (int i = 0; i < kF; ++i) f[i] = 1.0f + 0.1f * i + (t & 255) * 1e-4f;
#pragma unroll
    for (int i = 0; i < kA; ++i) g[i] = hash32(t * 4 + i);
  }
  __device__ void body(const PipeArgs& a, int) {
#pragma unroll
    for (int u = 0; u < kSteps; ++u) {
#pragma unroll
      for (int i = 0; i < kA; ++i) {
        f[2 * i] = ffma(f[2 * i], a.fa, a.fb);
        g[i] = (i & 1) ? lop3<0xE8>(g[i], g[(i + 1) % kA], a.k1) : lop3<0x96>(g[i], g[(i + 1) % kA], a.k2);
        f[2 * i + 1] = ffma(f[2 * i + 1], a.fa, a.fb);
      }
    }
  }
  __device__ float result() const {
    float s = 0;
    uint32_t x = 0;
#pragma unroll
    for (int i = 0; i < kF; ++i) s += f[i];
#pragma unroll
    for (int i = 0; i < kA; ++i) x ^= g[i];
    return s + __uint_as_float(x & 0x3fffffffu);
  }
};

// --- the kernel --------------------------------------------------------------------------------

/// Runs `iters` iterations of Op in every warp whose bit is set in `active`; records each
/// active warp's clock64 span and the block's clock/timer stamps.
template <class Op>
__global__ void __launch_bounds__(1024) pipe_kernel(int iters, unsigned long long active, PipeArgs args, WarpSpan* spans,
                            BlockClock* blocks, float* sink) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  Op op;
  op.init(args, blockIdx.x * blockDim.x + threadIdx.x);
  __syncthreads();
  block_clock_begin(blocks);
  if ((active >> warp) & 1ull) {
    long long c0 = clock64();
#pragma unroll 1
    for (int i = 0; i < iters; ++i) op.body(args, warp);
    long long c1 = clock64();
    if (lane == 0) spans[blockIdx.x * kMaxWarps + warp] = WarpSpan{c0, c1};
  }
  __syncthreads();
  block_clock_end(blocks);
  float r = op.result();
  if (r == kMagic) sink[blockIdx.x * blockDim.x + threadIdx.x] = r;  // keeps the chains alive
}

/// Which warps of a block are active.
struct WarpConfig {
  const char* name;
  int block_warps;
  unsigned long long mask;
};

const WarpConfig kConfigs[] = {
    {"1_warp", 1, 0x1ull},
    {"2_warps_same_smsp", 5, 0x11ull},  // warps 0 and 4: both on SMSP 0 if warp w -> SMSP w % 4
    {"2_warps_diff_smsp", 2, 0x3ull},   // warps 0 and 1: SMSPs 0 and 1
    {"4_warps_spread", 4, 0xFull},
    {"8_warps", 8, 0xFFull},
    {"16_warps", 16, 0xFFFFull},
    {"32_warps", 32, 0xFFFFFFFFull},
};

const WarpConfig& config(const char* name) {
  for (const auto& c : kConfigs)
    if (std::string(c.name) == name) return c;
  throw std::logic_error("unknown warp config");
}

/// Rates of one launch, per clock.
struct PipeRates {
  double per_sm = 0;    // lane-ops / clk / SM (median over blocks)
  double per_smsp = 0;  // lane-ops / clk per SMSP that had active warps (mean over them, median over blocks)
  Json json;
};

/// Launches Op with the warp configuration on every SM and reduces the clock64 spans.
template <class Op>
PipeRates run_pipe(Report& rep, const WarpConfig& cfg, double ops_per_count = 1.0) {
  const DeviceInfo& dev = rep.dev();
  const int grid = dev.sm_count, block = cfg.block_warps * 32;
  // Cycles of the busiest SMSP set the run time; aim at ~2 ms (quick: ~0.2 ms).
  int busiest = 0;
  for (int s = 0; s < 4; ++s) {
    int n = 0;
    for (int w = 0; w < cfg.block_warps; ++w) n += ((cfg.mask >> w) & 1ull) && (w % 4 == s);
    busiest = std::max(busiest, n);
  }
  const double target = rep.opt().quick ? 4e5 : 4e6;
  const int iters = std::max(8, static_cast<int>(target / (busiest * Op::kEstCyclesPerIter)));

  DeviceBuffer<WarpSpan> spans(static_cast<size_t>(grid) * kMaxWarps);
  DeviceBuffer<BlockClock> blocks(grid);
  DeviceBuffer<float> sink(static_cast<size_t>(grid) * block);
  PipeArgs args{0.999f, 0.001f, 0x9E3779B9u, 0x7F4A7C15u};
  allow_smem(pipe_kernel<Op>, kOneBlockPerSmSmem);
  // Warm-up (module load, clocks up), then the measured launch.
  pipe_kernel<Op><<<grid, block, kOneBlockPerSmSmem>>>(std::max(1, iters / 8), cfg.mask, args,
                                                       spans.get(), blocks.get(), sink.get());
  MB_CHECK_LAUNCH("pipe_kernel warm-up");
  spans.zero();
  pipe_kernel<Op><<<grid, block, kOneBlockPerSmSmem>>>(iters, cfg.mask, args, spans.get(),
                                                       blocks.get(), sink.get());
  MB_CHECK_LAUNCH("pipe_kernel");
  auto hs = spans.to_host();
  auto hb = blocks.to_host();
  rep.clock().add(hb);

  const double ops_per_warp = static_cast<double>(iters) * Op::kCounted * 32.0 * ops_per_count;
  std::vector<double> sm_rates, smsp_rates, warp_rates;
  std::set<unsigned> sms;
  int active = 0;
  for (int w = 0; w < cfg.block_warps; ++w) active += (cfg.mask >> w) & 1ull;
  for (int b = 0; b < grid; ++b) {
    sms.insert(hb[b].smid);
    long long lo = 0, hi = 0;
    bool first = true;
    double smsp_sum = 0;
    int smsp_used = 0;
    for (int s = 0; s < 4; ++s) {
      long long slo = 0, shi = 0;
      int n = 0;
      for (int w = s; w < cfg.block_warps; w += 4) {
        if (!((cfg.mask >> w) & 1ull)) continue;
        const WarpSpan& sp = hs[static_cast<size_t>(b) * kMaxWarps + w];
        warp_rates.push_back(ops_per_warp / static_cast<double>(sp.c1 - sp.c0));
        if (n == 0 || sp.c0 < slo) slo = sp.c0;
        if (n == 0 || sp.c1 > shi) shi = sp.c1;
        if (first || sp.c0 < lo) lo = sp.c0;
        if (first || sp.c1 > hi) hi = sp.c1;
        first = false;
        ++n;
      }
      if (n > 0) {
        smsp_sum += n * ops_per_warp / static_cast<double>(shi - slo);
        ++smsp_used;
      }
    }
    sm_rates.push_back(active * ops_per_warp / static_cast<double>(hi - lo));
    smsp_rates.push_back(smsp_sum / smsp_used);
  }
  PipeRates r;
  r.per_sm = median(sm_rates);
  r.per_smsp = median(smsp_rates);
  const double ns = span_ns(hb);
  Json& j = r.json;
  j["block_warps"] = cfg.block_warps;
  j["active_warps"] = active;
  j["warps_on_busiest_smsp"] = busiest;
  j["iterations"] = iters;
  j["lanes_per_clk_sm"] = r.per_sm;
  j["lanes_per_clk_sm_min_over_sms"] = vmin(sm_rates);
  j["lanes_per_clk_sm_max_over_sms"] = vmax(sm_rates);
  j["lanes_per_clk_per_used_smsp"] = r.per_smsp;
  j["lanes_per_clk_per_warp_median"] = median(warp_rates);
  j["warp_insts_per_clk_sm"] = r.per_sm / 32.0 / ops_per_count;
  j["chip_lane_ops_per_ns"] = ns > 0 ? grid * active * ops_per_warp / ns : 0.0;
  j["distinct_sms"] = static_cast<int>(sms.size());
  return r;
}

/// Runs Op over all warp configurations; returns the 32-warp (saturated) rates.
template <class Op>
PipeRates sweep(Report& rep, const char* key, double ops_per_count = 1.0) {
  Json& cfgs = rep.results()[key];
  PipeRates last;
  for (const auto& c : kConfigs) {
    PipeRates r = run_pipe<Op>(rep, c, ops_per_count);
    cfgs[c.name] = r.json;
    last = r;
  }
  return last;  // kConfigs ends with 32_warps
}

// --- benchmarks --------------------------------------------------------------------------------

const char* kCommonMethod =
    "One block per SM on all SMs (dynamic SMEM > half the SM forces it); active warps run 8 "
    "independent dependency chains, 16 (MUFU, exp2) to 64 (FFMA, LOP3) steps unrolled per loop "
    "iteration (plus 3 loop instructions in the SASS); rates are lane-ops "
    "per SM clock from clock64 spans inside the kernel (per SM: all active warps' span; per "
    "SMSP: warps w with the same w % 4); median over SMs. ";

void bench_mufu(Report& rep) {
  rep.set_method(std::string(kCommonMethod) +
                 "Instruction: ex2.approx.ftz.f32 (one MUFU.EX2), chain v = ex2(-v).");
  PipeRates sat = sweep<MufuOp>(rep, "configs");
  rep.results()["mufu_lanes_per_clk_smsp"] = sat.per_smsp;
  rep.results()["mufu_lanes_per_clk_sm"] = sat.per_sm;
}

void bench_ffma(Report& rep) {
  rep.set_method(std::string(kCommonMethod) +
                 "Instruction: fma.rn.f32 (FFMA), chain v = v*a + b. Packed FFMA2 (fma.rn.f32x2) "
                 "runs only on sm_100 and later.");
  PipeRates sat = sweep<FfmaOp>(rep, "configs");
  rep.results()["fma_lanes_per_clk_smsp"] = sat.per_smsp;
  rep.results()["fma_lanes_per_clk_sm"] = sat.per_sm;
  if (rep.dev().cc_major >= 10) {
    // Counted in FMAs: each FFMA2 lane does two.
    PipeRates s2 = sweep<Ffma2Op>(rep, "ffma2_configs", 2.0);
    rep.results()["ffma2_fma_lanes_per_clk_smsp"] = s2.per_smsp;
  } else {
    rep.results()["ffma2"] = "not available on sm_90: fma.rn.f32x2 (FFMA2) needs sm_100 or later";
  }
}

void bench_alu(Report& rep) {
  rep.set_method(std::string(kCommonMethod) +
                 "Instruction: lop3.b32 (LOP3, integer ALU pipe), alternating xor3 and majority "
                 "with the neighbouring chain. The loop adds an ISETP (ALU pipe) per 512 LOP3.");
  PipeRates sat = sweep<AluOp>(rep, "configs");
  rep.results()["alu_lanes_per_clk_smsp"] = sat.per_smsp;
  rep.results()["alu_lanes_per_clk_sm"] = sat.per_sm;
}

void bench_int_ops(Report& rep) {
  rep.set_method(std::string(kCommonMethod) +
                 "Instructions: add.u32 x2 (one IADD3), shf.l.clamp.b32 (SHF.L.U32), prmt.b32 (PRMT), (a << 3) + b "
                 "(lea_imad: ptxas makes LEA and IMAD of it, about half each), and IADD3 and LOP3 alternating "
                 "(lop3_iadd3), SHF and IADD3, PRMT and IADD3, SHF and PRMT alternating (shf_iadd3, prmt_iadd3, shf_prmt); "
                 "each with 8 chains mixing in the neighbouring one; 32 warps (saturated) and 4 warps "
                 "(one per SMSP). Check the SASS: cuobjdump -sass of pipe_kernel<IntOp<...>>.");
  const char* names[] = {"iadd3", "shf", "prmt", "lea_imad", "lop3_iadd3", "shf_iadd3", "prmt_iadd3", "shf_prmt"};
  Json& out = rep.results();
  auto one = [&](auto op, int index) {
    using Op = decltype(op);
    for (const char* cfg : {"4_warps_spread", "32_warps"}) {
      const PipeRates r = run_pipe<Op>(rep, config(cfg));
      out["configs"][names[index]][cfg] = r.json;
      if (std::string(cfg) == "32_warps") out[std::string(names[index]) + "_lanes_per_clk_smsp"] = r.per_smsp;
    }
  };
  one(IntOp<kIadd3>{}, 0);
  one(IntOp<kShf>{}, 1);
  one(IntOp<kPrmt>{}, 2);
  one(IntOp<kLeaImad>{}, 3);
  one(IntOp<kLop3Iadd3>{}, 4);
  one(IntOp<kShfIadd3>{}, 5);
  one(IntOp<kPrmtIadd3>{}, 6);
  one(IntOp<kShfPrmt>{}, 7);
}

void bench_issue(Report& rep) {
  rep.set_method(std::string(kCommonMethod) +
                 "Mix of 2 FFMA : 1 LOP3 on independent chains (12 chains). The FMA (32 lanes) "
                 "and ALU (16 lanes) pipes together allow 1.5 warp instructions/clk/SMSP; the "
                 "measured warp instructions/clk/SMSP is the issue limit if it is lower.");
  Json& cfgs = rep.results()["configs"];
  PipeRates sat;
  for (const char* name : {"1_warp", "4_warps_spread", "8_warps", "16_warps", "32_warps"}) {
    sat = run_pipe<IssueOp>(rep, config(name));
    cfgs[name] = sat.json;
  }
  rep.results()["issue_per_clk_smsp"] = sat.per_smsp / 32.0;
}

/// Evaluates ex2_emu and MUFU ex2 on `n` inputs (accuracy check of the emulation).
__global__ void exp2_accuracy_kernel(const float* x, float* emu, float* hw, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    emu[i] = ex2_emu(x[i]);
    hw[i] = ex2_mufu(x[i]);
  }
}

void bench_exp2_emu(Report& rep) {
  rep.set_method(std::string(kCommonMethod) +
                 "Emulated exp2 (FA4's degree-3 polynomial, scalar: fmax, add.rm 1.5*2^23, 2 subs, "
                 "3 FFMA Horner, shift + integer add into the exponent), chain v = exp2(-v); "
                 "counted per element. Accuracy: max relative error vs double exp2 over 2^20 "
                 "inputs in [-20, 20).");
  PipeRates sat = sweep<EmuOp>(rep, "configs");
  rep.results()["emu_exp2_per_clk_smsp"] = sat.per_smsp;
  rep.results()["emu_exp2_per_clk_sm"] = sat.per_sm;

  const int n = 1 << 20;
  std::vector<float> hx(n);
  for (int i = 0; i < n; ++i) hx[i] = -20.0f + 40.0f * static_cast<float>(i) / n;
  DeviceBuffer<float> dx(n), de(n), dh(n);
  MB_CHECK(cudaMemcpy(dx.get(), hx.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  exp2_accuracy_kernel<<<(n + 255) / 256, 256>>>(dx.get(), de.get(), dh.get(), n);
  MB_CHECK_LAUNCH("exp2_accuracy_kernel");
  auto he = de.to_host(), hh = dh.to_host();
  double emax = 0, hmax = 0;
  for (int i = 0; i < n; ++i) {
    double ref = std::exp2(static_cast<double>(hx[i]));
    emax = std::max(emax, std::fabs(he[i] - ref) / ref);
    hmax = std::max(hmax, std::fabs(hh[i] - ref) / ref);
  }
  rep.results()["max_rel_error_emulated"] = emax;
  rep.results()["max_rel_error_mufu"] = hmax;
}

void bench_exp2_mix(Report& rep) {
  rep.set_method(std::string(kCommonMethod) +
                 "MUFU.EX2 and the emulated exp2 together, 32 warps per SM (8 per SMSP). "
                 "mufu_M_emu_E: every warp interleaves M MUFU chains and E emulated chains; "
                 "split_warps: half the warps of every SMSP use MUFU only, the other half emulate "
                 "only. Counted: exp2 results of either kind.");
  const WarpConfig& c = config("32_warps");
  Json& cfgs = rep.results()["configs"];
  double mufu_only = 0, best = 0;
  std::string best_name;
  auto add = [&](const char* name, const PipeRates& r, double mufu_share) {
    Json j = r.json;
    j["mufu_share"] = mufu_share;
    j["exp2_per_clk_sm"] = r.per_sm;
    cfgs[name] = j;
    if (r.per_sm > best) { best = r.per_sm; best_name = name; }
  };
  PipeRates r = run_pipe<MixOp<8, 0>>(rep, c);
  mufu_only = r.per_sm;
  add("mufu_8_emu_0", r, 1.0);
  add("mufu_7_emu_1", run_pipe<MixOp<7, 1>>(rep, c), 7 / 8.0);
  add("mufu_6_emu_2", run_pipe<MixOp<6, 2>>(rep, c), 6 / 8.0);
  add("mufu_5_emu_3", run_pipe<MixOp<5, 3>>(rep, c), 5 / 8.0);
  add("mufu_4_emu_4", run_pipe<MixOp<4, 4>>(rep, c), 4 / 8.0);
  add("mufu_2_emu_6", run_pipe<MixOp<2, 6>>(rep, c), 2 / 8.0);
  add("mufu_0_emu_8", run_pipe<MixOp<0, 8>>(rep, c), 0.0);
  add("split_warps", run_pipe<SplitOp>(rep, c), 0.5);
  rep.results()["mufu_only_exp2_per_clk_sm"] = mufu_only;
  rep.results()["best_exp2_per_clk_sm"] = best;
  rep.results()["best_config"] = best_name;
  rep.results()["best_speedup_over_mufu_only"] = mufu_only > 0 ? best / mufu_only : 0.0;
}

void bench_cvt(Report& rep) {
  rep.set_method(std::string(kCommonMethod) +
                 "Instruction: cvt.rzi.s32.f32 (one F2I.TRUNC.NTZ) in a chain with an FMUL and a LOP3 per step "
                 "(f2i); 4 ex2.approx chains and 4 such chains interleaved in every warp, both counted "
                 "(mufu_f2i); 32 warps, saturated.");
  const WarpConfig& c = config("32_warps");
  const PipeRates f2i = run_pipe<F2iOp>(rep, c), mufu = run_pipe<MufuOp>(rep, c), mix = run_pipe<MufuF2iOp>(rep, c);
  rep.results()["configs"]["f2i"] = f2i.json;
  rep.results()["configs"]["mufu"] = mufu.json;
  rep.results()["configs"]["mufu_f2i"] = mix.json;
  rep.results()["f2i_lanes_per_clk_smsp"] = f2i.per_smsp;
  rep.results()["mufu_f2i_lanes_per_clk_smsp"] = mix.per_smsp;
  // 1: F2I and MUFU.EX2 share one pipe (the mix runs at MUFU's rate); 0.5: separate pipes.
  rep.results()["f2i_shares_mufu_ratio"] = mix.per_smsp > 0 ? mufu.per_smsp / mix.per_smsp : 0.0;
}


void bench_f2fp(Report& rep) {
  rep.set_method(std::string(kCommonMethod) +
                 "Instruction: cvt.rn.bf16x2.f32 (one F2FP.BF16.F32.PACK_AB, the pack of P and of O in kernels/sm90), "
                 "8 chains per warp (f2fp); 4 F2FP chains interleaved with 4 chains of FFMA (f2fp_ffma), LOP3 "
                 "(f2fp_lop3) or MUFU.EX2 (f2fp_mufu) in every warp, both counted; the same warps alone on FFMA, "
                 "LOP3, MUFU.EX2 for reference; 32 warps, saturated (and 4: one warp per SMSP).");
  Json& cfgs = rep.results()["configs"];
  auto add = [&](const char* name, const PipeRates& r) {
    cfgs[name] = r.json;
    rep.results()[std::string(name) + "_lanes_per_clk_smsp"] = r.per_smsp;
  };
  const WarpConfig& c = config("32_warps");
  add("f2fp", run_pipe<F2fpOp>(rep, c));
  add("f2fp_1_warp_per_smsp", run_pipe<F2fpOp>(rep, config("4_warps_spread")));
  add("ffma", run_pipe<FfmaOp>(rep, c));
  add("lop3", run_pipe<AluOp>(rep, c));
  add("mufu", run_pipe<MufuOp>(rep, c));
  add("f2fp_ffma", run_pipe<F2fpMixOp<0>>(rep, c));
  add("f2fp_lop3", run_pipe<F2fpMixOp<1>>(rep, c));
  add("f2fp_mufu", run_pipe<F2fpMixOp<2>>(rep, c));
}
}  // namespace

void bench_clock_under_ffma(Report& rep) {
  rep.set_method(
      "FFMA chains (fma.rn.f32, 8 independent chains per warp, 64 steps unrolled), 32 warps per SM on all SMs, "
      "no tensor-core work, for ~2 s (quick: ~0.3 s) after a calibration launch of ~4 M cycles; every block stamps "
      "(clock64, %globaltimer) at its start and end; clock_ghz = median over SMs of cycles / ns: the SM clock a "
      "CUDA-core kernel (FA2-style GEMMs on FFMA) runs at once the chip's power management has settled.");
  const DeviceInfo& dev = rep.dev();
  const int grid = dev.sm_count, block = 32 * 32;
  DeviceBuffer<WarpSpan> spans(static_cast<size_t>(grid) * kMaxWarps);
  DeviceBuffer<BlockClock> blocks(grid);
  DeviceBuffer<float> sink(static_cast<size_t>(grid) * block);
  PipeArgs args{0.999f, 0.001f, 0x9E3779B9u, 0x7F4A7C15u};
  allow_smem(pipe_kernel<FfmaOp>, kOneBlockPerSmSmem);
  auto launch = [&](int iters) {
    pipe_kernel<FfmaOp><<<grid, block, kOneBlockPerSmSmem>>>(iters, ~0ull >> 32, args, spans.get(), blocks.get(),
                                                             sink.get());
    MB_CHECK_LAUNCH("pipe_kernel<FfmaOp> (clock)");
    return blocks.to_host();
  };
  measure_clock(rep, launch, std::max(8, static_cast<int>(4e6 / (8 * FfmaOp::kEstCyclesPerIter))));
}

std::vector<Benchmark> pipe_benchmarks() {
  return {
      {"mufu_ex2", "MUFU.EX2 throughput per SM and per SMSP, 1..32 warps", bench_mufu},
      {"ffma", "FFMA throughput (FFMA2 on sm_100+ only)", bench_ffma},
      {"alu", "integer ALU (LOP3) throughput", bench_alu},
      {"int_ops", "IADD3, SHF, PRMT, LEA + IMAD throughput, and LOP3 with IADD3: which run at the ALU's rate", bench_int_ops},
      {"issue_rate", "warp instructions issued per clock per SMSP (FFMA/LOP3 mix)", bench_issue},
      {"exp2_emu", "emulated exp2 (degree-3 polynomial) throughput and accuracy", bench_exp2_emu},
      {"exp2_mix", "MUFU.EX2 and emulated exp2 running together", bench_exp2_mix},
      {"cvt", "F2I (float -> int) throughput, alone and interleaved with MUFU.EX2: does it share MUFU's pipe?", bench_cvt},
      {"f2fp", "F2FP.BF16.F32.PACK_AB (fp32 pair to bf16x2) throughput, alone and interleaved with FFMA, LOP3, MUFU.EX2: its pipe", bench_f2fp},
      {"clock_under_ffma", "SM clock during a long FFMA loop on all SMs (no tensor cores)", bench_clock_under_ffma},
  };
}

}  // namespace mb
