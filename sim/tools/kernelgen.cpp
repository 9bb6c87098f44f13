// attnsim_kernelgen: the build step that turns schedules into compiled kernels. For every
// schedule file given, its base and every variant it declares, and head_dim 64, 128 and 256 (and
// for every admitted candidate of each --sweep file, on that sweep's problems), it resolves the knobs as the simulator does (Schedule::real_kernel) and writes one explicit
// instantiation per distinct knob set, spread over --shards .cu files (compiled in parallel; the
// blackflash kernels in instances_blackflash.cu, which the build also compiles for sm_120a),
// plus the registry (compiled_kernels()), a manifest of what was and was not compiled, and
// sm90_limits.h (the hardware config's SMEM and register limits, for the kernels' static_asserts).
// Files are rewritten only when their content changes, so unchanged shards are not rebuilt.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "explore/sweep.hpp"
#include "lower/schedule.hpp"
#include "model/json_reader.hpp"

namespace {

using namespace attnsim;

void write_if_changed(const std::filesystem::path& path, const std::string& text) {
  std::ifstream in(path);
  std::stringstream old;
  old << in.rdbuf();
  if (in && old.str() == text) return;
  std::ofstream out(path);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

std::string traits(const sm90::KernelKnobs& k, bool trace) {
  return fmt::format("Traits<{}, {}, {}, {}, {}, {}, {}, {}, {}, {}>", k.head_dim, k.m_block, k.n_block, k.kv_stage,
                     k.pingpong, k.overlap, k.reg_consumer, k.reg_producer, trace, k.dynamic);
}

/// One registry entry: the knobs as C++, the plain and the traced launcher (nullptr: none).
std::string registry_entry(const AnyKernelKnobs& any, const std::string& origins) {
  if (const auto* k = std::get_if<sm90::KernelKnobs>(&any))
    return fmt::format("  out.push_back({{AnyKernelKnobs{{KernelKnobs{{{}, {}, {}, {}, {}, {}, {}, {}, {}}}}}, &launch<{}>,\n"
                       "                 &launch<{}>, \"{}\"}});\n",
                       k->head_dim, k->m_block, k->n_block, k->kv_stage, k->pingpong, k->overlap, k->reg_consumer,
                       k->reg_producer, k->dynamic, traits(*k, false), traits(*k, true), origins);
  if (const auto* b = std::get_if<blackflash::KernelKnobs>(&any)) {
    auto t = [&](bool trace) {
      return fmt::format("blackflash::BfTraits<{}, {}, {}, {}>", b->kv_stage, b->p_over_k, b->registers, trace);
    };
    return fmt::format("  out.push_back({{AnyKernelKnobs{{blackflash::KernelKnobs{{{}, {}, {}, {}}}}},\n"
                       "                 &blackflash::launch<{}>,\n"
                       "                 &blackflash::launch<{}>, \"{}\"}});\n",
                       b->head_dim, b->kv_stage, b->p_over_k, b->registers, t(false), t(true), origins);
  }
  const auto& f = std::get<fa2::KernelKnobs>(any);
  return fmt::format("  out.push_back({{AnyKernelKnobs{{fa2::KernelKnobs{{{}, {}, {}}}}},\n"
                     "                 &fa2::launch<fa2::Fa2Traits<{}, {}, {}, false>>,\n"
                     "                 &fa2::launch<fa2::Fa2Traits<{}, {}, {}, true>>, \"{}\"}});\n",
                     f.head_dim, f.br, f.bc, f.head_dim, f.br, f.bc, f.head_dim, f.br, f.bc, origins);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"attnsim_kernelgen: kernel instances (kernels/sm90, fa2, blackflash) from schedule files"};
  std::vector<std::string> files;
  std::string out_dir, hw_file, root;
  int shards = 8;
  app.add_option("schedules", files, "schedule JSON files")->required();
  app.add_option("--out", out_dir, "output folder")->required();
  app.add_option("--hw", hw_file, "hardware config the knobs are resolved with (an SM90 one)")->required();
  app.add_option("--root", root, "source root (paths in the manifest are relative to it)");
  app.add_option("--shards", shards, "number of instance files")->check(CLI::Range(1, 64));
  std::vector<std::string> sweeps;
  app.add_option("--sweep", sweeps, "sweep files (configs/sweeps) whose candidates to compile too");
  CLI11_PARSE(app, argc, argv);
  try {
    const Hardware hw = load_hardware(hw_file);
    std::vector<AnyKernelKnobs> kernels;
    std::map<size_t, std::vector<std::string>> origins;  // kernel index -> "file variant hdN"
    nlohmann::json manifest = {{"generator", "attnsim_kernelgen"}, {"hw", hw.name}, {"kernels", nlohmann::json::array()},
                               {"not_compiled", nlohmann::json::array()}};
    // One schedule resolved for one problem: its kernel is compiled (once per distinct knob set),
    // or the manifest says why not.
    auto consider = [&](const Schedule& schedule, const Problem& p, const std::string& where,
                        nlohmann::json not_compiled) {
      KernelChoice c = schedule.real_kernel(hw, p);
      if (c.supported) {
        try {
          schedule.check(hw, p);
        } catch (const InputError& e) {
          c.supported = false;
          c.why_not = e.what();
        }
      }
      if (!c.supported) {
        not_compiled["reason"] = c.why_not;
        manifest["not_compiled"].push_back(not_compiled);
        return;
      }
      size_t i = 0;
      while (i < kernels.size() && !(kernels[i] == c.knobs)) ++i;
      if (i == kernels.size()) kernels.push_back(c.knobs);
      origins[i].push_back(where);
    };
    auto relative = [&](const std::string& file) {
      return root.empty() ? file : std::filesystem::relative(file, root).string();
    };
    for (const auto& file : files) {
      const std::string rel = relative(file);
      std::vector<std::string> variants = {""};
      for (const auto& v : schedule_variants(file)) variants.push_back(v.name);
      for (const auto& variant : variants) {
        const auto schedule = load_schedule(file, {}, variant);
        if (schedule->family() != "fa3_sm90" && schedule->family() != "fa2_sm80" && schedule->family() != "blackflash")
          break;  // no real kernel
        for (int hd : {64, 128, 256}) {
          Problem p;
          p.head_dim = p.head_dim_v = hd;
          consider(*schedule, p, fmt::format("{} {} hd{}", rel, variant.empty() ? "(base)" : variant, hd),
                   {{"schedule", rel}, {"variant", variant}, {"head_dim", hd}});
        }
      }
    }
    // Sweep files: every admitted candidate, for each of the sweep's problems (for `validate --sweep`).
    for (const auto& file : sweeps) {
      SweepEvaluator ev(load_sweep(file));
      const SweepSpec& sp = ev.spec();
      for (size_t i = 0; i < ev.grid_size(); ++i) {
        if (!ev.admitted(i)) continue;
        std::unique_ptr<Schedule> s;
        try {
          s = parse_schedule(ev.document(i), sp.schedule_file);
        } catch (const InputError&) {
          continue;  // infeasible on its face: validate skips it too
        }
        for (size_t q = 0; q < sp.problems.size(); ++q)
          consider(*s, sp.problems[q], fmt::format("{} candidate {} {}", relative(file), i, sp.problem_labels[q]),
                   {{"sweep", relative(file)}, {"candidate", i}, {"problem", sp.problem_labels[q]}});
      }
    }
    std::filesystem::create_directories(out_dir);
    const std::string header = fmt::format("// Generated by attnsim_kernelgen from {}; do not edit.\n",
                                           fmt::join(files.begin(), files.end(), ", "));
    // sm90 and fa2 kernels round-robin over the shards; blackflash's in a file of their own, which
    // the build compiles for sm_120a too (the seed's GPU; nothing in it is Hopper-only).
    std::vector<size_t> shared, own;
    for (size_t i = 0; i < kernels.size(); ++i)
      (std::holds_alternative<blackflash::KernelKnobs>(kernels[i]) ? own : shared).push_back(i);
    auto add_function = [&](const std::string& name, const std::vector<size_t>& which) {
      std::string t = fmt::format("void {}(std::vector<CompiledKernel>& out) {{\n", name);
      for (size_t i : which) {
        t += registry_entry(kernels[i], fmt::format("{}", fmt::join(origins[i], "; ")));
        manifest["kernels"].push_back({{"knobs", describe(kernels[i])}, {"schedules", origins[i]}});
      }
      return t + "}\n\n}  // namespace attnsim::sm90\n";
    };
    for (int s = 0; s < shards; ++s) {
      std::vector<size_t> mine;
      for (size_t k = s; k < shared.size(); k += shards) mine.push_back(shared[k]);
      const std::string t = header + "#include \"fa2/launch.cuh\"\n#include \"launch.cuh\"\n\n" +
                            "namespace attnsim::sm90 {\n\n" + add_function(fmt::format("add_kernels_{}", s), mine);
      write_if_changed(std::filesystem::path(out_dir) / fmt::format("instances_{}.cu", s), t);
    }
    write_if_changed(std::filesystem::path(out_dir) / "instances_blackflash.cu",
                     header + "#include \"blackflash/launch.cuh\"\n#include \"fa3_api.h\"\n\n" +
                         "namespace attnsim::sm90 {\n\n" + add_function("add_kernels_blackflash", own));
    // The limits the kernels' static_asserts check (kernel_traits.cuh): from the hardware config,
    // so that the kernel and the simulator's check() hold one value each.
    write_if_changed(std::filesystem::path(out_dir) / "sm90_limits.h",
                     fmt::format("// Generated by attnsim_kernelgen from {} ({}); do not edit.\n#pragma once\n\n"
                                 "namespace attnsim::sm90 {{\n\n"
                                 "/// Dynamic SMEM one CTA may use, bytes.\n"
                                 "inline constexpr int kSmemBytesPerBlock = {};\n"
                                 "/// 32-bit registers per SM.\n"
                                 "inline constexpr int kRegistersPerSm = {};\n\n"
                                 "}}  // namespace attnsim::sm90\n",
                                 root.empty() ? hw_file : std::filesystem::relative(hw_file, root).string(), hw.name,
                                 hw.smem_bytes_per_block, hw.registers_per_sm));
    std::string reg = header + "#include \"fa3_api.h\"\n\nnamespace attnsim::sm90 {\n\n";
    for (int s = 0; s < shards; ++s) reg += fmt::format("void add_kernels_{}(std::vector<CompiledKernel>& out);\n", s);
    reg += "void add_kernels_blackflash(std::vector<CompiledKernel>& out);\n";
    reg += "\nconst std::vector<CompiledKernel>& compiled_kernels() {\n  static const std::vector<CompiledKernel> all = [] {\n"
           "    std::vector<CompiledKernel> v;\n";
    for (int s = 0; s < shards; ++s) reg += fmt::format("    add_kernels_{}(v);\n", s);
    reg += "    add_kernels_blackflash(v);\n";
    reg += "    return v;\n  }();\n  return all;\n}\n\n}  // namespace attnsim::sm90\n";
    write_if_changed(std::filesystem::path(out_dir) / "registry.cu", reg);
    write_if_changed(std::filesystem::path(out_dir) / "manifest.json", manifest.dump(2) + "\n");
    std::cout << fmt::format("attnsim_kernelgen: {} kernels ({} schedule/variant/head_dim combinations not compiled)\n",
                             kernels.size(), manifest["not_compiled"].size());
  } catch (const std::exception& e) {
    std::cerr << "attnsim_kernelgen: error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
