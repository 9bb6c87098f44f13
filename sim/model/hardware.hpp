// Hardware description of one GPU, read from configs/hw/*.json. Every constant in
// those files is an object {"value": ..., "provenance": "published"|"measured"|
// "derived"|"assumed", "source": "..."}; the loader refuses a constant without
// provenance. Units are in the field names (cycles are SM clock cycles).
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace attnsim {

/// Where a constant came from, as written in the config.
struct Provenance {
  std::string kind;    ///< published | measured | derived | assumed
  std::string source;  ///< paper/spec/microbenchmark, or the formula for "derived"
};

/// One GPU. All rates are per SM clock cycle.
struct Hardware {
  std::string name;  ///< "B200", "H100 SXM5", "H200"
  std::string arch;  ///< "sm90" | "sm100"
  std::string file;  ///< config file it was read from

  // Chip
  int num_sms = 0;       ///< SMs on the chip
  int smsp_per_sm = 4;   ///< SM sub-partitions; warp w sits on SMSP w % smsp_per_sm
  double clock_ghz = 0;  ///< SM clock used to turn cycles into time, under tensor-core (wgmma / tcgen05) load
  /// SM clock while the chip runs CUDA-core work only (FFMA, no tensor core): power allows more
  /// (kernels/microbench clock_under_ffma). Used for schedules whose GEMMs run on the CUDA cores.
  double clock_ghz_cuda_cores = 0;
  /// SM clock under warp-level mma.sync load (kernels/microbench clock_under_mma_sync).
  double clock_ghz_mma_sync = 0;
  // The clock under a kernel's own activity (model/clock_power.hpp; kernels/microbench
  // clock_under_mix). clock_power_limit_w 0: no power model, clock_ghz is used.
  double clock_ghz_max = 0;             ///< the top SM clock (the driver's maximum), GHz
  double clock_ghz_tensor_ceiling = 0;  ///< SM clock while tensor cores run, board under its limit, GHz
  double clock_power_limit_w = 0;       ///< the board's enforced power limit, W
  double clock_power_exponent = 2;      ///< k: clock-scaled power grows as (f / clock_ghz_max)^k
  double clock_power_static_w = 0;      ///< P0: board power independent of the SM clock, W
  double clock_power_base_w = 0;        ///< c_x: clock-scaled power of SMs with nothing to do, W at clock_ghz_max
  double clock_power_tensor_w = 0;      ///< c_t: W at clock_ghz_max per unit of tensor-core duty
  double clock_power_issue_w = 0;  ///< c_i: W at clock_ghz_max per unit of issue duty (warp instructions / SMSP cycle)
  double clock_power_l2_w_per_tbps = 0;   ///< e_l: W per TB/s read from L2
  double clock_power_hbm_w_per_tbps = 0;  ///< e_h: W per TB/s moved to or from HBM

  // Per SMSP pipes (lane-operations per cycle; a warp instruction is 32 lane-ops)
  double issue_per_clk_smsp = 1;       ///< warp instructions issued per cycle
  double fma_lanes_per_clk_smsp = 0;   ///< FP32 FMA lanes (FFMA: 32 lane-ops, FFMA2: 64)
  double alu_lanes_per_clk_smsp = 0;   ///< integer/logic/FMNMX lanes
  double mufu_lanes_per_clk_smsp = 0;  ///< MUFU (ex2) lanes

  // Per SM
  double tensor_flops_per_clk = 0;     ///< dense bf16 FLOP per cycle per SM (wgmma / tcgen05.mma)
  double mma_sync_flops_per_clk = 0;   ///< dense bf16 FLOP per cycle per SM through warp-level mma.sync m16n8k16
  double smem_bytes_per_clk = 0;       ///< shared-memory bandwidth
  double tmem_bytes_per_clk = 0;       ///< TMEM <-> register datapath (tcgen05.ld/st), 0 = no TMEM
  long long smem_bytes_per_block = 0;  ///< max dynamic SMEM per CTA
  int tmem_columns = 0;                ///< 0 when the GPU has no TMEM
  int tmem_lanes = 0;
  int registers_per_sm = 0;  ///< 32-bit registers
  int max_registers_per_thread = 0;
  int max_warps_per_sm = 0;
  int register_alloc_unit = 256;  ///< registers are given to a warp in multiples of this many
  int register_banks = 2;         ///< register file banks an instruction's source operands are read from

  // Memory system, shared by all SMs
  double l2_bytes_per_clk = 0;      ///< L2 -> SM aggregate bandwidth (whole chip)
  double hbm_bytes_per_s = 0;       ///< DRAM bandwidth
  double tma_bytes_per_clk_sm = 0;  ///< per-SM TMA/L2 read port limit

  // Latencies and issue costs (cycles)
  double tma_latency = 0;       ///< TMA load issue -> data in SMEM (L2 hit)
  double mma_latency = 0;       ///< last MMA of a group done -> commit visible
  double mbarrier_latency = 0;  ///< arrive -> waiting warp resumes
  double mma_issue_instrs = 0;  ///< warp instructions the MMA warp spends per MMA instruction
  double tma_issue_instrs = 0;  ///< warp instructions to issue one TMA copy

  // Dependent-instruction latencies (cycles, issue of one instruction -> issue of the next one
  // that reads its result, one warp, nothing else running; kernels/microbench latency_chains)
  double fma_latency = 0;   ///< FFMA/FADD/FMUL -> dependent FP32 instruction
  double alu_latency = 0;   ///< FMNMX (fp32 max) -> dependent FMNMX
  double mufu_latency = 0;  ///< MUFU.EX2 -> dependent MUFU.EX2
  double shfl_latency = 0;  ///< SHFL.BFLY -> next SHFL.BFLY that exchanges its result
  double f2fp_latency = 0;  ///< F2FP.BF16.F32.PACK_AB (cvt.rn.bf16x2.f32) -> dependent use of the packed result
  double lds_latency = 0;   ///< ld.shared (LDS) -> dependent load using its result (kernels/microbench operand)
  double ldg_latency = 0;   ///< ld.global that hits in L2 -> its result (kernels/microbench tma: pointer chase)

  // Instruction fetch (kernels/microbench ifetch)
  int icache_bytes = 0;  ///< code a warp's SMSP keeps cached: a loop up to this size issues at full rate
  double ifetch_cycles_per_instruction = 0;  ///< issue rate floor of code streamed from beyond that cache
  double ifetch_runahead_bytes = 0;  ///< how far ahead of issue the fetch unit brings in code while the warp waits

  // Issue costs of asynchronous and synchronisation instructions (cycles)
  double wgmma_issue_cycles = 0;       ///< issue -> issue of back-to-back wgmma.mma_async m64n128k16 bf16 SS of one
                                       ///< warpgroup, tensor core not back-pressuring (issue cost, not pipe time)
  double mma_queue_depth = 0;          ///< MMA instructions that can wait in an SMSP tensor core's queue behind the
                                       ///< executing one before the next issue stalls (wgmma back-pressure); the
                                       ///< engine rounds it to whole instructions. The queue is shared by the warps
                                       ///< of the SMSP, in issue order (kernels/microbench wgmma_share)
  double wgmma_wait_ready_cycles = 0;  ///< wgmma.wait_group 0 when every committed group has already finished
  double mbarrier_ready_cycles = 0;    ///< mbarrier.try_wait.parity on a phase that has already completed
  double named_barrier_latency = 0;    ///< bar.arrive -> the partner's bar.sync released (warpgroup ping-pong)

  // CUDA-core pipes while the SMSP's tensor core runs wgmma with register accumulators: the fraction
  // of its stand-alone rate each pipe keeps (register-file ports shared with the tensor core;
  // kernels/microbench pipes_under_mma)
  double fma_rate_beside_mma = 1;   ///< FFMA rate beside back-to-back wgmma / alone
  double alu_rate_beside_mma = 1;   ///< FMNMX rate beside back-to-back wgmma / alone
  double mufu_rate_beside_mma = 1;  ///< MUFU.EX2 rate beside back-to-back wgmma / alone

  // Memory system, attention access pattern
  double l2_hit_bytes_per_s = 0;   ///< chip-wide TMA load bytes/s when all SMs stream K/V-like tiles that groups of
                                   ///< CTAs share (same tiles, same order, about the same time): L2 hits
  double kv_fill_bytes_per_s = 0;  ///< rate at which distinct K/V bytes reach L2 (from HBM) while CTAs stream shared
                                   ///< tiles: with s CTAs per tile the chip-wide TMA rate is
                                   ///< 1 / (1 / l2_hit_bytes_per_s + 1 / (s x kv_fill_bytes_per_s))
  double tma_latency_hbm = 0;      ///< TMA tensor load issue -> mbarrier complete for a tile not in L2 (cycles)
  double tma_queue_factor = 0;     ///< k of a TMA load's latency under load: latency x (1 + k rho / sqrt(1 - rho))
                                   ///< with rho the chip's L2/HBM utilisation by the other SMs (Eigen fit over
                                   ///< kernels/microbench tma_under_load, utilisations below saturation)
  double tma_store_latency = 0;    ///< TMA tensor store of a 16 KB tile: issue -> cp.async.bulk.wait_group.read 0
                                   ///< returns (SMEM readable again), cycles

  // Launch (kernels/microbench launch_overhead)
  double launch_ns = 0;            ///< per-launch GPU time of back-to-back launches of an empty kernel with a full
                                   ///< one-CTA-per-SM grid (384 threads, ~200 KB dynamic SMEM), replayed from a CUDA
                                   ///< graph so the host's launch rate does not bound it (ns)
  double cta_launch_cycles = 0;    ///< extra time per additional wave of CTAs of a one-CTA-per-SM non-persistent
                                   ///< grid (slope of empty-kernel time vs waves, 384 threads, ~200 KB SMEM), cycles
  double cta_prologue_cycles = 0;  ///< CTA start -> first TMA issue of an FA3 prologue (mbarrier init + fence,
                                   ///< __syncthreads, setmaxnreg per warpgroup, prefetch.tensormap), cycles

  std::map<std::string, Provenance> provenance;  ///< per constant name

  bool has_tmem() const { return tmem_columns > 0; }
  /// CTAs of `threads` threads at `regs_per_thread` registers that fit one SM's register file
  /// (0 when one does not). The rule of the CUDA toolkit's occupancy calculator
  /// (cuda_occupancy.h, cudaOccMaxBlocksPerSMRegsLimit): a warp gets regs x 32 rounded up to
  /// register_alloc_unit, from one SMSP's quarter of the file, so an SM holds smsp_per_sm x
  /// floor((registers_per_sm / smsp_per_sm) / per-warp) warps, whole CTAs of them. 288 threads
  /// at 112 registers: 32256 of 65536 registers, yet 4 warps per SMSP, 16 per SM: one CTA of 9
  /// (ncu on an H100 says the same: "Block Limit Registers 1").
  int ctas_per_sm_by_registers(int threads, int regs_per_thread) const;
  /// What the SM's clock runs under: the tensor cores (wgmma, tcgen05), warp-level mma.sync, or
  /// the CUDA cores only.
  enum class ClockLoad { tensor_core, mma_sync, cuda_cores };
  /// The SM clock under `load`, GHz.
  double clock_under(ClockLoad load) const;
  /// Seconds per cycle times 1e6: microseconds per cycle.
  double us_per_cycle() const { return 1e-3 / clock_ghz; }
};

/// Value of constant `name` of `hw` as a double; throws std::out_of_range for an unknown name.
double constant_value(const Hardware& hw, const std::string& name);

/// Whether constant `name` holds an integer (num_sms, tmem_columns, ...) rather than a rate.
bool hardware_constant_is_integer(const std::string& name);

/// Names of every constant a hardware config holds, in file order.
std::vector<std::string> hardware_constant_names();

/// Reads and checks a hardware config; throws InputError naming file and JSON path.
Hardware load_hardware(const std::string& file);
/// Checks a parsed hardware config (`file` names it in errors); throws InputError.
Hardware hardware_from_json(const nlohmann::json& doc, const std::string& file);

/// Resolves "b200" to configs/hw/b200.json (searching the config dir), or returns `arg` if it is a path.
std::string resolve_hardware_path(const std::string& arg);

/// Directory holding configs/ and schedules/: $ATTNSIM_ROOT if set; else, when the running
/// executable is installed (<prefix>/bin/attnsim), <prefix>/share/attnsim if it holds configs/;
/// else the source tree it was built from; else ".".
std::string project_root();
/// project_root() and where it came from: "PATH (ATTNSIM_ROOT)", "PATH (installed)", "PATH (source tree)".
std::string describe_project_root();

}  // namespace attnsim
