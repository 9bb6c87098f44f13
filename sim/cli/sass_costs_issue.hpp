// `attnsim sass-costs --family fa2|blackflash`: issue timings of the kernels/fa2 and
// kernels/blackflash instances' compute spans.
#pragma once
#include <string>
#include <vector>

#include "calibrate/sass_paths.hpp"

namespace attnsim::cli {

/// What `sass-costs --family fa2|blackflash` was asked.
struct IssueCostOptions {
  std::string sass_file;  ///< the listing (for messages and the file's source text)
  std::string kernel;     ///< only instances whose name contains this
  std::string hw_name;    ///< hardware config whose latencies and pipe rates time the spans
  std::string into;       ///< issue-timing file to write (empty: print only)
  std::string origin;     ///< where the listing came from (required with into)
  bool dry_run = false;   ///< with into: print the document instead of writing it
};

/// Prints the in-order issue time of each compute span of every traced fa2_forward instance in
/// `functions` and, with o.into, writes them as an issue-timing file (sim/lower/issue_timing.hpp),
/// replacing it only if the result parses. Throws InputError when no instance is found.
int sass_costs_fa2(const std::vector<sass::Function>& functions, const IssueCostOptions& o);

}  // namespace attnsim::cli

namespace attnsim::cli {

/// Prints the time of each compute span of every plain blackflash_forward instance in
/// `functions`, its consumer warps issuing together with 1 .. occupancy resident CTAs
/// (sim/calibrate/sass_blackflash.hpp), and, with o.into, writes them as an issue-timing file.
/// Throws InputError when no instance is found.
int sass_costs_blackflash(const std::vector<sass::Function>& functions, const IssueCostOptions& o);

}  // namespace attnsim::cli
