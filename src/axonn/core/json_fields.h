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
// An optional field: `otherwise` where the key is absent, else its value, which must be text (a number). Unlike
// nlohmann's value(), whose exception for a value of another type is no axonn::Error.
std::string json_text_or(nlohmann::json const& object, char const* key, std::string_view where,
                         std::string const& otherwise);
double json_number_or(nlohmann::json const& object, char const* key, std::string_view where, double otherwise);
// What a value is, for a message: "a number", "an array", "null", ...
std::string json_kind(nlohmann::json const& value);

}  // namespace axonn
