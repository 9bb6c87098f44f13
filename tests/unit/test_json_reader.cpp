// The strict JSON reader: nesting limit, duplicate keys, numbers out of range, syntax errors in
// our own words with the JSON path where reading stopped, and JSON pointers.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "model/json_reader.hpp"

using namespace attnsim;

namespace {
/// The InputError `text` raises, as "file: path: message".
std::string parse_error(const std::string& text) {
  try {
    parse_json_text(text, "in.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST_CASE("JSON nested deeper than the limit is refused before it is parsed", "[json]") {
  const auto nested = [](int depth) { return "{\"a\": {\"b\": " + std::string(depth, '[') + std::string(depth, ']') + "}}"; };
  CHECK_NOTHROW(parse_json_text(nested(kMaxJsonDepth - 2), "in.json"));
  const std::string msg = parse_error(nested(kMaxJsonDepth - 1));
  CHECK_THAT(msg, Catch::StartsWith("in.json: /a/b: arrays and objects nested more than 64 levels deep") &&
                      Catch::Contains("expected at most 64 levels"));
  // Far deeper (a stack overflow before the limit existed), balanced or not.
  CHECK_THAT(parse_error(nested(200000)), Catch::StartsWith("in.json: /a/b: arrays and objects nested"));
  CHECK_THAT(parse_error("[" + std::string(100000, '[')), Catch::StartsWith("in.json: /: arrays and objects nested"));
  // Brackets inside strings do not count.
  CHECK_NOTHROW(parse_json_text("{\"s\": \"" + std::string(1000, '[') + "\"}", "in.json"));
}

TEST_CASE("duplicate keys are an error naming the key's path", "[json]") {
  CHECK(parse_error(R"({"name": "a", "x": {"k": 1, "k": 2}})") ==
        "in.json: /x/k: duplicate key \"k\": expected each key at most once per object");
  CHECK(parse_error(R"({"name": "a", "name": "b"})") ==
        "in.json: /name: duplicate key \"name\": expected each key at most once per object");
  // The same key in two objects is fine.
  CHECK_NOTHROW(parse_json_text(R"([{"k": 1}, {"k": 2}])", "in.json"));
}

TEST_CASE("syntax errors are reported in our words with line and column and path", "[json]") {
  CHECK(parse_error("{\"a\": 1e400}") ==
        "in.json: /a: malformed JSON at line 1, column 7: number 1e400 is out of range: expected a number within "
        "+-1.8e308");
  CHECK(parse_error("{\"a\": [1, 2}") == "in.json: /a/2: malformed JSON at line 1, column 12: unexpected '}': expected ',' or ']'");
  CHECK(parse_error("{\"a\": 1,\n}") ==
        "in.json: /a: malformed JSON at line 2, column 1: unexpected '}': expected a key in double quotes after ','");
  CHECK(parse_error("{\"a\" \"b\"}") == "in.json: /a: malformed JSON at line 1, column 6: unexpected '\"b\"': expected ':' after key \"a\"");
  CHECK(parse_error("{\"a\": tru}") ==
        "in.json: /a: malformed JSON at line 1, column 10: unexpected 'tru}': expected true, false, null, a number, a "
        "string, an array or an object");
  CHECK(parse_error("{\"a\": -}") ==
        "in.json: /a: malformed JSON at line 1, column 8: malformed number '-': expected digits as JSON writes them (1, "
        "-2.5, 3e8)");
  CHECK_THAT(parse_error("{\"a\": \"x"), Catch::Contains("/a: malformed JSON") && Catch::Contains("a string is not closed"));
  CHECK_THAT(parse_error("{\"a\": \"\xff\"}"), Catch::Contains("bytes that are not UTF-8: expected UTF-8 text"));
  CHECK_THAT(parse_error("{\"a\": \"\\q\"}"), Catch::Contains("invalid escape"));
  CHECK(parse_error("") ==
        "in.json: /: malformed JSON at line 1, column 1: the input ends: expected a JSON value (an object, array, "
        "string, number, true, false or null)");
  CHECK(parse_error("{\"a\": 1} x") ==
        "in.json: /: malformed JSON at line 1, column 10: unexpected 'x': expected nothing after the top-level value");
  CHECK(parse_error("{\"a\": {\"b\": [1,") ==
        "in.json: /a/b/1: malformed JSON at line 1, column 16: the input ends: expected a value after ','");
  // Never the parser's own text.
  for (const char* bad : {"{", "[1,]", "{\"a\":}", "nul", "{\"a\":1e999}", "\"\\ud800\""})
    CHECK_THAT(parse_error(bad), !Catch::Contains("json.exception") && Catch::Contains("expected"));
}

TEST_CASE("readers report values briefly and integers beyond long long as out of range", "[json]") {
  const nlohmann::json j = parse_json_text(R"({"n": 18446744073709551615, "s": ")" + std::string(500, 'x') + "\"}", "in.json");
  JsonReader r(j, "in.json");
  CHECK_THROWS_WITH(r.integer("n", 0, 100), "in.json: /n: expected an integer in [0, 100], got 18446744073709551615");
  try {
    r.integer("s", 0, 100);
    FAIL("expected InputError");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).size() < 120);
    CHECK_THAT(e.what(), Catch::EndsWith("...") && Catch::Contains("got \"xxxx"));
  }
}

TEST_CASE("JSON pointers and --set values are checked in our words", "[json]") {
  nlohmann::json doc = {{"a", {{"b", 1}}}, {"list", {1, 2}}};
  CHECK_THROWS_WITH(parse_pointer("kv_stage", "s.json", "/axes/kv_stage"),
                    "s.json: /axes/kv_stage: expected a JSON pointer such as /kv_stage or /split_p/enabled (it starts "
                    "with '/'), got \"kv_stage\"");
  CHECK_THROWS_WITH(parse_pointer("/a~2", "s.json", "/x"), Catch::Contains("'~' only as ~0 or ~1"));
  CHECK_THROWS_WITH(set_pointer(doc, "/x/y", 1, "s.json", "--set"),
                    "s.json: /x/y: --set: expected a path whose parent /x exists in the document");
  CHECK_THROWS_WITH(set_pointer(doc, "/list/x", 1, "s.json", "--set"),
                    "s.json: /list/x: --set: expected an index of the array /list (0 to 1), got \"x\"");
  CHECK_THROWS_WITH(set_pointer(doc, "/a/b/c", 1, "s.json", "--set"),
                    "s.json: /a/b/c: --set: expected /a/b to be an object or an array, got number");
  set_pointer(doc, "/list/1", 5, "s.json", "--set");
  CHECK(doc["list"][1] == 5);
  CHECK(find_pointer(doc, "/a/b") != nullptr);
  CHECK(find_pointer(doc, "/list/99999999999999999999") == nullptr);
  CHECK(find_pointer(doc, "no slash") == nullptr);
  // A --set value that does not parse as JSON (too deep, out of range) is taken as a string.
  apply_override(doc, "/a/b=" + std::string(100, '[') + std::string(100, ']'), "s.json");
  CHECK(doc["a"]["b"].is_string());
  apply_override(doc, "/a/b=1e400", "s.json");
  CHECK(doc["a"]["b"] == "1e400");
}

TEST_CASE("number_at reads a result file's number or names the file and pointer and hint", "[json]") {
  const nlohmann::json doc = {{"results", {{"clock_ghz", 1.98}, {"gpu", "H200"}, {"n", 3}}}};
  CHECK(number_at(doc, "r.json", "/results/clock_ghz") == 1.98);
  CHECK(number_at(doc, "r.json", "/results/n") == 3);
  CHECK_THROWS_WITH(number_at(doc, "r.json", "/results/gpu"), "r.json: /results/gpu: expected a number");
  CHECK_THROWS_WITH(number_at(doc, "r.json", "/results/missing", " (a microbench file?)"),
                    "r.json: /results/missing: expected a number (a microbench file?)");
  CHECK_THROWS_WITH(number_at(doc, "r.json", "no slash"), "r.json: no slash: expected a number");
}
