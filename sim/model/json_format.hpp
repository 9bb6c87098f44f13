// Writing the project's hand-kept JSON files (cost files) back the way they are laid out.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace attnsim {

/// `j` as text: an object or array whose members are all scalars (or arrays of scalars) on one
/// line, anything else one member per line, indented by two spaces per level from `indent`.
std::string format_json(const nlohmann::ordered_json& j, int indent = 0);

}  // namespace attnsim
