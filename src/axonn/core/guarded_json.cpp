#include "axonn/core/guarded_json.h"

#include "axonn/core/error.h"

#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace axonn {

void require_json_depth(std::string_view text, int max_depth) {
    int depth = 0;
    bool in_string = false, escaped = false;
    for (char c : text) {
        if (in_string) {
            if (escaped) escaped = false;
            else if (c == '\\') escaped = true;
            else if (c == '"') in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '{' || c == '[') {
            AXONN_REQUIRE(++depth <= max_depth, "the JSON nests deeper than {} levels", max_depth);
        } else if (c == '}' || c == ']') {
            --depth;
        }
    }
}

namespace {

using Event = nlohmann::json::parse_event_t;

struct RepeatedKey {};

// A parser callback that keeps every value and counts the keys read in each open object: an object that ends with
// fewer members than keys named one of them twice (nlohmann keeps the last). Counting costs next to nothing; a set
// of each object's keys would cost Llama 3's tokenizer.json a third of a second.
nlohmann::json::parser_callback_t counting_keys() {
    auto keys_read = std::make_shared<std::vector<std::size_t>>();
    return [keys_read](int, Event event, nlohmann::json& parsed) {
        if (event == Event::object_start) {
            keys_read->push_back(0);
        } else if (event == Event::key) {
            ++keys_read->back();
        } else if (event == Event::object_end) {
            if (parsed.size() != keys_read->back()) throw RepeatedKey{};
            keys_read->pop_back();
        }
        return true;
    };
}

// A parser callback that remembers each open object's keys and names the first one read twice. Keys are compared
// after unescaping, so "a" and "\u0061" are the same key.
nlohmann::json::parser_callback_t naming_a_repeated_key() {
    auto open_objects = std::make_shared<std::vector<std::set<std::string>>>();
    return [open_objects](int, Event event, nlohmann::json& parsed) {
        if (event == Event::object_start) {
            open_objects->emplace_back();
        } else if (event == Event::object_end) {
            open_objects->pop_back();
        } else if (event == Event::key) {
            AXONN_REQUIRE(open_objects->back().insert(parsed.get<std::string>()).second,
                          "the JSON names the key {} twice in one object", parsed.dump());
        }
        return true;
    };
}

}  // namespace

nlohmann::json parse_guarded_json(std::string_view text, int max_depth) {
    require_json_depth(text, max_depth);
    try {
        return nlohmann::json::parse(text.begin(), text.end(), counting_keys());
    } catch (RepeatedKey const&) {
        [[maybe_unused]] nlohmann::json const reparsed =
            nlohmann::json::parse(text.begin(), text.end(), naming_a_repeated_key());
        AXONN_INVARIANT(false, "an object of the JSON lost a member, but no key was read twice");
    } catch (nlohmann::json::parse_error const& error) {
        // A string's own fault (a lone UTF-16 surrogate, a control character, bytes that are not UTF-8) is named:
        // "not valid JSON" alone sent the user looking for a syntax error in valid-looking JSON.
        std::string_view const what = error.what();
        std::size_t const reason = what.find("invalid string: ");
        if (reason != std::string_view::npos) {
            std::string_view const named = what.substr(reason, what.find("; last read", reason) - reason);
            fail("not valid JSON near byte {} ({})", error.byte, named);
        }
        fail("not valid JSON near byte {}", error.byte);
    } catch (nlohmann::json::out_of_range const&) {
        fail("it holds a number too large for a double");
    }
}

}  // namespace axonn
