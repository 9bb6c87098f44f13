// attnsim_sm100_resources: every compiled SM100 kernel instance (kernels/sm100) against what the
// simulator's resolved schedule says it uses, without a GPU. For each instance in the kernel
// generator's manifest and each schedule/variant/problem it was generated from:
// - the schedule still resolves to exactly this instance (Fa4Schedule::real_kernel, B200 config),
//   and the registry holds it;
// - dynamic SMEM: the kernel's carve-up (sm100::smem_layout, what the launcher requests) equals
//   the simulator's smem_bytes; ptxas's static SMEM is 0 (the simulator counts dynamic SMEM only);
// - TMEM: the columns tcgen05.alloc takes equal the simulator's tmem_columns;
// - registers: the setmaxnreg budgets in the instance's PTX (one inc for the softmax warpgroups,
//   one dec each for correction and the other warps) equal the simulator's per-role registers,
//   their CTA total equals its register figure, and ptxas's registers per thread at launch x 512
//   threads fit the SM's register file (the launch must be able to start before setmaxnreg);
// - static SMEM + dynamic SMEM fit the GPU's per-block limit;
// - cta_group: every tcgen05.mma, tcgen05.alloc and tcgen05.commit in the instance's PTX names
//   the .cta_group of the simulator's grid plan (2: a 2x1 cluster per tile), and a 2-CTA instance
//   multicasts its commits to both CTAs.
// ptxas numbers come from the build (-Xptxas -v, captured by kernels/sm100/capture_ptxas.sh);
// the PTX from nvcc --keep. Prints one table row per instance (plain and traced). Exits 0 when
// all match, 1 on a mismatch or a missing report, 77 when the build has no SM100 instances.
// Usage: attnsim_sm100_resources <source root> <kernelgen folder> <object folder of the kernels>
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "lower/schedule.hpp"
#include "model/hardware.hpp"
#include "sm100/structure.h"
#include "sm90/fa3_api.h"

using namespace attnsim;
namespace fs = std::filesystem;

namespace {

std::string read(const fs::path& p) {
  std::ifstream in(p);
  if (!in) throw std::runtime_error("cannot read " + p.string());
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// The Itanium-mangled template arguments of sm100::Traits for these knobs (kernel_traits.cuh
/// parameter order), as they appear in the kernel's symbol: "ILi128ELi2E...Lb0EE".
std::string mangled_traits(const sm100::KernelKnobs& k, bool trace) {
  std::string s = "6TraitsI";
  auto i = [&](int v) { s += v < 0 ? fmt::format("Lin{}E", -v) : fmt::format("Li{}E", v); };
  auto b = [&](bool v) { s += fmt::format("Lb{}E", v ? 1 : 0); };
  i(k.head_dim), i(k.q_stage), i(k.kv_stage), i(k.cta_group), i(k.split_columns), i(k.emu_freq), i(k.emu_res);
  i(k.emu_start_frg), i(k.rescale_threshold_milli), b(k.conditional_rescale), b(k.correction_warpgroup);
  i(k.reg_softmax), i(k.reg_correction), i(k.reg_other), b(k.exp_order_barrier), i(k.tmem_s0), i(k.tmem_s1);
  i(k.tmem_p0), i(k.tmem_p1), i(k.tmem_o0), i(k.tmem_o1), i(k.tmem_alloc), b(trace);
  return s + "E";
}

/// ptxas's report of one entry function.
struct PtxasEntry {
  bool found = false;
  int registers = 0, static_smem = 0, stack = 0, spill_stores = 0, spill_loads = 0;
};

/// The entry whose name contains `key` in a -Xptxas -v report.
PtxasEntry ptxas_entry(const std::string& report, const std::string& key) {
  PtxasEntry e;
  std::istringstream in(report);
  std::string line;
  bool mine = false;
  static const std::regex used(R"(Used (\d+) registers)"), smem(R"((\d+) bytes smem)"),
      frame(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  while (std::getline(in, line)) {
    if (line.find("Compiling entry function") != std::string::npos) mine = line.find(key) != std::string::npos;
    if (line.find("Function properties for") != std::string::npos) mine = line.find(key) != std::string::npos;
    if (!mine) continue;
    std::smatch m;
    if (std::regex_search(line, m, frame))
      e.stack = std::stoi(m[1]), e.spill_stores = std::stoi(m[2]), e.spill_loads = std::stoi(m[3]);
    if (std::regex_search(line, m, used)) {
      e.found = true;
      e.registers = std::stoi(m[1]);
      if (std::regex_search(line, m, smem)) e.static_smem = std::stoi(m[1]);
    }
  }
  return e;
}

/// The setmaxnreg instructions of the PTX entry whose name contains `key`: {"inc 192", "dec 80", ...}.
std::multiset<std::string> setmaxnreg(const std::string& ptx, const std::string& key) {
  std::multiset<std::string> out;
  size_t at = ptx.find(".entry ");
  while (at != std::string::npos) {
    const size_t next = ptx.find(".entry ", at + 1);
    const std::string body = ptx.substr(at, next == std::string::npos ? std::string::npos : next - at);
    if (body.substr(0, body.find('(')).find(key) != std::string::npos) {
      static const std::regex re(R"(setmaxnreg\.(inc|dec)\.sync\.aligned\.u32\s+(\d+))");
      for (std::sregex_iterator it(body.begin(), body.end(), re), end; it != end; ++it)
        out.insert((*it)[1].str() + " " + (*it)[2].str());
    }
    at = next;
  }
  return out;
}

/// The PTX body of the entry whose name contains `key`.
std::string entry_body(const std::string& ptx, const std::string& key) {
  size_t at = ptx.find(".entry ");
  while (at != std::string::npos) {
    const size_t next = ptx.find(".entry ", at + 1);
    const std::string body = ptx.substr(at, next == std::string::npos ? std::string::npos : next - at);
    if (body.substr(0, body.find('(')).find(key) != std::string::npos) return body;
    at = next;
  }
  return {};
}

/// The .cta_group values of the instructions starting with `op` ("tcgen05.mma") in `body`.
std::set<int> cta_groups(const std::string& body, const std::string& op) {
  std::set<int> out;
  const std::regex re(std::regex_replace(op, std::regex(R"(\.)"), R"(\.)") + R"([\w.:]*?\.cta_group::(\d))");
  for (std::sregex_iterator it(body.begin(), body.end(), re), end; it != end; ++it) out.insert(std::stoi((*it)[1]));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: attnsim_sm100_resources <source root> <kernelgen folder> <object folder>\n";
    return 2;
  }
  try {
    const fs::path root = argv[1], gen = argv[2], objects = argv[3];
    const nlohmann::json manifest = nlohmann::json::parse(read(gen / "manifest.json"));
    const Hardware hw = load_hardware((root / "configs/hw/b200.json").string());
    int instances = 0, failures = 0;
    std::cout << fmt::format("{:<72} {:>6} {:>5} {:>6} {:>11} {:>9} {:>8} {:>11} {:>14} {:>9}\n",
                             "SM100 instance (traced: +t)", "regs", "spill", "static", "dynamic", "sim SMEM", "TMEM",
                             "setmaxnreg", "PTX regs/CTA", "cta_group");
    for (const auto& entry : manifest.at("kernels")) {
      if (entry.value("arch", "") != "sm_100a") continue;
      const std::string file = entry.at("file");
      fs::path report_path;
      for (const auto& f : fs::recursive_directory_iterator(objects))
        if (f.path().filename() == file + ".o.ptxas.txt") report_path = f.path();
      const fs::path ptx_path = gen / "keep" / fs::path(file).stem() / (fs::path(file).stem().string() + ".ptx");
      if (report_path.empty() || !fs::exists(ptx_path)) {
        std::cout << fmt::format("FAIL {}: no ptxas report ({}.o.ptxas.txt under {}) or PTX ({})\n", file, file,
                                 objects.string(), ptx_path.string());
        ++failures;
        continue;
      }
      const std::string report = read(report_path), ptx = read(ptx_path);
      for (const auto& prob : entry.at("problems")) {
        const auto s = load_schedule((root / prob.at("schedule").get<std::string>()).string(), {},
                                     prob.at("variant").get<std::string>());
        Problem p;
        p.head_dim = p.head_dim_v = prob.at("head_dim");
        p.causal = prob.value("causal", false);
        const KernelChoice c = s->real_kernel(hw, p);
        const std::string variant = prob.at("variant").get<std::string>();
        const std::string where = fmt::format("{} {} hd{} {}", prob.at("schedule").get<std::string>(),
                                              variant.empty() ? "(base)" : variant, p.head_dim,
                                              p.causal ? "causal" : "non-causal");
        if (!c.supported || !std::holds_alternative<sm100::KernelKnobs>(c.knobs) ||
            describe(c.knobs) != entry.at("knobs").get<std::string>() || !sm90::find_kernel(c.knobs)) {
          std::cout << fmt::format("FAIL {}: resolves to [{}], not to the compiled [{}]{}\n", where,
                                   c.supported ? describe(c.knobs) : c.why_not, entry.at("knobs").get<std::string>(),
                                   sm90::find_kernel(c.knobs) ? "" : " (not in the registry)");
          ++failures;
          continue;
        }
        const auto& k = std::get<sm100::KernelKnobs>(c.knobs);
        const std::map<std::string, double> sim = s->resources(hw, p);
        const int dynamic = sm100::smem_layout(k.head_dim, k.q_stage, k.kv_stage, k.cta_group).bytes;
        const int sim_cta_group = s->plan_grid(hw, p, 1 << 20).cta_group;
        const std::multiset<std::string> expected_nreg = {
            fmt::format("{} {}", k.reg_softmax > 128 ? "inc" : "dec", k.reg_softmax),
            fmt::format("{} {}", k.reg_correction > 128 ? "inc" : "dec", k.reg_correction),
            fmt::format("{} {}", k.reg_other > 128 ? "inc" : "dec", k.reg_other)};
        for (bool traced : {false, true}) {
          ++instances;
          const std::string key = mangled_traits(k, traced);
          const PtxasEntry e = ptxas_entry(report, key);
          const std::multiset<std::string> nreg = setmaxnreg(ptx, key);
          // The budgets the PTX sets, largest first: the largest is the softmax warpgroups' (two
          // of them), the other two are the correction warpgroup's and the rest's.
          std::vector<int> budgets;
          for (const auto& n : nreg) budgets.push_back(std::stoi(n.substr(4)));
          std::sort(budgets.rbegin(), budgets.rend());
          budgets.resize(3, 0);
          const long long cta_regs = 128LL * (2 * budgets[0] + budgets[1] + budgets[2]);
          std::vector<std::string> bad;
          if (!e.found) bad.push_back("no ptxas entry " + key);
          if (dynamic != sim.at("smem_bytes"))
            bad.push_back(fmt::format("dynamic SMEM {} != simulator {}", dynamic, sim.at("smem_bytes")));
          if (e.static_smem != 0) bad.push_back(fmt::format("{} B of static SMEM the simulator does not count", e.static_smem));
          if (dynamic + e.static_smem > hw.smem_bytes_per_block)
            bad.push_back(fmt::format("SMEM {} > {} per block", dynamic + e.static_smem, hw.smem_bytes_per_block));
          if (k.tmem_alloc != sim.at("tmem_columns"))
            bad.push_back(fmt::format("TMEM {} columns != simulator {}", k.tmem_alloc, sim.at("tmem_columns")));
          if (nreg != expected_nreg)
            bad.push_back(fmt::format("setmaxnreg in the PTX [{}] != schedule's [{}]", fmt::join(nreg, ", "),
                                      fmt::join(expected_nreg, ", ")));
          if (cta_regs != sim.at("registers"))
            bad.push_back(
                fmt::format("setmaxnreg budgets x 128 threads = {} != simulator {}", cta_regs, sim.at("registers")));
          const std::string body = entry_body(ptx, key);
          for (const char* op : {"tcgen05.mma", "tcgen05.alloc", "tcgen05.commit"})
            if (cta_groups(body, op) != std::set<int>{sim_cta_group})
              bad.push_back(fmt::format("{} in the PTX with .cta_group::{{{}}}, simulator's grid {}", op,
                                        fmt::join(cta_groups(body, op), ","), sim_cta_group));
          if ((sim_cta_group == 2) != (body.find("multicast::cluster") != std::string::npos))
            bad.push_back(fmt::format("cta_group {} {} multicast tcgen05.commit", sim_cta_group,
                                      sim_cta_group == 2 ? "without a" : "with a"));
          if (static_cast<long long>(e.registers) * sm100::kThreads > hw.registers_per_sm)
            bad.push_back(fmt::format("{} registers x {} threads at launch > {}", e.registers, sm100::kThreads,
                                      hw.registers_per_sm));
          std::cout << fmt::format("{:<72} {:>6} {:>5} {:>6} {:>11} {:>9} {:>8} {:>11} {:>14} {:>9}\n",
                                   describe(c.knobs) + (traced ? " +t" : ""), e.registers, e.spill_stores,
                                   e.static_smem, dynamic, sim.at("smem_bytes"), k.tmem_alloc,
                                   fmt::format("{}/{}/{}", budgets[0], budgets[1], budgets[2]), cta_regs,
                                   sim_cta_group);
          std::cout << fmt::format("     from {}{}{}\n", where,
                                   bad.empty() ? "" : "\n     FAIL: ", fmt::join(bad, "; "));
          failures += !bad.empty();
        }
      }
    }
    if (instances == 0) {
      std::cout << "SKIPPED: this build has no SM100 kernel instances (no fa4_sm100 schedule resolves to one)\n";
      return 77;
    }
    std::cout << fmt::format("{} rows (instance x plain/traced x schedule problem) checked, {} mismatches\n", instances,
                             failures);
    return failures ? 1 : 0;
  } catch (const std::exception& e) {
    std::cerr << "attnsim_sm100_resources: " << e.what() << "\n";
    return 1;
  }
}
