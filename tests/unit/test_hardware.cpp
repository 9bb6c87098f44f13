// Hardware configs (configs/hw/*.json) and their strict loader.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "model/hardware.hpp"
#include "model/json_reader.hpp"

using namespace attnsim;
namespace fs = std::filesystem;

namespace {

const char* kConstantNames[] = {"num_sms",
                                "smsp_per_sm",
                                "clock_ghz",
                                "clock_ghz_cuda_cores",
                                "clock_ghz_mma_sync",
                                "clock_ghz_max",
                                "clock_ghz_tensor_ceiling",
                                "clock_power_limit_w",
                                "clock_power_exponent",
                                "clock_power_static_w",
                                "clock_power_base_w",
                                "clock_power_tensor_w",
                                "clock_power_issue_w",
                                "clock_power_l2_w_per_tbps",
                                "clock_power_hbm_w_per_tbps",
                                "issue_per_clk_smsp",
                                "fma_lanes_per_clk_smsp",
                                "alu_lanes_per_clk_smsp",
                                "mufu_lanes_per_clk_smsp",
                                "tensor_flops_per_clk",
                                "mma_sync_flops_per_clk",
                                "smem_bytes_per_clk",
                                "tmem_bytes_per_clk",
                                "smem_bytes_per_block",
                                "tmem_columns",
                                "tmem_lanes",
                                "registers_per_sm",
                                "max_registers_per_thread",
                                "max_warps_per_sm",
                                "register_alloc_unit",
                                "register_banks",
                                "l2_bytes_per_clk",
                                "hbm_bytes_per_s",
                                "tma_bytes_per_clk_sm",
                                "tma_latency",
                                "mma_latency",
                                "mbarrier_latency",
                                "mma_issue_instrs",
                                "tma_issue_instrs",
                                "fma_latency",
                                "alu_latency",
                                "mufu_latency",
                                "shfl_latency",
                                "f2fp_latency",
                                "lds_latency",
                                "ldg_latency",
                                "icache_bytes",
                                "ifetch_cycles_per_instruction",
                                "ifetch_runahead_bytes",
                                "wgmma_issue_cycles",
                                "mma_queue_depth",
                                "wgmma_wait_ready_cycles",
                                "mbarrier_ready_cycles",
                                "named_barrier_latency",
                                "fma_rate_beside_mma",
                                "alu_rate_beside_mma",
                                "mufu_rate_beside_mma",
                                "l2_hit_bytes_per_s",
                                "kv_fill_bytes_per_s",
                                "tma_latency_hbm",
                                "tma_queue_factor",
                                "tma_store_latency",
                                "launch_ns",
                                "cta_launch_cycles",
                                "cta_prologue_cycles"};

/// configs/hw/<stem>.json in the source tree.
std::string config_path(const std::string& stem) {
  return (fs::path(ATTNSIM_SOURCE_ROOT) / "configs" / "hw" / (stem + ".json")).string();
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

/// A per-process scratch directory under the system temp dir, removed at scope exit.
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("attnsim_test_hardware_" + std::to_string(::getpid()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string write(const std::string& name, const nlohmann::json& j) const {
    auto p = path / name;
    std::ofstream(p) << j.dump(2);
    return p.string();
  }
};

/// Loads b200.json after `edit`, written to a temp file; returns the InputError message
/// (fails the test if no InputError is thrown).
std::string load_error(const std::string& base, const std::string& file_name,
                       const std::function<void(nlohmann::json&)>& edit) {
  TempDir dir;
  auto j = read_json(config_path(base));
  edit(j);
  const std::string path = dir.write(file_name, j);
  try {
    load_hardware(path);
  } catch (const InputError& e) {
    CHECK(e.file() == path);
    return e.what();
  }
  FAIL("expected InputError for " << file_name);
  return "";
}

}  // namespace

TEST_CASE("all hardware configs load with full provenance", "[hardware]") {
  for (const std::string stem : {"b200", "h100_sxm", "h200"}) {
    INFO(stem);
    const Hardware hw = load_hardware(resolve_hardware_path(stem));
    CHECK(hw.file == config_path(stem));
    CHECK(!hw.name.empty());
    CHECK(hw.provenance.size() == std::size(kConstantNames));
    for (const char* name : kConstantNames) {
      INFO(name);
      REQUIRE(hw.provenance.count(name) == 1);
      const auto& p = hw.provenance.at(name);
      CHECK((p.kind == "published" || p.kind == "measured" || p.kind == "derived" || p.kind == "assumed"));
      CHECK(!p.source.empty());
    }
    CHECK(hw.smsp_per_sm == 4);
    // Published 1 issue/clk, 32 FMA lanes/SMSP, 128 B/clk SMEM; a calibrated (measured) config
    // lands within 2% of them (the microbenchmarks' loop overhead costs about 1%).
    CHECK(hw.issue_per_clk_smsp == Approx(1).epsilon(0.02));
    CHECK(hw.fma_lanes_per_clk_smsp == Approx(32).epsilon(0.02));
    CHECK(hw.smem_bytes_per_clk == Approx(128).epsilon(0.02));
    CHECK(hw.smem_bytes_per_block == 232448);
    CHECK(hw.registers_per_sm == 65536);
    CHECK(hw.max_registers_per_thread == 255);
    CHECK(hw.max_warps_per_sm == 64);
    CHECK(hw.register_alloc_unit == 256);
    CHECK(hw.us_per_cycle() > 0);
  }
  const Hardware b200 = load_hardware(config_path("b200"));
  const Hardware h100 = load_hardware(config_path("h100_sxm"));
  // Register-file occupancy per SMSP (cuda_occupancy.h's rule), hand-computed: 288 threads at
  // 112 registers take half the file, yet one SMSP holds 4 warps of 3584 registers, the SM 16:
  // one CTA of 9 warps (ncu on an H100: "Block Limit Registers 1"); at 96 registers (3072 per
  // warp) 5 per SMSP, 20 per SM: 2 CTAs. 128 threads at 168 (5376): 3 per SMSP: 3 CTAs of 4.
  CHECK(h100.ctas_per_sm_by_registers(288, 112) == 1);
  CHECK(h100.ctas_per_sm_by_registers(288, 96) == 2);
  CHECK(h100.ctas_per_sm_by_registers(128, 167) == 3);
  CHECK(h100.ctas_per_sm_by_registers(128, 127) == 4);
  CHECK(h100.ctas_per_sm_by_registers(384, 255) == 0);  // 8192 per warp: 2 per SMSP, 8 < 12 warps
  const Hardware h200 = load_hardware(config_path("h200"));
  CHECK(b200.arch == "sm100");
  CHECK(b200.has_tmem());
  CHECK(b200.num_sms == 148);
  CHECK(h100.arch == "sm90");
  CHECK_FALSE(h100.has_tmem());
  CHECK(h100.num_sms == 132);
  CHECK(h200.arch == "sm90");
  CHECK_FALSE(h200.has_tmem());
  CHECK(h200.hbm_bytes_per_s > h100.hbm_bytes_per_s);
  CHECK(b200.provenance.at("num_sms").kind == "published");
  CHECK(b200.provenance.at("clock_ghz").kind == "derived");
}

TEST_CASE("B200 per-tile budget matches the FA4 paper", "[hardware]") {
  const Hardware hw = load_hardware(config_path("b200"));
  const double M = 128, N = 128, d = 128;
  REQUIRE(hw.tensor_flops_per_clk == 8192);
  const double mufu_per_clk_sm = hw.mufu_lanes_per_clk_smsp * hw.smsp_per_sm;
  REQUIRE(hw.mufu_lanes_per_clk_smsp == 4);
  REQUIRE(mufu_per_clk_sm == 16);
  // Forward, one 128x128 tile with d=128: two GEMMs of 2*M*N*d FLOP each.
  CHECK(2 * 2 * M * N * d / hw.tensor_flops_per_clk == Approx(1024));  // MMA
  CHECK(M * N / mufu_per_clk_sm == Approx(1024));                      // exp
  CHECK(3 * M * N * d / 8192 == Approx(768));                          // SMEM (FA4 formula)
  CHECK(hw.tmem_columns == 512);
  CHECK(hw.tmem_lanes == 128);
  // 2.25 PFLOP/s dense BF16 at the derived clock.
  CHECK(hw.num_sms * hw.tensor_flops_per_clk * hw.clock_ghz * 1e9 == Approx(2.25e15).epsilon(0.01));

  // Hopper at hd128: exp costs about half the MMA time (FA3 paper section 3.1).
  const Hardware h100 = load_hardware(config_path("h100_sxm"));
  const double mma = 2 * 2 * M * N * d / h100.tensor_flops_per_clk;
  const double exp = M * N / (h100.mufu_lanes_per_clk_smsp * h100.smsp_per_sm);
  CHECK(exp / mma == Approx(0.5).epsilon(0.001));  // measured rates: within 0.1%
  // 989.4 TFLOPS = 132 SMs x 4096 FLOP/clk x 1.83 GHz (FA3 footnote 5); the calibrated config holds
  // the clock measured under sustained tensor load, which the power cap keeps below 1.83 GHz.
  CHECK(h100.num_sms * h100.tensor_flops_per_clk * 1.83e9 == Approx(989.4e12).epsilon(0.01));
  CHECK(h100.clock_ghz <= 1.98);
}

TEST_CASE("hardware loader rejects bad configs with file and JSON path", "[hardware]") {
  SECTION("unknown top-level field") {
    auto msg = load_error("b200", "unknown_top.json", [](auto& j) { j["vendor"] = "nvidia"; });
    CHECK_THAT(msg,
               Catch::Contains("unknown_top.json") && Catch::Contains("/vendor") && Catch::Contains("unknown field"));
  }
  SECTION("unknown field inside a constant") {
    auto msg = load_error("b200", "unknown_in_const.json", [](auto& j) { j["constants"]["num_sms"]["unit"] = "SMs"; });
    CHECK_THAT(msg, Catch::Contains("unknown_in_const.json") && Catch::Contains("/constants/num_sms/unit"));
  }
  SECTION("unknown constant name") {
    auto msg = load_error("b200", "unknown_const.json",
                          [](auto& j) { j["constants"]["num_smz"] = j["constants"]["num_sms"]; });
    CHECK_THAT(msg, Catch::Contains("unknown_const.json") && Catch::Contains("/constants/num_smz") &&
                        Catch::Contains("unknown constant"));
  }
  SECTION("missing provenance") {
    auto msg = load_error("h100_sxm", "no_prov.json", [](auto& j) { j["constants"]["clock_ghz"].erase("provenance"); });
    CHECK_THAT(msg, Catch::Contains("no_prov.json") && Catch::Contains("/constants/clock_ghz/provenance") &&
                        Catch::Contains("missing"));
  }
  SECTION("bad provenance string") {
    auto msg =
        load_error("h100_sxm", "bad_prov.json", [](auto& j) { j["constants"]["clock_ghz"]["provenance"] = "guessed"; });
    CHECK_THAT(msg, Catch::Contains("bad_prov.json") && Catch::Contains("/constants/clock_ghz/provenance") &&
                        Catch::Contains("guessed") && Catch::Contains("published"));
  }
  SECTION("assumed value without a measurement plan") {
    auto msg = load_error("h100_sxm", "assumed_no_plan.json", [](auto& j) {
      j["constants"]["mma_latency"]["provenance"] = "assumed";
      j["constants"]["mma_latency"]["source"] = "seems about right";
    });
    CHECK_THAT(msg, Catch::Contains("assumed_no_plan.json") && Catch::Contains("/constants/mma_latency/source"));
  }
  SECTION("missing constant") {
    auto msg = load_error("b200", "missing_const.json", [](auto& j) { j["constants"].erase("mma_latency"); });
    CHECK_THAT(msg, Catch::Contains("missing_const.json") && Catch::Contains("/constants/mma_latency") &&
                        Catch::Contains("missing constant \"mma_latency\""));
  }
  SECTION("value out of range") {
    auto msg = load_error("b200", "range.json", [](auto& j) { j["constants"]["num_sms"]["value"] = 0; });
    CHECK_THAT(msg, Catch::Contains("range.json") && Catch::Contains("/constants/num_sms/value") &&
                        Catch::Contains("expected an integer in [1, 1024]"));
  }
  SECTION("non-integer value for an integer constant") {
    auto msg = load_error("b200", "frac.json", [](auto& j) { j["constants"]["tmem_lanes"]["value"] = 127.5; });
    CHECK_THAT(msg, Catch::Contains("frac.json") && Catch::Contains("/constants/tmem_lanes/value"));
  }
  SECTION("unknown arch") {
    auto msg = load_error("b200", "arch.json", [](auto& j) { j["arch"] = "sm120"; });
    CHECK_THAT(msg, Catch::Contains("arch.json") && Catch::Contains("/arch") && Catch::Contains("sm100"));
  }
  SECTION("sm100 without full TMEM") {
    auto msg = load_error("b200", "tmem100.json", [](auto& j) { j["constants"]["tmem_columns"]["value"] = 256; });
    CHECK_THAT(msg, Catch::Contains("tmem100.json") && Catch::Contains("/constants/tmem_columns/value") &&
                        Catch::Contains("512"));
  }
  SECTION("sm90 with TMEM") {
    auto msg = load_error("h200", "tmem90.json", [](auto& j) { j["constants"]["tmem_lanes"]["value"] = 128; });
    CHECK_THAT(msg, Catch::Contains("tmem90.json") && Catch::Contains("/constants/tmem_lanes/value") &&
                        Catch::Contains("sm90"));
  }
  SECTION("malformed JSON") {
    TempDir dir;
    auto path = dir.path / "broken.json";
    std::ofstream(path) << "{ \"name\": \"B200\", ";
    try {
      load_hardware(path.string());
      FAIL("expected InputError");
    } catch (const InputError& e) {
      CHECK_THAT(std::string(e.what()), Catch::Contains("broken.json") && Catch::Contains("line 1"));
    }
  }
}

TEST_CASE("hardware config paths resolve by name or path", "[hardware]") {
  CHECK(resolve_hardware_path("h200") == config_path("h200"));
  CHECK(resolve_hardware_path(config_path("b200")) == config_path("b200"));
  try {
    resolve_hardware_path("a100");
    FAIL("expected InputError");
  } catch (const InputError& e) {
    const std::string msg = e.what();
    CHECK_THAT(msg, Catch::Contains("a100") && Catch::Contains("no such hardware config") &&
                        Catch::Contains("b200, h100_sxm, h200"));
  }

  // ATTNSIM_ROOT overrides the compiled-in source root.
  const char* old = std::getenv("ATTNSIM_ROOT");
  const std::string saved = old ? old : "";
  TempDir dir;
  fs::create_directories(dir.path / "configs" / "hw");
  fs::copy_file(config_path("b200"), dir.path / "configs" / "hw" / "mygpu.json");
  ::setenv("ATTNSIM_ROOT", dir.path.c_str(), 1);
  CHECK(project_root() == dir.path.string());
  CHECK(resolve_hardware_path("mygpu") == (dir.path / "configs" / "hw" / "mygpu.json").string());
  CHECK_THROWS_WITH(resolve_hardware_path("h200"), Catch::Contains("one of: mygpu"));
  if (old)
    ::setenv("ATTNSIM_ROOT", saved.c_str(), 1);
  else
    ::unsetenv("ATTNSIM_ROOT");
  CHECK(project_root() == (old ? saved : std::string(ATTNSIM_SOURCE_ROOT)));
}
