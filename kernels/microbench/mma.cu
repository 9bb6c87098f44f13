// Tensor-core benchmarks: wgmma m64nNk16 bf16 (N = 64, 128, 192, 256; A from SMEM or from
// registers) throughput per SM and single-instruction latency, mma.sync m16n8k16 bf16
// throughput and latency, and the SM clock under sustained wgmma load.
//
// wgmma exists only on sm_90a; its inline PTX is compiled only in that pass (ATTNSIM_HAVE_WGMMA), so
// the sm_100a pass builds the same file with empty wgmma bodies, and the host refuses to run
// those benchmarks on anything but compute capability 9.0.
#include "microbench.cuh"

#include <cuda/ptx>

#include <algorithm>
#include <cmath>

#include "common/wgmma_sync.cuh"

namespace mb {
namespace {

constexpr float kMagic = 1234567.0f;  // no accumulator reaches it: guards the sink store
constexpr int kMaxWarps = 8;          // warps per block in these kernels at most

// --- wgmma wrappers ------------------------------------------------------------------------------
// No cuda::ptx wrapper exists for wgmma, hence inline PTX. scale-d is the predicate p (always
// true: accumulate); imm-scale-a/b = 1, no transpose (A and B K-major, bf16's only layout
// without transpose bits).

template <int N>
struct Wgmma;  // ss(): A from SMEM; rs(): A from registers. N/2 f32 accumulators per thread.

template <>
struct Wgmma<64> {
  /// D(64x64, f32) += A(SMEM) * B(SMEM), bf16 inputs, both K-major.
  __device__ __forceinline__ static void ss(float (&d)[32], uint64_t da, uint64_t db) {
#if ATTNSIM_HAVE_WGMMA
    asm volatile(
      "{\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
      "}, %32, %33, p, 1, 1, 0, 0;\n}\n"
      :
        "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(da), "l"(db));
#endif
  }
  /// D(64x64, f32) += A(registers, 4 x b32 = 8 bf16 per thread) * B(SMEM, K-major).
  __device__ __forceinline__ static void rs(float (&d)[32], const uint32_t (&a)[4], uint64_t db) {
#if ATTNSIM_HAVE_WGMMA
    asm volatile(
      "{\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
      "}, {%32, %33, %34, %35}, %36, p, 1, 1, 0;\n}\n"
      :
        "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
#endif
  }
};

template <>
struct Wgmma<128> {
  /// D(64x128, f32) += A(SMEM) * B(SMEM), bf16 inputs, both K-major.
  __device__ __forceinline__ static void ss(float (&d)[64], uint64_t da, uint64_t db) {
#if ATTNSIM_HAVE_WGMMA
    asm volatile(
      "{\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, %64, %65, p, 1, 1, 0, 0;\n}\n"
      :
        "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(da), "l"(db));
#endif
  }
  /// D(64x128, f32) += A(registers, 4 x b32 = 8 bf16 per thread) * B(SMEM, K-major).
  __device__ __forceinline__ static void rs(float (&d)[64], const uint32_t (&a)[4], uint64_t db) {
#if ATTNSIM_HAVE_WGMMA
    asm volatile(
      "{\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, {%64, %65, %66, %67}, %68, p, 1, 1, 0;\n}\n"
      :
        "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
#endif
  }
};

template <>
struct Wgmma<192> {
  /// D(64x192, f32) += A(SMEM) * B(SMEM), bf16 inputs, both K-major.
  __device__ __forceinline__ static void ss(float (&d)[96], uint64_t da, uint64_t db) {
#if ATTNSIM_HAVE_WGMMA
    asm volatile(
      "{\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\n"
      "wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"
      "}, %96, %97, p, 1, 1, 0, 0;\n}\n"
      :
        "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
      : "l"(da), "l"(db));
#endif
  }
  /// D(64x192, f32) += A(registers, 4 x b32 = 8 bf16 per thread) * B(SMEM, K-major).
  __device__ __forceinline__ static void rs(float (&d)[96], const uint32_t (&a)[4], uint64_t db) {
#if ATTNSIM_HAVE_WGMMA
    asm volatile(
      "{\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\n"
      "wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"
      "}, {%96, %97, %98, %99}, %100, p, 1, 1, 0;\n}\n"
      :
        "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
#endif
  }
};

template <>
struct Wgmma<256> {
  /// D(64x256, f32) += A(SMEM) * B(SMEM), bf16 inputs, both K-major.
  __device__ __forceinline__ static void ss(float (&d)[128], uint64_t da, uint64_t db) {
#if ATTNSIM_HAVE_WGMMA
    asm volatile(
      "{\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
      "}, %128, %129, p, 1, 1, 0, 0;\n}\n"
      :
        "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(da), "l"(db));
#endif
  }
  /// D(64x256, f32) += A(registers, 4 x b32 = 8 bf16 per thread) * B(SMEM, K-major).
  __device__ __forceinline__ static void rs(float (&d)[128], const uint32_t (&a)[4], uint64_t db) {
#if ATTNSIM_HAVE_WGMMA
    asm volatile(
      "{\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
      "}, {%128, %129, %130, %131}, %132, p, 1, 1, 0;\n}\n"
      :
        "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
#endif
  }
};


using attnsim::hopper::smem_desc;
using attnsim::hopper::wgmma_commit;
using attnsim::hopper::wgmma_fence;
using attnsim::hopper::wgmma_wait;

/// Compiler-only fence on the accumulators: keeps their reads and writes from moving across
/// the asynchronous wgmma region (the registers are written behind the compiler's back).
template <int K>
__device__ __forceinline__ void fence_acc(float (&d)[K]) {
#pragma unroll
  for (int i = 0; i < K; ++i) asm volatile("" : "+f"(d[i])::"memory");
}


/// Random bf16 in [-1, 1) from a hash (upper half of the float's bits).
__device__ __forceinline__ uint16_t bf16_bits(uint32_t h) {
  float f = static_cast<float>(h & 0xFFFF) * (1.0f / 32768.0f) - 1.0f;
  return static_cast<uint16_t>(__float_as_uint(f) >> 16);
}

/// Two random bf16 packed in a b32 register (an A or B fragment element pair).
__device__ __forceinline__ uint32_t bf16x2(uint32_t seed) {
  return static_cast<uint32_t>(bf16_bits(hash32(seed))) | (static_cast<uint32_t>(bf16_bits(hash32(seed ^ 0x5bd1e995u))) << 16);
}

constexpr int kTileSmem = 8192 + 32768;  // A: 4 k-steps of 64x16, B: 4 k-steps of up to 256x16
constexpr int kWgmmaSmem = kTileSmem + 1024;  // + slack to align the base to 1024 B (128B swizzle atoms)

/// Fills A and B tiles with random bf16 and makes the writes visible to the async proxy (the
/// tensor core reads SMEM through it). Returns the 1024-aligned base.
__device__ __forceinline__ uint8_t* fill_tiles(uint8_t* raw) {
  uint8_t* base = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(raw) + 1023) & ~uintptr_t(1023));
  uint32_t* w = reinterpret_cast<uint32_t*>(base);
  for (int i = threadIdx.x; i < kTileSmem / 4; i += blockDim.x) w[i] = bf16x2(i * 2654435761u + blockIdx.x);
  cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
  __syncthreads();
  return base;
}

/// Descriptors for the 4 k-steps of A (64x16) and B (Nx16), K-major. 128B swizzle: rows are
/// 128 B apart, 8-row atoms 1024 B apart (SBO), the k-step moves the start by 32 B inside the
/// atom. No swizzle: 8x8 core matrices of 128 contiguous bytes, K-neighbours 128 B apart (LBO),
/// M/N-neighbours 256 B apart (SBO), each k-step a separate tile.
template <int N>
__device__ __forceinline__ void make_descs(uint8_t* base, int swizzle, uint64_t (&da)[4], uint64_t (&db)[4]) {
  const uint32_t a0 = smem_u32(base), b0 = a0 + 8192;
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    if (swizzle) {
      da[k] = smem_desc(a0 + 32 * k, 16, 1024, 1);
      db[k] = smem_desc(b0 + 32 * k, 16, 1024, 1);
    } else {
      da[k] = smem_desc(a0 + 2048 * k, 128, 256, 0);
      db[k] = smem_desc(b0 + N * 32 * k, 128, 256, 0);
    }
  }
}

/// (clock64, %globaltimer) pair sampled during a long run.
struct ClockSample {
  long long clk;
  unsigned long long ns;
};

constexpr int kMaxSamples = 128;

/// Throughput: every warpgroup issues groups of 8 wgmmas into one accumulator, keeping one
/// group in flight (wait_group 1), for `iters` groups. Optionally thread 0 samples
/// (clock64, globaltimer) every `sample_every` groups (clock under load).
template <int N, bool kRs>
__global__ void __launch_bounds__(256, 1)
    wgmma_tput_kernel(int iters, int swizzle, int sample_every, WarpSpan* spans, BlockClock* blocks,
                      ClockSample* samples, float* sink) {
  extern __shared__ uint8_t smem_raw[];
  uint8_t* base = fill_tiles(smem_raw);
  uint64_t da[4], db[4];
  make_descs<N>(base, swizzle, da, db);
  uint32_t a[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) a[i] = bf16x2(threadIdx.x * 4 + i);
  float d[N / 2];
#pragma unroll
  for (int i = 0; i < N / 2; ++i) d[i] = 0.0f;
  block_clock_begin(blocks);
  fence_acc(d);
  const long long c0 = clock64();
#pragma unroll 1
  for (int it = 0; it < iters; ++it) {
    // As in CUTLASS mainloops: a fence per group (ptxas would inject one at the loop head anyway).
    wgmma_fence();
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      if constexpr (kRs) Wgmma<N>::rs(d, a, db[k & 3]);
      else Wgmma<N>::ss(d, da[k & 3], db[k & 3]);
    }
    wgmma_commit();
    wgmma_wait<1>();
    if (sample_every > 0 && threadIdx.x == 0 && it % sample_every == 0 && it / sample_every < kMaxSamples)
      samples[blockIdx.x * kMaxSamples + it / sample_every] = ClockSample{clock64(), globaltimer()};
  }
  wgmma_wait<0>();
  fence_acc(d);
  const long long c1 = clock64();
  if ((threadIdx.x & 31) == 0) spans[blockIdx.x * kMaxWarps + threadIdx.x / 32] = WarpSpan{c0, c1};
  __syncthreads();
  block_clock_end(blocks);
  float s = 0;
#pragma unroll
  for (int i = 0; i < N / 2; ++i) s += d[i];
  if (s == kMagic) sink[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

/// Latency: one warpgroup, `reps` times: clock64, wgmma.fence, kChain wgmmas, commit,
/// wait_group 0, clock64. kChain = 0 times the fence/commit/wait alone; kChain = -1 times two
/// back-to-back clock64 reads.
template <int N, bool kRs, int kChain>
__global__ void __launch_bounds__(128, 1) wgmma_latency_kernel(int reps, long long* out, float* sink) {
  extern __shared__ uint8_t smem_raw[];
  uint8_t* base = fill_tiles(smem_raw);
  uint64_t da[4], db[4];
  make_descs<N>(base, 1, da, db);
  uint32_t a[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) a[i] = bf16x2(threadIdx.x * 4 + i);
  float d[N / 2];
#pragma unroll
  for (int i = 0; i < N / 2; ++i) d[i] = 0.0f;
#pragma unroll 1
  for (int r = 0; r < reps; ++r) {
    fence_acc(d);
    const long long t0 = clock64();
    if constexpr (kChain >= 0) {
      wgmma_fence();
#pragma unroll
      for (int k = 0; k < kChain; ++k) {
        if constexpr (kRs) Wgmma<N>::rs(d, a, db[k & 3]);
        else Wgmma<N>::ss(d, da[k & 3], db[k & 3]);
      }
      wgmma_commit();
      wgmma_wait<0>();
    }
    fence_acc(d);
    const long long t1 = clock64();
    if (threadIdx.x == 0) out[r] = t1 - t0;
  }
  float s = 0;
#pragma unroll
  for (int i = 0; i < N / 2; ++i) s += d[i];
  if (s == kMagic) sink[threadIdx.x] = s;
}

// --- mma.sync ----------------------------------------------------------------------------------

/// mma.sync.aligned.m16n8k16 bf16 -> f32, accumulating in place.
__device__ __forceinline__ void mma_16816(float (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

constexpr int kMmaUnroll = 8;

/// kIlp independent accumulators per warp, kMmaUnroll steps per iteration, in every active warp.
template <int kIlp>
__global__ void mma_sync_kernel(int iters, unsigned long long active, WarpSpan* spans, BlockClock* blocks, float* sink) {
  const int warp = threadIdx.x >> 5;
  uint32_t a[4], b[2];
#pragma unroll
  for (int i = 0; i < 4; ++i) a[i] = bf16x2(threadIdx.x * 8 + i);
#pragma unroll
  for (int i = 0; i < 2; ++i) b[i] = bf16x2(threadIdx.x * 8 + 4 + i);
  float c[kIlp][4];
#pragma unroll
  for (int i = 0; i < kIlp; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) c[i][j] = 0.0f;
  __syncthreads();
  block_clock_begin(blocks);
  if ((active >> warp) & 1ull) {
    const long long c0 = clock64();
#pragma unroll 1
    for (int it = 0; it < iters; ++it)
#pragma unroll
      for (int u = 0; u < kMmaUnroll; ++u)
#pragma unroll
        for (int i = 0; i < kIlp; ++i) mma_16816(c[i], a, b);
    const long long c1 = clock64();
    if ((threadIdx.x & 31) == 0) spans[blockIdx.x * kMaxWarps + warp] = WarpSpan{c0, c1};
  }
  __syncthreads();
  block_clock_end(blocks);
  float s = 0;
#pragma unroll
  for (int i = 0; i < kIlp; ++i) s += c[i][0] + c[i][1] + c[i][2] + c[i][3];
  if (s == kMagic) sink[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

// --- host side ---------------------------------------------------------------------------------

/// Least-squares line y = a + b x; returns {a, b}.
std::pair<double, double> fit_line(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sx += x[i]; sy += y[i]; sxx += x[i] * x[i]; sxy += x[i] * y[i];
  }
  const double b = (n * sxy - sx * sy) / (n * sxx - sx * sx);
  return {(sy - b * sx) / n, b};
}

/// Skips (SkipBenchmark) unless the GPU is compute capability 9.0, the only one with wgmma.
void require_sm90(const Report& rep) {
  if (rep.dev().cc_major != 9 || rep.dev().cc_minor != 0)
    throw SkipBenchmark("wgmma needs compute capability 9.0 (sm_90a); this GPU is " +
                             std::to_string(rep.dev().cc_major) + "." + std::to_string(rep.dev().cc_minor));
}

/// Per-SM reduction of warp spans: ops of a block over (last end - first start), median over SMs.
double per_sm_rate(const std::vector<WarpSpan>& spans, int grid, int warps, double ops_per_block,
                   std::vector<double>* all = nullptr) {
  std::vector<double> rates;
  for (int b = 0; b < grid; ++b) {
    long long lo = spans[static_cast<size_t>(b) * kMaxWarps].c0, hi = spans[static_cast<size_t>(b) * kMaxWarps].c1;
    for (int w = 1; w < warps; ++w) {
      lo = std::min(lo, spans[static_cast<size_t>(b) * kMaxWarps + w].c0);
      hi = std::max(hi, spans[static_cast<size_t>(b) * kMaxWarps + w].c1);
    }
    rates.push_back(ops_per_block / static_cast<double>(hi - lo));
  }
  if (all) *all = rates;
  return median(rates);
}

struct TputRun {
  double flops_per_clk_sm = 0;
  double flops_per_clk_sm_min = 0;
  double tflops = 0;
  double seconds = 0;
  std::vector<BlockClock> blocks;
  std::vector<ClockSample> samples;
};

/// One launch of wgmma_tput_kernel on every SM with `wgs` warpgroups per block.
template <int N, bool kRs>
TputRun wgmma_tput(Report& rep, int wgs, int iters, int swizzle, int sample_every = 0) {
  const int grid = rep.dev().sm_count, block = 128 * wgs;
  auto kern = wgmma_tput_kernel<N, kRs>;
  allow_smem(kern, kOneBlockPerSmSmem);
  DeviceBuffer<WarpSpan> spans(static_cast<size_t>(grid) * kMaxWarps);
  DeviceBuffer<BlockClock> blocks(grid);
  DeviceBuffer<ClockSample> samples(static_cast<size_t>(grid) * kMaxSamples);
  DeviceBuffer<float> sink(static_cast<size_t>(grid) * block);
  samples.zero();
  kern<<<grid, block, kOneBlockPerSmSmem>>>(iters, swizzle, sample_every, spans.get(), blocks.get(),
                                            samples.get(), sink.get());
  MB_CHECK_LAUNCH("wgmma_tput_kernel");
  TputRun r;
  r.blocks = blocks.to_host();
  r.samples = samples.to_host();
  const double flops_per_block = 2.0 * 64 * N * 16 * 8.0 * iters * wgs;
  std::vector<double> rates;
  r.flops_per_clk_sm = per_sm_rate(spans.to_host(), grid, 4 * wgs, flops_per_block, &rates);
  r.flops_per_clk_sm_min = vmin(rates);
  const double ns = span_ns(r.blocks);
  r.seconds = ns * 1e-9;
  r.tflops = ns > 0 ? flops_per_block * grid / ns * 1e-3 : 0.0;
  return r;
}

/// Iterations that keep one SM's tensor core busy for about `cycles` at 4096 FLOP/clk.
int iters_for(int n, int wgs, double cycles) {
  const double cycles_per_group = 8.0 * 2 * 64 * n * 16 / 4096.0;
  return std::max(16, static_cast<int>(cycles / (cycles_per_group * wgs)));
}

template <int N>
void wgmma_tput_for_n(Report& rep, Json& out, double& best) {
  const double target = rep.opt().quick ? 4e5 : 4e6;
  struct Cfg { const char* name; bool rs; int wgs; int swizzle; };
  const Cfg cfgs[] = {{"ss_sw128_1wg", false, 1, 1}, {"ss_sw128_2wg", false, 2, 1},
                      {"rs_sw128_1wg", true, 1, 1},  {"rs_sw128_2wg", true, 2, 1},
                      {"ss_noswizzle_2wg", false, 2, 0}};
  Json& jn = out["n" + std::to_string(N)];
  for (const Cfg& c : cfgs) {
    const int iters = iters_for(N, c.wgs, target);
    TputRun r = c.rs ? wgmma_tput<N, true>(rep, c.wgs, iters, c.swizzle) : wgmma_tput<N, false>(rep, c.wgs, iters, c.swizzle);
    rep.clock().add(r.blocks);
    Json j = Json::object();
    j["warpgroups_per_sm"] = c.wgs;
    j["a_from"] = c.rs ? "registers" : "smem";
    j["swizzle"] = c.swizzle ? "128B" : "none";
    j["wgmma_per_warpgroup"] = 8LL * iters;
    j["flops_per_clk_sm"] = r.flops_per_clk_sm;
    j["flops_per_clk_sm_min_over_sms"] = r.flops_per_clk_sm_min;
    j["chip_tflops"] = r.tflops;
    j["cycles_per_wgmma_per_sm"] = 2.0 * 64 * N * 16 / r.flops_per_clk_sm;
    jn[c.name] = j;
    best = std::max(best, r.flops_per_clk_sm);
  }
}

/// Median of the per-rep latencies after dropping the first 8 (warm-up).
template <int N, bool kRs, int kChain>
std::pair<double, double> wgmma_latency(int reps) {
  auto kern = wgmma_latency_kernel<N, kRs, kChain>;
  allow_smem(kern, kWgmmaSmem);
  DeviceBuffer<long long> out(reps);
  DeviceBuffer<float> sink(128);
  kern<<<1, 128, kWgmmaSmem>>>(reps, out.get(), sink.get());
  MB_CHECK_LAUNCH("wgmma_latency_kernel");
  auto h = out.to_host();
  std::vector<double> v(h.begin() + 8, h.end());
  return {median(v), vmin(v)};
}

template <int N, bool kRs>
void wgmma_latency_for_n(Report& rep, Json& out, double clock_pair, std::vector<double>& single) {
  const int reps = rep.opt().quick ? 24 : 72;
  Json j = Json::object();
  const std::pair<double, double> l[4] = {wgmma_latency<N, kRs, 1>(reps), wgmma_latency<N, kRs, 2>(reps),
                                          wgmma_latency<N, kRs, 4>(reps), wgmma_latency<N, kRs, 8>(reps)};
  const int chain[4] = {1, 2, 4, 8};
  std::vector<double> xs, ys;
  for (int i = 0; i < 4; ++i) {
    j["chain_" + std::to_string(chain[i]) + "_cycles_median"] = l[i].first;
    j["chain_" + std::to_string(chain[i]) + "_cycles_min"] = l[i].second;
    xs.push_back(chain[i]);
    ys.push_back(l[i].first);
  }
  auto [a, b] = fit_line(xs, ys);
  j["single_wgmma_latency_cycles"] = l[0].first - clock_pair;
  j["chain_fit_cycles_per_extra_wgmma"] = b;
  j["chain_fit_intercept_cycles"] = a - clock_pair;
  j["pipe_cycles_at_4096_flop_per_clk"] = 2.0 * 64 * N * 16 / 4096.0;
  out["n" + std::to_string(N) + (kRs ? "_rs" : "_ss")] = j;
  single.push_back(l[0].first - clock_pair);
}

void bench_wgmma(Report& rep) {
  require_sm90(rep);
  rep.set_method(
      "wgmma.mma_async m64nNk16 f32 += bf16 x bf16 via inline PTX (sm_90a), B always from SMEM, A "
      "from SMEM (ss) or registers (rs), K-major, random bf16 data. Throughput: one block per SM "
      "on all SMs, each warpgroup issues groups of 8 wgmmas into one accumulator with one group "
      "in flight (commit_group, wait_group 1); FLOP per SM clock from clock64 spans, median over "
      "SMs. Latency: one warpgroup on one SM, clock64 around wgmma.fence + k wgmmas + commit + "
      "wait_group 0 (k = 1, 2, 4, 8; median of 64 reps), minus two back-to-back clock64 reads; "
      "mma_latency = intercept of single-wgmma latency vs N (SS, 128B swizzle).");
  Json& res = rep.results();
  Json& tput = res["throughput"];
  double best = 0;
  wgmma_tput_for_n<64>(rep, tput, best);
  wgmma_tput_for_n<128>(rep, tput, best);
  wgmma_tput_for_n<192>(rep, tput, best);
  wgmma_tput_for_n<256>(rep, tput, best);

  Json& lat = res["latency"];
  const double clock_pair = wgmma_latency<64, false, -1>(rep.opt().quick ? 24 : 72).first;
  const double empty = wgmma_latency<64, false, 0>(rep.opt().quick ? 24 : 72).first;
  lat["clock64_pair_cycles"] = clock_pair;
  lat["fence_commit_wait_only_cycles"] = empty - clock_pair;
  std::vector<double> ss, rs;
  wgmma_latency_for_n<64, false>(rep, lat, clock_pair, ss);
  wgmma_latency_for_n<128, false>(rep, lat, clock_pair, ss);
  wgmma_latency_for_n<192, false>(rep, lat, clock_pair, ss);
  wgmma_latency_for_n<256, false>(rep, lat, clock_pair, ss);
  wgmma_latency_for_n<64, true>(rep, lat, clock_pair, rs);
  wgmma_latency_for_n<128, true>(rep, lat, clock_pair, rs);
  wgmma_latency_for_n<192, true>(rep, lat, clock_pair, rs);
  wgmma_latency_for_n<256, true>(rep, lat, clock_pair, rs);
  const std::vector<double> ns = {64, 128, 192, 256};
  auto [a_ss, b_ss] = fit_line(ns, ss);
  auto [a_rs, b_rs] = fit_line(ns, rs);
  lat["single_latency_vs_n_ss"] = Json::object();
  lat["single_latency_vs_n_ss"]["intercept_cycles"] = a_ss;
  lat["single_latency_vs_n_ss"]["cycles_per_n"] = b_ss;
  lat["single_latency_vs_n_rs"] = Json::object();
  lat["single_latency_vs_n_rs"]["intercept_cycles"] = a_rs;
  lat["single_latency_vs_n_rs"]["cycles_per_n"] = b_rs;

  res["tensor_flops_per_clk"] = tput["n256"]["ss_sw128_2wg"]["flops_per_clk_sm"];
  res["tensor_flops_per_clk_best_config"] = best;
  res["mma_latency"] = a_ss;
}

void bench_mma_sync(Report& rep) {
  rep.set_method(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 (HMMA), random bf16 operands in "
      "registers; kIlp independent accumulators per warp, 8 steps unrolled; one block per SM on "
      "all SMs; FLOP per SM clock from clock64 spans (4096 FLOP per mma), median over SMs. "
      "Latency: one warp, one accumulator chain, cycles per mma.");
  const int grid = rep.dev().sm_count;
  const bool quick = rep.opt().quick;
  struct Cfg { const char* name; int warps; int ilp; };
  const Cfg cfgs[] = {{"1_warp_ilp1", 1, 1}, {"1_warp_ilp4", 1, 4}, {"4_warps_ilp4", 4, 4},
                      {"8_warps_ilp4", 8, 4}, {"8_warps_ilp8", 8, 8}};
  Json& out = rep.results()["configs"];
  double best = 0, lat = 0;
  for (const Cfg& c : cfgs) {
    DeviceBuffer<WarpSpan> spans(static_cast<size_t>(grid) * kMaxWarps);
    DeviceBuffer<BlockClock> blocks(grid);
    DeviceBuffer<float> sink(static_cast<size_t>(grid) * c.warps * 32);
    const unsigned long long mask = (1ull << c.warps) - 1;
    // ~4M cycles at an assumed ~1024 FLOP/clk/SM (a guess between Ampere-style and wgmma rates).
    const double mmas_per_block = (quick ? 4e5 : 4e6) * 1024.0 / 4096.0;
    const int iters = std::max(8, static_cast<int>(mmas_per_block / (c.warps * c.ilp * kMmaUnroll)));
    auto launch = [&](int it) {
      if (c.ilp == 1) {
        allow_smem(mma_sync_kernel<1>, kOneBlockPerSmSmem);
        mma_sync_kernel<1><<<grid, c.warps * 32, kOneBlockPerSmSmem>>>(it, mask, spans.get(), blocks.get(), sink.get());
      } else if (c.ilp == 4) {
        allow_smem(mma_sync_kernel<4>, kOneBlockPerSmSmem);
        mma_sync_kernel<4><<<grid, c.warps * 32, kOneBlockPerSmSmem>>>(it, mask, spans.get(), blocks.get(), sink.get());
      } else {
        allow_smem(mma_sync_kernel<8>, kOneBlockPerSmSmem);
        mma_sync_kernel<8><<<grid, c.warps * 32, kOneBlockPerSmSmem>>>(it, mask, spans.get(), blocks.get(), sink.get());
      }
      MB_CHECK_LAUNCH("mma_sync_kernel");
    };
    launch(std::max(1, iters / 8));  // warm-up
    launch(iters);
    auto hb = blocks.to_host();
    rep.clock().add(hb);
    const double mmas = static_cast<double>(iters) * kMmaUnroll * c.ilp * c.warps;
    std::vector<double> rates;
    const double rate = per_sm_rate(spans.to_host(), grid, c.warps, mmas * 4096.0, &rates);
    Json j = Json::object();
    j["warps_per_sm"] = c.warps;
    j["independent_accumulators_per_warp"] = c.ilp;
    j["flops_per_clk_sm"] = rate;
    j["flops_per_clk_sm_min_over_sms"] = vmin(rates);
    j["cycles_per_mma_per_warp"] = 4096.0 * c.warps / rate;
    const double ns = span_ns(hb);
    j["chip_tflops"] = ns > 0 ? mmas * 4096.0 * grid / ns * 1e-3 : 0.0;
    out[c.name] = j;
    best = std::max(best, rate);
    if (c.ilp == 1) lat = 4096.0 / rate;
  }
  rep.results()["mma_sync_flops_per_clk_sm"] = best;
  rep.results()["mma_sync_dependent_latency_cycles"] = lat;
}

void bench_clock_under_load(Report& rep) {
  require_sm90(rep);
  rep.set_method(
      "wgmma m64n256k16 SS (128B swizzle), 2 warpgroups per SM on all SMs, for ~4 s (quick: "
      "~0.3 s) after a short calibration launch; thread 0 of every block samples (clock64, "
      "%globaltimer) 64 times; clock_ghz = median over SMs of cycles / ns over the whole run; "
      "the time series is the median over SMs of each sample interval.");
  const double seconds = rep.opt().quick ? 0.3 : 4.0;
  const int cal_iters = rep.opt().quick ? 500 : 2000;
  TputRun cal = wgmma_tput<256, false>(rep, 2, cal_iters, 1);
  const double per_iter = cal.seconds / cal_iters;
  // Clamped so that a broken calibration cannot ask for an absurd run.
  const int iters = static_cast<int>(std::clamp(seconds / per_iter, static_cast<double>(cal_iters), 5e7));
  const int every = std::max(1, iters / 64);
  TputRun r = wgmma_tput<256, false>(rep, 2, iters, 1, every);
  rep.clock().add(r.blocks);
  const int grid = rep.dev().sm_count;
  std::vector<double> whole;
  for (const auto& b : r.blocks)
    whole.push_back(static_cast<double>(b.clk1 - b.clk0) / static_cast<double>(b.ns1 - b.ns0));
  Json& res = rep.results();
  res["clock_ghz"] = median(whole);
  res["clock_ghz_min_over_sms"] = vmin(whole);
  res["clock_ghz_max_over_sms"] = vmax(whole);
  res["run_seconds"] = r.seconds;
  res["flops_per_clk_sm"] = r.flops_per_clk_sm;
  res["chip_tflops"] = r.tflops;
  res["calibration_run_seconds"] = cal.seconds;
  res["calibration_run_clock_ghz"] = [&] {
    std::vector<double> v;
    for (const auto& b : cal.blocks) v.push_back(static_cast<double>(b.clk1 - b.clk0) / static_cast<double>(b.ns1 - b.ns0));
    return median(v);
  }();
  // Time series: per sample interval, median over SMs of cycles/ns; time from the first sample.
  Json t_ms = Json::array(), ghz = Json::array();
  const int n = std::min(kMaxSamples, iters / every);
  unsigned long long t0 = ~0ull;
  for (int b = 0; b < grid; ++b) t0 = std::min(t0, r.samples[static_cast<size_t>(b) * kMaxSamples].ns);
  for (int s = 0; s + 1 < n; ++s) {
    std::vector<double> v;
    double t = 0;
    for (int b = 0; b < grid; ++b) {
      const ClockSample& x = r.samples[static_cast<size_t>(b) * kMaxSamples + s];
      const ClockSample& y = r.samples[static_cast<size_t>(b) * kMaxSamples + s + 1];
      if (y.ns > x.ns) v.push_back(static_cast<double>(y.clk - x.clk) / static_cast<double>(y.ns - x.ns));
      t = std::max(t, static_cast<double>(x.ns - t0) * 1e-6);
    }
    t_ms.push_back(t);
    ghz.push_back(median(v));
  }
  res["series_t_ms"] = t_ms;
  res["series_clock_ghz"] = ghz;
}

}  // namespace

std::vector<Benchmark> mma_benchmarks() {
  return {
      {"wgmma", "wgmma m64nNk16 bf16 throughput and latency, N = 64..256, SS and RS", bench_wgmma},
      {"mma_sync", "mma.sync m16n8k16 bf16 throughput and latency", bench_mma_sync},
      {"clock_under_load", "SM clock during a long wgmma loop on all SMs", bench_clock_under_load},
  };
}

}  // namespace mb
