// calibrate: the Eigen line fit, derived constants from the committed H100 results, and the
// rewritten config (valid, marked measured, keeping what it replaced).
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include "calibrate/block_timing.hpp"
#include "calibrate/calibrate.hpp"
#include "lower/costs.hpp"
#include "model/json_reader.hpp"
#include "test_support.hpp"

using namespace attnsim;
namespace fs = std::filesystem;

TEST_CASE("fit_line recovers latency + bytes / bandwidth", "[calibrate]") {
  const auto [a, b] = fit_line({1024, 4096, 8192, 16384}, {400 + 1024 / 100.0, 400 + 40.96, 400 + 81.92, 400 + 163.84});
  CHECK(a == Approx(400));
  CHECK(1 / b == Approx(100));
}

TEST_CASE("calibrating from the committed H100 results writes a valid config marked measured", "[calibrate]") {
  const std::string measured = test::root() + "/configs/measured/h100_sxm";
  REQUIRE(fs::is_directory(measured));
  std::string note;
  const auto constants = derive_constants({measured}, note);
  CHECK_THAT(note, Catch::Contains("H100"));
  std::map<std::string, double> v;
  for (const auto& c : constants) v[c.name] = c.value;
  // MUFU: 16 ex2/clk/SM = 4 per SMSP (published), the wgmma peak 4096 FLOP/clk/SM.
  CHECK(v.at("mufu_lanes_per_clk_smsp") == Approx(4).epsilon(0.01));
  CHECK(v.at("tensor_flops_per_clk") == Approx(4096).epsilon(0.01));
  CHECK(v.at("tma_latency") > 100);
  const fs::path tmp = fs::temp_directory_path() / "attnsim_calibrate_test.json";
  fs::copy_file(test::root() + "/configs/hw/h100_sxm.json", tmp, fs::copy_options::overwrite_existing);
  apply_calibration(tmp.string(), constants, note);
  const Hardware hw = load_hardware(tmp.string());
  CHECK(hw.provenance.at("mufu_lanes_per_clk_smsp").kind == "measured");
  CHECK_THAT(hw.provenance.at("mufu_lanes_per_clk_smsp").source, Catch::Contains("mufu_ex2 on NVIDIA H100"));
  CHECK(hw.mufu_lanes_per_clk_smsp == Approx(v.at("mufu_lanes_per_clk_smsp")));
  CHECK(hw.provenance.at("num_sms").kind == "published");  // untouched
  const auto doc = load_json_file(tmp.string());
  CHECK_THAT(doc["constants"]["mufu_lanes_per_clk_smsp"]["was"].get<std::string>(), Catch::Contains("published 4"));
  // Calibrating again keeps the first "was" (the published figure), not the previous measurement.
  apply_calibration(tmp.string(), constants, note);
  CHECK_THAT(load_json_file(tmp.string())["constants"]["mufu_lanes_per_clk_smsp"]["was"].get<std::string>(),
             Catch::Contains("published 4"));
  fs::remove(tmp);
}

TEST_CASE("calibrate rejects files that are not microbenchmark results", "[calibrate][inputs]") {
  std::string note;
  CHECK_THROWS_WITH(derive_constants({test::root() + "/configs/hw/h100_sxm.json"}, note),
                    Catch::Contains("h100_sxm.json: /benchmark: expected the benchmark name"));
}

TEST_CASE("calibrate derives the latency - issue - sharing - queueing and launch constants from the H100 results",
          "[calibrate]") {
  const std::string measured = test::root() + "/configs/measured/h100_sxm";
  std::string note;
  const auto constants =
      derive_constants({measured + "/latency_chains.json", measured + "/wgmma_issue.json",
                        measured + "/mbarrier_ready.json", measured + "/tma_sharing.json",
                        measured + "/launch_overhead.json", measured + "/tma.json", measured + "/tma_under_load.json"},
                       note);
  std::map<std::string, double> v;
  for (const auto& c : constants) v[c.name] = c.value;
  // Fixed-latency pipes: 4 cycles dependent issue (FFMA, FMNMX, F2FP); MUFU and SHFL are longer.
  CHECK(v.at("fma_latency") == Approx(4).margin(0.2));
  CHECK(v.at("alu_latency") == Approx(4).margin(0.2));
  CHECK(v.at("f2fp_latency") == Approx(4).margin(0.2));
  CHECK(v.at("mufu_latency") > v.at("fma_latency"));
  CHECK(v.at("shfl_latency") > v.at("fma_latency"));
  CHECK(v.at("wgmma_issue_cycles") > 0);
  CHECK(v.at("wgmma_wait_ready_cycles") >= 0);
  CHECK(v.at("mbarrier_ready_cycles") > 0);
  // Tiles that sibling CTAs share come from L2 faster than distinct data from HBM; a tile not in
  // L2 takes longer than one in it (both intercepts of latency against bytes).
  CHECK(v.at("l2_hit_bytes_per_s") > v.at("hbm_bytes_per_s"));
  // The sharing fit: 17 CTAs per K/V tile measured 1.40e13 B/s cold on this H100.
  const double s17 = 1 / (1 / v.at("l2_hit_bytes_per_s") + 1 / (17 * v.at("kv_fill_bytes_per_s")));
  CHECK(s17 == Approx(1.40e13).epsilon(0.1));
  CHECK(v.at("tma_latency_hbm") > v.at("tma_latency"));
  CHECK(v.at("tma_store_latency") > 0);
  CHECK(v.at("launch_ns") > 100);
  CHECK(v.at("cta_launch_cycles") > 0);
  CHECK(v.at("cta_prologue_cycles") > 0);
  // A lone 16 KB HBM load on this H100: 981 cycles alone, 1526 with the other SMs' streams at 85%
  // of the chip's rate (tma_under_load): 1526 / 981 - 1 = k 0.85 / sqrt(0.15) within the fit.
  CHECK(v.at("tma_queue_factor") == Approx((1526.0 / 981 - 1) / (0.85 / std::sqrt(0.15))).epsilon(0.1));
  for (const auto& c : constants)
    if (c.name == "cta_launch_cycles" || c.name == "tma_latency_hbm" || c.name == "kv_fill_bytes_per_s" ||
        c.name == "tma_queue_factor")
      CHECK_THAT(c.how, Catch::Contains("Eigen"));
}

TEST_CASE("calibrate --costs folds the committed softmax_block results into a cost file's measured timings",
          "[calibrate][costs]") {
  const std::string results = test::root() + "/configs/measured/h100_sxm/softmax_block.json";
  std::string note;
  const auto points = derive_block_timings(results, note);
  CHECK_THAT(note, Catch::Contains("H100"));
  // hd64 and hd128 at n_block 128 share the softmax blocks' 64 elements; hd64 at n_block 176 has 88.
  std::map<std::string, std::vector<double>> elements;
  for (const auto& p : points) {
    elements[p.block].push_back(p.elements);
    CHECK(p.alone > 0);
    CHECK(p.beside_ss > p.alone);  // the spans slow beside wgmma
  }
  CHECK(elements.at("softmax_exp") == std::vector<double>{40, 64, 88});
  CHECK(elements.at("rescale_o") == std::vector<double>{32, 64, 128});
  const auto doc = load_json_file(results);
  const auto& shapes = doc["results"]["shapes"];
  for (const auto& p : points)
    if (p.block == "softmax_exp" && p.elements == 64)
      CHECK(p.alone == Approx((shapes["hd64 n_block 128"]["spans"]["softmax_exp"]["alone_cycles"].get<double>() +
                               shapes["hd128 n_block 128"]["spans"]["softmax_exp"]["alone_cycles"].get<double>()) /
                              2));

  const fs::path tmp = fs::temp_directory_path() / "attnsim_calibrate_costs_test.json";
  fs::copy_file(test::root() + "/configs/costs/sm90_softmax.json", tmp, fs::copy_options::overwrite_existing);
  apply_block_timings(tmp.string(), points, note);
  // CostModel::load caches per path, and apply_block_timings loaded the file before writing it.
  const fs::path written = fs::temp_directory_path() / "attnsim_calibrate_costs_test_written.json";
  fs::copy_file(tmp, written, fs::copy_options::overwrite_existing);
  const CostModel m = CostModel::load(written.string());
  const MeasuredTiming at40 = m.measured_timing("softmax_exp", 40);
  const auto& hd256 = shapes["hd256 n_block 80"]["spans"]["softmax_exp"];
  CHECK(at40.alone == Approx(hd256["alone_cycles"].get<double>()).epsilon(0.001));
  CHECK(at40.beside_ss == Approx(hd256["beside_wgmma_cycles"].get<double>() / hd256["alone_cycles"].get<double>())
                              .epsilon(0.001));
  CHECK_THAT(load_json_file(tmp.string())["blocks"]["softmax_exp"]["measured"]["source"].get<std::string>(),
             Catch::Contains("softmax_block on NVIDIA H100"));
  fs::remove(tmp);
  fs::remove(written);
  CHECK_THROWS_WITH(derive_block_timings(test::root() + "/configs/measured/h100_sxm/wgmma.json", note),
                    Catch::Contains("wgmma.json: /benchmark: expected a kernels/microbench softmax_block result"));
}

TEST_CASE("calibrate --costs folds smem_beside_async into final_o's slowdown while copies land - kept on recalibration",
          "[calibrate][costs]") {
  const std::string results = test::root() + "/configs/measured/h200/smem_beside_async.json";
  std::string note;
  const auto points = derive_copies_landing(results, note);
  CHECK_THAT(note, Catch::Contains("H200"));
  REQUIRE(points.size() == 3);  // head_dim 64, 128, 256: final_o's 32, 64, 128 elements
  const auto configs = load_json_file(results)["results"]["configs"];
  auto ratio = [&](const char* with, const char* without, const char* figure) {
    return configs[with][figure].get<double>() / configs[without][figure].get<double>();
  };
  CHECK(points[0].elements == 32);
  CHECK(points[1].elements == 64);
  CHECK(points[1].ratio[0] == Approx(ratio("beside_tma", "idle", "write_o_hd128_cycles")));
  CHECK(points[2].ratio[1] == Approx(ratio("beside_ss_tma", "beside_ss", "write_o_hd256_cycles")));
  CHECK(points[0].ratio[2] == Approx(ratio("beside_rs_tma", "beside_rs", "write_o_hd64_cycles")));

  const fs::path tmp = fs::temp_directory_path() / "attnsim_calibrate_landing_test.json";
  fs::copy_file(test::root() + "/configs/costs/sm90_softmax.json", tmp, fs::copy_options::overwrite_existing);
  apply_copies_landing(tmp.string(), points, note);
  // Recalibrating the blocks' own timings keeps the copies' slowdown of the points it replaces.
  std::string block_note;
  apply_block_timings(tmp.string(),
                      derive_block_timings(test::root() + "/configs/measured/h100_sxm/softmax_block.json", block_note),
                      block_note);
  const fs::path written = fs::temp_directory_path() / "attnsim_calibrate_landing_test_written.json";
  fs::copy_file(tmp, written, fs::copy_options::overwrite_existing);  // CostModel::load caches per path
  const CostModel m = CostModel::load(written.string());
  CHECK(m.measured_timing("final_o", 64).beside_copies[0] == Approx(points[1].ratio[0]).epsilon(1e-3));
  CHECK(m.measured_timing("final_o", 128).beside_copies[2] == Approx(points[2].ratio[2]).epsilon(1e-3));
  CHECK(m.measured_timing("softmax_exp", 64).beside_copies == std::array<double, 3>{1, 1, 1});
  fs::remove(tmp);
  fs::remove(written);

  CHECK_THROWS_WITH(derive_copies_landing(test::root() + "/configs/measured/h200/wgmma.json", note),
                    Catch::Contains("wgmma.json: /benchmark: expected a kernels/microbench smem_beside_async result"));
  // A head_dim final_o has no measured point for: refused, naming where the points are.
  CopiesLandingPoint odd;
  odd.elements = 48;
  const fs::path tmp2 = fs::temp_directory_path() / "attnsim_calibrate_landing_test_odd.json";
  fs::copy_file(test::root() + "/configs/costs/sm90_softmax.json", tmp2, fs::copy_options::overwrite_existing);
  CHECK_THROWS_WITH(apply_copies_landing(tmp2.string(), {odd}, note),
                    Catch::Contains("/blocks/final_o/measured/points") && Catch::Contains("48 elements"));
  fs::remove(tmp2);
}

TEST_CASE("calibrate --costs folds load_warp into the cost file's load warp section", "[calibrate][costs]") {
  const std::string results = test::root() + "/configs/measured/h200/load_warp.json";
  std::string note;
  const auto points = derive_load_warp(results, note);
  CHECK_THAT(note, Catch::Contains("H200"));
  REQUIRE(points.size() == 6);  // hd64, hd128, hd256, static and dynamic
  const auto inst = load_json_file(results)["results"]["instances"];
  for (const auto& p : points) {
    const auto& beside = inst[p.name]["beside_softmax"];
    CHECK(p.block_gaps == beside["block_gaps_cycles"].get<double>());
    CHECK(p.block_load_spans == beside["block_load_spans_cycles"].get<double>());
    CHECK(p.tile_bookkeeping == beside["tile_bookkeeping_cycles"].get<double>());
    CHECK(p.alone_tile_bookkeeping == inst[p.name]["alone"]["tile_bookkeeping_cycles"].get<double>());
    CHECK(p.recorded_entry_extra == inst[p.name]["recorded_after_plain"]["entry_extra_cycles"].get<double>());
    CHECK(p.dynamic == (p.name.find("dynamic") != std::string::npos));
    CHECK(p.own_o == (p.head_dim != 256));  // hd256 stages O in the V ring
    // Beside the softmax the load warp's code takes longer than alone.
    CHECK(p.block_gaps > p.alone_block_gaps);
  }
  const fs::path tmp = fs::temp_directory_path() / "attnsim_calibrate_load_warp_test.json";
  fs::copy_file(test::root() + "/configs/costs/sm90_softmax.json", tmp, fs::copy_options::overwrite_existing);
  apply_load_warp(tmp.string(), points, note);
  const auto written = load_json_file(tmp.string());
  CHECK(written["load_warp"]["points"].size() == 6);
  CHECK_THAT(written["load_warp"]["source"].get<std::string>(), Catch::Contains("kernels/microbench load_warp"));
  const fs::path fresh = fs::temp_directory_path() / "attnsim_calibrate_load_warp_test_loaded.json";
  fs::copy_file(tmp, fresh, fs::copy_options::overwrite_existing);  // CostModel::load caches per path
  const LoadWarpCost c = CostModel::load(fresh.string()).load_warp(128, true, true, 128);
  CHECK(c.tile_bookkeeping ==
        Approx(inst["hd128_dynamic"]["beside_softmax"]["tile_bookkeeping_cycles"].get<double>()).margin(0.05));
  fs::remove(tmp);
  fs::remove(fresh);

  CHECK_THROWS_WITH(derive_load_warp(test::root() + "/configs/measured/h200/wgmma.json", note),
                    Catch::Contains("wgmma.json: /benchmark: expected a kernels/microbench load_warp result"));
  // A result without an instance's knobs (the first run's format) is refused, naming the field.
  auto old = load_json_file(results);
  old["results"]["instances"]["hd128"].erase("own_o");
  const fs::path bad = fs::temp_directory_path() / "attnsim_calibrate_load_warp_old.json";
  std::ofstream(bad) << old.dump();
  CHECK_THROWS_WITH(derive_load_warp(bad.string(), note), Catch::Contains("/results/instances/hd128/own_o"));
  fs::remove(bad);
}

TEST_CASE("calibrate --costs keeps exp_scores timed with exp2 emulation apart by share of emulated exp2",
          "[calibrate][costs]") {
  // The committed H100 results plus one shape timed with 1 of every 4 exp2 emulated (a made-up
  // measurement: what the benchmark writes for fa3_sm90's "exp2_emulation").
  auto doc = load_json_file(test::root() + "/configs/measured/h100_sxm/softmax_block.json");
  nlohmann::json emu;
  emu["n_block"] = 176;
  emu["head_dim"] = 64;
  emu["exp2_emulation"] = {{"freq", 4}, {"res", 1}};
  emu["spans"]["softmax_exp"] = {{"alone_cycles", 700.0}, {"beside_wgmma_cycles", 910.0}, {"beside_wgmma_rs_cycles", 980.0}};
  doc["results"]["shapes"]["hd64 n_block 176 exp2 emu 1 of 4"] = emu;
  const fs::path results = fs::temp_directory_path() / "attnsim_softmax_block_emu.json";
  std::ofstream(results) << doc.dump();
  std::string note;
  const auto points = derive_block_timings(results.string(), note);
  int emulated = 0;
  for (const auto& p : points)
    if (p.exp2_emu_share > 0) {
      ++emulated;
      CHECK(p.block == "softmax_exp");  // the shape's only span
      CHECK(p.elements == 88);
      CHECK(p.exp2_emu_share == Approx(0.25));  // 22 of 88 elements: e % 4 == 3
      CHECK(p.alone == 700.0);                  // not averaged with the plain 88-element point
    }
  CHECK(emulated == 1);

  const fs::path tmp = fs::temp_directory_path() / "attnsim_calibrate_costs_emu.json";
  fs::copy_file(test::root() + "/configs/costs/sm90_softmax.json", tmp, fs::copy_options::overwrite_existing);
  apply_block_timings(tmp.string(), points, note);
  // CostModel::load caches per path, and apply_block_timings loaded the file before writing it.
  const fs::path written = fs::temp_directory_path() / "attnsim_calibrate_costs_emu_written.json";
  fs::copy_file(tmp, written, fs::copy_options::overwrite_existing);
  const CostModel m = CostModel::load(written.string());
  const MeasuredTiming plain = m.measured_timing("softmax_exp", 88), emu88 = m.measured_timing("softmax_exp", 88, 0.25);
  CHECK(plain.alone == Approx(doc["results"]["shapes"]["hd64 n_block 176"]["spans"]["softmax_exp"]["alone_cycles"]
                                  .get<double>())
                           .epsilon(0.001));
  CHECK(emu88.alone == Approx(700.0));
  CHECK(emu88.beside_ss == Approx(1.3));
  CHECK(emu88.beside_rs == Approx(1.4));
  // Elsewhere at that share the one point scales with elements; at an unmeasured share nothing is measured.
  CHECK(m.measured_timing("softmax_exp", 44, 0.25).alone == Approx(350.0));
  CHECK(m.measured_timing("softmax_exp", 88, 0.125).alone == 0);
  fs::remove(tmp);
  fs::remove(written);
  fs::remove(results);
}

TEST_CASE("a span timed beside wgmma at part duty is taken linearly to full duty", "[calibrate]") {
  CHECK(beside_at_full_duty(100, 150, 1.0) == 150);
  CHECK(beside_at_full_duty(100, 150, 0.5) == 200);
  CHECK(beside_at_full_duty(592, 764, 0.797) == Approx(807.8).epsilon(1e-3));  // softmax_duty's hd128 exp
  CHECK_THROWS_WITH(beside_at_full_duty(100, 150, 0), Catch::Contains("tensor duty 0 outside (0, 1]"));
  CHECK_THROWS_WITH(beside_at_full_duty(100, 150, 1.2), Catch::Contains("outside (0, 1]"));
  // A result file with a duty out of range is refused, naming where.
  auto bad = load_json_file(test::root() + "/configs/measured/h200/softmax_block.json");
  bad["results"]["shapes"]["hd128 n_block 128"]["spans"]["softmax_exp"]["tensor_duty_ss"] = 0.0;
  const fs::path bad_file = fs::temp_directory_path() / "attnsim_softmax_block_bad_duty.json";
  std::ofstream(bad_file) << bad.dump();
  std::string note;
  CHECK_THROWS_WITH(derive_block_timings(bad_file.string(), note),
                    Catch::Contains("/results/shapes/hd128 n_block 128/spans/softmax_exp/tensor_duty_ss") &&
                        Catch::Contains("expected a tensor duty in (0, 1]"));
  fs::remove(bad_file);
}

TEST_CASE("calibrate reads a results folder without the replay baselines kept in it", "[calibrate]") {
  // configs/measured/h200 holds gemm_turn.replay.json and softmax_pair.replay.json (attnsim replay
  // --update) beside the results, as scripts/calibrate-gpu.sh passes the folder.
  const std::string folder = test::root() + "/configs/measured/h200";
  REQUIRE(fs::exists(folder + "/gemm_turn.replay.json"));
  std::string note;
  const auto constants = derive_constants({folder}, note);
  CHECK(std::any_of(constants.begin(), constants.end(),
                    [](const CalibratedConstant& c) { return c.name == "alu_rate_beside_mma"; }));
  // Named on its own, a replay baseline is still refused as a result file.
  CHECK_THROWS_WITH(derive_constants({folder + "/gemm_turn.replay.json"}, note),
                    Catch::Contains("gemm_turn.replay.json: /benchmark"));
}

TEST_CASE("calibrate reads pipes_under_mma's rates at full tensor duty where the result has them", "[calibrate]") {
  std::string note;
  const std::string h200 = test::root() + "/configs/measured/h200/pipes_under_mma.json";
  const auto doc = load_json_file(h200);
  for (const auto& c : derive_constants({h200}, note)) {
    if (c.name != "alu_rate_beside_mma") continue;
    CHECK(c.value == doc["results"]["configs"]["fmnmx"]["ratio_ss_full_duty"].get<double>());
    CHECK(c.value < doc["results"]["configs"]["fmnmx"]["ratio_ss"].get<double>());  // slower while it runs
  }
  // The H100 results predate the duty: their ratio as timed.
  const std::string h100 = test::root() + "/configs/measured/h100_sxm/pipes_under_mma.json";
  for (const auto& c : derive_constants({h100}, note))
    if (c.name == "alu_rate_beside_mma")
      CHECK(c.value == load_json_file(h100)["results"]["configs"]["fmnmx"]["ratio_ss"].get<double>());
}

TEST_CASE("calibrate --costs times the conditional rescale's row max and pack-only step as blocks of their own",
          "[calibrate][costs]") {
  // The H200 results time, beside the plain spans, shapes with the conditional rescale: their row
  // max (with the warp's vote) and their rescale_o span, which packs P only.
  const std::string results = test::root() + "/configs/measured/h200/softmax_block.json";
  std::string note;
  const auto points = derive_block_timings(results, note);
  const auto shapes = load_json_file(results)["results"]["shapes"];
  std::map<std::string, std::vector<double>> elements;
  for (const auto& p : points) elements[p.block].push_back(p.elements);
  CHECK(elements.at("pack_p") == std::vector<double>{32, 40, 64});
  CHECK(elements.at("softmax_max_conditional") == std::vector<double>{32, 40, 64});
  // The masked shapes: the mask's time, the masked row max less the unmasked one (hd64 and hd128
  // share 64 elements and are averaged).
  CHECK(elements.at("softmax_mask_select") == std::vector<double>{32, 40, 64});
  // Each span's beside figure at full tensor duty (the file records the duty it was timed at).
  auto full_ss = [](const nlohmann::json& span) {
    return beside_at_full_duty(span["alone_cycles"].get<double>(), span["beside_wgmma_cycles"].get<double>(),
                               span["tensor_duty_ss"].get<double>());
  };
  for (const auto& p : points) {
    if (p.block != "softmax_mask_select" || p.elements != 40) continue;
    const auto& spans = shapes["hd256 n_block 80 masked conditional rescale"]["spans"];
    CHECK(p.alone == Approx(spans["softmax_max"]["alone_cycles"].get<double>() -
                            spans["softmax_max_unmasked"]["alone_cycles"].get<double>()));
    CHECK(p.beside_ss == Approx(full_ss(spans["softmax_max"]) - full_ss(spans["softmax_max_unmasked"])));
  }
  // The plain blocks keep only the plain shapes' points (the conditional shapes time no rescale).
  CHECK(elements.at("softmax_max") == std::vector<double>{32, 40, 64, 88});
  CHECK(elements.at("rescale_o") == std::vector<double>{32, 64, 128});
  // The first-block and waiting-warp shapes time no block: rescale_o at 64 elements (head_dim 128)
  // is the plain hd128 shape's alone, not averaged with the first block's pack.
  for (const auto& p : points)
    if (p.block == "rescale_o" && p.elements == 64)
      CHECK(p.alone == Approx(shapes["hd128 n_block 128"]["spans"]["rescale_o"]["alone_cycles"].get<double>()));
  for (const auto& p : points) {
    if (p.block != "pack_p" || p.elements != 40) continue;
    const auto& span = shapes["hd256 n_block 80 conditional rescale"]["spans"]["pack_p"];
    CHECK(p.alone == span["alone_cycles"].get<double>());
    const double duty_rs = span["tensor_duty_rs"].get<double>();
    CHECK(duty_rs > 0.5);
    CHECK(duty_rs < 1);
    CHECK(p.duty_rs == duty_rs);
    CHECK(p.beside_rs == Approx(p.alone + (span["beside_wgmma_rs_cycles"].get<double>() - p.alone) / duty_rs));
    CHECK(p.beside_rs > span["beside_wgmma_rs_cycles"].get<double>());
    // Packing P alone is shorter than rescaling O and packing P of the same shape.
    CHECK(p.alone < shapes["hd256 n_block 80"]["spans"]["rescale_o"]["alone_cycles"].get<double>());
  }

  const fs::path tmp = fs::temp_directory_path() / "attnsim_calibrate_costs_conditional.json";
  fs::copy_file(test::root() + "/configs/costs/sm90_softmax.json", tmp, fs::copy_options::overwrite_existing);
  apply_block_timings(tmp.string(), points, note);
  const auto written = load_json_file(tmp.string());
  CHECK_THAT(written["blocks"]["pack_p"]["measured"]["source"].get<std::string>(),
             Catch::Contains("rescale_o span where the conditional rescale rescales nothing"));
  CHECK_THAT(written["blocks"]["softmax_max_conditional"]["measured"]["source"].get<std::string>(),
             Catch::Contains("softmax_max span with the conditional rescale's warp vote"));
  // The duty each point's beside figures were taken from is kept with the point.
  const auto& pack40 = written["blocks"]["pack_p"]["measured"]["points"][1];
  REQUIRE(pack40["elements"] == 40);
  CHECK(pack40["timed_at_tensor_duty_rs"].get<double>() ==
        Approx(shapes["hd256 n_block 80 conditional rescale"]["spans"]["pack_p"]["tensor_duty_rs"].get<double>())
            .margin(1e-3));
  fs::remove(tmp);

  // A masked shape whose masked row max is not the longer is refused, naming it.
  auto bad = load_json_file(results);
  bad["results"]["shapes"]["hd128 n_block 128 masked"]["spans"]["softmax_max"]["alone_cycles"] = 100.0;
  const fs::path bad_file = fs::temp_directory_path() / "attnsim_softmax_block_bad_mask.json";
  std::ofstream(bad_file) << bad.dump();
  CHECK_THROWS_WITH(derive_block_timings(bad_file.string(), note),
                    Catch::Contains("/results/shapes/hd128 n_block 128 masked/spans/softmax_max") &&
                        Catch::Contains("masked row max to take longer"));
  fs::remove(bad_file);
}
