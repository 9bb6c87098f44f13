// Family registry: maps the schedule's "family" field to its parser.
#include <fmt/format.h>

#include <algorithm>
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

std::vector<std::string> schedule_families() {
  std::vector<std::string> names;
  for (const auto& [n, p] : families()) names.push_back(n);
  return names;
}

std::unique_ptr<Schedule> parse_schedule(const nlohmann::json& doc, const std::string& file) {
  JsonReader r(doc, file);
  const std::string family = r.string("family");
  auto it = families().find(family);
  if (it == families().end())
    r.fail_at("family", fmt::format("expected one of [{}], got \"{}\"", fmt::join(schedule_families(), ", "), family));
  auto s = it->second(r);
  r.optional_raw("variants");  // applied by load_schedule
  r.finish();
  return s;
}

namespace {
/// One entry of a schedule's "variants" object, checked: {"description", "question"?, "set": {pointer: value}}.
struct VariantEntry {
  VariantInfo info;
  std::vector<std::pair<std::string, nlohmann::json>> set;  ///< in file order
};

/// The "variants" of a schedule document (ordered), each checked; throws InputError naming the
/// variant's JSON path.
std::vector<VariantEntry> read_variants(const nlohmann::ordered_json& doc, const std::string& file) {
  std::vector<VariantEntry> out;
  if (!doc.is_object() || !doc.contains("variants")) return out;
  const auto& vs = doc["variants"];
  if (!vs.is_object())
    throw InputError(file, "/variants", fmt::format("expected an object of named variants, got {}", vs.type_name()));
  for (auto it = vs.begin(); it != vs.end(); ++it) {
    const nlohmann::json entry = it.value();  // JsonReader reads the unordered form
    JsonReader v(entry, file, "/variants/" + JsonReader::escape_key(it.key()));
    VariantEntry e;
    e.info.name = it.key();
    e.info.description = v.string("description");
    e.info.question = v.string_or("question", "");
    e.info.kernels_from_sweep = v.string_or("kernels_from_sweep", "");
    v.object("set");
    v.finish();
    const auto& set = it.value()["set"];  // ordered: the changes apply in file order
    for (auto s = set.begin(); s != set.end(); ++s) e.set.emplace_back(s.key(), nlohmann::json(s.value()));
    out.push_back(std::move(e));
  }
  return out;
}
}  // namespace

std::unique_ptr<Schedule> load_schedule(const std::string& file, const std::vector<std::string>& overrides,
                                        const std::string& variant) {
  return schedule_from_text(read_text_file(file), file, overrides, variant);
}

std::unique_ptr<Schedule> schedule_from_text(const std::string& text, const std::string& file,
                                             const std::vector<std::string>& overrides, const std::string& variant) {
  nlohmann::json doc = parse_json_text(text, file);
  if (!variant.empty()) {
    const auto variants = read_variants(parse_ordered_json_text(text, file), file);
    auto it = std::find_if(variants.begin(), variants.end(), [&](const VariantEntry& e) { return e.info.name == variant; });
    if (it == variants.end()) {
      std::vector<std::string> names;
      for (const auto& v : variants) names.push_back(v.info.name);
      throw InputError(file, "/variants",
                       fmt::format("no variant \"{}\"; expected one of [{}]", variant, fmt::join(names, ", ")));
    }
    const std::string origin = fmt::format("{} (variant {})", file, variant);
    for (const auto& [ptr, value] : it->set) set_pointer(doc, ptr, value, origin, "variant " + variant);
  }
  for (const auto& o : overrides) apply_override(doc, o, file);
  return parse_schedule(doc, file);
}

std::vector<VariantInfo> schedule_variants(const std::string& file) {
  return schedule_variants_from_text(read_text_file(file), file);
}

std::vector<VariantInfo> schedule_variants_from_text(const std::string& text, const std::string& file) {
  std::vector<VariantInfo> out;
  for (auto& e : read_variants(parse_ordered_json_text(text, file), file)) out.push_back(std::move(e.info));
  return out;
}

}  // namespace attnsim

namespace attnsim {
KernelChoice Schedule::real_kernel(const Hardware&, const Problem&) const {
  KernelChoice c;
  c.why_not =
      fmt::format("family {}: no real kernel yet (kernels/ has fa3_sm90, fa2_sm80, fa4_sm100 and blackflash)", family_);
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
