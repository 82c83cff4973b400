// A guard for JSON from files: nesting deeper than a format ever uses is refused before any parser, copy or
// printer of a JSON library walks it recursively and a hostile file exhausts the stack.
#pragma once

#include <string_view>

namespace axonn {

// Throws axonn::Error ("the JSON nests deeper than N levels") if `text` opens more than max_depth arrays or
// objects inside one another (brackets inside strings do not count).
void require_json_depth(std::string_view text, int max_depth);

}  // namespace axonn
