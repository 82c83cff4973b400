#include "axonn/core/json_fields.h"

#include "axonn/core/error.h"

namespace axonn {

using nlohmann::json;

json const& json_field(json const& object, char const* key, std::string_view where) {
    AXONN_REQUIRE(object.is_object() && object.contains(key), "{} has no \"{}\"", where, key);
    return object[key];
}

std::int64_t json_integer(json const& object, char const* key, std::string_view where, std::int64_t low,
                          std::int64_t high) {
    json const& value = json_field(object, key, where);
    AXONN_REQUIRE(value.is_number_integer(), "{}: \"{}\" is not an integer", where, key);
    // An unsigned value above INT64_MAX reads as negative here, and is refused with the rest (shown as written).
    auto const number = value.get<std::int64_t>();
    AXONN_REQUIRE(number >= low && number <= high && !(value.is_number_unsigned() && number < 0),
                  "{}: \"{}\" = {} lies outside [{}, {}]", where, key, value.dump(), low, high);
    return number;
}

std::string json_text(json const& object, char const* key, std::string_view where) {
    json const& value = json_field(object, key, where);
    AXONN_REQUIRE(value.is_string(), "{}: \"{}\" is not a string", where, key);
    return value.get<std::string>();
}

std::string json_text_or(json const& object, char const* key, std::string_view where, std::string const& otherwise) {
    return object.is_object() && object.contains(key) ? json_text(object, key, where) : otherwise;
}

double json_number_or(json const& object, char const* key, std::string_view where, double otherwise) {
    if (!object.is_object() || !object.contains(key)) return otherwise;
    AXONN_REQUIRE(object[key].is_number(), "{}: \"{}\" is not a number", where, key);
    return object[key].get<double>();
}

std::string json_kind(json const& value) {
    if (value.is_null()) return "null";
    std::string const name = value.type_name();
    bool const vowel = name.find_first_of("aeiou") == 0;
    return (vowel ? "an " : "a ") + name;
}

}  // namespace axonn
