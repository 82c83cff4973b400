// JSON-lines files from users (documents to score, fine-tuning records): one JSON value per line, blank lines
// skipped. Every line is checked before a parser walks it (its size, its nesting), and a bad line is a one-line
// error naming the file and the line.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <filesystem>
#include <functional>
#include <string_view>

namespace axonn {

struct JsonLinesFormat {
    int max_depth;               // arrays and objects inside one another
    std::size_t max_line_bytes;  // a longer line is refused unparsed
    std::string_view example;    // what a line should look like, for the fix: "{\"text\": \"...\"}"
};

// Calls `record(value)` for the value on each non-blank line of `text`, the contents of `path`. A line that is
// too long, too deep or not JSON, or whose value `record` refuses with an axonn::Error, is an axonn::Error
// "PATH line N: <problem>". Returns how many values were read.
std::size_t for_each_json_line(std::filesystem::path const& path, std::string_view text,
                               JsonLinesFormat const& format, std::function<void(nlohmann::json const&)> const& record);

}  // namespace axonn
