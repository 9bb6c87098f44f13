#include "model/json_format.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace attnsim {

std::string format_json(const nlohmann::ordered_json& j, int indent) {
  auto flat = [](const nlohmann::ordered_json& v) {
    for (const auto& m : v)
      if (m.is_object() ||
          (m.is_array() && std::any_of(m.begin(), m.end(), [](const auto& e) { return e.is_structured(); })))
        return false;
    return true;
  };
  if (!j.is_structured() || j.empty()) return j.dump(-1, ' ', false);
  const bool obj = j.is_object();
  std::vector<std::string> parts;
  const bool inline_ = flat(j);
  const std::string pad(indent + 2, ' ');
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string value = inline_ ? format_json(*it, 0) : format_json(*it, indent + 2);
    parts.push_back(obj ? nlohmann::ordered_json(it.key()).dump(-1, ' ', false) + ": " + value : value);
  }
  const char* open = obj ? "{" : "[";
  const char* close = obj ? "}" : "]";
  if (inline_) return fmt::format("{}{}{}", open, fmt::join(parts, ", "), close);
  std::string out = std::string(open) + "\n";
  for (size_t i = 0; i < parts.size(); ++i) out += pad + parts[i] + (i + 1 < parts.size() ? ",\n" : "\n");
  return out + std::string(indent, ' ') + close;
}

}  // namespace attnsim
