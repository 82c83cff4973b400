// The message of the axonn::Error an action throws: what the error tests compare with the phrase they expect. An
// action that throws none fails the test.
#pragma once

#include "axonn/core/error.h"

#include <gtest/gtest.h>

#include <string>

namespace axonn::testing {

template <typename Action>
std::string error_of(Action&& action) {
    try {
        action();
    } catch (Error const& e) {
        return e.what();
    }
    ADD_FAILURE() << "no axonn::Error";
    return "";
}

}  // namespace axonn::testing
