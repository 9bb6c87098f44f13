// The SM90 kernel's own load warp (kernels/sm90/load.cuh: load_warp<T>, its TMA loads of Q, K
// and V and its tile loop) recorded as the traced kernel records it, beside consumer warps that
// run the kernel's softmax code without pause, or beside idle ones.
//
// Why: in the traced kernel the load warp spends about 0.5 us per KV block outside its spans
// (between a wait's end and the next load, between a load and the next wait) and about 1 us per
// tile between its last V load and the next tile's pipeline_q.empty wait, on code that takes a
// few hundred cycles alone: two or three consumer warps share its SMSP and keep its issue slots
// (tma_issue measured the starvation for the TMA issue alone). Without that time the simulator's
// load warp waited about 0.7 us per block (pipeline_v.empty) and 1 us per tile (pipeline_q.empty)
// longer than the traced kernel's. This times that code, on the kernel's shared-memory layout and
// register budget, with the consumers' side reduced to what the load warp needs from it (its
// stages freed as soon as they land), alone and beside the kernel's softmax; `attnsim calibrate
// --costs` folds it into the cost file's "load_warp" section (sim/lower/fa3/load.cpp uses it).
#include <algorithm>
#include <cuda/ptx>
#include <map>

#include "common/tensor_map.cuh"
#include "microbench.cuh"
#include "sm90/consumer.cuh"
#include "sm90/load.cuh"

namespace mb {
namespace {

namespace sm90 = attnsim::sm90;

/// The base schedule's traced instances (schedules/fa3_sm90.json): hd64 192 x 128 (three consumer
/// warpgroups, O in its own buffer), hd128 128 x 128 (own O), hd256 128 x 80 (O in the V ring),
/// pingpong and intra-warpgroup overlap, static persistent grid; and the same with the dynamic
/// scheduler (the base schedule's causal grids: K of a tile's first block before its Q, the tile
/// ticket, the tile slot). Only their load warp runs the kernel's code.
using Hd64 = sm90::Traits<64, 192, 128, 2, true, true, 160, 32, true, false, true, 8>;
using Hd128 = sm90::Traits<128, 128, 128, 2, true, true, 240, 24, true, false, true, 8>;
using Hd256 = sm90::Traits<256, 128, 80, 2, true, true, 240, 24, true, false, false, 8, 8000, 0, 0, true>;
using Hd64Dynamic = sm90::Traits<64, 192, 128, 2, true, true, 160, 32, true, true, true, 8>;
using Hd128Dynamic = sm90::Traits<128, 128, 128, 2, true, true, 240, 24, true, true, true, 8>;
using Hd256Dynamic = sm90::Traits<256, 128, 80, 2, true, true, 240, 24, true, true, false, 8, 8000, 0, 0, true>;

constexpr int kMTilesPerHead = 4, kHeads = 2, kKvBlocks = 16;  // 8 work tiles of 16 KV blocks each
constexpr uint32_t kTraceCap = 4096;                           // records of the load warp per launch

/// `n` arrivals on `bar` at once (mbarrier.arrive with a count, sm_90): what the kernel's
/// consumer warps' lane-0 arrivals add up to.
__device__ __forceinline__ void arrive_n(uint64_t* bar, int n) {
  asm volatile("{\n .reg .b64 st;\n mbarrier.arrive.release.cta.shared::cta.b64 st, [%0], %1;\n}" ::"r"(
                   static_cast<uint32_t>(__cvta_generic_to_shared(bar))),
               "r"(n)
               : "memory");
}

/// Warp 1 of the producer warpgroup (idle in the kernel, on another SMSP than the load warp) in
/// place of the consumers: it frees each stage as soon as its loads have landed (Q at once, K and
/// V per block, the V ring for O after each tile where O is staged there), with the arrival counts
/// the consumer warps give, so that the load warp's waits are short and its own time shows. With
/// the dynamic scheduler it reads each tile from the slot, as the consumers do.
template <class T>
__device__ void free_stages(const sm90::Params& p, const sm90::Smem<T>& s, int lane) {
  attnsim::PipelineState q_read = attnsim::PipelineState::consumer_start(sm90::kQStages);
  attnsim::PipelineState kv = attnsim::PipelineState::consumer_start(T::kKvStage);
  for (int t = blockIdx.x;;) {
    sm90::Tile c;
    attnsim::wait_parity(&s.q_full[q_read.index], q_read.phase);
    q_read.advance();
    if constexpr (T::kDynamic) {
      sm90::copy_tile_slot(s.tile, s.warp_tile(1), lane);
      c = sm90::read_tile_copy(s.warp_tile(1));
      if (c.index >= p.num_tiles) break;  // the load warp's end marker (no Q bytes)
    } else {
      c = sm90::tile_at(p, t, T::kMBlock, T::kNBlock);
      t += gridDim.x;
    }
    if (lane == 0) arrive_n(s.q_empty, T::kConsumerWarps);
    for (int j = c.n_blocks - 1; j >= 0; --j) {
      attnsim::wait_parity(&s.k_full[kv.index], kv.phase);
      if (lane == 0) arrive_n(&s.k_empty[kv.index], T::kConsumerWarps);
      attnsim::wait_parity(&s.v_full[kv.index], kv.phase);
      if (lane == 0) arrive_n(&s.v_empty[kv.index], T::kConsumerWarps);
      kv.advance();
    }
    if constexpr (T::kOInV)
      if (lane == 0) arrive_n(s.barrier_o, sm90::barrier_o_arrivals(T::kConsumers));
    if constexpr (!T::kDynamic)
      if (t >= p.num_tiles) break;
  }
}

/// One CTA laid out as the kernel's (Smem<T>), its mbarriers initialised as fa3_cta does. Lane 0
/// of warp 0 runs load_warp<T> recording every tile (trace_rule: sample 1) through its Cursor into
/// p.trace; warp 1 frees the stages (free_stages); with `neighbours` every consumer warp runs the
/// kernel's softmax block (row_max, exp_scores, rescale + pack_p, fresh scores each round) until the
/// load warp is done, else the consumer warps exit at once. `recording` 0: the load warp runs the
/// plain code of every tile (p.trace_rule then says nothing). `clk`: the SM clock over the load
/// warp's run (clock64 and %globaltimer before and after it).
template <class T>
__global__ void __launch_bounds__(T::kThreads, 1)
    load_warp_kernel(const __grid_constant__ sm90::Params p, int neighbours, int recording, BlockClock* clk,
                     long long* rounds) {
  extern __shared__ uint8_t smem_raw[];
  const sm90::Smem<T> s(smem_raw);
  // The done flag in warp 3's trace slot (only the load warp's Cursor is used here).
  volatile int* done = reinterpret_cast<volatile int*>(static_cast<uint8_t*>(s.trace) + 3 * sm90::kTraceSlotBytes);
  const int warp = static_cast<int>(threadIdx.x / 32), lane = threadIdx.x % 32;
  if (threadIdx.x == 0) {
    cuda::ptx::mbarrier_init(s.q_full, sm90::kFullArrivals);
    cuda::ptx::mbarrier_init(s.q_empty, T::kConsumerWarps);
    for (int i = 0; i < T::kKvStage; ++i) {
      cuda::ptx::mbarrier_init(&s.k_full[i], sm90::kFullArrivals);
      cuda::ptx::mbarrier_init(&s.v_full[i], sm90::kFullArrivals);
      cuda::ptx::mbarrier_init(&s.k_empty[i], T::kConsumerWarps);
      cuda::ptx::mbarrier_init(&s.v_empty[i], T::kConsumerWarps);
    }
    if constexpr (T::kOInV) cuda::ptx::mbarrier_init(s.barrier_o, sm90::barrier_o_arrivals(T::kConsumers));
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
    *done = 0;
  }
  if (warp == sm90::kLoadWarp) attnsim::TraceRecorder<true>::open_cursor(p, s.trace, warp, lane);
  __syncthreads();
  if (sm90::warp_role(warp) != sm90::Role::Consumer) {
    sm90::set_registers<T::kRegProducer>(false);
    if (warp == sm90::kLoadWarp) {
      if (lane == 0) {
        const long long c0 = clock64();
        const unsigned long long n0 = globaltimer();
        sm90::load_warp<T>(p, s, recording != 0);
        *done = 1;
        *clk = BlockClock{c0, clock64(), n0, globaltimer(), smid(), 0};
      }
      __syncwarp();
      attnsim::TraceRecorder<true>::close_cursor(p, s.trace, warp, lane);
    } else if (warp == 1) {
      free_stages<T>(p, s, lane);
    }
    return;
  }
  sm90::set_registers<T::kRegConsumer>(true);
  if (!neighbours) return;
  constexpr float kScaleLog2 = 0.0883883f * 1.4426950f;
  float sacc[T::kNBlock / 2], o[T::kHeadDim / 2];
  uint32_t pr[T::kNBlock / 4];
#pragma unroll
  for (int i = 0; i < T::kHeadDim / 2; ++i) o[i] = 0.0f;
#pragma unroll
  for (int i = 0; i < T::kNBlock / 2; ++i)
    sacc[i] = static_cast<float>(hash32(i * 32 + lane) & 0xFFFF) * (1.0f / 8192.0f);
  sm90::RowStats st;
  const long long c0 = clock64();
  int r = 0;
  for (; *done == 0; ++r) {
    float alpha[2];
    sm90::row_max<T::kNBlock>(sacc, st, kScaleLog2, alpha);
    sm90::exp_scores<T::kNBlock>(sacc, st, kScaleLog2, alpha);
    sm90::rescale<T::kHeadDim>(o, alpha);
    sm90::pack_p<T::kNBlock>(sacc, pr);
#pragma unroll
    for (int i = 0; i < T::kNBlock / 2; ++i)
      sacc[i] = __uint_as_float(pr[i / 2] & 0x7FFF7FFFu) * 1e-30f + fmaf(sacc[i], 0.5f, 0.25f * (r & 3));
  }
  if (lane == 0) {  // this warp's softmax blocks and the cycles they took
    rounds[2 * warp] = r;
    rounds[2 * warp + 1] = clock64() - c0;
  }
  if (o[0] + sacc[0] == 1234567.0f) *done = 2;  // the softmax's results are read
}

/// What the load warp's records of one launch say, cycles; see bench_load_warp's method.
struct LoadWarpTimes {
  std::vector<double> block_gaps, block_loads, block_own, load_k, load_v, wait_k, wait_v;
  std::vector<double> tile_bookkeeping, tile_head_own;
  std::vector<double> duration;     ///< the load warp's whole run (its 8 tiles), per launch
  std::vector<double> tile1_entry;  ///< from its start to the first record of its second tile, per launch
  /// Beside the softmax: cycles per softmax block of the consumer warps on SMSP 0 (the load
  /// warp's) and of those on SMSPs 1-3 (their mean), per launch.
  std::vector<double> round_smsp0, round_smsp1_3;
};

/// Splits warp 0's records (one launch, every tile recorded) into the LoadWarpTimes samples.
void split_records(const std::vector<attnsim_trace_record>& recs, LoadWarpTimes& out) {
  std::map<int, std::vector<const attnsim_trace_record*>> by_tile;
  for (const auto& r : recs) by_tile[r.tile].push_back(&r);
  const attnsim_trace_record* prev_tile_last = nullptr;
  for (auto& [tile, rs] : by_tile) {
    if (prev_tile_last) out.tile_bookkeeping.push_back(static_cast<double>(rs.front()->t0 - prev_tile_last->t1));
    prev_tile_last = rs.back();
    int n_blocks = 0;
    for (const auto* r : rs) n_blocks = std::max(n_blocks, r->block + 1);
    // Per block j: the gaps before its records, its load spans, its waits.
    std::map<int, double> gaps, loads;
    double head = 0;
    for (size_t i = 0; i < rs.size(); ++i) {
      const attnsim_trace_record& r = *rs[i];
      const double gap = i > 0 ? static_cast<double>(r.t0 - rs[i - 1]->t1) : 0.0;
      const double dur = static_cast<double>(r.t1 - r.t0);
      const bool is_wait = r.op == ATTNSIM_OP_WAIT;
      if (r.block < 0 || r.block == n_blocks - 1) {  // Q and the tile's first block: its head
        head += gap + (is_wait ? 0.0 : dur);
        continue;
      }
      gaps[r.block] += gap;
      if (r.op == ATTNSIM_OP_LOAD_K) out.load_k.push_back(dur), loads[r.block] += dur;
      if (r.op == ATTNSIM_OP_LOAD_V) out.load_v.push_back(dur), loads[r.block] += dur;
      if (is_wait && r.wait_on == ATTNSIM_WAIT_K_EMPTY) out.wait_k.push_back(dur);
      if (is_wait && r.wait_on == ATTNSIM_WAIT_V_EMPTY) out.wait_v.push_back(dur);
    }
    out.tile_head_own.push_back(head);
    for (const auto& [j, g] : gaps) {
      out.block_gaps.push_back(g);
      out.block_loads.push_back(loads[j]);
      out.block_own.push_back(g + loads[j]);
    }
  }
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0.0 : s / static_cast<double>(v.size());
}

/// One condition: `neighbours` (0 idle, 1 softmax), the trace sample (1: every tile recorded; 8:
/// a static grid records its second tile only, a dynamic one its tiles 1-5; 0: nothing recorded,
/// the plain code throughout).
template <class T>
LoadWarpTimes run_instance(Report& rep, int neighbours, int launches, int sample = 1) {
  const int sq = kMTilesPerHead * T::kMBlock, sk = kKvBlocks * T::kNBlock, d = T::kHeadDim;
  DeviceBuffer<uint16_t> q(static_cast<size_t>(sq) * kHeads * d), k(static_cast<size_t>(sk) * kHeads * d),
      v(static_cast<size_t>(sk) * kHeads * d);
  q.zero();
  k.zero();
  v.zero();
  sm90::Params p{};
  p.tm_q = attnsim::make_tensor_map(q.get(), d, sq, kHeads, 1, T::kMBlock);
  p.tm_k = attnsim::make_tensor_map(k.get(), d, sk, kHeads, 1, T::kNBlock);
  p.tm_v = attnsim::make_tensor_map(v.get(), d, sk, kHeads, 1, T::kNBlock);
  p.batch = 1;
  p.heads = kHeads;
  p.group = 1;
  p.seqlen_q = sq;
  p.seqlen_k = sk;
  p.causal = 0;
  p.scale = 1.0f;
  p.scale_log2 = 1.4426950f;
  p.m_tiles = kMTilesPerHead;
  p.num_tiles = kMTilesPerHead * kHeads;
  p.m_tiles_div = attnsim_make_divisor(p.m_tiles);
  p.heads_div = attnsim_make_divisor(kHeads);
  p.persistent = T::kDynamic ? 0 : 1;
  p.l2_section = static_cast<int>(
      std::min<long long>(attnsim_l2_section_heads(T::kL2SectionMiB, sk, d, d, 2, kHeads, kHeads), kHeads));
  DeviceBuffer<int> counter(2);
  counter.zero();
  p.tile_counter = counter.get();
  const int warps = T::kWarps;
  DeviceBuffer<attnsim_trace_record> records(static_cast<size_t>(warps) * kTraceCap);
  DeviceBuffer<uint32_t> counts(warps), spans(warps);
  DeviceBuffer<attnsim_cta_clock> ctas(1);
  p.trace = records.get();
  p.trace_count = counts.get();
  p.trace_spans = spans.get();
  p.cta_clock = ctas.get();
  p.trace_cap = kTraceCap;
  p.trace_warps = 1u << sm90::kLoadWarp;
  p.trace_rule = sm90::make_trace_sample_rule(std::max(1, sample), p.num_tiles, 1, !T::kDynamic, 1);
  auto kern = load_warp_kernel<T>;
  allow_smem(kern, T::kSmemBytes);
  DeviceBuffer<BlockClock> clk(1);
  DeviceBuffer<long long> rounds(2 * static_cast<size_t>(warps));
  LoadWarpTimes times;
  for (int l = 0; l < launches; ++l) {
    counts.zero();
    rounds.zero();
    kern<<<1, T::kThreads, T::kSmemBytes>>>(p, neighbours, sample > 0 ? 1 : 0, clk.get(), rounds.get());
    MB_CHECK_LAUNCH("load_warp_kernel");
    const auto c = clk.to_host();
    rep.clock().add(c, 2000.0);
    const auto n = counts.to_host();
    const auto all = records.to_host();
    std::vector<attnsim_trace_record> mine(all.begin() + sm90::kLoadWarp * kTraceCap,
                                           all.begin() + sm90::kLoadWarp * kTraceCap + n[sm90::kLoadWarp]);
    if (l == 0) continue;  // the first launch warms the L2 and the instruction cache
    times.duration.push_back(static_cast<double>(c[0].clk1 - c[0].clk0));
    if (neighbours) {
      const auto h = rounds.to_host();
      double smsp0 = 0, others = 0;
      int n0 = 0, n1 = 0;
      for (int w = 0; w < warps; ++w) {
        if (sm90::warp_role(w) != sm90::Role::Consumer || h[2 * w] == 0) continue;
        const double per_round = static_cast<double>(h[2 * w + 1]) / static_cast<double>(h[2 * w]);
        if (w % 4 == 0) {
          smsp0 += per_round;
          ++n0;
        } else {
          others += per_round;
          ++n1;
        }
      }
      if (n0 > 0 && n1 > 0) {
        times.round_smsp0.push_back(smsp0 / n0);
        times.round_smsp1_3.push_back(others / n1);
      }
    }
    // Records carry the low 32 bits of the SM clock (%clock); the start's clock64 is cut to them.
    const auto first1 = std::find_if(mine.begin(), mine.end(), [](const auto& r) { return r.tile == 1; });
    if (first1 != mine.end())
      times.tile1_entry.push_back(static_cast<double>(first1->t0 - static_cast<uint32_t>(c[0].clk0)));
    if (sample == 1) split_records(mine, times);
  }
  return times;
}

/// The medians (and means where named) of one condition's samples.
Json times_json(const LoadWarpTimes& times) {
  Json j = Json::object();
  j["block_gaps_cycles"] = median(times.block_gaps);
  j["block_gaps_mean_cycles"] = mean(times.block_gaps);
  j["block_load_spans_cycles"] = median(times.block_loads);
  j["block_own_cycles"] = median(times.block_own);
  j["block_own_mean_cycles"] = mean(times.block_own);
  j["load_k_cycles"] = median(times.load_k);
  j["load_v_cycles"] = median(times.load_v);
  j["wait_k_empty_cycles"] = median(times.wait_k);
  j["wait_v_empty_cycles"] = median(times.wait_v);
  j["tile_bookkeeping_cycles"] = median(times.tile_bookkeeping);
  j["tile_bookkeeping_mean_cycles"] = mean(times.tile_bookkeeping);
  j["tile_head_own_cycles"] = median(times.tile_head_own);
  j["blocks"] = static_cast<int>(times.block_own.size());
  j["tiles"] = static_cast<int>(times.tile_bookkeeping.size());
  j["duration_cycles"] = median(times.duration);
  j["tile1_entry_cycles"] = median(times.tile1_entry);
  if (!times.round_smsp0.empty()) {
    j["consumer_softmax_block_smsp0_cycles"] = median(times.round_smsp0);
    j["consumer_softmax_block_smsp1_3_cycles"] = median(times.round_smsp1_3);
  }
  return j;
}

template <class T>
void instance(Report& rep, Json& j, const char* kernel, int launches) {
  j["kernel"] = kernel;
  j["head_dim"] = T::kHeadDim;
  j["m_block"] = T::kMBlock;
  j["n_block"] = T::kNBlock;
  j["pingpong"] = T::kPingpong;
  j["overlap"] = T::kOverlap;
  j["dynamic"] = T::kDynamic;
  j["own_o"] = T::kOwnO;
  j["o_in_v_ring"] = T::kOInV;
  j["consumer_warpgroups"] = T::kConsumers;
  j["alone"] = times_json(run_instance<T>(rep, 0, launches));
  const LoadWarpTimes beside = run_instance<T>(rep, 1, launches);
  j["beside_softmax"] = times_json(beside);
  // A recorded tile after a plain one, as the traced kernel records (one tile in N): its code,
  // run for the first time in the launch, against the same tile after recorded ones. Tile 1's
  // first record comes (tile 0's time) + (the entry into tile 1) after the start: with tile 0
  // plain here and recorded above, the difference less (plain - recorded) per tile of the
  // all-plain run is what entering a recorded tile from a plain one costs beyond the warm entry.
  Json& entry = j["recorded_after_plain"];
  const LoadWarpTimes one = run_instance<T>(rep, 1, launches, 8), plain = run_instance<T>(rep, 1, launches, 0);
  const double one_entry = median(one.tile1_entry), all_entry = median(beside.tile1_entry);
  const double plain_run = median(plain.duration), all_run = median(beside.duration);
  entry["tile1_entry_cycles"] = one_entry;
  entry["all_recorded_tile1_entry_cycles"] = all_entry;
  entry["plain_duration_cycles"] = plain_run;
  entry["all_recorded_duration_cycles"] = all_run;
  entry["one_recorded_duration_cycles"] = median(one.duration);
  // The consumers' softmax blocks beside the load warp's plain code (nothing recorded).
  entry["plain_consumer_softmax_block_smsp0_cycles"] = median(plain.round_smsp0);
  entry["plain_consumer_softmax_block_smsp1_3_cycles"] = median(plain.round_smsp1_3);
  const double tiles = kMTilesPerHead * kHeads;
  entry["entry_extra_cycles"] = one_entry - all_entry - (plain_run - all_run) / tiles;
}

void bench_load_warp(Report& rep) {
  require_sm90(rep);
  rep.set_method(
      "The SM90 kernel's load warp (kernels/sm90/load.cuh, load_warp<T> of the traced build, recording every tile "
      "through its Cursor as a recorded tile of the traced kernel does) on the kernel's shared-memory layout and "
      "register budget, one CTA on one SM: 2 heads x 4 m-blocks = 8 work tiles of 16 KV blocks, Q/K/V zero, bf16, "
      "L2-resident after the first launch. Warp 1 stands in for the consumers: it waits for each stage's loads to land "
      "and frees it at once with the consumer warps' arrival count (Q as soon as it lands; the V ring for O after each "
      "tile where O is staged there). alone: the consumer warps exit; beside_softmax: every consumer warp runs the "
      "kernel's softmax block (row_max, exp_scores, rescale + pack_p, fresh scores each round) without pause until "
      "the load warp is done. From the load warp's records (raw SM cycles), launches 2.. pooled: per KV block other "
      "than a tile's first, block_gaps = the time between its records and before its first (the load warp's own code "
      "outside its spans), block_load_spans = its load_k + load_v spans, block_own = both; tile_bookkeeping = from a "
      "tile's last record (its last V load) to the next tile's first (its pipeline_q.empty wait, or with the dynamic "
      "scheduler its first K wait); tile_head_own = the gaps and load spans of a tile's Q and first block. Medians "
      "(and means where named). recorded_after_plain (beside the softmax): tile 1's first record after the load "
      "warp's start (tile1_entry) with every tile recorded and with tile 1 recorded after a plain tile 0 (trace "
      "sample 8: a static grid records tile 1 only, a dynamic one tiles 1-5), the load warp's whole run recorded and "
      "plain; entry_extra = the two entries' difference less (plain - recorded run) / 8: what entering a recorded "
      "tile from a plain one costs over the warm entry. consumer_softmax_block_smsp0 / _smsp1_3 (beside the softmax; "
      "plain_* in recorded_after_plain with nothing recorded): cycles per softmax block of the consumer warps on SMSP "
      "0, the load warp's, and of those on SMSPs 1-3 (mean over the warps, median over the launches). Instances: the "
      "base schedule's traced hd64 (192 x 128), "
      "hd128 (128 x 128), hd256 (128 x 80), each static persistent and dynamic.");
  const int launches = rep.opt().quick ? 3 : 9;
  Json& inst = rep.results()["instances"];
  // The names the kernel instances have in `attnsim sass-costs` listings (fa3_forward<Traits<...>>).
  instance<Hd64>(rep, inst["hd64"], "fa3_forward<Traits<64, 192, 128, 2, true, true, 160, 32, true, false>>", launches);
  instance<Hd128>(rep, inst["hd128"], "fa3_forward<Traits<128, 128, 128, 2, true, true, 240, 24, true, false>>",
                  launches);
  instance<Hd256>(rep, inst["hd256"],
                  "fa3_forward<Traits<256, 128, 80, 2, true, true, 240, 24, true, false>> rescale>8 o_in_v", launches);
  instance<Hd64Dynamic>(rep, inst["hd64_dynamic"],
                        "fa3_forward<Traits<64, 192, 128, 2, true, true, 160, 32, true, true>>", launches);
  instance<Hd128Dynamic>(rep, inst["hd128_dynamic"],
                         "fa3_forward<Traits<128, 128, 128, 2, true, true, 240, 24, true, true>>", launches);
  instance<Hd256Dynamic>(rep, inst["hd256_dynamic"],
                         "fa3_forward<Traits<256, 128, 80, 2, true, true, 240, 24, true, true>> rescale>8 o_in_v",
                         launches);
}

}  // namespace

std::vector<Benchmark> load_warp_benchmarks() {
  return {{"load_warp",
           "the SM90 kernel's own load warp (TMA issue, pipeline waits, tile loop), alone and beside the consumers' "
           "softmax",
           bench_load_warp}};
}

}  // namespace mb
