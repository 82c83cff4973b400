// Fields of a JSON object read from a file, each checked as it is read: a missing key, a value of the wrong type or
// out of range is an axonn::Error that says where (`where`: "model", "tensor 'wte'", ...) and what.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace axonn {

// object[key], which must exist.
nlohmann::json const& json_field(nlohmann::json const& object, char const* key, std::string_view where);
// An integer in [low, high].
std::int64_t json_integer(nlohmann::json const& object, char const* key, std::string_view where, std::int64_t low,
                          std::int64_t high);
std::string json_text(nlohmann::json const& object, char const* key, std::string_view where);

}  // namespace axonn
