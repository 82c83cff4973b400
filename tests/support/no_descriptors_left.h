// Runs an action with the process out of file descriptors (the limit lowered to 64 and every descriptor below it
// taken), then gives them back: what `ulimit -n` set too low does to a command, without a child process.
#pragma once

#include "support/error_of.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <exception>
#include <string>
#include <vector>

namespace axonn::testing {

// The limit the action runs under, which the messages name.
constexpr rlim_t few_descriptors = 64;

// The message of the axonn::Error `action` throws with no file descriptor left.
template <typename Action>
std::string error_with_no_descriptors_left(Action&& action) {
    rlimit saved{};
    EXPECT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
    rlimit const few{few_descriptors, saved.rlim_max};
    EXPECT_EQ(::setrlimit(RLIMIT_NOFILE, &few), 0);
    std::vector<int> filling;  // every descriptor below the limit taken
    for (int fd; (fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;) filling.push_back(fd);
    // The error read once the descriptors are back: UndefinedBehaviorSanitizer's check of what()'s virtual call
    // reads /proc and, with no descriptor left, calls the object invalid.
    std::exception_ptr thrown;
    try {
        action();
    } catch (...) {
        thrown = std::current_exception();
    }
    for (int fd : filling) ::close(fd);
    EXPECT_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);
    return error_of([&] {
        if (thrown) std::rethrow_exception(thrown);
    });
}

}  // namespace axonn::testing
