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

// AXONN_REQUIRE(condition, "message {}", value...): the checked precondition used at every trust boundary; false
// throws Error. A macro, so that the message's arguments are evaluated only when the condition fails: they may be
// valid only then (the first element of a vector the condition found non-empty, say).
#define AXONN_REQUIRE(condition, ...)   \
    do {                                \
        if (!(condition)) {             \
            ::axonn::fail(__VA_ARGS__); \
        }                               \
    } while (false)

template <typename... Args>
[[noreturn]] void fail_internal(fmt::format_string<Args...> format, Args&&... args) {
    throw InternalError(fmt::format(format, std::forward<Args>(args)...));
}

// AXONN_INVARIANT(condition, "message {}", value...): what must hold whatever the input; false means a bug here
// (InternalError). Its arguments, too, are evaluated only when it fails.
#define AXONN_INVARIANT(condition, ...)          \
    do {                                         \
        if (!(condition)) {                      \
            ::axonn::fail_internal(__VA_ARGS__); \
        }                                        \
    } while (false)

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
