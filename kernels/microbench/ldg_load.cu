// L2-hit latency of global loads (LDG) while other SMs stream global loads, as the FA2-style
// kernel's load warps copy K and V tiles with 16-byte loads on every SM at once.
//
// Why: that kernel's K/V copy (two warps, 16-byte loads, each stored to SMEM) is timed from its
// SASS with ldg_latency, the latency of one lone SM's dependent loads. Traced with one CTA per SM
// (H100), the copy takes 1.9 us per KV block with 64 CTAs and 2.7 us with 128, against 1.8 us
// from the SASS: the loads wait longer when more SMs load. This measures by how much, and
// whether it is the other SMs in general or the one that shares the SM's TPC.
#include "microbench.cuh"

namespace mb {
namespace {

constexpr int kChain = 1024;  // lines in a probe's chain (128 B apart): 128 KB per SM, all SMs' 17 MB fit in L2

/// One CTA per SM (the dynamic SMEM forces it). Warp 0 of the probing SMs chases a pointer chain
/// through its own L2-resident buffer (each step one dependent 8-byte load on its own 128-byte
/// line; the L1 holds no line of it: 128 KB of lines, each touched once per pass) and writes the
/// mean cycles per step of the second pass; warps 1-2 of the loading SMs copy `load_bytes`
/// from their own L2-resident region into SMEM with 16-byte loads (a fa2 K+V tile), over and
/// over until the probe warps are done. `probe`/`load`: per SM id, whether the SM probes / loads.
__global__ void ldg_load_kernel(const uint64_t* chains, const uint4* src, int load_bytes, const uint8_t* probe,
                                const uint8_t* load, volatile int* done, double* out, unsigned* sm_of_cta,
                                BlockClock* clk) {
  extern __shared__ uint4 sdst[];
  const unsigned sm = smid();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (threadIdx.x == 0) {
    sm_of_cta[blockIdx.x] = sm;
    clk[blockIdx.x] = BlockClock{0, 0, 0, 0, sm, 0};  // a probe's pass fills it in (the SM clock)
  }
  if (warp == 0) {
    if (!probe[sm]) return;
    if (lane == 0) {
      const uint64_t* chain = chains + static_cast<size_t>(sm) * kChain * 16;
      uint64_t i = 0;
      for (int s = 0; s < kChain; ++s) i = chain[i];  // one pass to bring the chain into L2
      const unsigned long long ns0 = globaltimer();
      const long long t0 = clock64();
#pragma unroll 1
      for (int s = 0; s < kChain; ++s) i = chain[i];
      const long long t1 = clock64();
      clk[blockIdx.x] = BlockClock{t0, t1, ns0, globaltimer(), sm, 0};
      out[sm] = static_cast<double>(t1 - t0) / kChain + (i == 0xFFFFFFFFull ? 1 : 0);
      atomicAdd(const_cast<int*>(done), 1);
    }
    return;
  }
  if (!load[sm]) return;
  const uint4* my = src + static_cast<size_t>(sm) * (load_bytes / 16);
  const int n = load_bytes / 16, t = threadIdx.x - 32;
  while (*done < gridDim.x) {  // until every CTA's probe (or its absence) is counted
#pragma unroll 4
    for (int i = t; i < n; i += 64) sdst[i] = my[i];
    __syncwarp();
  }
}

struct Mode {
  const char* name;
  const char* what;
};

void bench_ldg_load(Report& rep) {
  rep.set_method(
      "One CTA per SM (grid = SMs, 200 KB dynamic SMEM). Probe: lane 0 of warp 0 on the probing SMs chases a "
      "pointer chain through its own L2-resident buffer (1024 dependent 8-byte loads, each on its own 128-byte "
      "line, after one pass that brings the chain into L2): mean cycles per load = the L2-hit latency. Load: warps 1-2 "
      "of the "
      "loading SMs copy a 16 KB region (the FA2-style kernel's K + V tile at head_dim 64) from their own "
      "L2-resident part of a buffer into SMEM with 16-byte loads, over and over until every probe is done. "
      "SM ids 2k and 2k+1 are taken as one TPC. Median over the probing SMs.");
  const DeviceInfo& dev = rep.dev();
  const int sms = dev.sm_count;
  const int load_bytes = 16384;
  DeviceBuffer<uint64_t> chains(static_cast<size_t>(sms) * kChain * 16);
  {
    std::vector<uint64_t> h(static_cast<size_t>(sms) * kChain * 16, 0);
    for (int s = 0; s < sms; ++s) {
      // A stride of 16 words (128 B) through kChain lines, in a scrambled order.
      uint64_t* c = h.data() + static_cast<size_t>(s) * kChain * 16;
      std::vector<int> order(kChain);
      for (int i = 0; i < kChain; ++i) order[i] = (i * 1237) % kChain;  // 1237 odd: a permutation
      for (int i = 0; i < kChain; ++i) c[order[i] * 16] = static_cast<uint64_t>(order[(i + 1) % kChain]) * 16;
    }
    MB_CHECK(cudaMemcpy(chains.get(), h.data(), h.size() * sizeof(uint64_t), cudaMemcpyHostToDevice));
  }
  DeviceBuffer<uint4> src(static_cast<size_t>(sms) * load_bytes / 16);
  DeviceBuffer<uint8_t> probe(sms), load(sms);
  DeviceBuffer<int> done(1);
  DeviceBuffer<double> out(sms);
  DeviceBuffer<unsigned> sm_of(sms);
  DeviceBuffer<BlockClock> clk(sms);
  auto kern = ldg_load_kernel;
  const int smem = 200 * 1024;
  allow_smem(kern, smem);
  Json& res = rep.results();
  auto run = [&](const char* name, const std::function<bool(int)>& probes, const std::function<bool(int)>& loads) {
    std::vector<uint8_t> p(sms), l(sms);
    for (int s = 0; s < sms; ++s) p[s] = probes(s), l[s] = loads(s);
    MB_CHECK(cudaMemcpy(probe.get(), p.data(), sms, cudaMemcpyHostToDevice));
    MB_CHECK(cudaMemcpy(load.get(), l.data(), sms, cudaMemcpyHostToDevice));
    std::vector<double> med;
    for (int rep_i = 0; rep_i < 3; ++rep_i) {
      // Probe-less CTAs count themselves done at once, so the loaders stop when the probes end.
      int absent = 0;
      for (int s = 0; s < sms; ++s) absent += !p[s];
      MB_CHECK(cudaMemcpy(done.get(), &absent, sizeof(int), cudaMemcpyHostToDevice));
      kern<<<sms, 96, smem>>>(chains.get(), src.get(), load_bytes, probe.get(), load.get(), done.get(), out.get(),
                              sm_of.get(), clk.get());
      MB_CHECK_LAUNCH("ldg_load_kernel");
      rep.clock().add(clk.to_host(), 20000.0);  // the probes' passes: the SM clock the cycles are in
      const auto o = out.to_host();
      std::vector<double> v;
      for (int s = 0; s < sms; ++s)
        if (p[s]) v.push_back(o[s]);
      med.push_back(median(v));
    }
    res["latency_cycles"][name] = median(med);
    return median(med);
  };
  auto none = [](int) { return false; };
  const double alone = run(
      "alone", [](int s) { return s == 0; }, none);
  run(
      "tpc_peer_loads", [](int s) { return s == 0; }, [](int s) { return s == 1; });
  run(
      "other_tpcs_load", [](int s) { return s == 0; }, [](int s) { return s >= 2; });
  run(
      "all_others_load", [](int s) { return s == 0; }, [](int s) { return s != 0; });
  const double all = run(
      "every_sm_probes_and_loads", [](int) { return true; }, [](int) { return true; });
  const double half = run(
      "every_other_sm_probes_and_loads", [](int s) { return s % 2 == 0; }, [](int s) { return s % 2 == 0; });
  res["ldg_latency_alone_cycles"] = alone;
  res["ldg_latency_all_sms_loading_cycles"] = all;
  res["ldg_latency_one_sm_per_tpc_loading_cycles"] = half;
}

}  // namespace

std::vector<Benchmark> ldg_load_benchmarks() {
  return {{"ldg_load", "L2-hit load latency while other SMs (the TPC peer, all) stream 16-byte loads", bench_ldg_load}};
}

}  // namespace mb
