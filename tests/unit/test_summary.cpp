// The summary's unit utilisations: fractions in [0, 1] by construction, for schedules with and
// without a problem, and the HBM roofline that makes the hbm figure one.
#include <catch2/catch.hpp>
#include <string>

#include "report/summary.hpp"
#include "test_support.hpp"

using namespace attnsim;
using namespace attnsim::test;

namespace {
Hardware hw_named(const std::string& name) { return load_hardware(root() + "/configs/hw/" + name + ".json"); }

/// Summary of `schedule` on `hw` for the default problem.
Summary summary_of(const std::string& schedule, const Hardware& hw, const Problem& problem = default_problem()) {
  auto s = load_schedule(schedule);
  return summarize(predict(*s, hw, problem), *s, hw, problem);
}

void check_fractions(const Summary& sum) {
  for (const auto& u : sum.units) {
    INFO(sum.schedule << " on " << sum.hardware << ": " << u.name << " " << u.utilisation);
    CHECK(u.utilisation >= 0);
    CHECK(u.utilisation <= 1 + 1e-9);
  }
}
}  // namespace

TEST_CASE("an explicit schedule's hbm figure charges its own CTA's traffic - not the problem's bytes", "[summary]") {
  // These used to report hbm 28x-100x (the default problem's bytes over one CTA's time).
  for (const char* name : {"mma_issue.json", "tma_mma.json", "wgmma_wait.json", "mma_beside.json", "pc_2stage.json"})
    for (const char* gpu : {"h100_sxm", "b200"}) check_fractions(summary_of(micro(name), hw_named(gpu)));
  const Hardware h100 = hw_named("h100_sxm");
  auto s = load_schedule(micro("tma_mma.json"));
  const Prediction p = predict(*s, h100, default_problem());
  CHECK(p.hbm_bytes == p.critical.units.hbm_bytes);
  CHECK(p.hbm_bytes <= p.critical.units.tma_bytes);
  CHECK_FALSE(p.hbm_bound);
}

TEST_CASE("every bundled schedule's utilisations are fractions", "[summary]") {
  check_fractions(summary_of(test::fa4(), b200()));
  check_fractions(summary_of(root() + "/schedules/fa3_sm90.json", hw_named("h100_sxm")));
  check_fractions(summary_of(root() + "/schedules/fa2_sm80.json", hw_named("h200")));
  Problem hd64 = default_problem();
  hd64.head_dim = hd64.head_dim_v = 64;
  check_fractions(summary_of(root() + "/schedules/blackflash.json", hw_named("h100_sxm"), hd64));
}

TEST_CASE("a kernel never finishes before its compulsory bytes cross the HBM interface", "[summary]") {
  Hardware slow = hw_named("h100_sxm");
  slow.hbm_bytes_per_s = 1e9;  // 1 GB/s: the default problem's 537 MB take 0.54 s
  const Problem problem = default_problem();
  auto s = load_schedule(root() + "/schedules/fa3_sm90.json");
  const Prediction p = predict(*s, slow, problem);
  CHECK(p.hbm_bound);
  CHECK(p.hbm_bytes == compulsory_hbm_bytes(problem));
  CHECK(p.time_us == Approx(p.hbm_bytes / 1e9 * 1e6 + slow.launch_ns * 1e-3).epsilon(1e-9));
  const Summary sum = summarize(p, *s, slow, problem);
  check_fractions(sum);
  CHECK(sum.bottleneck == "hbm");
  CHECK(sum.bottleneck_utilisation > 0.99);
  // At the real bandwidth the same prediction is not HBM-bound.
  CHECK_FALSE(predict(*s, hw_named("h100_sxm"), problem).hbm_bound);
}
