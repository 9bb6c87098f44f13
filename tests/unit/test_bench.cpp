// `attnsim bench` without a GPU: the bundled problem grid, cuDNN's results read back, and the
// table, CSV and summary on hand-made rows (every number below is worked out by hand).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <tuple>
#include <unistd.h>

#include "measure/bench.hpp"
#include "measure/cudnn.hpp"
#include "model/json_reader.hpp"
#include "sm90/fa3_api.h"
#include "test_support.hpp"

using namespace attnsim;

namespace {

using test::shape;

BenchRow row(const std::string& label, const Problem& p, double ours_us, double cudnn_us) {
  BenchRow r;
  r.label = label;
  r.problem = p;
  r.ours_us = ours_us;
  r.cudnn_us = cudnn_us;
  return r;
}

/// Five rows: ratios 2, 0.5 and 1 on the three timed on both sides (geomean exactly 1, min 0.5 on
/// "gqa causal"), one without our kernel, one cuDNN refused.
/// FLOP (2 b h sq sk (d + dv), halved when causal): b1 h1 s1024 d128 = 536870912;
/// b2 h16 s512 d64 causal = 1073741824; b1 h1 s1024 d256 = 1073741824.
std::vector<BenchRow> hand_rows() {
  std::vector<BenchRow> rows;
  rows.push_back(row("a", shape(1, 1, 1, 1024, 128, false), 1.0, 2.0));  // 536.9 / 268.4 TFLOPS, 2x
  BenchRow g = row("gqa causal", shape(2, 16, 2, 512, 64, true), 4.0, 2.0);  // 268.4 / 536.9 TFLOPS, 0.5x
  g.note = "cuDNN ran with K/V of 16 heads";
  rows.push_back(g);
  BenchRow n = row("no kernel", shape(1, 1, 1, 1024, 256, false), 0, 10.0);  // cuDNN 107.4 TFLOPS
  n.ours_error = "no real kernel";
  rows.push_back(n);
  BenchRow r = row("refused", shape(1, 1, 1, 1024, 128, false), 5.0, 0);  // ours 107.4 TFLOPS
  r.cudnn_error = "No available kernel, aborting";
  rows.push_back(r);
  rows.push_back(row("equal", shape(1, 1, 1, 1024, 128, false), 3.0, 3.0));  // 179.0 TFLOPS both, 1x
  return rows;
}

std::string temp_file(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / (name + "_" + std::to_string(::getpid()) + ".json");
  std::ofstream(path) << text;
  return path.string();
}

}  // namespace

TEST_CASE("the bundled bench grid: 3 head_dims x causal x 6 seqlens plus GQA 8:1 at 32k tokens", "[bench]") {
  const auto set = load_problem_set(test::root() + "/configs/bench/sm90_vs_cudnn.json");
  REQUIRE(set.size() == 48);  // 3 x 2 x 6 + 2 x 6
  using Key = std::tuple<int, int, int, bool, int>;  // heads, kv_heads, head_dim, causal, seqlen
  std::set<Key> want;
  for (int s : {512, 1024, 2048, 4096, 8192, 16384})
    for (bool causal : {false, true}) {
      for (int hd : {64, 128, 256}) want.insert({16, 16, hd, causal, s});
      want.insert({16, 2, 128, causal, s});  // GQA 8:1
    }
  REQUIRE(want.size() == 48);
  std::set<Key> got;
  std::set<std::string> labels;
  for (const auto& [label, p] : set) {
    INFO(label);
    CHECK(p.batch * p.seqlen_q == 32768);
    CHECK(p.seqlen_k == p.seqlen_q);
    CHECK(p.head_dim_v == p.head_dim);
    CHECK(p.dtype == "bf16");
    got.insert({p.heads, p.kv_heads, p.head_dim, p.causal, p.seqlen_q});
    labels.insert(label);
  }
  CHECK(got == want);
  CHECK(labels.size() == 48);  // every label names one problem
  CHECK(set.front().label == "hd64 s512 b64");
  CHECK(set.back().label == "gqa8 hd128 s16k b2 causal");
}

TEST_CASE("a problem set without problems or with an unlabelled problem is refused with its path", "[bench]") {
  const std::string none = temp_file("attnsim_bench_none", R"({"problems": []})");
  CHECK_THROWS_WITH(load_problem_set(none), Catch::Contains("/problems: expected a non-empty array of problems"));
  const std::string unlabelled =
      temp_file("attnsim_bench_unlabelled", R"({"problems": [{"batch": 1, "heads": 1, "seqlen_q": 128, "head_dim": 64}]})");
  CHECK_THROWS_WITH(load_problem_set(unlabelled), Catch::Contains("/problems/0/label: expected a string label"));
  const std::string bad =
      temp_file("attnsim_bench_bad", R"({"problems": [{"label": "x", "batch": 1, "heads": 16, "kv_heads": 3, "seqlen_q": 128, "head_dim": 64}]})");
  CHECK_THROWS_WITH(load_problem_set(bad), Catch::Contains("/kv_heads: expected a divisor of heads"));
  std::filesystem::remove(none);
  std::filesystem::remove(unlabelled);
  std::filesystem::remove(bad);
}

TEST_CASE("bench summary: geometric mean and minimum of ours/cuDNN over rows timed on both sides", "[bench]") {
  const auto rows = hand_rows();
  CHECK(rows[0].ratio() == 2.0);
  CHECK(rows[1].ratio() == 0.5);
  CHECK_FALSE(rows[2].compared());
  CHECK_FALSE(rows[3].compared());
  CHECK(rows[0].ours_tflops() == Approx(536.870912));
  CHECK(rows[1].cudnn_tflops() == Approx(536.870912));
  const BenchSummary s = bench_summary(rows);
  CHECK(s.rows == 5);
  CHECK(s.compared == 3);
  CHECK(s.geomean == Approx(1.0).margin(1e-12));  // (2 x 0.5 x 1)^(1/3)
  CHECK(s.min == 0.5);
  CHECK(s.min_problem == "gqa causal");
  CHECK(s.compared_causal == 1);
  CHECK(s.geomean_noncausal == Approx(std::sqrt(2.0)).epsilon(1e-12));  // (2 x 1)^(1/2)
  CHECK(s.geomean_causal == Approx(0.5).epsilon(1e-12));
  CHECK(s.at_least_095 == 2);  // 2 and 1
  CHECK(s.at_least_1 == 2);
  // 1.25 and 0.8 and 2: geomean 2^(1/3).
  std::vector<BenchRow> three = {row("x", shape(1, 1, 1, 128, 64, false), 4, 5), row("y", shape(1, 1, 1, 128, 64, false), 5, 4),
                                 row("z", shape(1, 1, 1, 128, 64, false), 1, 2)};
  const BenchSummary t = bench_summary(three);
  CHECK(t.geomean == Approx(std::cbrt(2.0)).epsilon(1e-12));
  CHECK(t.min == 0.8);
  CHECK(t.min_problem == "y");
  CHECK(t.geomean_causal == 0);  // no causal row
  CHECK(t.at_least_095 == 2);    // 1.25 and 2, not 0.8
  CHECK(t.at_least_1 == 2);
  const BenchSummary empty = bench_summary({hand_rows()[2], hand_rows()[3]});
  CHECK(empty.compared == 0);
  CHECK(empty.geomean == 0);
  CHECK(empty.min_problem.empty());
}

TEST_CASE("bench table: every row with its reason and the geomean and minimum below", "[bench]") {
  const auto rows = hand_rows();
  const std::string t = format_bench_table(rows, bench_summary(rows));
  const std::string want =
      "problem     batch  heads/kv       seqlen  head_dim  causal    ours us  ours TFLOPS   cuDNN us  cuDNN TFLOPS  "
      "ours/cuDNN  note\n"
      "a               1       1/1         1024       128      no        1.0        536.9        2.0         268.4      "
      "2.000x\n"
      "gqa causal      2      16/2          512        64     yes        4.0        268.4        2.0         536.9      "
      "0.500x  cuDNN ran with K/V of 16 heads\n"
      "no kernel       1       1/1         1024       256      no          -            -       10.0         107.4      "
      "     -  ours: no real kernel\n"
      "refused         1       1/1         1024       128      no        5.0        107.4          -             -      "
      "     -  cuDNN: No available kernel, aborting\n"
      "equal           1       1/1         1024       128      no        3.0        179.0        3.0         179.0      "
      "1.000x\n"
      "geomean ours/cuDNN: 1.000x over 3 of 5 problems timed on both sides (cuDNN time / ours: above 1, ours is "
      "faster)\n"
      "min ours/cuDNN: 0.500x (gqa causal)\n"
      "non-causal 1.414x over 2, causal 0.500x over 1; at least 0.95x: 2 of 3, at least 1.0x: 2 of 3\n";
  CHECK(t == want);
  const auto none = std::vector<BenchRow>{rows[2]};
  CHECK_THAT(format_bench_table(none, bench_summary(none)),
             Catch::EndsWith("\nours/cuDNN: no problem timed on both sides (of 1)\n"));
}

TEST_CASE("bench CSV: the table's columns plus device and date and method with quoted fields", "[bench]") {
  const auto rows = hand_rows();
  const std::string csv = bench_csv(rows, {.device = "NVIDIA H100 80GB HBM3", .date = "2026-12-01", .method = "median, back to back"});
  const std::string m = "NVIDIA H100 80GB HBM3,2026-12-01,\"median, back to back\"\n";
  const std::string want =
      "problem,batch,heads,kv_heads,seqlen,head_dim,causal,ours_us,ours_tflops,cudnn_us,cudnn_tflops,ours_over_cudnn,"
      "note,device,date,method\n"
      "a,1,1,1,1024,128,false,1.000,536.87,2.000,268.44,2.0000,," + m +
      "gqa causal,2,16,2,512,64,true,4.000,268.44,2.000,536.87,0.5000,cuDNN ran with K/V of 16 heads," + m +
      "no kernel,1,1,1,1024,256,false,,,10.000,107.37,,ours: no real kernel," + m +
      "refused,1,1,1,1024,128,false,5.000,107.37,,,,\"cuDNN: No available kernel, aborting\"," + m +
      "equal,1,1,1,1024,128,false,3.000,178.96,3.000,178.96,1.0000,," + m;
  CHECK(csv == want);
}

TEST_CASE("cuDNN results: times and errors and the KV heads cuDNN ran GQA with reach the rows", "[bench]") {
  const nlohmann::json j = nlohmann::json::parse(R"({"gpu": "NVIDIA H200", "torch": "2.6.0", "results": [
      {"heads": 16, "kv_heads": 16, "time_us": 100.5, "kv_heads_timed": 16},
      {"heads": 16, "kv_heads": 2, "time_us": 80.0, "kv_heads_timed": 16},
      {"heads": 16, "kv_heads": 2, "time_us": 70.0, "kv_heads_timed": 2},
      {"heads": 16, "error": "No available kernel"},
      {"heads": 8, "time_us": 5.0}]})");
  const CudnnTimes t = read_cudnn_results(j, 6);  // one row short: the sixth stays untimed
  CHECK(t.gpu == "NVIDIA H200");
  CHECK(t.torch_version == "2.6.0");
  CHECK(t.us == std::vector<double>{100.5, 80.0, 70.0, 0, 5.0, 0});
  CHECK(t.errors == std::vector<std::string>{"", "", "", "No available kernel", "", ""});
  CHECK(t.kv_heads_timed == std::vector<int>{16, 16, 2, 0, 8, 0});  // an older script's row: heads

  std::vector<BenchRow> rows;
  for (int kv : {16, 2, 2, 16, 8, 16}) rows.push_back(row("p", shape(1, kv == 8 ? 8 : 16, kv, 1024, 128, false), 1, 0));
  apply_cudnn(rows, t);
  CHECK(rows[0].cudnn_us == 100.5);
  CHECK(rows[0].note.empty());
  CHECK(rows[1].note == "cuDNN ran with K/V of 16 heads (SDPA's cuDNN backend refused 2 KV heads)");
  CHECK(rows[2].note.empty());  // GQA run as GQA
  CHECK(rows[3].cudnn_error == "No available kernel");
  CHECK(rows[3].remark() == "cuDNN: No available kernel");
  CHECK(rows[5].cudnn_error == "not timed");

  CudnnTimes failed;
  failed.us.assign(2, 0);
  failed.note = "cuDNN not timed: python3 failed";
  std::vector<BenchRow> two = {rows[0], rows[1]};
  apply_cudnn(two, failed);
  CHECK(two[0].cudnn_error == "not timed (see below)");
  CHECK(two[0].cudnn_us == 0);
  CHECK_THROWS_AS(apply_cudnn(rows, failed), std::invalid_argument);  // 2 results for 6 rows
}

TEST_CASE("time_cudnn without a usable PyTorch GPU says why and times nothing", "[bench]") {
  // Without a GPU the script fails (no torch, or no device) and time_cudnn never throws; the shapes
  // file it hands the script is written either way.
  const auto dir = std::filesystem::temp_directory_path() / ("attnsim_bench_cudnn_" + std::to_string(::getpid()));
  const CudnnTimes t =
      time_cudnn({shape(1, 16, 2, 512, 128, true)}, dir.string(),
                 CudnnTiming{.warmup = 1, .reps = 3, .launches = 2, .precondition_ms = 250, .min_timed_ms = 40});
  if (t.note.empty()) {  // a machine with PyTorch and a GPU: cuDNN was timed
    CHECK(t.us[0] > 0);
    CHECK((t.kv_heads_timed[0] == 2 || t.kv_heads_timed[0] == 16));
  } else {
    CHECK_THAT(t.note, Catch::StartsWith("cuDNN not timed: `python3 '") && Catch::Contains("' 1 3 2 250 40` failed") &&
                           Catch::Contains("cudnn_log.txt"));
    CHECK(t.us == std::vector<double>{0});
  }
  const auto shapes = load_json_file((dir / "cudnn_shapes.json").string());
  CHECK(shapes == nlohmann::json::parse(
                      R"([{"batch": 1, "heads": 16, "kv_heads": 2, "seqlen_q": 512, "seqlen_k": 512, "head_dim": 128, "causal": true}])"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("timed_reps adds repetitions until the timed window reaches --min-timed-ms", "[bench]") {
  CHECK(sm90::timed_reps(20, 10, 0.1, 0) == 20);          // no minimum
  CHECK(sm90::timed_reps(20, 10, 0.1, 10) == 20);         // 20 x 10 x 0.1 ms = 20 ms already
  CHECK(sm90::timed_reps(20, 10, 0.1, 2000) == 2000);     // 2000 ms / (10 x 0.1 ms)
  CHECK(sm90::timed_reps(20, 10, 0.3, 2000) == 667);      // 666.7, rounded up
  CHECK(sm90::timed_reps(20, 10, 1e-9, 2000) == 100000);  // capped
  CHECK(sm90::timed_reps(20, 10, 0, 2000) == 20);         // no time measured: as asked
  CHECK_THROWS_AS(sm90::timed_reps(0, 10, 0.1, 0), std::invalid_argument);
  CHECK_THROWS_AS(sm90::timed_reps(20, 0, 0.1, 0), std::invalid_argument);
}
