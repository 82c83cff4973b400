// JSON read from files, parsed with two guards no format axonn reads needs to pass: nesting deeper than the format
// ever uses is refused before any parser, copy or printer of a JSON library walks it recursively and a hostile file
// exhausts the stack; an object naming one key twice is refused where nlohmann (like most parsers) would keep the
// last value without a word, so a hand-edited file cannot say two things and have one of them silently win.
#pragma once

#include <nlohmann/json.hpp>

#include <string_view>

namespace axonn {

// Throws axonn::Error ("the JSON nests deeper than N levels") if `text` opens more than max_depth arrays or
// objects inside one another (brackets inside strings do not count).
void require_json_depth(std::string_view text, int max_depth);

// `text` parsed after require_json_depth. Throws axonn::Error, saying why, for text that is not valid JSON (NaN and
// Infinity, which Python's json module writes, are not), a number too large for a double, and an object with a
// repeated key ("the JSON names the key \"k\" twice in one object").
nlohmann::json parse_guarded_json(std::string_view text, int max_depth);

}  // namespace axonn
