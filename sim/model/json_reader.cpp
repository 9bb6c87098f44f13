#include "model/json_reader.hpp"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

namespace attnsim {

namespace {
std::string type_name(const nlohmann::json& v) { return v.type_name(); }
}  // namespace

InputError::InputError(std::string file, std::string path, const std::string& message, std::string reason)
    : std::runtime_error(fmt::format("{}: {}: {}", file, path.empty() ? "/" : path, message)),
      file_(std::move(file)),
      path_(std::move(path)),
      reason_(std::move(reason)) {}

nlohmann::json load_json_file(const std::string& file) {
  std::ifstream in(file);
  if (!in) throw InputError(file, "", "cannot open file");
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return nlohmann::json::parse(ss.str());
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte is the 1-based offset of the error; turn it into line:column.
    const std::string text = ss.str();
    size_t line = 1, col = 1;
    for (size_t i = 0; i + 1 < e.byte && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    throw InputError(
        file, "", fmt::format("malformed JSON at line {}, column {}: expected valid JSON ({})", line, col, e.what()));
  }
}

JsonReader::JsonReader(const nlohmann::json& j, std::string file, std::string path)
    : j_(&j), file_(std::move(file)), path_(std::move(path)) {
  if (!j_->is_object()) fail(fmt::format("expected an object, got {}", type_name(*j_)));
}

bool JsonReader::has(const std::string& key) const { return j_->contains(key); }

void JsonReader::fail(const std::string& message) const { throw InputError(file_, path_, message); }
void JsonReader::fail_at(const std::string& key, const std::string& message) const {
  throw InputError(file_, child_path(key), message);
}

const nlohmann::json& JsonReader::require(const std::string& key) {
  read_.insert(key);
  auto it = j_->find(key);
  if (it == j_->end()) fail_at(key, "missing required field");
  return *it;
}

const nlohmann::json& JsonReader::raw(const std::string& key) { return require(key); }
const nlohmann::json* JsonReader::optional_raw(const std::string& key) {
  read_.insert(key);
  auto it = j_->find(key);
  return it == j_->end() || it->is_null() ? nullptr : &*it;
}

JsonReader JsonReader::object(const std::string& key) {
  const auto& v = require(key);
  if (!v.is_object()) fail_at(key, fmt::format("expected an object, got {}", type_name(v)));
  return JsonReader(v, file_, child_path(key));
}

std::optional<JsonReader> JsonReader::optional_object(const std::string& key) {
  const auto* v = optional_raw(key);
  if (!v) return std::nullopt;
  if (!v->is_object()) fail_at(key, fmt::format("expected an object, got {}", type_name(*v)));
  return JsonReader(*v, file_, child_path(key));
}

long long JsonReader::integer(const std::string& key, long long lo, long long hi) {
  const auto& v = require(key);
  if (!v.is_number_integer()) fail_at(key, fmt::format("expected an integer in [{}, {}], got {}", lo, hi, v.dump()));
  long long x = v.get<long long>();
  if (x < lo || x > hi) fail_at(key, fmt::format("expected an integer in [{}, {}], got {}", lo, hi, x));
  return x;
}

long long JsonReader::integer_or(const std::string& key, long long dflt, long long lo, long long hi) {
  if (!optional_raw(key)) return dflt;
  return integer(key, lo, hi);
}

double JsonReader::number(const std::string& key, double lo, double hi) {
  const auto& v = require(key);
  if (!v.is_number()) fail_at(key, fmt::format("expected a number in [{}, {}], got {}", lo, hi, v.dump()));
  double x = v.get<double>();
  if (!(x >= lo && x <= hi)) fail_at(key, fmt::format("expected a number in [{}, {}], got {}", lo, hi, x));
  return x;
}

double JsonReader::number_or(const std::string& key, double dflt, double lo, double hi) {
  if (!optional_raw(key)) return dflt;
  return number(key, lo, hi);
}

bool JsonReader::boolean(const std::string& key) {
  const auto& v = require(key);
  if (!v.is_boolean()) fail_at(key, fmt::format("expected true or false, got {}", v.dump()));
  return v.get<bool>();
}

bool JsonReader::boolean_or(const std::string& key, bool dflt) {
  if (!optional_raw(key)) return dflt;
  return boolean(key);
}

std::string JsonReader::string(const std::string& key) {
  const auto& v = require(key);
  if (!v.is_string()) fail_at(key, fmt::format("expected a string, got {}", v.dump()));
  return v.get<std::string>();
}

std::string JsonReader::string_or(const std::string& key, const std::string& dflt) {
  if (!optional_raw(key)) return dflt;
  return string(key);
}

std::string JsonReader::choice(const std::string& key, const std::vector<std::string>& allowed) {
  std::string s = string(key);
  for (const auto& a : allowed)
    if (a == s) return s;
  fail_at(key, fmt::format("expected one of [{}], got \"{}\"", fmt::join(allowed, ", "), s));
}

std::string JsonReader::choice_or(const std::string& key, const std::string& dflt,
                                  const std::vector<std::string>& allowed) {
  if (!optional_raw(key)) return dflt;
  return choice(key, allowed);
}

std::vector<long long> JsonReader::int_array(const std::string& key, long long lo, long long hi) {
  const auto& v = require(key);
  if (!v.is_array()) fail_at(key, fmt::format("expected an array of integers, got {}", type_name(v)));
  std::vector<long long> out;
  for (size_t i = 0; i < v.size(); ++i) {
    const auto& e = v[i];
    if (!e.is_number_integer() || e.get<long long>() < lo || e.get<long long>() > hi)
      throw InputError(file_, child_path(key) + "/" + std::to_string(i),
                       fmt::format("expected an integer in [{}, {}], got {}", lo, hi, e.dump()));
    out.push_back(e.get<long long>());
  }
  return out;
}

std::string JsonReader::child_path(const std::string& key) const {
  std::string escaped;
  for (char c : key) escaped += c == '~' ? std::string("~0") : c == '/' ? std::string("~1") : std::string(1, c);
  return path_ + "/" + escaped;
}

std::vector<std::string> JsonReader::keys() const {
  std::vector<std::string> out;
  for (auto it = j_->begin(); it != j_->end(); ++it) out.push_back(it.key());
  return out;
}

void JsonReader::finish() const {
  for (auto it = j_->begin(); it != j_->end(); ++it) {
    if (!read_.count(it.key()))
      throw InputError(file_, child_path(it.key()), "unknown field (not part of the format; check its spelling)");
  }
}

void apply_override(nlohmann::json& doc, const std::string& assignment, const std::string& origin) {
  auto eq = assignment.find('=');
  if (eq == std::string::npos || assignment.empty() || assignment[0] != '/')
    throw InputError(origin, "", fmt::format("--set expects /json/pointer=value, got \"{}\"", assignment));
  std::string ptr = assignment.substr(0, eq), text = assignment.substr(eq + 1);
  nlohmann::json value;
  try {
    value = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error&) { value = text; }
  try {
    nlohmann::json::json_pointer p(ptr);
    if (!doc.contains(p.parent_pointer()))
      throw InputError(origin, ptr, "--set: the parent of this path does not exist");
    doc[p] = value;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(origin, ptr, fmt::format("--set: invalid JSON pointer ({})", e.what()));
  }
}

}  // namespace attnsim
