// Loader for configs/hw/*.json (see hardware.hpp for the format). Every constant is
// an object {"value", "provenance", "source"}; the table kConstants below lists each
// Hardware field with its JSON name, its type and its allowed range. Anything the
// table does not name is an error, and so is anything it names that is missing.
#include "model/hardware.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "model/json_reader.hpp"

namespace attnsim {

namespace {

namespace fs = std::filesystem;

/// One Hardware field: JSON name, where it lives, and its allowed range.
struct ConstantSpec {
  enum class Kind { Int, Int64, Double };
  const char* name;
  Kind kind;
  int Hardware::*int_field = nullptr;
  long long Hardware::*int64_field = nullptr;
  double Hardware::*double_field = nullptr;
  double lo = 0, hi = 0;  // inclusive
};

ConstantSpec int_c(const char* name, int Hardware::*f, long long lo, long long hi) {
  ConstantSpec s{name, ConstantSpec::Kind::Int};
  s.int_field = f;
  s.lo = static_cast<double>(lo);
  s.hi = static_cast<double>(hi);
  return s;
}
ConstantSpec int64_c(const char* name, long long Hardware::*f, long long lo, long long hi) {
  ConstantSpec s{name, ConstantSpec::Kind::Int64};
  s.int64_field = f;
  s.lo = static_cast<double>(lo);
  s.hi = static_cast<double>(hi);
  return s;
}
ConstantSpec dbl_c(const char* name, double Hardware::*f, double lo, double hi) {
  ConstantSpec s{name, ConstantSpec::Kind::Double};
  s.double_field = f;
  s.lo = lo;
  s.hi = hi;
  return s;
}

/// Every constant a config must give, in the order the configs list them.
/// Ranges are sanity bounds (catch typos and unit slips), not architectural claims;
/// fields whose value may legitimately be 0 (no TMEM) start at 0, all others above 0.
const std::vector<ConstantSpec>& constant_specs() {
  static const std::vector<ConstantSpec> specs = {
      int_c("num_sms", &Hardware::num_sms, 1, 1024),
      int_c("smsp_per_sm", &Hardware::smsp_per_sm, 1, 16),
      dbl_c("clock_ghz", &Hardware::clock_ghz, 0.1, 5.0),
      dbl_c("clock_ghz_cuda_cores", &Hardware::clock_ghz_cuda_cores, 0.1, 5.0),
      dbl_c("clock_ghz_mma_sync", &Hardware::clock_ghz_mma_sync, 0.1, 5.0),
      dbl_c("clock_ghz_max", &Hardware::clock_ghz_max, 0.0, 5.0),
      dbl_c("clock_ghz_tensor_ceiling", &Hardware::clock_ghz_tensor_ceiling, 0.0, 5.0),
      dbl_c("clock_power_limit_w", &Hardware::clock_power_limit_w, 0.0, 10000.0),
      dbl_c("clock_power_exponent", &Hardware::clock_power_exponent, 0.0, 6.0),
      dbl_c("clock_power_static_w", &Hardware::clock_power_static_w, -10000.0, 10000.0),
      dbl_c("clock_power_base_w", &Hardware::clock_power_base_w, -10000.0, 10000.0),
      dbl_c("clock_power_tensor_w", &Hardware::clock_power_tensor_w, -10000.0, 10000.0),
      dbl_c("clock_power_issue_w", &Hardware::clock_power_issue_w, -10000.0, 10000.0),
      dbl_c("clock_power_l2_w_per_tbps", &Hardware::clock_power_l2_w_per_tbps, -10000.0, 10000.0),
      dbl_c("clock_power_hbm_w_per_tbps", &Hardware::clock_power_hbm_w_per_tbps, -10000.0, 10000.0),
      dbl_c("issue_per_clk_smsp", &Hardware::issue_per_clk_smsp, 0.125, 8),
      dbl_c("fma_lanes_per_clk_smsp", &Hardware::fma_lanes_per_clk_smsp, 1, 256),
      dbl_c("alu_lanes_per_clk_smsp", &Hardware::alu_lanes_per_clk_smsp, 1, 256),
      dbl_c("mufu_lanes_per_clk_smsp", &Hardware::mufu_lanes_per_clk_smsp, 0.25, 256),
      dbl_c("tensor_flops_per_clk", &Hardware::tensor_flops_per_clk, 1, 1 << 20),
      dbl_c("mma_sync_flops_per_clk", &Hardware::mma_sync_flops_per_clk, 1, 1 << 20),
      dbl_c("smem_bytes_per_clk", &Hardware::smem_bytes_per_clk, 1, 1 << 16),
      dbl_c("tmem_bytes_per_clk", &Hardware::tmem_bytes_per_clk, 0, 1 << 16),
      int64_c("smem_bytes_per_block", &Hardware::smem_bytes_per_block, 1024, 16LL << 20),
      int_c("tmem_columns", &Hardware::tmem_columns, 0, 4096),
      int_c("tmem_lanes", &Hardware::tmem_lanes, 0, 1024),
      int_c("registers_per_sm", &Hardware::registers_per_sm, 1024, 1 << 20),
      int_c("max_registers_per_thread", &Hardware::max_registers_per_thread, 16, 1024),
      int_c("max_warps_per_sm", &Hardware::max_warps_per_sm, 1, 256),
      int_c("register_alloc_unit", &Hardware::register_alloc_unit, 1, 4096),
      int_c("register_banks", &Hardware::register_banks, 1, 64),
      dbl_c("l2_bytes_per_clk", &Hardware::l2_bytes_per_clk, 1, 1e7),
      dbl_c("hbm_bytes_per_s", &Hardware::hbm_bytes_per_s, 1e9, 1e15),
      dbl_c("tma_bytes_per_clk_sm", &Hardware::tma_bytes_per_clk_sm, 1, 1 << 16),
      dbl_c("tma_latency", &Hardware::tma_latency, 0, 1e5),
      dbl_c("mma_latency", &Hardware::mma_latency, 0, 1e5),
      dbl_c("mbarrier_latency", &Hardware::mbarrier_latency, 0, 1e5),
      dbl_c("mma_issue_instrs", &Hardware::mma_issue_instrs, 0, 1000),
      dbl_c("tma_issue_instrs", &Hardware::tma_issue_instrs, 0, 1000),
      dbl_c("fma_latency", &Hardware::fma_latency, 0, 1000),
      dbl_c("alu_latency", &Hardware::alu_latency, 0, 1000),
      dbl_c("mufu_latency", &Hardware::mufu_latency, 0, 1000),
      dbl_c("shfl_latency", &Hardware::shfl_latency, 0, 1000),
      dbl_c("f2fp_latency", &Hardware::f2fp_latency, 0, 1000),
      dbl_c("lds_latency", &Hardware::lds_latency, 0, 1000),
      dbl_c("ldg_latency", &Hardware::ldg_latency, 0, 1e5),
      int_c("icache_bytes", &Hardware::icache_bytes, 0, 1 << 24),
      dbl_c("ifetch_cycles_per_instruction", &Hardware::ifetch_cycles_per_instruction, 0, 100),
      dbl_c("ifetch_runahead_bytes", &Hardware::ifetch_runahead_bytes, 0, 1 << 20),
      dbl_c("wgmma_issue_cycles", &Hardware::wgmma_issue_cycles, 0, 1000),
      dbl_c("mma_queue_depth", &Hardware::mma_queue_depth, 0, 1024),
      dbl_c("wgmma_wait_ready_cycles", &Hardware::wgmma_wait_ready_cycles, 0, 1000),
      dbl_c("mbarrier_ready_cycles", &Hardware::mbarrier_ready_cycles, 0, 1000),
      dbl_c("named_barrier_latency", &Hardware::named_barrier_latency, 0, 1e4),
      dbl_c("fma_rate_beside_mma", &Hardware::fma_rate_beside_mma, 0.05, 1),
      dbl_c("alu_rate_beside_mma", &Hardware::alu_rate_beside_mma, 0.05, 1),
      dbl_c("mufu_rate_beside_mma", &Hardware::mufu_rate_beside_mma, 0.05, 1),
      dbl_c("l2_hit_bytes_per_s", &Hardware::l2_hit_bytes_per_s, 1e9, 1e15),
      dbl_c("kv_fill_bytes_per_s", &Hardware::kv_fill_bytes_per_s, 1e9, 1e16),
      dbl_c("tma_latency_hbm", &Hardware::tma_latency_hbm, 0, 1e5),
      dbl_c("tma_queue_factor", &Hardware::tma_queue_factor, 0, 100),
      dbl_c("tma_store_latency", &Hardware::tma_store_latency, 0, 1e5),
      dbl_c("launch_ns", &Hardware::launch_ns, 0, 1e6),
      dbl_c("cta_launch_cycles", &Hardware::cta_launch_cycles, 0, 1e6),
      dbl_c("cta_prologue_cycles", &Hardware::cta_prologue_cycles, 0, 1e6),
  };
  return specs;
}

const std::vector<std::string> kProvenanceKinds = {"published", "measured", "derived", "assumed"};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string spec_names() {
  std::vector<std::string> names;
  for (const auto& s : constant_specs()) names.emplace_back(s.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

/// Reads one {"value","provenance","source"} object into `hw`.
void read_constant(JsonReader& constants, const ConstantSpec& spec, Hardware& hw) {
  JsonReader c = constants.object(spec.name);
  switch (spec.kind) {
    case ConstantSpec::Kind::Int:
      hw.*spec.int_field =
          static_cast<int>(c.integer("value", static_cast<long long>(spec.lo), static_cast<long long>(spec.hi)));
      break;
    case ConstantSpec::Kind::Int64:
      hw.*spec.int64_field = c.integer("value", static_cast<long long>(spec.lo), static_cast<long long>(spec.hi));
      break;
    case ConstantSpec::Kind::Double:
      hw.*spec.double_field = c.number("value", spec.lo, spec.hi);
      break;
  }
  Provenance p;
  p.kind = c.choice("provenance", kProvenanceKinds);
  p.source = c.string("source");
  auto blank = std::all_of(p.source.begin(), p.source.end(), [](unsigned char ch) { return std::isspace(ch); });
  if (blank)
    c.fail_at("source", "expected a non-empty source (paper/spec, microbenchmark with GPU and date, or formula)");
  // An assumed value must say how it will be replaced; insist on at least naming a measurement.
  if (p.kind == "assumed" && lower(p.source).find("measur") == std::string::npos)
    c.fail_at("source",
              "an \"assumed\" constant's source must say why no better number exists and which "
              "microbenchmark would measure it (expected the word \"measure\")");
  c.string_or("was", "");  // what a calibration replaced (attnsim calibrate keeps it for the record)
  c.finish();
  hw.provenance[spec.name] = std::move(p);
}

/// Cross-field checks; errors point at the offending constant's value.
void check_consistency(const Hardware& hw, const std::string& file) {
  auto fail = [&](const std::string& constant, const std::string& msg) {
    throw InputError(file, "/constants/" + constant + "/value", msg);
  };
  if (hw.arch == "sm100") {
    if (hw.tmem_columns != 512)
      fail("tmem_columns", fmt::format("arch sm100 has 512 TMEM columns, got {}", hw.tmem_columns));
    if (hw.tmem_lanes != 128) fail("tmem_lanes", fmt::format("arch sm100 has 128 TMEM lanes, got {}", hw.tmem_lanes));
    if (!(hw.tmem_bytes_per_clk > 0)) fail("tmem_bytes_per_clk", "arch sm100 has TMEM: expected a TMEM bandwidth > 0");
  } else {  // sm90
    if (hw.tmem_columns != 0)
      fail("tmem_columns", fmt::format("arch sm90 has no TMEM: expected 0, got {}", hw.tmem_columns));
    if (hw.tmem_lanes != 0) fail("tmem_lanes", fmt::format("arch sm90 has no TMEM: expected 0, got {}", hw.tmem_lanes));
    if (hw.tmem_bytes_per_clk != 0)
      fail("tmem_bytes_per_clk", fmt::format("arch sm90 has no TMEM: expected 0, got {}", hw.tmem_bytes_per_clk));
  }
  if (hw.max_registers_per_thread * 32 > hw.registers_per_sm)
    fail("max_registers_per_thread",
         fmt::format("one warp at {} registers/thread needs {} registers, more than registers_per_sm = {}",
                     hw.max_registers_per_thread, hw.max_registers_per_thread * 32, hw.registers_per_sm));
  if (hw.max_warps_per_sm % hw.smsp_per_sm != 0)
    fail("max_warps_per_sm",
         fmt::format("expected a multiple of smsp_per_sm = {}, got {}", hw.smsp_per_sm, hw.max_warps_per_sm));
}

}  // namespace

double Hardware::clock_under(ClockLoad load) const {
  switch (load) {
    case ClockLoad::mma_sync:
      return clock_ghz_mma_sync;
    case ClockLoad::cuda_cores:
      return clock_ghz_cuda_cores;
    case ClockLoad::tensor_core:
      break;
  }
  return clock_ghz;
}

int Hardware::ctas_per_sm_by_registers(int threads, int regs_per_thread) const {
  const int warps = (threads + 31) / 32;
  const int per_warp = (regs_per_thread * 32 + register_alloc_unit - 1) / register_alloc_unit * register_alloc_unit;
  if (warps <= 0 || per_warp <= 0) return 0;
  const int warps_per_smsp = registers_per_sm / smsp_per_sm / per_warp;
  return warps_per_smsp * smsp_per_sm / warps;
}

/// Reads configs/hw/<gpu>.json strictly: every constant present, with provenance and source;
/// unknown keys, bad ranges and arch/TMEM inconsistencies throw InputError(file, JSON path, ...).
double constant_value(const Hardware& hw, const std::string& name) {
  for (const auto& s : constant_specs()) {
    if (name != s.name) continue;
    switch (s.kind) {
      case ConstantSpec::Kind::Int:
        return hw.*s.int_field;
      case ConstantSpec::Kind::Int64:
        return static_cast<double>(hw.*s.int64_field);
      case ConstantSpec::Kind::Double:
        return hw.*s.double_field;
    }
  }
  throw std::out_of_range("no hardware constant " + name);
}

bool hardware_constant_is_integer(const std::string& name) {
  for (const auto& s : constant_specs())
    if (name == s.name) return s.kind != ConstantSpec::Kind::Double;
  throw std::out_of_range("no hardware constant " + name);
}

std::vector<std::string> hardware_constant_names() {
  std::vector<std::string> names;
  for (const auto& s : constant_specs()) names.emplace_back(s.name);
  return names;
}

Hardware load_hardware(const std::string& file) { return hardware_from_json(load_json_file(file), file); }

Hardware hardware_from_json(const nlohmann::json& doc, const std::string& file) {
  JsonReader top(doc, file);
  Hardware hw;
  hw.file = file;
  hw.name = top.string("name");
  if (hw.name.empty()) top.fail_at("name", "expected a non-empty GPU name");
  hw.arch = top.choice("arch", {"sm90", "sm100"});
  (void)top.string_or("description", "");

  JsonReader constants = top.object("constants");
  const auto& specs = constant_specs();
  // Unknown constant names first, so a misspelling is reported as such rather than as
  // "missing" for the correctly spelt name.
  for (const auto& key : constants.keys()) {
    bool known = std::any_of(specs.begin(), specs.end(), [&](const ConstantSpec& s) { return key == s.name; });
    if (!known) constants.fail_at(key, fmt::format("unknown constant; expected one of: {}", spec_names()));
  }
  for (const auto& spec : specs) {
    if (!constants.has(spec.name))
      constants.fail_at(spec.name, fmt::format("missing constant \"{}\" (every hardware constant must be "
                                               "given as {{\"value\", \"provenance\", \"source\"}})",
                                               spec.name));
    read_constant(constants, spec, hw);
  }
  constants.finish();
  top.finish();
  check_consistency(hw, file);
  return hw;
}

/// `arg` if it names a file, else <project_root()>/configs/hw/<arg>.json; otherwise throws
/// InputError listing the configs that are present.
std::string resolve_hardware_path(const std::string& arg) {
  std::error_code ec;
  if (!arg.empty() && fs::is_regular_file(arg, ec)) return arg;
  const fs::path dir = fs::path(project_root()) / "configs" / "hw";
  if (!arg.empty() && arg.find('/') == std::string::npos) {
    for (const fs::path& candidate : {dir / (arg + ".json"), dir / arg})
      if (fs::is_regular_file(candidate, ec)) return candidate.string();
  }
  std::vector<std::string> present;
  if (fs::is_directory(dir, ec)) {
    for (const auto& entry : fs::directory_iterator(dir, ec))
      if (entry.is_regular_file(ec) && entry.path().extension() == ".json")
        present.push_back(entry.path().stem().string());
  }
  std::sort(present.begin(), present.end());
  const std::string choices = present.empty() ? fmt::format("(no configs found in {})", dir.string())
                                              : fmt::format("{}", fmt::join(present, ", "));
  throw InputError(arg, "", "no such hardware config; expected a path or one of: " + choices);
}

namespace {
/// The project root and where it came from (see project_root()).
std::pair<std::string, const char*> find_project_root() {
  if (const char* env = std::getenv("ATTNSIM_ROOT"); env && *env) return {env, "ATTNSIM_ROOT"};
#ifdef ATTNSIM_DATA_FROM_BIN
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path data = (exe.parent_path() / ATTNSIM_DATA_FROM_BIN).lexically_normal();
    if (fs::is_directory(data / "configs", ec)) return {data.string(), "installed"};
  }
#endif
#ifdef ATTNSIM_SOURCE_ROOT
  return {ATTNSIM_SOURCE_ROOT, "source tree"};
#else
  return {".", "current directory"};
#endif
}
}  // namespace

std::string project_root() { return find_project_root().first; }

std::string describe_project_root() {
  const auto [path, origin] = find_project_root();
  return fmt::format("{} ({})", path, origin);
}

}  // namespace attnsim
