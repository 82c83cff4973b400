// Errors, in three kinds that end the program with different exit statuses (docs/ARCHITECTURE.md, "Errors"):
//   UsageError     the command line is wrong: an unknown flag, a bad value, options that contradict each other
//                  or the job (a grid of 8 ranks on 4). Exit status 2.
//   Error          anything else the user or the machine can cause: missing or corrupt files, a full disk, a
//                  loss that diverged. Exit status 1.
//   InternalError  a broken invariant of this program: a bug, never the user's fault. Exit status 70.
// Every message is one line that names the problem and, where there is one, the fix.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <utility>

namespace axonn {

class Error : public std::runtime_error {
public:
    explicit Error(std::string const& message) : std::runtime_error(message) {}
};

class UsageError : public Error {
public:
    explicit UsageError(std::string const& message) : Error(message) {}
};

class InternalError : public std::logic_error {
public:
    explicit InternalError(std::string const& message) : std::logic_error(message) {}
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

// invariant(condition, "message {}", value): what must hold whatever the input; false means a bug here.
template <typename... Args>
void invariant(bool condition, fmt::format_string<Args...> format, Args&&... args) {
    if (!condition) {
        throw InternalError(fmt::format(format, std::forward<Args>(args)...));
    }
}

// Runs `check` and reports any Error it throws as a UsageError: for validating what the command line gave with
// code that does not know it is checking a command line (a model shape, a schedule, a grid).
template <typename Check>
decltype(auto) as_usage_errors(Check&& check) {
    try {
        return std::forward<Check>(check)();
    } catch (UsageError const&) {
        throw;
    } catch (Error const& e) {
        throw UsageError(e.what());
    }
}

}  // namespace axonn
