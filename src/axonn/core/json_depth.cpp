#include "axonn/core/json_depth.h"

#include "axonn/core/error.h"

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

}  // namespace axonn
