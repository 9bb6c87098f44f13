// SASS critical-path analysis: reads `cuobjdump -sass` text, finds the consumer warpgroup's
// steady-state KV loop of a traced SM90 kernel (kernels/sm90, Trace = 1), splits it at the trace
// recorder's clock reads into the spans consumer.cuh emits (softmax_max, softmax_exp, rescale_o,
// mma_qk, ...; final_o from the epilogue after the loop), and for each span counts instructions
// and finds the longest chain of read-after-write register dependencies. `attnsim sass-costs`
// (sim/cli/sass_costs_cmd.cpp) prints the result and writes the chains into configs/costs.
//
// The model of one span: one warp, its instructions in program order, registers that the span
// reads before writing them (live-ins) ready at cycle 0, an instruction starts when the last of
// its sources is ready and its result is ready `latency` cycles later, latency by class
// (Hardware::fma_latency, alu_latency, mufu_latency, shfl_latency, f2fp_latency). The critical
// path is the latest ready time in the span: the sum of the latencies of the instructions on the
// longest chain, the last one included. Issue limits are not part of it (the throughput cost of
// the same instructions is). Loads, stores, wgmma, barriers and control flow are not priced on
// chains (their results count as ready at 0); they are counted and reported.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attnsim {
struct Hardware;
}

namespace attnsim::sass {

/// A register an instruction reads or writes. RZ, URZ, PT and UPT are constants and never
/// appear as a Reg; a vector operand (R4.64, or a 64/128-bit load's destination) is expanded
/// into one Reg per 32-bit register.
struct Reg {
  enum File : uint8_t { R, UR, P, UP };
  File file = R;
  int index = 0;
  auto operator<=>(const Reg&) const = default;
};
std::string to_string(const Reg& r);

/// How an instruction is priced on a dependency chain, or why it is not. The first five are
/// latency classes (Hardware::<class>_latency); the others are excluded from chains.
enum class Class : uint8_t {
  fma,      ///< FFMA, FADD, FMUL (and HFMA2 & co.): fma_latency
  alu,      ///< FMNMX, integer, logic, select, predicate, uniform-datapath ops: alu_latency
  mufu,     ///< MUFU.*: mufu_latency
  shfl,     ///< SHFL.*: shfl_latency
  f2fp,     ///< F2FP.* and the other conversions: f2fp_latency
  memory,   ///< loads, stores, constant loads, special-register reads
  async,    ///< HGMMA, WARPGROUP.*, SYNCS.* (mbarriers), BAR, MEMBAR, FENCE, TMA
  control,  ///< branches, convergence barriers (BSSY/BSYNC), NOP/YIELD, the trace recorder's clock reads
};
const char* class_name(Class c);
/// Whether instructions of class `c` are priced on dependency chains.
inline bool on_chains(Class c) { return c <= Class::f2fp; }

/// One SASS instruction.
struct Instr {
  uint32_t address = 0;
  std::string text;                ///< as printed, without ';' and the encoding
  std::string opcode;              ///< with modifiers: "MUFU.EX2", "SHFL.BFLY", "FMNMX"
  std::string base;                ///< before the first '.': "MUFU"
  bool predicated = false;         ///< guarded by @P / @!P (not @PT): its writes may not happen
  std::string guard;               ///< the guard as printed without '@' ("!P1"), empty when not predicated
  std::vector<Reg> dsts;           ///< registers written
  std::vector<Reg> srcs;           ///< registers read (the guard predicate among them)
  std::optional<uint32_t> target;  ///< branch target (BRA)
  Class cls = Class::alu;
  /// Name in a cost file's "instructions" table for chain classes (FFMA, FADD, FMUL, FMNMX,
  /// ALU, MUFU.EX2, MUFU.RCP, SHFL, F2FP.BF16.PACK); the opcode family otherwise (ST, HGMMA).
  std::string cost_name;
  bool clock_read = false;      ///< S2UR / CS2R / S2R of SR_CLOCKLO, SR_CLOCKHI (trace recorder)
  bool writes_neg_inf = false;  ///< a move or select of -INF into a register (score masking)
  bool reads_globaltimer = false;
  /// Scheduling control of the instruction, from its encoding's high 64-bit word (bits 41-63;
  /// layout as in Jia et al., "Dissecting the NVIDIA Volta GPU Architecture via
  /// Microbenchmarking", 2018, which Hopper keeps): the cycles the warp waits before its next
  /// instruction (ptxas covers fixed-latency dependencies with them), the scoreboards it sets and
  /// waits on. -1 when the listing has no encoding for it.
  int stall = -1;
  bool yield = false;
  int write_barrier = 7, read_barrier = 7;  ///< scoreboard set on completion / operand read; 7: none
  int wait_mask = 0;                        ///< scoreboards waited on before issue (bit b: barrier b)
  bool is_branch() const { return target.has_value(); }
  bool backward() const { return target && *target <= address; }
};

/// Parses one instruction's text ("@!P0 FMNMX R190, R35, R216, !PT"). Throws std::invalid_argument
/// on text that is not an instruction.
Instr parse_instruction(uint32_t address, std::string_view text);

/// One function of the dump.
struct Function {
  std::string mangled;  ///< as printed after "Function :"
  std::string name;     ///< demangled when possible
  std::vector<Instr> code;
};

/// Every function of a `cuobjdump -sass` listing, in file order; each instruction's control
/// fields from the encoding line that follows it, where the listing has one.
std::vector<Function> parse_cuobjdump(std::istream& in);

/// The integer and bool template arguments ("Li64E", "Lb1E") that follow position `pos` of a
/// mangled name, in order, up to the first argument of another kind.
std::vector<long long> mangled_template_values(const std::string& mangled, size_t pos);

/// Sets `in`'s control fields from the high 64-bit word of its encoding.
void decode_control(uint64_t high_word, Instr& in);

/// Static issue time of a straight-line span for one warp alone: the sum over its instructions of
/// max(1, stall), the cycles ptxas's schedule spends between issues without any scoreboard wait
/// or competing warp. -1 when an instruction has no decoded control.
int static_issue_cycles(const std::vector<const Instr*>& span);

/// Dependent-issue latency of each chain class, cycles.
struct Latencies {
  double fma = 0, alu = 0, mufu = 0, shfl = 0, f2fp = 0;
  /// The latency of class `c` (0 for classes not on chains).
  double of(Class c) const;
  static Latencies from(const Hardware& hw);
};

/// The longest RAW chain through a straight-line span.
struct CriticalPath {
  double cycles = 0;                   ///< ready time of the latest result
  std::vector<const Instr*> path;      ///< its instructions, first to last
  std::map<std::string, int> by_name;  ///< instructions on it per cost name
  std::map<Class, int> by_class;       ///< instructions on it per latency class
};

/// Critical path of `span` (program order, one warp): live-ins ready at 0; an instruction of a
/// chain class is ready at max(ready of its sources) + its class latency; instructions of other
/// classes make their destinations ready at 0. A predicated write keeps the register's earlier
/// value possible, so a reader waits for the later of the two, except a reader under the same
/// guard (same predicate, same polarity, predicate not rewritten in between), which can only see
/// the guarded write.
CriticalPath critical_path(const std::vector<const Instr*>& span, const Latencies& lat);

/// Why an instruction of a span is not on its steady-state path.
enum class Skip : uint8_t {
  none,
  trace,       ///< the trace recorder's record store (lane 0 only; absent from the untraced kernel)
  mask,        ///< score masking (KV blocks on the causal diagonal or the seqlen_k tail only)
  wait_retry,  ///< mbarrier try_wait retry loop / hang timer (data already there in the steady state)
  slow_path,   ///< a called subroutine (the IEEE division's slow path for denormal / huge sums)
  inner_loop,  ///< a loop inside the analysed one that the steady state does not enter (SM100: the O rescale)
};
const char* skip_name(Skip s);

/// One clock-read interval of the analysed code.
struct Span {
  std::string op;                     ///< softmax_max, softmax_exp, rescale_o, final_o, mma_qk, mma_pv, "wait k_full",
                                      ///< "wait v_full", "wait wgmma", "wait pingpong", or "-" (between spans)
  uint32_t begin = 0, end = 0;        ///< addresses of the clock reads that open and close it
  std::vector<const Instr*> code;     ///< on the steady-state path, instrumentation removed
  std::map<std::string, int> counts;  ///< per cost name (chain classes) or opcode family (others)
  std::map<Skip, int> off_path;       ///< instructions skipped, by reason
  int instrumentation = 0;            ///< trace-recorder instructions on the path (clock read, guard)
  CriticalPath chain;
  int issue_cycles = -1;              ///< static_issue_cycles of code
};

/// Knobs of an fa3_forward<Traits<...>> instance (kernels/sm90/kernel_traits.cuh).
struct Fa3Knobs {
  int head_dim = 0, m_block = 0, n_block = 0, kv_stage = 0;
  bool pingpong = false, overlap = false;
  int reg_consumer = 0, reg_producer = 0;
  bool trace = false;
  bool dynamic = false;  ///< the dynamic tile scheduler (a 10th template argument)
  bool own_o = false;    ///< O staged in a buffer of its own (an 11th template argument)
  int rescale_milli = -1;               ///< conditional rescale threshold x 1000 (13th; -1: every block)
  int exp2_emu_freq = 0, exp2_emu_res = 0;  ///< exp2 emulation (14th, 15th; 0: none)
  bool o_in_v = false;                      ///< O staged in the V ring (16th)
  bool trim_last = false;                   ///< the last KV block trimmed (17th)
  int args = 0;  ///< template arguments in the name: a listing older than a knob has none for it
};
/// The knobs of `mangled` when it is an attnsim::sm90::fa3_forward instance.
std::optional<Fa3Knobs> fa3_knobs(const std::string& mangled);

/// The code a consumer warp runs once per work tile outside the spans the simulator charges, in a
/// plain (untraced) fa3_forward instance: the tail, from the epilogue's last TMA store of O
/// (UTMASTG) to the tile loop's backward branch (the LSE, the loop's bookkeeping), and the head,
/// from the loop's top to the tile's first pingpong turn (BAR.SYNC), K wait or HGMMA (the tile
/// slot or the tile's coordinates, its KV block count, the exit test), the pipeline_q.full wait
/// itself left out. Each along the path the warp takes for a tile in the steady state: predicated
/// branches fall through, except over a wait's retry loop (a region with a try_wait or a backward
/// branch and no HGMMA); BRA.DIV (taken only by a diverged warp) falls through.
struct TilePaths {
  uint32_t tail_begin = 0, loop_top = 0, head_end = 0;  ///< addresses: after the last UTMASTG, the loop top, the stop
  std::vector<const Instr*> tail, head;                 ///< the instructions on each path
  int tail_issue_cycles = -1, head_issue_cycles = -1;   ///< static_issue_cycles of each
  CriticalPath tail_chain, head_chain;                  ///< each path's longest register dependency chain
};
/// TilePaths of plain fa3_forward instance `fn`, chains priced at `lat`. Throws
/// std::runtime_error when the code does not have the expected shape (no UTMASTG, no backward
/// branch after it, a path over 4000 instructions).
TilePaths tile_paths(const Function& fn, const Latencies& lat);

/// One overlapped KV step of a plain fa3_forward instance, as ptxas scheduled it: the source
/// waits for both GEMMs (wgmma.wait_group 1 for QK, then 0 for PV) before the block's softmax,
/// but ptxas may sink the PV's WARPGROUP.DEPBAR.LE gsb0, 0x0 below part or all of the row max,
/// which then runs while the PV still executes. A step: a DEPBAR gsb0, 0x1 followed by a DEPBAR
/// gsb0, 0x0 before the next HGMMA; it ends at the next HGMMA, BAR.SYNC or backward branch.
struct PvWaitStep {
  uint32_t address = 0;  ///< of the PV wait (DEPBAR gsb0, 0x0)
  int max_before = 0;    ///< FMNMX between the QK wait and the PV wait
  int max_total = 0;     ///< FMNMX in the whole step
  int ex2_before = 0;    ///< MUFU.EX2 between the QK wait and the PV wait (exponentials run under the PV)
  int ex2_total = 0;     ///< MUFU.EX2 in the whole step
  bool masked = false;   ///< sets scores to -INF more often than a quarter of its FMNMX count: a masked block
  bool clocked = false;  ///< reads the SM clock (SR_CLOCKLO): a traced build's recorded step
};
/// Every overlapped step of `fn`, in address order (none without intra-warpgroup overlap).
std::vector<PvWaitStep> pv_wait_steps(const Function& fn);
/// The fraction of the row max (FMNMX) that runs before the PV wait in `steps`: the mean over
/// the unmasked steps (the steady state of most KV blocks), over all steps where every one is
/// masked; -1 when there are none.
double max_before_pv_wait(const std::vector<PvWaitStep>& steps);
/// The same fraction of the exponentials (MUFU.EX2): what of the exp block runs under the PV.
double exp_before_pv_wait(const std::vector<PvWaitStep>& steps);

/// The consumer's steady-state KV loop of a plain (untraced) fa3_forward instance, the code the
/// timed kernel runs per KV block: of the innermost loops with HGMMA and MUFU.EX2, the one with the
/// fewest -INF writes (unmasked blocks), and the path an unmasked block whose barriers are complete
/// takes through it (wait retries off it).
struct PlainKvLoop {
  uint32_t begin = 0, end = 0;  ///< the loop's head and backward branch
  int on_path = 0;              ///< instructions on that path
  int issue_cycles = 0;         ///< their static issue time (static_issue_cycles; -1: no control codes)
};
/// plain_kv_loop of `fn`; throws std::runtime_error when it has no loop with HGMMA and MUFU.EX2.
PlainKvLoop plain_kv_loop(const Function& fn);

/// The spans of one traced kernel.
struct KernelAnalysis {
  const Function* function = nullptr;
  Fa3Knobs knobs;
  uint32_t loop_begin = 0, loop_end = 0;  ///< the KV loop: head and backward branch
  int loop_instructions = 0;              ///< in the loop body
  std::map<Skip, int> loop_off_path;      ///< loop instructions off the steady-state path, by reason
  int loop_instrumentation = 0;
  /// The KV loop's clock intervals in consumer.cuh's emission order (from turn_start / the K
  /// wait of one iteration to the end of that iteration), then final_o from the epilogue.
  std::vector<Span> spans;
  const Span* find(const std::string& op) const;
};

/// Clock-interval labels of one consumer KV-loop iteration, in emission order (mirrors
/// Consumer::run in kernels/sm90/consumer.cuh): the label of the code between each trace clock
/// read and the next. `both_waits_first`: with overlap, wait_group 1 and 0 both come before the
/// softmax (kernels/sm90 since a5f1bb0); false: the older order, one wait on each side of it.
std::vector<std::string> consumer_loop_spans(bool pingpong, bool overlap, bool both_waits_first = true);

/// Analyses the KV loop and epilogue of a traced fa3_forward instance: the innermost loop whose
/// body holds HGMMA and MUFU.EX2 (the one with the most clock reads if several), its
/// steady-state path, its spans labelled by consumer_loop_spans (anchored on the interval with
/// the SS HGMMA of QK and checked span by span), and final_o (the first clock interval after
/// the loop with an F2FP and a store). Throws std::runtime_error when the code does not have
/// that shape.
///
/// Steady-state path: the code of an unmasked KV block whose barriers are already complete,
/// without the trace recorder's stores. A conditional forward branch skips its region when the
/// region holds the trace record store (STG.128), a retry loop or %globaltimer read, a -INF
/// store (masking), or (on the region's own path) a CALL; otherwise the region is executed.
/// Unconditional forward branches are followed, backward ones and exits are not taken.
/// Instrumentation: the clock reads, the record branches, and every instruction whose results
/// are read only by instrumentation or by the skipped record stores (the record index and guard).
KernelAnalysis analyse_kernel(const Function& fn, const Latencies& lat);

// ---- SM100 (kernels/sm100, fa4_forward) -----------------------------------------------------
// The plain (untraced) kernels have no clock reads to split spans at, so their loops are counted
// whole: the softmax warpgroup's KV loop (one KV block of one row per thread), the masking code
// it skips on unmasked blocks, the correction warpgroup's KV loop (without the O rescale), and
// the 16-column chunk loops of the O rescale and of the final normalisation. These counts are
// what configs/costs/sm100_softmax.json holds per element and per row.

/// Knobs of an attnsim::sm100::fa4_forward<Traits<...>> instance (kernels/sm100/kernel_traits.cuh:
/// the template arguments that change the softmax and correction code).
struct Fa4Knobs {
  int head_dim = 0, q_stage = 0, kv_stage = 0, cta_group = 0, split = 0;
  int emu_freq = 0, emu_res = 0, emu_start_frg = 0;  ///< exp2 emulation (0: every exp2 on MUFU)
  bool conditional = false, correction_wg = false, exp_order = false;
  bool trace = false;
};
/// The knobs of `mangled` when it is an attnsim::sm100::fa4_forward instance.
std::optional<Fa4Knobs> fa4_knobs(const std::string& mangled);

/// The name an SM100 instruction is counted under (the instruction names of
/// configs/costs/sm100_softmax.json): FFMA, FADD, FMUL (scalar fp32, rounding / FTZ variants
/// included), FFMA2, FADD2, FMUL2 (packed fp32x2), FMNMX3, FMNMX, MUFU.EX2, MUFU.RCP,
/// F2FP.BF16.PACK, CVT (F2I, I2F, I2FP, F2F, FRND), LDTM.x<n>, STTM.x<n>, LDS.<bits> / STS.<bits>
/// (32 when the opcode has no width), ALU (the other ALU-class instructions: integer, logic,
/// compares, selects, moves, VOTE, R2UR), "barrier" (SYNCS.* and BAR.*: the mbarrier and named
/// barrier operations, which the lowering models as waits and arrivals of their own), "spill"
/// (LDL, STL) and OTHER (branches, convergence barriers, NOP, WARPSYNC, constant and special
/// register loads, fences, global stores: an issue slot each).
std::string sm100_cost_name(const Instr& in);

/// One counted region of an SM100 kernel.
struct Region {
  std::string name;                   ///< softmax, mask, correction, rescale_o, final_o
  uint32_t begin = 0, end = 0;        ///< first and last address
  std::vector<const Instr*> code;     ///< the steady-state path (of a mask region: all of it)
  std::map<std::string, int> counts;  ///< per sm100_cost_name
  std::map<Skip, int> off_path;       ///< instructions of the region left off the path, by reason
};

/// The counted regions of one fa4_forward instance.
struct Sm100Analysis {
  const Function* function = nullptr;
  Fa4Knobs knobs;
  std::vector<Region> regions;  ///< softmax, mask, [correction], rescale_o, final_o
  int rescale_copies = 0;       ///< chunk loops found for the O rescale (one per Q stage when unrolled)
  int final_copies = 0;         ///< and for the final normalisation
  bool copies_agree = true;     ///< whether the copies have the same counts as the one reported
  const Region* find(const std::string& name) const;
};

/// Counts the loops of an fa4_forward instance (plain or traced; the traced one's counts include
/// its trace recorder). A loop is a backward branch and its target; the innermost loop that holds
/// LDTM.x32 and MUFU.EX2 is the softmax KV loop; the innermost ones with LDTM.x16, STTM.x16 and
/// FMUL are the O rescale's chunk loops and those with LDTM.x16 and STS.128 the final O's (the
/// first of each is reported); the innermost loop with BAR.SYNC that holds a rescale chunk loop
/// is the correction KV loop. A loop is followed along its steady-state path as analyse_kernel
/// does (mbarrier retry loops, masking and slow paths skipped), with one addition: a region that
/// holds an inner loop and no retry is skipped (Skip::inner_loop: the O rescale that the
/// conditional rescale leaves out), at the last guard that jumps over it (`i > 0 && vote`: the
/// steady state passes the first and is decided by the vote). The masking code the softmax path
/// skips is counted as the region "mask". Throws std::runtime_error when a loop is missing.
Sm100Analysis analyse_sm100(const Function& fn);

}  // namespace attnsim::sass
