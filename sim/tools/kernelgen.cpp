// attnsim_kernelgen: the build step that turns schedules into compiled kernels. For every
// schedule file given, its base and every variant it declares, and head_dim 64, 128 and 256 (and
// for every admitted candidate of each --sweep file, on that sweep's problems), it resolves the
// knobs as the simulator does (Schedule::real_kernel) and writes one explicit instantiation per
// distinct knob set, spread over --shards .cu files (compiled in parallel), plus the registry
// (compiled_kernels()), a manifest of what was and was not compiled, and sm90_limits.h (the
// hardware config's SMEM and register limits, for the kernels' static_asserts). fa3_sm90
// schedules are resolved for causal and non-causal problems (their auto tile scheduler, and so
// their kernel, differs), at seqlen 8192 and 512 (the auto tile differs: fa3::kShortSeqlenK).
// fa4_sm100 schedules (resolved with --hw-sm100, head_dim 64 and 128, causal and not) get
// kernels/sm100 instances in their own files (sm100_instances_N.cu, built for
// sm_100a) and sm100_limits.h. blackflash kernels go to instances_blackflash_0.cu, which the
// build compiles for sm_90a and sm_120a. Files are rewritten only when their content changes, so
// unchanged shards are not rebuilt.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <algorithm>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "explore/sweep.hpp"
#include "lower/fa3/fa3_schedule.hpp"
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

/// The trailing template arguments of knobs added after the first twelve: ", <rescale threshold>"
/// for a kernel that rescales O conditionally, then ", <freq>, <res>" of its exp2 emulation, then
/// ", true" for O staged in the V ring, then ", true" for the trimmed last block; nothing past the
/// last knob that differs from the template's default (rescale -1, emulation 0, 0, V ring false,
/// trim false), so that kernels which predate these knobs keep their source text and are not
/// rebuilt.
std::string trailing_args(const sm90::KernelKnobs& k) {
  if (k.trim_last_block)
    return fmt::format(", {}, {}, {}, {}, true", k.rescale_threshold_milli, k.exp2_emu_freq, k.exp2_emu_res,
                       k.o_in_v_ring);
  if (k.o_in_v_ring)
    return fmt::format(", {}, {}, {}, true", k.rescale_threshold_milli, k.exp2_emu_freq, k.exp2_emu_res);
  if (k.exp2_emu_freq > 0)
    return fmt::format(", {}, {}, {}", k.rescale_threshold_milli, k.exp2_emu_freq, k.exp2_emu_res);
  return k.rescale_threshold_milli >= 0 ? fmt::format(", {}", k.rescale_threshold_milli) : std::string();
}

/// kernels/sm90 Traits<...> of these knobs (trailing knobs at their defaults left out: trailing_args).
std::string traits(const sm90::KernelKnobs& k, bool trace) {
  return fmt::format("Traits<{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}{}>", k.head_dim, k.m_block, k.n_block,
                     k.kv_stage, k.pingpong, k.overlap, k.reg_consumer, k.reg_producer, trace, k.dynamic,
                     k.own_o_buffer, k.l2_section_mib, trailing_args(k));
}

/// kernels/sm100 Traits<...> of these knobs (the parameter order of kernels/sm100/kernel_traits.cuh).
std::string sm100_traits(const sm100::KernelKnobs& k, bool trace) {
  return fmt::format("sm100::Traits<{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}>",
                     k.head_dim, k.q_stage, k.kv_stage, k.cta_group, k.split_columns, k.emu_freq, k.emu_res,
                     k.emu_start_frg, k.rescale_threshold_milli, k.conditional_rescale, k.correction_warpgroup,
                     k.reg_softmax, k.reg_correction, k.reg_other, k.exp_order_barrier, k.tmem_s0, k.tmem_s1, k.tmem_p0,
                     k.tmem_p1, k.tmem_o0, k.tmem_o1, k.tmem_alloc, trace);
}

/// One registry entry: the knobs as C++, the plain and the traced launcher (nullptr: none).
std::string registry_entry(const AnyKernelKnobs& any, const std::string& origins) {
  if (const auto* b = std::get_if<sm100::KernelKnobs>(&any))
    return fmt::format("  out.push_back({{AnyKernelKnobs{{sm100::KernelKnobs{{{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, "
                       "{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}}}}},\n"
                       "                 &sm100::launch<{}>,\n                 &sm100::launch<{}>, \"{}\"}});\n",
                       b->head_dim, b->q_stage, b->kv_stage, b->cta_group, b->split_columns, b->emu_freq, b->emu_res,
                       b->emu_start_frg, b->rescale_threshold_milli, b->conditional_rescale, b->correction_warpgroup,
                       b->reg_softmax, b->reg_correction, b->reg_other, b->exp_order_barrier, b->tmem_s0, b->tmem_s1,
                       b->tmem_p0, b->tmem_p1, b->tmem_o0, b->tmem_o1, b->tmem_alloc, sm100_traits(*b, false),
                       sm100_traits(*b, true), origins);
  if (const auto* k = std::get_if<sm90::KernelKnobs>(&any))
    return fmt::format(
        "  out.push_back({{AnyKernelKnobs{{KernelKnobs{{{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}{}}}}}, "
        "&launch<{}>,\n                 &launch<{}>, \"{}\"}});\n",
        k->head_dim, k->m_block, k->n_block, k->kv_stage, k->pingpong, k->overlap, k->reg_consumer, k->reg_producer,
        k->dynamic, k->own_o_buffer, k->l2_section_mib, trailing_args(*k), traits(*k, false), traits(*k, true), origins);
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
  CLI::App app{"attnsim_kernelgen: SM90 kernel instances from schedule files"};
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
  std::string hw_sm100_file;
  int sm100_shards = 4;
  app.add_option("--hw-sm100", hw_sm100_file,
                 "hardware config fa4_sm100 schedules are resolved with (an SM100 one); without it they get no kernels");
  app.add_option("--sm100-shards", sm100_shards, "number of SM100 instance files")->check(CLI::Range(1, 64));
  std::vector<std::string> sm100_variants = {"all"};
  app.add_option("--sm100-variants", sm100_variants,
                 "fa4_sm100 variants that get kernels (\"(base)\" for the base schedule; default all): each SM100 "
                 "instance costs about 20 s of nvcc");
  CLI11_PARSE(app, argc, argv);
  try {
    const Hardware hw = load_hardware(hw_file);
    const std::optional<Hardware> hw_sm100 =
        hw_sm100_file.empty() ? std::nullopt : std::optional<Hardware>(load_hardware(hw_sm100_file));
    std::vector<AnyKernelKnobs> kernels;
    std::map<size_t, std::vector<std::string>> origins;  // kernel index -> "file variant hdN"
    std::map<size_t, nlohmann::json> problems;             // kernel index -> [{schedule, variant, head_dim, ...}]
    nlohmann::json manifest = {{"generator", "attnsim_kernelgen"}, {"hw", hw.name}, {"kernels", nlohmann::json::array()},
                               {"not_compiled", nlohmann::json::array()}};
    // One schedule resolved for one problem: its kernel is compiled (once per distinct knob set),
    // or the manifest says why not.
    auto consider = [&](const Schedule& schedule, const Problem& p, const std::string& where,
                        nlohmann::json not_compiled) {
      if (schedule.arch() == "sm100" && !hw_sm100) return;  // no SM100 hardware config: no SM100 kernels
      const Hardware& h = schedule.arch() == "sm100" ? *hw_sm100 : hw;
      KernelChoice c = schedule.real_kernel(h, p);
      if (c.supported) {
        try {
          schedule.check(h, p);
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
      problems[i].push_back(not_compiled);
    };
    auto relative = [&](const std::string& file) {
      return root.empty() ? file : std::filesystem::relative(file, root).string();
    };
    for (const auto& file : files) {
      const std::string rel = relative(file);
      std::vector<std::string> variants = {""};
      for (const auto& v : schedule_variants(file)) {
        if (v.kernels_from_sweep.empty()) {
          variants.push_back(v.name);
          continue;
        }
        // Its kernels come with a sweep file's build (they would cost every build minutes of nvcc).
        manifest["not_compiled"].push_back(
            {{"schedule", relative(file)},
             {"variant", v.name},
             {"reason", fmt::format("variant {}'s kernels are compiled with its sweep: configure with "
                                    "-DATTNSIM_KERNEL_SWEEPS={} (where the variant resolves to a kernel of the "
                                    "build's, e.g. the base schedule's, that one runs)",
                                    v.name, v.kernels_from_sweep)}});
      }
      for (const auto& variant : variants) {
        const auto schedule = load_schedule(file, {}, variant);
        if (schedule->family() == "fa4_sm100") {
          // FA4 resolves different knobs (registers, exp2 emulation, cta_group) for causal and
          // non-causal problems: both, at head_dim 64 and 128 (the default problem's seqlen 8192).
          if (!hw_sm100) break;
          const std::string name = variant.empty() ? "(base)" : variant;
          if (std::find(sm100_variants.begin(), sm100_variants.end(), "all") == sm100_variants.end() &&
              std::find(sm100_variants.begin(), sm100_variants.end(), name) == sm100_variants.end()) {
            manifest["not_compiled"].push_back(
                {{"schedule", rel},
                 {"variant", variant},
                 {"reason", fmt::format("variant {} is not among the SM100 variants this build compiles ({}); "
                                        "configure with -DATTNSIM_SM100_VARIANTS=all (or add it) to compile it",
                                        name, fmt::join(sm100_variants, ", "))}});
            continue;
          }
          for (int hd : {64, 128})
            for (bool causal : {false, true}) {
              Problem p;
              p.head_dim = p.head_dim_v = hd;
              p.causal = causal;
              consider(*schedule, p,
                       fmt::format("{} {} hd{} {}", rel, variant.empty() ? "(base)" : variant, hd,
                                   causal ? "causal" : "non-causal"),
                       {{"schedule", rel}, {"variant", variant}, {"head_dim", hd}, {"causal", causal}});
            }
          continue;
        }
        if (schedule->family() != "fa3_sm90" && schedule->family() != "fa2_sm80" && schedule->family() != "blackflash")
          break;  // no real kernel
        // fa3_sm90's auto tile scheduler (and with it the kernel) differs for causal problems, and
        // its auto tile for short sequences (fa3::kShortSeqlenK).
        const bool fa3 = schedule->family() == "fa3_sm90";
        for (int hd : {64, 128, 256})
          for (bool causal : {false, true})
            for (bool short_kv : {false, true}) {
              if ((causal || short_kv) && !fa3) continue;
              Problem p;
              p.head_dim = p.head_dim_v = hd;
              p.causal = causal;
              if (short_kv) p.seqlen_q = p.seqlen_k = fa3::kShortSeqlenK;
              consider(*schedule, p,
                       fmt::format("{} {} hd{}{}{}", rel, variant.empty() ? "(base)" : variant, hd,
                                   causal ? " causal" : "", short_kv ? fmt::format(" seqlen {}", p.seqlen_k) : ""),
                       {{"schedule", rel},
                        {"variant", variant},
                        {"head_dim", hd},
                        {"causal", causal},
                        {"seqlen_k", p.seqlen_k}});
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
    // SM90 (and fa2) kernels and SM100 kernels go to separate files: they are compiled for
    // different GPU architectures (sm_90a, sm_100a).
    // blackflash's go to a file of their own, built for sm_90a and sm_120a (the seed's GPU).
    std::vector<size_t> sm90_ids, sm100_ids, blackflash_ids;
    for (size_t i = 0; i < kernels.size(); ++i)
      (std::holds_alternative<sm100::KernelKnobs>(kernels[i])        ? sm100_ids
       : std::holds_alternative<blackflash::KernelKnobs>(kernels[i]) ? blackflash_ids
                                                                     : sm90_ids)
          .push_back(i);
    auto write_shards = [&](const std::vector<size_t>& ids, int n, const std::string& file, const std::string& fn,
                            const std::string& includes) {
      for (int s = 0; s < n; ++s) {
        std::string t = header + includes + "\nnamespace attnsim::sm90 {\n\n";
        t += fmt::format("void {}_{}(std::vector<CompiledKernel>& out) {{\n", fn, s);
        for (size_t x = s; x < ids.size(); x += n) {
          const size_t i = ids[x];
          const std::string origin = fmt::format("{}", fmt::join(origins[i], "; "));
          t += registry_entry(kernels[i], origin);
          manifest["kernels"].push_back({{"knobs", describe(kernels[i])},
                                         {"arch", kernel_arch(kernels[i])},
                                         {"schedules", origins[i]},
                                         {"problems", problems[i]},
                                         {"file", fmt::format("{}_{}.cu", file, s)}});
        }
        t += "}\n\n}  // namespace attnsim::sm90\n";
        write_if_changed(std::filesystem::path(out_dir) / fmt::format("{}_{}.cu", file, s), t);
      }
    };
    write_shards(sm90_ids, shards, "instances", "add_kernels", "#include \"fa2/launch.cuh\"\n#include \"launch.cuh\"\n");
    write_shards(blackflash_ids, 1, "instances_blackflash", "add_blackflash_kernels",
                 "#include \"blackflash/launch.cuh\"\n#include \"sm90/fa3_api.h\"\n");
    write_shards(sm100_ids, sm100_shards, "sm100_instances", "add_sm100_kernels",
                 "#include \"sm100/launch.cuh\"\n#include \"sm90/fa3_api.h\"\n");
    if (hw_sm100)
      write_if_changed(std::filesystem::path(out_dir) / "sm100_limits.h",
                       fmt::format("// Generated by attnsim_kernelgen from {} ({}); do not edit.\n#pragma once\n\n"
                                   "namespace attnsim::sm100 {{\n\n"
                                   "/// Dynamic SMEM one CTA may use, bytes.\n"
                                   "inline constexpr int kSmemBytesPerBlock = {};\n"
                                   "/// 32-bit registers per SM.\n"
                                   "inline constexpr int kRegistersPerSm = {};\n"
                                   "/// TMEM columns per SM (128 lanes x 32 bit each).\n"
                                   "inline constexpr int kTmemColumns = {};\n\n"
                                   "}}  // namespace attnsim::sm100\n",
                                   root.empty() ? hw_sm100_file : std::filesystem::relative(hw_sm100_file, root).string(),
                                   hw_sm100->name, hw_sm100->smem_bytes_per_block, hw_sm100->registers_per_sm,
                                   hw_sm100->tmem_columns));
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
    for (int s = 0; s < sm100_shards; ++s)
      reg += fmt::format("void add_sm100_kernels_{}(std::vector<CompiledKernel>& out);\n", s);
    reg += "void add_blackflash_kernels_0(std::vector<CompiledKernel>& out);\n";
    reg += "\nconst std::vector<CompiledKernel>& compiled_kernels() {\n  static const std::vector<CompiledKernel> all = [] {\n"
           "    std::vector<CompiledKernel> v;\n";
    for (int s = 0; s < shards; ++s) reg += fmt::format("    add_kernels_{}(v);\n", s);
    for (int s = 0; s < sm100_shards; ++s) reg += fmt::format("    add_sm100_kernels_{}(v);\n", s);
    reg += "    add_blackflash_kernels_0(v);\n";
    reg += "    return v;\n  }();\n  return all;\n}\n\n}  // namespace attnsim::sm90\n";
    write_if_changed(std::filesystem::path(out_dir) / "registry.cu", reg);
    write_if_changed(std::filesystem::path(out_dir) / "manifest.json", manifest.dump(2) + "\n");
    std::cout << fmt::format("attnsim_kernelgen: {} kernels ({} sm_90a, {} sm_100a; {} schedule/variant/problem "
                             "combinations not compiled)\n",
                             kernels.size(), sm90_ids.size(), sm100_ids.size(), manifest["not_compiled"].size());
  } catch (const std::exception& e) {
    std::cerr << "attnsim_kernelgen: error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
