#include "axonn/core/json_lines.h"

#include "axonn/core/error.h"
#include "axonn/core/guarded_json.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace axonn {

std::size_t for_each_json_line(std::filesystem::path const& path, std::string_view text,
                               JsonLinesFormat const& format,
                               std::function<void(nlohmann::json const&)> const& record) {
    std::size_t values = 0;
    std::size_t start = 0;
    for (int line = 1; start < text.size(); ++line) {
        std::size_t const end = std::min(text.find('\n', start), text.size());
        std::string_view const content = text.substr(start, end - start);
        start = end + 1;
        if (content.find_first_not_of(" \t\r") == std::string_view::npos) continue;
        AXONN_REQUIRE(content.size() <= format.max_line_bytes,
                      "{} line {}: the line has {} bytes, more than the {} a line may hold: shorten it", path.string(),
                      line, content.size(), format.max_line_bytes);
        nlohmann::json value;
        try {
            value = parse_guarded_json(content, format.max_depth);
        } catch (Error const& e) {
            throw Error(fmt::format("{} line {}: {}: write one object per line, {}", path.string(), line, e.what(),
                                    format.example));
        }
        try {
            record(value);
            ++values;
        } catch (nlohmann::json::exception const& e) {
            throw Error(fmt::format("{} line {}: {}: write one object per line, {}", path.string(), line, e.what(),
                                    format.example));
        } catch (Error const& e) {
            throw Error(fmt::format("{} line {}: {}", path.string(), line, e.what()));
        }
    }
    return values;
}

}  // namespace axonn
