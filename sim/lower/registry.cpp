// Family registry: maps the schedule's "family" field to its parser.
#include <fmt/format.h>

#include <fstream>
#include <functional>
#include <map>

#include "lower/families.hpp"
#include "model/json_reader.hpp"
#include "lower/schedule.hpp"

namespace attnsim {

namespace {
using Parser = std::function<std::unique_ptr<Schedule>(JsonReader&)>;
const std::map<std::string, Parser>& families() {
  static const std::map<std::string, Parser> f = {
      {"explicit", parse_explicit_schedule},     {"fa4_sm100", parse_fa4_schedule},
      {"fa3_sm90", parse_fa3_schedule},          {"fa2_sm80", parse_fa2_schedule},
      {"blackflash", parse_blackflash_schedule},
  };
  return f;
}
}  // namespace

std::unique_ptr<Schedule> parse_schedule(const nlohmann::json& doc, const std::string& file) {
  JsonReader r(doc, file);
  const std::string family = r.string("family");
  auto it = families().find(family);
  if (it == families().end()) {
    std::vector<std::string> names;
    for (const auto& [n, p] : families()) names.push_back(n);
    r.fail_at("family", fmt::format("expected one of [{}], got \"{}\"", fmt::join(names, ", "), family));
  }
  auto s = it->second(r);
  r.optional_raw("variants");  // applied by load_schedule
  r.finish();
  return s;
}

std::unique_ptr<Schedule> load_schedule(const std::string& file, const std::vector<std::string>& overrides,
                                        const std::string& variant) {
  nlohmann::json doc = load_json_file(file);
  if (!variant.empty()) {
    if (!doc.contains("variants") || !doc["variants"].is_object() || !doc["variants"].contains(variant)) {
      std::vector<std::string> names;
      for (const auto& v : schedule_variants(file)) names.push_back(v.name);
      throw InputError(file, "/variants",
                       fmt::format("no variant \"{}\"; expected one of [{}]", variant, fmt::join(names, ", ")));
    }
    JsonReader v(doc["variants"][variant], file, "/variants/" + variant);
    v.string("description");
    v.string_or("question", "");
    const auto& set = v.object("set").json();
    v.finish();
    for (auto it = set.begin(); it != set.end(); ++it) apply_override(doc, it.key() + "=" + it.value().dump(), file);
  }
  for (const auto& o : overrides) apply_override(doc, o, file);
  return parse_schedule(doc, file);
}

std::vector<VariantInfo> schedule_variants(const std::string& file) {
  // Read in file order (nlohmann::json sorts object keys; ordered_json keeps them).
  load_json_file(file);  // reports a malformed file with its line and column
  std::ifstream in(file);
  const nlohmann::ordered_json doc = nlohmann::ordered_json::parse(in);
  std::vector<VariantInfo> out;
  if (doc.contains("variants") && doc["variants"].is_object())
    for (auto it = doc["variants"].begin(); it != doc["variants"].end(); ++it)
      out.push_back({it.key(), it.value().value("description", ""), it.value().value("question", "")});
  return out;
}

}  // namespace attnsim

namespace attnsim {
KernelChoice Schedule::real_kernel(const Hardware&, const Problem&) const {
  KernelChoice c;
  c.why_not = fmt::format("family {}: no real kernel yet (kernels/ has fa3_sm90 and fa2_sm80)", family_);
  return c;
}

void Schedule::read_header(JsonReader& r) {
  name_ = r.string("name");
  family_ = r.string("family");
  arch_ = r.choice("arch", {"any", "sm80", "sm90", "sm100"});
  description_ = r.string_or("description", "");
  r.string_or("source", "");
  file_ = r.file();
}
}  // namespace attnsim
