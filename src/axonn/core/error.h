// Errors that reach the user. Every failure the user can cause (a bad flag, a corrupt shard, an impossible
// model shape) throws axonn::Error with a one-line message that names the problem and, where there is one,
// the fix. The command line catches it, prints "axonn: error: <message>" and exits non-zero.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace axonn {

class Error : public std::runtime_error {
public:
    explicit Error(std::string const& message) : std::runtime_error(message) {}
};

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
    throw Error(fmt::format(format, std::forward<Args>(args)...));
}

// require(condition, "message {}", value): the checked precondition used at every trust boundary.
template <typename... Args>
void require(bool condition, fmt::format_string<Args...> format, Args&&... args) {
    if (!condition) {
        fail(format, std::forward<Args>(args)...);
    }
}

}  // namespace axonn
