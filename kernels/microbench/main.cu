// attnsim_microbench: measures the hardware constants of attnsim's GPU model.
//
//   attnsim_microbench list
//   attnsim_microbench NAME [--out DIR] [--quick] [--device N]
//   attnsim_microbench all  [--out DIR] [--quick] [--device N] [--timeout S]
//   attnsim_microbench check DIR [FALLBACK_DIR...]
//
// NAME runs one benchmark and writes DIR/NAME.json. `all` runs every benchmark, each in a child
// process of its own: a kernel fault poisons its CUDA context, and a hang must not take the
// others with it, so each child gets a timeout. `check` validates the JSON files of a results
// folder, taking a benchmark missing there from the fallback folders (no GPU needed). Without a
// CUDA GPU, NAME and `all` print "SKIPPED: no CUDA GPU on this machine" and exit 77.
#include "microbench.cuh"

#include <nlohmann/json.hpp>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

extern char** environ;

namespace mb {
namespace {

constexpr int kSkipCode = 77;

std::vector<Benchmark> registry() {
  std::vector<Benchmark> all;
  for (auto part : {pipe_benchmarks(), mma_benchmarks(), clock_mix_benchmarks(), memory_benchmarks(), sync_benchmarks(),
                    latency_benchmarks(), launch_benchmarks(), operand_benchmarks(), mma_queue_benchmarks(),
                    softmax_block_benchmarks(), softmax_pair_benchmarks(), gemm_turn_benchmarks(), ifetch_benchmarks(),
                    ldg_load_benchmarks(), tma_load_benchmarks(), mma_issue_beside_benchmarks(),
                    dispatch_window_benchmarks(),
                    smem_beside_async_benchmarks(), warp_guard_benchmarks(), load_warp_benchmarks()})
    all.insert(all.end(), part.begin(), part.end());
  return all;
}

/// Key results each benchmark must produce, with a sane range, for `check`.
struct Expect {
  const char* bench;
  const char* pointer;  // JSON pointer into the file
  double lo, hi;
};

const Expect kExpect[] = {
    {"mufu_ex2", "/results/mufu_lanes_per_clk_smsp", 0.5, 64},
    {"ffma", "/results/fma_lanes_per_clk_smsp", 2, 256},
    {"alu", "/results/alu_lanes_per_clk_smsp", 1, 256},
    {"int_ops", "/results/iadd3_lanes_per_clk_smsp", 1, 256},
    {"issue_rate", "/results/issue_per_clk_smsp", 0.05, 8},
    {"exp2_emu", "/results/emu_exp2_per_clk_sm", 0.5, 1024},
    {"exp2_emu", "/results/max_rel_error_emulated", 0, 1e-3},
    {"exp2_mix", "/results/best_exp2_per_clk_sm", 0.5, 1024},
    {"wgmma", "/results/tensor_flops_per_clk", 128, 65536},
    {"wgmma", "/results/mma_latency", -1000, 10000},
    {"mma_sync", "/results/mma_sync_flops_per_clk_sm", 32, 65536},
    {"clock_under_load", "/results/clock_ghz", 0.2, 5},
    {"clock_under_ffma", "/results/clock_ghz", 0.2, 5},
    {"ifetch", "/results/ifetch_cycles_per_instruction", 0.5, 100},
    {"ifetch", "/results/ifetch_runahead_bytes", 0, 1 << 20},
    {"clock_under_mma_sync", "/results/clock_ghz", 0.2, 5},
    {"clock_under_mix", "/results/configs/t1_r1_g0_hbm/clock_ghz", 0.2, 5},
    {"clock_under_mix", "/results/configs/t1_r1_g0_none/tensor_duty", 0.05, 1.2},
    {"tma", "/results/tma_latency", -5000, 100000},
    {"tma", "/results/tma_latency_16k_tensor2d", 10, 1e6},
    {"tma", "/results/tma_bytes_per_clk_sm", 0.5, 8192},
    {"tma", "/results/l2_bytes_per_clk", 10, 1e6},
    {"smem_bw", "/results/smem_bytes_per_clk", 4, 4096},
    {"mbarrier", "/results/mbarrier_latency", 1, 1e6},
    {"named_barrier", "/results/named_barrier_latency", 1, 1e6},
    {"pipes_under_mma", "/results/configs/ffma/ratio_ss", 0.05, 1.5},
    {"pipes_under_mma", "/results/configs/fmnmx/ratio_ss", 0.05, 1.5},
    {"pipes_under_mma", "/results/configs/mufu_ex2/ratio_ss", 0.05, 1.5},
    {"globaltimer", "/results/min_step_ns", 0.5, 1e8},
    {"globaltimer", "/results/typical_step_ns", 0.5, 1e8},
    {"latency_chains", "/results/fma_latency", 1, 100},
    {"latency_chains", "/results/alu_latency", 1, 100},
    {"latency_chains", "/results/mufu_latency", 1, 1000},
    {"latency_chains", "/results/shfl_latency", 1, 1000},
    {"latency_chains", "/results/f2fp_latency", 1, 100},
    {"wgmma_issue", "/results/wgmma_issue_cycles", 0, 1000},
    {"wgmma_issue", "/results/wgmma_wait_ready_cycles", 0, 1000},
    {"mbarrier_ready", "/results/mbarrier_ready_cycles", 0.5, 1000},
    {"tma_sharing", "/results/l2_hit_bytes_per_s", 1e10, 1e15},
    {"tma_sharing", "/results/hbm_distinct_bytes_per_s", 1e10, 1e15},
    {"tma_sharing", "/results/tma_latency_hbm", 10, 1e5},
    {"tma_sharing", "/results/tma_store_latency", 10, 1e5},
    {"launch_overhead", "/results/launch_ns", 100, 1e6},
    {"launch_overhead", "/results/cta_launch_cycles", 0, 1e6},
    {"launch_overhead", "/results/cta_prologue_cycles", 10, 1e6},
    {"operand", "/results/ldmatrix_bytes_per_clk", 4, 4096},
    {"operand", "/results/lds_latency", 1, 1000},
    {"operand", "/results/ldmatrix_latency", 1, 1000},
    {"operand", "/results/fence_proxy_async_cycles", -100, 10000},
    {"cvt", "/results/f2i_lanes_per_clk_smsp", 0.25, 256},
    {"cvt", "/results/f2i_shares_mufu_ratio", 0.1, 4},
    {"wgmma_share", "/results/mma_queue_depth", -4, 256},
    {"wgmma_share", "/results/mma_queue_depth_rs", -4, 256},
    {"wgmma_share", "/results/rs_issue_cycles_per_wgmma", 0, 1000},
    {"wgmma_share", "/results/together_first_done_over_solo", 0.5, 4},
    {"wgmma_issue_hold", "/results/ready_wait_after_ss_k8_cycles", 0, 10000},
    {"wgmma_skew", "/results/warp0_issue_slope_over_delay", -0.5, 1.5},
    {"wgmma_skew", "/results/warp0_done_slope_over_delay", -0.5, 1.5},
    {"clock_under_burst", "/results/first_launch_clock_ghz", 0.3, 3},
    {"clock_under_hbm", "/results/configs/t0_r0_g0_hbm_s132/hbm_bytes_per_s", 1e11, 1e14},
    {"clock_under_hbm", "/results/configs/t0_r0_g0_hbm_s132/board_power_w", 10, 2000},
    {"softmax_block", "/results/softmax_exp_alone_cycles", 50, 1e5},
    {"softmax_block", "/results/softmax_exp_beside_wgmma_cycles", 50, 1e5},
    {"ldg_load", "/results/ldg_latency_alone_cycles", 50, 5000},
    {"ldg_load", "/results/ldg_latency_all_sms_loading_cycles", 50, 5000},
    {"tma_under_load", "/results/latency_hit_alone_cycles", 50, 1e5},
    {"tma_under_load", "/results/latency_miss_alone_cycles", 50, 1e5},
    {"tma_issue", "/results/first_box_issue_cycles", 1, 1e4},
    {"tma_issue", "/results/issue_cycles_per_box", 1, 1e4},
    {"mma_issue_beside", "/results/ss_n128_idle_cycles_per_wgmma", 1, 1e4},
    {"mma_issue_beside", "/results/ss_n128_beside_softmax_cycles_per_wgmma", 1, 1e4},
    {"mma_issue_beside", "/results/ss_dispatch_cycles_per_n", 0, 10},
    {"mma_issue_beside", "/results/rs_dispatch_cycles_per_n", 0, 10},
    {"dispatch_window", "/results/dispatch_idle/ss_n128", 1, 1e4},
    {"dispatch_window", "/results/dispatch_cycles/ss_n128_beside_softmax64", 1, 1e5},
    {"smem_beside_async", "/results/ld_shared_latency_idle_cycles", 1, 1e4},
    {"smem_beside_async", "/results/write_o_hd256_beside_ss_tma_cycles", 1, 1e6},
    {"smem_beside_async", "/results/write_o_hd128_beside_ss_tma_cycles", 1, 1e6},
    {"smem_beside_async", "/results/write_o_hd64_beside_ss_tma_cycles", 1, 1e6},
    {"warp_guard", "/results/configs/pingpong_t64_w384_spin/uniform_cycles_per_iteration", 100, 1e5},
    {"warp_guard", "/results/warpsync_guard_cycles", -1e3, 1e4},
    {"softmax_pair", "/results/alone/leader_warpgroup_1/leader_priority_delay_150", 0, 1},
    {"softmax_pair", "/results/alone/leader_warpgroup_1/delay_4000/wg1_block_cycles", 50, 1e5},
    {"gemm_turn", "/results/instances/hd128/solo/wg0_qk_dispatch_cycles", 10, 1e5},
    {"gemm_turn", "/results/instances/hd128/solo/wg0_done_cycles", 100, 1e5},
    {"gemm_turn", "/results/instances/hd128/pingpong_delay_0/wg1_qk_dispatch_cycles", 10, 1e5},
    {"load_warp", "/results/instances/hd128/beside_softmax/block_gaps_cycles", 1, 1e5},
    {"load_warp", "/results/instances/hd128/beside_softmax/tile_bookkeeping_cycles", 1, 1e5},
    {"softmax_duty", "/results/hd128_softmax_exp_cycles_gap_400_ns", 50, 1e5},
    {"softmax_duty", "/results/hd128_tensor_duty_gap_400_ns", 0.01, 1},
};

void usage() {
  std::printf(
      "usage: attnsim_microbench list\n"
      "       attnsim_microbench NAME|all [--out DIR] [--quick] [--device N] [--timeout S]\n"
      "       attnsim_microbench check DIR [FALLBACK_DIR...]\n"
      "NAME runs one benchmark and writes DIR/NAME.json (DIR defaults to .); all runs every\n"
      "benchmark, each in its own process with a timeout (S seconds, default 150); --quick\n"
      "cuts iterations ~10x (smoke test). check validates a results folder (a benchmark it\n"
      "lacks is taken from the first fallback folder that has it). Exit 77 when\n"
      "there is no CUDA GPU.\n");
}

/// Returns true (after printing the skip line) when no CUDA GPU is usable.
bool no_gpu() {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    std::printf("SKIPPED: no CUDA GPU on this machine\n");
    return true;
  }
  return false;
}

/// Prints the top-level numeric results of a report on one line (for logs).
void print_summary(const std::string& name, const std::string& path) {
  std::ifstream f(path);
  nlohmann::json j = nlohmann::json::parse(f, nullptr, false);
  std::printf("%-17s", name.c_str());
  if (j.is_discarded()) { std::printf(" (unreadable %s)\n", path.c_str()); return; }
  if (j.contains("sm_clock_ghz_measured") && j["sm_clock_ghz_measured"].is_number())
    std::printf(" clk=%.3fGHz", j["sm_clock_ghz_measured"].get<double>());
  for (auto& [k, v] : j["results"].items())
    if (v.is_number()) std::printf(" %s=%.4g", k.c_str(), v.get<double>());
    else if (v.is_string()) std::printf(" %s=\"%s\"", k.c_str(), v.get<std::string>().c_str());
  std::printf("\n");
}

int run_one(const Benchmark& b, const Options& opt) {
  if (no_gpu()) return kSkipCode;
  try {
    MB_CHECK(cudaSetDevice(opt.device));
    DeviceInfo dev = query_device(opt.device);
    Report rep(b.name, opt, dev);
    try {
      b.run(rep);
    } catch (const SkipBenchmark& s) {
      // Not applicable to this GPU (e.g. wgmma off sm_90a): say so in the file, not an error.
      rep.results() = Json::object();
      rep.results()["skipped"] = std::string(s.what());
    }
    std::string path = rep.write();
    print_summary(b.name, path);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "FAILED: %s: %s\n", b.name, e.what());
    return 1;
  }
}

/// Spawns `argv` and waits up to `timeout_s`; returns its exit code, or -1 if killed.
int spawn_wait(const std::vector<std::string>& args, double timeout_s, bool* timed_out) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0) return -1;
  const auto t0 = std::chrono::steady_clock::now();
  *timed_out = false;
  for (;;) {
    int status = 0;
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (r < 0) return -1;
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > timeout_s) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      *timed_out = true;
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

int run_all(const Options& opt, double timeout_s) {
  if (no_gpu()) return kSkipCode;
  // The children are this same program, found through /proc/self/exe.
  std::error_code ec;
  const std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (ec) { std::fprintf(stderr, "cannot find own executable\n"); return 1; }
  int failed = 0;
  const auto t_all = std::chrono::steady_clock::now();
  for (const Benchmark& b : registry()) {
    std::vector<std::string> args = {self, b.name, "--out", opt.out_dir, "--device", std::to_string(opt.device)};
    if (opt.quick) args.push_back("--quick");
    std::fflush(stdout);
    const auto t0 = std::chrono::steady_clock::now();
    bool timed_out = false;
    const int rc = spawn_wait(args, timeout_s, &timed_out);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (rc != 0) {
      ++failed;
      std::printf("[FAILED] %s (%s, %.1f s)\n", b.name,
                  timed_out ? "timed out" : ("exit " + std::to_string(rc)).c_str(), s);
    } else {
      std::printf("[ok] %s (%.1f s)\n", b.name, s);
    }
    std::fflush(stdout);
  }
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_all).count();
  std::printf("%d of %zu benchmarks failed; %.1f s in all; results in %s\n", failed, registry().size(), total,
              opt.out_dir.c_str());
  return failed ? 1 : 0;
}

/// Validates every benchmark's JSON: each is taken from the first of `dirs` that has it (a GPU's
/// folder first, then folders of GPUs with the same SM, e.g. a benchmark measured so far on an
/// H200 only). Common fields present and typed, key results finite and inside generous sanity
/// ranges (or an explicit "skipped" reason); a benchmark in none of the folders fails.
int check_dirs(const std::vector<std::string>& dirs) {
  int bad = 0;
  auto fail = [&](const std::string& file, const std::string& msg) {
    std::printf("%s: %s\n", file.c_str(), msg.c_str());
    ++bad;
  };
  const std::regex iso(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)");
  for (const Benchmark& b : registry()) {
    std::string file = (std::filesystem::path(dirs.front()) / (std::string(b.name) + ".json")).string();
    for (const std::string& dir : dirs) {
      const std::string f = (std::filesystem::path(dir) / (std::string(b.name) + ".json")).string();
      if (std::filesystem::exists(f)) {
        file = f;
        break;
      }
    }
    std::ifstream f(file);
    if (!f) { fail(file, "missing"); continue; }
    nlohmann::json j = nlohmann::json::parse(f, nullptr, false);
    if (j.is_discarded() || !j.is_object()) { fail(file, "not a JSON object"); continue; }
    for (const char* k : {"benchmark", "gpu", "driver_version", "cuda_runtime", "date", "method"})
      if (!j.contains(k) || !j[k].is_string() || j[k].get<std::string>().empty()) fail(file, std::string("/") + k + ": missing or not a non-empty string");
    if (j.value("benchmark", "") != b.name) fail(file, "/benchmark: expected " + std::string(b.name));
    if (!j.contains("sm_count") || !j["sm_count"].is_number_integer() || j["sm_count"].get<int>() <= 0) fail(file, "/sm_count: expected a positive integer");
    if (j.contains("date") && j["date"].is_string() && !std::regex_match(j["date"].get<std::string>(), iso)) fail(file, "/date: expected UTC ISO 8601 (YYYY-MM-DDTHH:MM:SSZ)");
    if (!j.contains("results") || !j["results"].is_object()) { fail(file, "/results: missing or not an object"); continue; }
    if (j["results"].contains("skipped")) continue;  // benchmark not applicable to that GPU
    if (!j.contains("sm_clock_ghz_measured") || !j["sm_clock_ghz_measured"].is_number() ||
        j["sm_clock_ghz_measured"].get<double>() < 0.1 || j["sm_clock_ghz_measured"].get<double>() > 5)
      fail(file, "/sm_clock_ghz_measured: expected a number in [0.1, 5]");
    for (const Expect& e : kExpect) {
      if (std::string(e.bench) != b.name) continue;
      const nlohmann::json::json_pointer ptr(e.pointer);
      if (!j.contains(ptr) || !j[ptr].is_number()) { fail(file, std::string(e.pointer) + ": missing or not a number"); continue; }
      const double v = j[ptr].get<double>();
      if (!std::isfinite(v) || v < e.lo || v > e.hi) {
        char buf[160];
        std::snprintf(buf, sizeof buf, "%s: %g outside the sane range [%g, %g]", e.pointer, v, e.lo, e.hi);
        fail(file, buf);
      }
    }
  }
  std::string where;
  for (const std::string& dir : dirs) where += (where.empty() ? "" : ", ") + dir;
  if (bad == 0) std::printf("ok: %zu results files in %s are complete and sane\n", registry().size(), where.c_str());
  return bad ? 1 : 0;
}

}  // namespace
}  // namespace mb

int main(int argc, char** argv) {
  using namespace mb;
  if (argc < 2 || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "--help")) {
    usage();
    return argc < 2 ? 2 : 0;
  }
  const std::string cmd = argv[1];
  if (cmd == "list") {
    for (const Benchmark& b : registry()) std::printf("%-17s %s\n", b.name, b.summary);
    return 0;
  }
  if (cmd == "check") {
    if (argc < 3) { usage(); return 2; }
    return check_dirs(std::vector<std::string>(argv + 2, argv + argc));
  }
  Options opt;
  double timeout_s = 150;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) { std::fprintf(stderr, "%s needs a value\n", a.c_str()); std::exit(2); }
      return argv[++i];
    };
    try {
      if (a == "--out") opt.out_dir = value();
      else if (a == "--quick") opt.quick = true;
      else if (a == "--device") opt.device = std::stoi(value());
      else if (a == "--timeout") timeout_s = std::stod(value());
      else { std::fprintf(stderr, "unknown option %s\n", a.c_str()); usage(); return 2; }
    } catch (const std::exception&) {
      std::fprintf(stderr, "bad value for %s\n", a.c_str());
      return 2;
    }
  }
  if (cmd == "all") return run_all(opt, timeout_s);
  for (const Benchmark& b : registry())
    if (cmd == b.name) return run_one(b, opt);
  std::fprintf(stderr, "unknown benchmark or command '%s' (try: attnsim_microbench list)\n", cmd.c_str());
  return 2;
}
