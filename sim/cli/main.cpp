// attnsim command line; subcommands live in sim/cli/*_cmd.cpp. Exit codes: 0 ok, 2 bad
// input (file, JSON path and what was expected on stderr), 3 the schedule deadlocks or
// breaks a barrier rule (report on stderr), 77 run/validate/bench found no usable GPU (skipped),
// 130 explore interrupted, 1 anything else.
#include <CLI/CLI.hpp>
#include <iostream>
#include <set>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/git_commit.hpp"
#include "cli/version.hpp"
#include "core/engine.hpp"
#include "model/hardware.hpp"
#include "model/json_reader.hpp"
#include "lower/schedule.hpp"
#include "sm90/fa3_api.h"  // compiled_kernels() (plain C++; defined only with CUDA)

namespace {
/// What --version prints: version, commit, the schedule families and GPU architectures compiled
/// in, and where configs/ and schedules/ are read from.
std::string version_text() {
  std::string kernels = "none";
#if ATTNSIM_WITH_SM90
  std::set<std::string> families;  // the families with kernels compiled into this build
  for (const auto& k : attnsim::sm90::compiled_kernels()) families.insert(attnsim::kernel_family(k.knobs));
  kernels = fmt::format("{} ({} instances, {})", fmt::join(families, ", "), attnsim::sm90::compiled_kernels().size(),
                        ATTNSIM_GPU_ARCHS);
#endif
  return fmt::format(
      "attnsim {}\ncommit: {}\nschedule families: {}\nkernels: {}\nGPU architectures: {}\nconfigs and schedules: {}",
      ATTNSIM_VERSION, ATTNSIM_GIT_COMMIT, fmt::join(attnsim::schedule_families(), ", "), kernels, ATTNSIM_GPU_ARCHS,
      attnsim::describe_project_root());
}
}  // namespace

int main(int argc, char** argv) {
  using namespace attnsim;
  CLI::App app{"attnsim: attention-kernel schedule simulator and explorer"};
  app.set_version_flag("--version", version_text(), "print the version, commit, families and GPU architectures");
  app.require_subcommand(1);
  std::vector<std::pair<CLI::App*, std::unique_ptr<cli::Command>>> commands;
  for (auto add : {cli::add_simulate, cli::add_explore, cli::add_explain, cli::add_calibrate, cli::add_run, cli::add_validate,
                    cli::add_bench, cli::add_fidelity, cli::add_sass_costs, cli::add_replay}) {
    CLI::App* sub = nullptr;
    auto c = add(app, sub);
    commands.emplace_back(sub, std::move(c));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) { return app.exit(e); } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }
  try {
    for (auto& [sub, cmd] : commands)
      if (sub->parsed()) return cmd->run();
  } catch (const InputError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const DeadlockError& e) {
    std::cerr << "error: " << e.what();
    return 3;
  } catch (const ProgramError& e) {
    std::cerr << "error: the schedule breaks a barrier rule: " << e.what() << "\n";
    return 3;
  } catch (const nlohmann::json::exception&) {
    // Input is read through JsonReader, which words its own errors; reaching this is a bug.
    std::cerr << "error: internal error while reading a JSON input (a bug: please report it with the input)\n";
    return 1;
  } catch (const std::invalid_argument& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
