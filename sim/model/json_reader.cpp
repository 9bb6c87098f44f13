#include "model/json_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>

namespace attnsim {

namespace {
std::string type_name(const nlohmann::json& v) { return v.type_name(); }
}  // namespace

InputError::InputError(std::string file, std::string path, const std::string& message, std::string reason)
    : std::runtime_error(fmt::format("{}: {}: {}", file, path.empty() ? "/" : path, message)),
      file_(std::move(file)),
      path_(std::move(path)),
      reason_(std::move(reason)),
      message_(message) {}

namespace {

/// Line and column (1-based) of byte offset `pos` of `text`.
std::pair<size_t, size_t> line_column(const std::string& text, size_t pos) {
  size_t line = 1, col = 1;
  for (size_t i = 0; i < pos && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return {line, col};
}

/// A token for a message: printable ASCII as is, cut short; anything else as hex bytes.
std::string printable(const std::string& token) {
  std::string out;
  for (unsigned char c : token.substr(0, 24)) out += (c >= 0x20 && c < 0x7f) ? std::string(1, static_cast<char>(c))
                                                                              : fmt::format("\\x{:02x}", c);
  return token.size() > 24 ? out + "..." : out;
}

/// A SAX pass over the text before it is parsed into a document: follows the JSON path, and
/// stops at the first nesting deeper than kMaxJsonDepth, duplicate key or syntax error with a
/// message in our words (the parser's own text is not shown). Iterative: deep input cannot
/// overflow the stack here.
class JsonChecker : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit JsonChecker(const std::string& text) : text_(text) {}

  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t&) override { return value(); }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override { return open(true); }
  bool start_array(std::size_t) override { return open(false); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& k) override {
    Frame& f = frames_.back();
    f.key = k;
    f.has_key = true;
    last_ = Last::Key;
    if (!f.keys.insert(k).second) {
      path_ = current_path();
      message_ = fmt::format("duplicate key \"{}\": expected each key at most once per object", printable(k));
      return false;
    }
    return true;
  }
  bool parse_error(std::size_t position, const std::string& last_read, const nlohmann::detail::exception& ex) override {
    path_ = current_path();
    // `position` counts the characters read: the parser stopped at text_[position - 1], or past
    // the end. `last_read` holds what it read since its last string, number or literal began.
    const bool at_end = position > text_.size();
    size_t at = at_end ? text_.size() : (position > 0 ? position - 1 : 0);
    const std::string why = explain(last_read, ex, at, at_end);
    const auto [line, col] = line_column(text_, at);
    message_ = fmt::format("malformed JSON at line {}, column {}: {}", line, col, why);
    return false;
  }

  /// Where and why the pass stopped (valid after sax_parse returned false).
  const std::string& path() const { return path_; }
  const std::string& message() const { return message_; }

 private:
  enum class Last { Nothing, Open, Key, Value };
  struct Frame {
    bool object = false;
    bool has_key = false;
    std::string key;
    size_t index = 0;  // arrays: the element being read
    std::set<std::string> keys;
  };

  bool value() {
    last_ = Last::Value;
    if (!frames_.empty() && !frames_.back().object) ++frames_.back().index;
    return true;
  }
  bool open(bool object) {
    if (static_cast<int>(frames_.size()) >= kMaxJsonDepth) {
      // The value that holds the deep nesting: drop the trailing run of first elements.
      path_ = current_path();
      while (path_.size() >= 2 && path_.compare(path_.size() - 2, 2, "/0") == 0) path_.resize(path_.size() - 2);
      const auto [line, col] = line_column(text_, open_offset());
      message_ = fmt::format("arrays and objects nested more than {} levels deep (at line {}, column {}): expected at "
                             "most {} levels",
                             kMaxJsonDepth, line, col, kMaxJsonDepth);
      return false;
    }
    Frame f;
    f.object = object;
    frames_.push_back(std::move(f));
    last_ = Last::Open;
    return true;
  }
  bool close() {
    frames_.pop_back();
    return value();
  }
  /// Byte offset of the bracket that opened the level too many (the depth-th unclosed one).
  size_t open_offset() const {
    int depth = 0;
    bool in_string = false;
    for (size_t i = 0; i < text_.size(); ++i) {
      const char c = text_[i];
      if (in_string) {
        if (c == '\\') ++i;
        else if (c == '"') in_string = false;
      } else if (c == '"') {
        in_string = true;
      } else if (c == '[' || c == '{') {
        if (++depth > kMaxJsonDepth) return i;
      } else if (c == ']' || c == '}') {
        --depth;
      }
    }
    return text_.size();
  }
  std::string current_path() const {
    std::string p;
    for (const Frame& f : frames_) {
      if (f.object) {
        if (!f.has_key) break;
        p += "/" + JsonReader::escape_key(f.key);
      } else {
        p += "/" + std::to_string(f.index);
      }
    }
    return p;
  }
  /// What went wrong where the parser stopped (text_[at], or the end), and what was expected there.
  /// A syntax error at a string moves `at` to the string's opening quote.
  std::string explain(const std::string& last_read, const nlohmann::detail::exception& ex, size_t& at,
                      bool at_end) const {
    const std::string lib = ex.what();  // only classified, never shown
    const auto has = [&](const char* s) { return lib.find(s) != std::string::npos; };
    // The word being read: what follows the last space or bracket of `last_read` ("tru}", "1.}").
    const size_t cut = last_read.find_last_of(" \t\r\n:,[{");
    const std::string word = cut == std::string::npos ? last_read : last_read.substr(cut + 1);
    if (ex.id == 406 && word.size() <= at + 1) at = at + 1 - word.size();  // the number's first digit
    if (ex.id == 406) return fmt::format("number {} is out of range: expected a number within +-1.8e308", printable(word));
    if (has("ill-formed UTF-8")) return "a string holds bytes that are not UTF-8: expected UTF-8 text";
    if (has("control character"))
      return "a string holds an unescaped control character: expected it escaped (\\n, \\t, \\u0000)";
    if (has("backslash") || has("surrogate") || has("hex digits"))
      return "a string holds an invalid escape: expected \\\", \\\\, \\/, \\b, \\f, \\n, \\r, \\t or \\uXXXX";
    if (has("missing closing quote")) return "a string is not closed: expected a closing '\"'";
    if (has("invalid number"))
      return fmt::format("malformed number '{}': expected digits as JSON writes them (1, -2.5, 3e8)",
                         printable(at_end ? word : word.substr(0, word.size() - (word.empty() ? 0 : 1))));
    if (at_end) return fmt::format("the input ends: expected {}", expectation(at));
    if (has("invalid literal"))
      return fmt::format("unexpected '{}': expected {}", printable(word),
                         frames_.empty() && last_ == Last::Value ? "nothing after the top-level value"
                                                                 : "true, false, null, a number, a string, an array or an object");
    // A syntax error at a string shows the string, else the character.
    std::string token(1, text_[at]);
    if (text_[at] == '"' && last_read.size() > 1 && last_read.front() == '"' && last_read.size() <= at + 1) {
      token = last_read;
      at = at + 1 - last_read.size();
    }
    return fmt::format("unexpected '{}': expected {}", printable(token), expectation(at));
  }
  /// What may come next, from where the pass stands and the last significant character.
  std::string expectation(size_t start) const {
    size_t i = std::min(start, text_.size());
    while (i > 0 && std::isspace(static_cast<unsigned char>(text_[i - 1]))) --i;
    const char prev = i > 0 ? text_[i - 1] : '\0';
    if (frames_.empty())
      return last_ == Last::Nothing ? "a JSON value (an object, array, string, number, true, false or null)"
                                    : "nothing after the top-level value";
    if (frames_.back().object) {
      if (last_ == Last::Open) return "a key in double quotes or '}'";
      if (last_ == Last::Key)
        return prev == ':' ? fmt::format("a value for key \"{}\"", printable(frames_.back().key))
                           : fmt::format("':' after key \"{}\"", printable(frames_.back().key));
      return prev == ',' ? "a key in double quotes after ','" : "',' or '}'";
    }
    if (last_ == Last::Open) return "a value or ']'";
    return prev == ',' ? "a value after ','" : "',' or ']'";
  }

  const std::string& text_;
  std::vector<Frame> frames_;
  Last last_ = Last::Nothing;
  std::string path_, message_;
};

/// Checks `text` with JsonChecker, then parses it into a `Json` document.
template <class Json>
Json checked_parse(const std::string& text, const std::string& origin) {
  JsonChecker checker(text);
  if (!nlohmann::json::sax_parse(text, &checker)) throw InputError(origin, checker.path(), checker.message());
  try {
    return Json::parse(text);
  } catch (const nlohmann::json::exception&) {
    // The checker accepts exactly what the parser accepts; this is never reached.
    throw InputError(origin, "", "malformed JSON: expected valid JSON");
  }
}

}  // namespace

std::string read_text_file(const std::string& file) {
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec)) throw InputError(file, "", "is a directory: expected a JSON file");
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(file, "", "cannot open file");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

nlohmann::json parse_json_text(const std::string& text, const std::string& origin) {
  return checked_parse<nlohmann::json>(text, origin);
}
nlohmann::ordered_json parse_ordered_json_text(const std::string& text, const std::string& origin) {
  return checked_parse<nlohmann::ordered_json>(text, origin);
}
nlohmann::json load_json_file(const std::string& file) { return parse_json_text(read_text_file(file), file); }
nlohmann::ordered_json load_ordered_json_file(const std::string& file) {
  return parse_ordered_json_text(read_text_file(file), file);
}

std::string brief_json(const nlohmann::json& v) {
  const std::string s = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
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
  // Integers above LLONG_MAX are held unsigned; they are out of every range asked for.
  if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<unsigned long long>() > static_cast<unsigned long long>(hi)))
    fail_at(key, fmt::format("expected an integer in [{}, {}], got {}", lo, hi, brief_json(v)));
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
  if (!v.is_number()) fail_at(key, fmt::format("expected a number in [{}, {}], got {}", lo, hi, brief_json(v)));
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
  if (!v.is_boolean()) fail_at(key, fmt::format("expected true or false, got {}", brief_json(v)));
  return v.get<bool>();
}

bool JsonReader::boolean_or(const std::string& key, bool dflt) {
  if (!optional_raw(key)) return dflt;
  return boolean(key);
}

std::string JsonReader::string(const std::string& key) {
  const auto& v = require(key);
  if (!v.is_string()) fail_at(key, fmt::format("expected a string, got {}", brief_json(v)));
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
    const bool too_big = e.is_number_unsigned() && e.get<unsigned long long>() > static_cast<unsigned long long>(hi);
    if (!e.is_number_integer() || too_big || e.get<long long>() < lo || e.get<long long>() > hi)
      throw InputError(file_, child_path(key) + "/" + std::to_string(i),
                       fmt::format("expected an integer in [{}, {}], got {}", lo, hi, brief_json(e)));
    out.push_back(e.get<long long>());
  }
  return out;
}

std::string JsonReader::escape_key(const std::string& key) {
  std::string escaped;
  for (char c : key) escaped += c == '~' ? std::string("~0") : c == '/' ? std::string("~1") : std::string(1, c);
  return escaped;
}

std::string JsonReader::child_path(const std::string& key) const { return path_ + "/" + escape_key(key); }

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

nlohmann::json::json_pointer parse_pointer(const std::string& pointer, const std::string& origin,
                                           const std::string& path) {
  const auto bad = [&](const std::string& why) {
    return InputError(origin, path,
                      fmt::format("expected a JSON pointer such as /kv_stage or /split_p/enabled ({}), got \"{}\"", why,
                                  printable(pointer)));
  };
  if (pointer.empty() || pointer[0] != '/') throw bad("it starts with '/'");
  for (size_t i = 0; i < pointer.size(); ++i)
    if (pointer[i] == '~' && (i + 1 == pointer.size() || (pointer[i + 1] != '0' && pointer[i + 1] != '1')))
      throw bad("'~' only as ~0 or ~1");
  try {
    return nlohmann::json::json_pointer(pointer);
  } catch (const nlohmann::json::exception&) {
    throw bad("'/'-separated keys");
  }
}

const nlohmann::json* find_pointer(const nlohmann::json& doc, const std::string& pointer) {
  try {
    const nlohmann::json::json_pointer p(pointer);
    return doc.contains(p) ? &doc.at(p) : nullptr;
  } catch (const nlohmann::json::exception&) {
    return nullptr;
  }
}

double number_at(const nlohmann::json& doc, const std::string& origin, const std::string& pointer,
                 const std::string& hint) {
  const nlohmann::json* v = find_pointer(doc, pointer);
  if (v == nullptr || !v->is_number()) throw InputError(origin, pointer, "expected a number" + hint);
  return v->get<double>();
}

void set_pointer(nlohmann::json& doc, const std::string& pointer, const nlohmann::json& value, const std::string& origin,
                 const std::string& what) {
  const nlohmann::json::json_pointer p = parse_pointer(pointer, origin, pointer);
  const nlohmann::json::json_pointer parent = p.parent_pointer();
  bool has_parent = false;
  try {
    has_parent = doc.contains(parent);
  } catch (const nlohmann::json::exception&) {
  }
  if (!has_parent)
    throw InputError(origin, pointer, fmt::format("{}: expected a path whose parent {} exists in the document", what,
                                                  parent.empty() ? "/" : parent.to_string()));
  const nlohmann::json& container = doc[parent];
  if (container.is_array()) {
    const std::string last = p.back();
    const bool index = !last.empty() && last.size() <= 9 &&
                       std::all_of(last.begin(), last.end(), [](unsigned char c) { return std::isdigit(c); }) &&
                       (last == "0" || last[0] != '0');
    if (!index || std::stoul(last) >= container.size())
      throw InputError(origin, pointer,
                       fmt::format("{}: expected an index of the array {} (0 to {}), got \"{}\"", what,
                                   parent.to_string(), container.size() == 0 ? 0 : container.size() - 1, printable(last)));
  } else if (!container.is_object()) {
    throw InputError(origin, pointer,
                     fmt::format("{}: expected {} to be an object or an array, got {}", what, parent.to_string(),
                                 container.type_name()));
  }
  doc[p] = value;
}

void apply_override(nlohmann::json& doc, const std::string& assignment, const std::string& origin) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || assignment.empty() || assignment[0] != '/')
    throw InputError(origin, "", fmt::format("--set expects /json/pointer=value, got \"{}\"", printable(assignment)));
  const std::string ptr = assignment.substr(0, eq), text = assignment.substr(eq + 1);
  nlohmann::json value;
  try {
    value = parse_json_text(text, "--set");
  } catch (const InputError&) {
    value = text;  // not JSON: the text itself, as a string
  }
  set_pointer(doc, ptr, value, origin, "--set");
}

}  // namespace attnsim
