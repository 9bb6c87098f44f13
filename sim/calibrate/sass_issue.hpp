// In-order issue time of one warp's SASS: how long a warp alone on its SMSP takes to issue a
// dynamic instruction sequence, from the schedule ptxas wrote into the encoding and the few
// hardware facts that schedule leaves to run time.
//
// Per instruction, in program order (one warp, nothing else on the SMSP):
//   - it issues no earlier than the previous instruction's issue plus that instruction's stall
//     count (at least 1): ptxas covers every fixed-latency dependency with these counts;
//   - it waits for the scoreboards its wait mask names. A variable-latency instruction (shared or
//     global load, MUFU, shuffle, special-register or constant load) releases its write scoreboard its
//     latency after issue; an instruction that sets a read scoreboard (stores) releases it when
//     its operands have been read. Latencies are the GPU's measured ones (Hardware);
//   - it waits for its pipe: a warp instruction holds the FMA pipe 32 / fma_lanes cycles, the
//     ALU pipe 32 / alu_lanes, MUFU 32 / mufu_lanes (Hardware, kernels/microbench);
//   - it pays one cycle per extra register read from the same register bank: the register file
//     has Hardware::register_banks banks (register r in bank r % banks), and a source operand
//     that the previous instruction marked `.reuse` in the same operand slot comes from the
//     operand reuse cache instead (Jia et al., "Dissecting the NVIDIA Volta GPU Architecture via
//     Microbenchmarking", 2018, sections 2.2-2.3; Turing and Ampere keep the scheme);
//   - it issues no earlier than it has been fetched: code found in the SMSP's instruction cache
//     (Hardware::icache_bytes, 128-byte lines, least recently used out) costs nothing, a line
//     that misses costs ifetch_cycles_per_instruction per instruction in it, and the fetch of an
//     instruction starts no earlier than the issue of the one ifetch_runahead_bytes before it (of
//     the one just before it when that is less than an instruction)
//     (kernels/microbench ifetch on an H100: loops of up to 32 KB of straight-line FFMAs issue
//     about one per cycle, 64 KB one per 2.45 cycles, and a warp that waits 8000 cycles before
//     64 KB of code has had under 1 KB of it fetched).
// The time of a sequence is the issue time of the instruction after it: results still in flight
// at its end belong to whoever waits for them.
//
// A span with loops is made straight first (unroll_path): each backward branch is taken a given
// number of times per entry into its loop.
#pragma once
#include <cstdint>
#include <map>
#include <vector>

#include "calibrate/sass_paths.hpp"

namespace attnsim {
struct Hardware;
}

namespace attnsim::sass {

/// The hardware facts the issue model uses, cycles.
struct IssueModel {
  double lds_latency = 0;    ///< LDS -> its result usable (kernels/microbench operand)
  double mufu_latency = 0;   ///< MUFU -> result (latency_chains)
  double shfl_latency = 0;   ///< SHFL -> result (latency_chains)
  double ldg_latency = 0;    ///< LDG (global load, L2 hit) -> result (kernels/microbench tma)
  double other_latency = 0;  ///< other variable-latency producers (S2R, S2UR, LDC...): charged as an LDS
  double read_latency = 0;   ///< issue -> operands read (releases a read scoreboard): charged as one ALU latency
  double fma_interval = 1, alu_interval = 2, mufu_interval = 8;  ///< cycles a warp instruction holds its pipe
  int register_banks = 2;
  int icache_bytes = 0;                      ///< instruction cache per SMSP (0: every line misses)
  double ifetch_cycles_per_instruction = 0;  ///< cost of an instruction in a missed line (0: fetch is free)
  double ifetch_runahead_bytes = 0;          ///< how far fetch may run ahead of issue
  /// From a hardware config (lds_latency, ldg_latency, mufu_latency, shfl_latency, alu_latency, *_lanes_per_clk_smsp,
  /// register_banks).
  static IssueModel from(const Hardware& hw);
};

/// Issue time of one sequence and where it went, cycles.
struct IssueTime {
  double cycles = 0;  ///< issue of the first instruction -> issue slot after the last
  int instructions = 0;
  double stall_cycles = 0;          ///< sum of max(1, stall count): the static schedule alone
  double scoreboard_cycles = 0;     ///< waits on variable-latency results beyond the stall counts
  double pipe_cycles = 0;           ///< waits for a pipe still busy with this warp's previous instruction
  double bank_cycles = 0;           ///< register bank conflicts
  double fetch_cycles = 0;          ///< waits for instructions still being fetched
  int fetched_lines = 0;            ///< 128-byte code lines that missed the instruction cache
  int shared_loads = 0;             ///< LDS / LDSM instructions (each at least one SMEM wavefront)
  int ffma = 0, alu = 0, mufu = 0;  ///< FMA-pipe, ALU-pipe and MUFU instructions (the block's pipe demands)
};

/// The SMSP pipe a warp instruction holds for its issue interval: FP32 math and IMAD the FMA
/// pipe, integer / logic / FMNMX / conversions the ALU pipe, MUFU its own; the rest none.
enum PipeIndex { kFmaPipe = 0, kAluPipe = 1, kMufuPipe = 2, kNumPipes = 3, kNoPipe = 3 };
int pipe_of(const Instr& in);

/// Cycles from a variable-latency instruction's issue to its result (its write scoreboard's
/// release): LDS / LDSM lds_latency, LDG ldg_latency, MUFU mufu_latency, SHFL shfl_latency,
/// anything else other_latency.
double result_latency(const Instr& in, const IssueModel& m);

/// issue_time of consecutive `segments` run as one stream (see the file comment); one IssueTime
/// per segment, its cycles from the segment's first issue slot to the next segment's.
std::vector<IssueTime> issue_segments(const std::vector<std::vector<const Instr*>>& segments, const IssueModel& m,
                                      bool cold_icache = false);

/// Extra issue cycles `in` pays for register bank conflicts, given the previous instruction
/// (nullptr at the start): distinct source registers per bank, less those the previous
/// instruction marked .reuse in the same operand slot, minus one for the busiest bank.
int bank_conflict_cycles(const Instr& in, const Instr* previous, int banks);

/// In-order issue time of `seq` for one warp alone (see the file comment), its instruction cache
/// cold (`cold_icache`) or holding all of seq's code. Instructions without decoded control fields
/// (stall < 0) throw std::invalid_argument: the listing lacks encodings.
IssueTime issue_time(const std::vector<const Instr*>& seq, const IssueModel& m, bool cold_icache = false);

/// The dynamic instruction sequence of fn's code from address `begin` up to (not including)
/// `end`: straight-line code in order, unconditional branches followed, each backward branch at
/// address a taken `taken.at(a)` times per entry into its loop (0 when absent) and then left.
/// A forward conditional branch goes the way `forward` says (address -> taken); one not in it
/// throws std::runtime_error (the caller must choose every branch of its region), as does a path
/// longer than `max_instructions`.
std::vector<const Instr*> unroll_path(const Function& fn, uint32_t begin, uint32_t end,
                                      const std::map<uint32_t, int>& taken, size_t max_instructions = 10'000'000,
                                      const std::map<uint32_t, bool>& forward = {});

}  // namespace attnsim::sass
