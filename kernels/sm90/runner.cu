// Host services around the compiled kernels: device query, random inputs, timing with CUDA
// events, correctness against a reference, traced runs.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>

#include "fa3_api.h"
#include "launch.cuh"
#include "reference.cuh"

namespace attnsim::sm90 {

void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

CUtensorMap make_tensor_map(const void* base, int head_dim, int seqlen, int heads, int batch, int box_rows) {
  static PFN_cuTensorMapEncodeTiled_v12000 encode = nullptr;
  if (!encode) {
    cudaDriverEntryPointQueryResult q{};
    cuda_check(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", reinterpret_cast<void**>(&encode), 12000,
                                                cudaEnableDefault, &q),
               "cudaGetDriverEntryPointByVersion(cuTensorMapEncodeTiled)");
    if (q != cudaDriverEntryPointSuccess || !encode) throw std::runtime_error("cuTensorMapEncodeTiled not found");
  }
  CUtensorMap m{};
  const cuuint64_t row = static_cast<cuuint64_t>(heads) * head_dim * 2;  // bytes between sequence positions
  const cuuint64_t dims[4] = {static_cast<cuuint64_t>(head_dim), static_cast<cuuint64_t>(seqlen),
                              static_cast<cuuint64_t>(heads), static_cast<cuuint64_t>(batch)};
  const cuuint64_t strides[3] = {row, static_cast<cuuint64_t>(head_dim) * 2, row * seqlen};
  const cuuint32_t box[4] = {64, static_cast<cuuint32_t>(box_rows), 1, 1};
  const cuuint32_t elem_strides[4] = {1, 1, 1, 1};
  const CUresult r = encode(&m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 4, const_cast<void*>(base), dims, strides, box,
                            elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) throw std::runtime_error("cuTensorMapEncodeTiled failed: error " + std::to_string(r));
  return m;
}

int sm_count() {
  static int n = 0;
  if (!n) cuda_check(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, 0), "multiprocessor count");
  return n;
}

const CompiledKernel* find_kernel(const KernelKnobs& k) {
  for (const auto& c : compiled_kernels())
    if (c.knobs == k) return &c;
  return nullptr;
}

GpuInfo gpu_info() {
  GpuInfo g;
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    g.why = e != cudaSuccess ? std::string("no usable CUDA driver or device (") + cudaGetErrorString(e) + ")"
                             : "no CUDA device";
    cudaGetLastError();
    return g;
  }
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) {
    g.why = "cudaGetDeviceProperties failed";
    return g;
  }
  g.name = p.name;
  g.sm_count = p.multiProcessorCount;
  g.cc_major = p.major;
  g.cc_minor = p.minor;
  g.usable = p.major == 9 && p.minor == 0;
  if (!g.usable)
    g.why = g.name + " is compute capability " + std::to_string(p.major) + "." + std::to_string(p.minor) +
            "; these kernels are built for sm_90a (H100/H200) only";
  return g;
}

namespace {

/// Fills `n` bf16 values with N(0,1) samples (Box-Muller on a counter hash).
__global__ void fill_normal(__nv_bfloat16* x, size_t n, uint64_t seed) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    uint64_t h = (i + 1) * 0x9E3779B97F4A7C15ull ^ seed;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    const float u1 = (static_cast<float>(h & 0xFFFFFF) + 1.f) / 16777217.f;
    const float u2 = static_cast<float>((h >> 24) & 0xFFFFFF) / 16777216.f;
    x[i] = __float2bfloat16(sqrtf(-2.f * logf(u1)) * cospif(2.f * u2));
  }
}

template <class T>
std::vector<T> to_host(const void* p, size_t n) {
  std::vector<T> h(n);
  cuda_check(cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost), "cudaMemcpy to host");
  return h;
}

size_t q_elems(const Shape& s) { return static_cast<size_t>(s.batch) * s.seqlen_q * s.heads * s.head_dim; }
size_t kv_elems(const Shape& s) { return static_cast<size_t>(s.batch) * s.seqlen_k * s.kv_heads * s.head_dim; }

/// CUDA events around a launch.
struct EventPair {
  cudaEvent_t a{}, b{};
  EventPair() {
    cuda_check(cudaEventCreate(&a), "cudaEventCreate");
    cuda_check(cudaEventCreate(&b), "cudaEventCreate");
  }
  ~EventPair() {
    cudaEventDestroy(a);
    cudaEventDestroy(b);
  }
  double ms() const {
    float m = 0;
    cuda_check(cudaEventElapsedTime(&m, a, b), "cudaEventElapsedTime");
    return m;
  }
};

/// Device trace buffers for one launch geometry.
struct TraceAlloc {
  TraceBuffers b;
  size_t n_records = 0, n_warps = 0, n_ctas = 0;
  TraceAlloc(int grid, int warps, uint32_t cap) {
    n_ctas = grid;
    n_warps = static_cast<size_t>(grid) * warps;
    n_records = n_warps * cap;
    b.cap = cap;
    cuda_check(cudaMalloc(&b.records, std::max<size_t>(1, n_records) * sizeof(attnsim_trace_record)), "cudaMalloc trace");
    cuda_check(cudaMalloc(&b.ctas, n_ctas * sizeof(attnsim_cta_clock)), "cudaMalloc trace clocks");
    cuda_check(cudaMalloc(&b.counts, n_warps * sizeof(uint32_t)), "cudaMalloc trace counts");
  }
  ~TraceAlloc() {
    cudaFree(b.records);
    cudaFree(b.ctas);
    cudaFree(b.counts);
  }
};

/// Launch geometry (grid, warps) of a kernel on a problem, from one untimed launch: the launcher
/// is the only place that knows it, and the run doubles as a warm-up.
LaunchInfo probe(const CompiledKernel& k, DeviceProblem& prob, bool persistent) {
  LaunchInfo info;
  k.launch(prob.shape(), prob.tensors(), persistent, nullptr, nullptr, &info);
  cuda_check(cudaDeviceSynchronize(), "fa3_forward (probe run)");
  return info;
}

}  // namespace

DeviceProblem::DeviceProblem(const Shape& s, uint64_t seed) : shape_(s) {
  cuda_check(cudaMalloc(&q_, q_elems(s) * 2), "cudaMalloc Q");
  cuda_check(cudaMalloc(&k_, kv_elems(s) * 2), "cudaMalloc K");
  cuda_check(cudaMalloc(&v_, kv_elems(s) * 2), "cudaMalloc V");
  cuda_check(cudaMalloc(&o_, q_elems(s) * 2), "cudaMalloc O");
  cuda_check(cudaMalloc(&lse_, static_cast<size_t>(s.batch) * s.heads * s.seqlen_q * 4), "cudaMalloc LSE");
  fill_normal<<<1024, 256>>>(static_cast<__nv_bfloat16*>(q_), q_elems(s), seed * 3 + 1);
  fill_normal<<<1024, 256>>>(static_cast<__nv_bfloat16*>(k_), kv_elems(s), seed * 3 + 2);
  fill_normal<<<1024, 256>>>(static_cast<__nv_bfloat16*>(v_), kv_elems(s), seed * 3 + 3);
  cuda_check(cudaMemset(o_, 0, q_elems(s) * 2), "cudaMemset O");
  cuda_check(cudaDeviceSynchronize(), "filling inputs");
}

DeviceProblem::~DeviceProblem() {
  cudaFree(q_);
  cudaFree(k_);
  cudaFree(v_);
  cudaFree(o_);
  cudaFree(lse_);
}

Tensors DeviceProblem::tensors() const { return Tensors{q_, k_, v_, o_, lse_}; }
std::vector<uint16_t> DeviceProblem::q_host() const { return to_host<uint16_t>(q_, q_elems(shape_)); }
std::vector<uint16_t> DeviceProblem::k_host() const { return to_host<uint16_t>(k_, kv_elems(shape_)); }
std::vector<uint16_t> DeviceProblem::v_host() const { return to_host<uint16_t>(v_, kv_elems(shape_)); }
std::vector<uint16_t> DeviceProblem::o_host() const { return to_host<uint16_t>(o_, q_elems(shape_)); }
std::vector<float> DeviceProblem::lse_host() const {
  return to_host<float>(lse_, static_cast<size_t>(shape_.batch) * shape_.heads * shape_.seqlen_q);
}

Timing time_kernel(const CompiledKernel& k, DeviceProblem& prob, bool persistent, int warmup, int reps, bool traced) {
  Timing t;
  t.launch = probe(k, prob, persistent);
  std::unique_ptr<TraceAlloc> scratch;
  if (traced) scratch = std::make_unique<TraceAlloc>(t.launch.grid, t.launch.warps, 4096);
  const LaunchFn fn = traced ? k.launch_traced : k.launch;
  const TraceBuffers* tb = traced ? &scratch->b : nullptr;
  for (int i = 0; i < warmup; ++i) fn(prob.shape(), prob.tensors(), persistent, tb, nullptr, nullptr);
  cuda_check(cudaDeviceSynchronize(), "fa3_forward (warm-up)");
  EventPair ev;
  for (int i = 0; i < reps; ++i) {
    cuda_check(cudaEventRecord(ev.a), "cudaEventRecord");
    fn(prob.shape(), prob.tensors(), persistent, tb, nullptr, nullptr);
    cuda_check(cudaEventRecord(ev.b), "cudaEventRecord");
    cuda_check(cudaEventSynchronize(ev.b), "fa3_forward (timed)");
    t.ms.push_back(ev.ms());
  }
  std::vector<double> s = t.ms;
  std::sort(s.begin(), s.end());
  if (!s.empty()) {
    t.median_ms = s.size() % 2 ? s[s.size() / 2] : 0.5 * (s[s.size() / 2 - 1] + s[s.size() / 2]);
    t.min_ms = s.front();
    t.max_ms = s.back();
  }
  return t;
}

CheckResult check_kernel(const CompiledKernel& k, DeviceProblem& prob, bool persistent, int sample_rows) {
  cuda_check(cudaMemset(prob.tensors().o, 0xFF, q_elems(prob.shape()) * 2), "cudaMemset O (NaN poison)");
  k.launch(prob.shape(), prob.tensors(), persistent, nullptr, nullptr, nullptr);
  cuda_check(cudaDeviceSynchronize(), "fa3_forward");
  return compare_with_reference(prob, sample_rows);
}

MeasuredTrace trace_kernel(const CompiledKernel& k, DeviceProblem& prob, bool persistent, uint32_t cap) {
  MeasuredTrace m;
  m.launch = probe(k, prob, persistent);
  TraceAlloc buf(m.launch.grid, m.launch.warps, cap);
  k.launch_traced(prob.shape(), prob.tensors(), persistent, &buf.b, nullptr, nullptr);  // warm-up
  cuda_check(cudaDeviceSynchronize(), "fa3_forward (traced warm-up)");
  EventPair ev;
  cuda_check(cudaEventRecord(ev.a), "cudaEventRecord");
  k.launch_traced(prob.shape(), prob.tensors(), persistent, &buf.b, nullptr, nullptr);
  cuda_check(cudaEventRecord(ev.b), "cudaEventRecord");
  cuda_check(cudaEventSynchronize(ev.b), "fa3_forward (traced)");
  m.kernel_ms = ev.ms();
  m.records = to_host<attnsim_trace_record>(buf.b.records, buf.n_records);
  m.counts = to_host<uint32_t>(buf.b.counts, buf.n_warps);
  m.ctas = to_host<attnsim_cta_clock>(buf.b.ctas, buf.n_ctas);
  m.warps_per_cta = m.launch.warps;
  m.cap = cap;
  return m;
}

}  // namespace attnsim::sm90
