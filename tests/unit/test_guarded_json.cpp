// JSON from files: a key named twice in one object and nesting past the format's depth are refused by name; keys
// repeated in different objects, and everything else JSON allows, parse as nlohmann parses them.
#include "axonn/core/guarded_json.h"

#include "axonn/core/error.h"
#include "support/error_of.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

namespace axonn {
namespace {

struct GuardedCase {
    char const* name;
    std::string text;
    char const* refusal;  // part of the error; empty where the text parses
};

GuardedCase const guarded_cases[] = {
    {"repeated_key", R"({"step": 1, "step": 2})", R"(names the key "step" twice)"},
    {"repeated_key_in_a_nested_object", R"({"model": {"n": 1, "m": 2, "n": 3}})", R"(names the key "n" twice)"},
    {"repeated_key_spelled_with_an_escape", R"({"ab": 1, "\u0061b": 2})", R"(names the key "ab" twice)"},
    {"repeated_key_in_the_second_of_two_objects", R"([{"a": 1}, {"a": 1, "a": 2}])", R"(names the key "a" twice)"},
    {"too_deep", "[[[[1]]]]", "nests deeper than 3 levels"},
    {"same_key_in_sibling_objects", R"([{"a": 1}, {"a": 2}])", ""},
    {"same_key_at_two_depths", R"({"a": {"a": {"a": 1}}})", ""},
    {"keys_differing_in_case", R"({"a": 1, "A": 2})", ""},
    {"brackets_inside_strings", R"({"a": "[[[[[["})", ""},
};

class GuardedJson : public ::testing::TestWithParam<GuardedCase> {};

TEST_P(GuardedJson, RefusesRepeatedKeysAndDepthAndParsesTheRest) {
    GuardedCase const& tested = GetParam();
    std::string refusal;
    nlohmann::json parsed;
    try {
        parsed = parse_guarded_json(tested.text, 3);
    } catch (Error const& e) {
        refusal = e.what();
    }
    if (*tested.refusal == '\0') {
        EXPECT_EQ(refusal, "");
        EXPECT_EQ(parsed, nlohmann::json::parse(tested.text));
    } else {
        EXPECT_NE(refusal.find(tested.refusal), std::string::npos) << refusal;
    }
}

INSTANTIATE_TEST_SUITE_P(Table, GuardedJson, ::testing::ValuesIn(guarded_cases),
                         [](auto const& info) { return std::string(info.param.name); });

TEST(GuardedJson, TextThatIsNotJsonIsNamedWithWhere) {
    for (auto const& [text, reason] : {std::pair{"{\"a\": ", "not valid JSON near byte 7"},
                                       std::pair{"{\"a\": NaN}", "not valid JSON near byte 7"},
                                       std::pair{"{\"a\": \"\\ud800\"}",
                                                 "not valid JSON near byte 14 (invalid string: surrogate "
                                                 "U+D800..U+DBFF must be followed by U+DC00..U+DFFF)"},
                                       std::pair{"[1e999]", "it holds a number too large for a double"}}) {
        EXPECT_EQ(testing::error_of([&] { parse_guarded_json(text, 3); }), reason) << text;
    }
}

}  // namespace
}  // namespace axonn
