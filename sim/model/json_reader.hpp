// Strict JSON reading with error messages that name the file, the JSON path and
// what was expected. Every input file of attnsim (schedules, hardware configs,
// problems) is read through JsonReader, so "unknown field" and "out of range"
// are reported the same way everywhere.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace attnsim {

/// Bad user input: `file`, JSON `path` (JSON-pointer form, "/pipelines/pipeline_q/stages")
/// and a message saying what was expected. The CLI prints what() and exits with code 2.
class InputError : public std::runtime_error {
 public:
  /// `reason` classifies the error for counting (explore's rejection table): "input" for
  /// malformed or out-of-range fields, or a resource check: "smem", "tmem", "registers",
  /// "mma_shape", "pipeline_counts", "arch", "named_barriers", "threads".
  InputError(std::string file, std::string path, const std::string& message, std::string reason = "input");
  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }
  const std::string& reason() const { return reason_; }
  /// What was expected, without the file and path.
  const std::string& message() const { return message_; }

 private:
  std::string file_, path_, reason_, message_;
};

/// Deepest nesting of arrays and objects that the JSON reader accepts. Deeper input is
/// refused before it is parsed (nothing in attnsim nests more than a few levels, and deep
/// nesting would overflow the stack of the recursive code that walks a document).
constexpr int kMaxJsonDepth = 64;

/// Parses JSON text strictly: at most kMaxJsonDepth levels of nesting, no duplicate keys in an
/// object, numbers within the range of a double. Throws InputError naming `origin`, the JSON
/// path where reading stopped and what was expected there (with line and column).
nlohmann::json parse_json_text(const std::string& text, const std::string& origin);
/// Same, keeping object keys in document order.
nlohmann::ordered_json parse_ordered_json_text(const std::string& text, const std::string& origin);
/// The bytes of a file; throws InputError when it cannot be read (or is a directory).
std::string read_text_file(const std::string& file);
/// Reads and parses a JSON file as parse_json_text does; throws InputError on I/O or syntax errors.
nlohmann::json load_json_file(const std::string& file);
/// Same, keeping object keys in document order.
nlohmann::ordered_json load_ordered_json_file(const std::string& file);

/// A JSON value for an error message: its compact text, cut to about 60 characters.
std::string brief_json(const nlohmann::json& v);

/// A read-only view of one JSON object that remembers which keys were read.
/// finish() throws InputError for every key that no accessor asked for, so an
/// unknown or misspelt field is an error rather than silently ignored.
class JsonReader {
 public:
  JsonReader(const nlohmann::json& j, std::string file, std::string path = "");

  bool has(const std::string& key) const;
  /// Sub-object reader; throws when missing or not an object.
  JsonReader object(const std::string& key);
  std::optional<JsonReader> optional_object(const std::string& key);
  /// Raw access (marks the key as read). Throws when missing.
  const nlohmann::json& raw(const std::string& key);
  const nlohmann::json* optional_raw(const std::string& key);

  long long integer(const std::string& key, long long lo, long long hi);
  long long integer_or(const std::string& key, long long dflt, long long lo, long long hi);
  double number(const std::string& key, double lo, double hi);
  double number_or(const std::string& key, double dflt, double lo, double hi);
  bool boolean(const std::string& key);
  bool boolean_or(const std::string& key, bool dflt);
  std::string string(const std::string& key);
  std::string string_or(const std::string& key, const std::string& dflt);
  /// A string that must be one of `allowed`.
  std::string choice(const std::string& key, const std::vector<std::string>& allowed);
  std::string choice_or(const std::string& key, const std::string& dflt, const std::vector<std::string>& allowed);
  std::vector<long long> int_array(const std::string& key, long long lo, long long hi);

  /// Throws InputError naming the first key that was never read.
  void finish() const;

  /// Error at this object's path (or at path/key).
  [[noreturn]] void fail(const std::string& message) const;
  [[noreturn]] void fail_at(const std::string& key, const std::string& message) const;

  const nlohmann::json& json() const { return *j_; }
  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }
  /// JSON pointer of a member: the key escaped as RFC 6901 says ("~" -> "~0", "/" -> "~1").
  std::string child_path(const std::string& key) const;
  /// A key as one JSON-pointer token (RFC 6901: "~" -> "~0", "/" -> "~1").
  static std::string escape_key(const std::string& key);
  /// Keys of this object in document order (nlohmann keeps them sorted).
  std::vector<std::string> keys() const;

 private:
  const nlohmann::json& require(const std::string& key);
  const nlohmann::json* j_;
  std::string file_, path_;
  mutable std::set<std::string> read_;
};

/// Parses a JSON pointer ("/kv_stage"); throws InputError at `path` of `origin`, in our words,
/// when it does not start with '/' or has a '~' that is not ~0 or ~1.
nlohmann::json::json_pointer parse_pointer(const std::string& pointer, const std::string& origin,
                                           const std::string& path);
/// The value at `pointer` in `doc`, or nullptr when the pointer is malformed or leads nowhere.
const nlohmann::json* find_pointer(const nlohmann::json& doc, const std::string& pointer);
/// The number at `pointer` in `doc` (a result file's field); throws InputError naming `origin` and
/// the pointer, "expected a number" and then `hint`, when it is missing or not a number.
double number_at(const nlohmann::json& doc, const std::string& origin, const std::string& pointer,
                 const std::string& hint = "");
/// Sets `doc[pointer] = value`: the parent must exist and be an object, or an array holding that
/// index. Throws InputError naming `origin`, the pointer, and `what` (the option that asked).
void set_pointer(nlohmann::json& doc, const std::string& pointer, const nlohmann::json& value, const std::string& origin,
                 const std::string& what);

/// Applies "--set /json/pointer=value" overrides to a document. `value` is parsed as
/// JSON when it parses, else taken as a string. Throws InputError naming `origin`.
void apply_override(nlohmann::json& doc, const std::string& assignment, const std::string& origin);

}  // namespace attnsim
