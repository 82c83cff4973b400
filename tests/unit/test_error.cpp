// The error checks: a check's message arguments are evaluated only when it fails (they may be valid only then,
// like the first element of a vector the condition found non-empty), and each check throws its kind of error.
#include "axonn/core/error.h"

#include <gtest/gtest.h>

#include <string>

namespace axonn {
namespace {

TEST(ErrorChecks, RequireEvaluatesItsMessageOnlyWhenItFails) {
    int evaluated = 0;
    auto const argument = [&] { return ++evaluated; };
    AXONN_REQUIRE(true, "argument {}", argument());
    EXPECT_EQ(evaluated, 0);
    try {
        AXONN_REQUIRE(1 + 1 == 3, "argument {}", argument());
        ADD_FAILURE() << "a failed check did not throw";
    } catch (UsageError const&) {
        ADD_FAILURE() << "a failed check is an Error, not a usage error";
    } catch (Error const& e) {
        EXPECT_EQ(std::string(e.what()), "argument 1");
    }
    EXPECT_EQ(evaluated, 1);
}

TEST(ErrorChecks, InvariantEvaluatesItsMessageOnlyWhenItFails) {
    int evaluated = 0;
    auto const argument = [&] { return ++evaluated; };
    AXONN_INVARIANT(true, "argument {}", argument());
    EXPECT_EQ(evaluated, 0);
    try {
        AXONN_INVARIANT(false, "argument {}", argument());
        ADD_FAILURE() << "a broken invariant did not throw";
    } catch (InternalError const& e) {
        EXPECT_EQ(std::string(e.what()), "argument 1");
    }
    EXPECT_EQ(evaluated, 1);
}

// A check is one statement: it can stand unbraced under an if and an else.
TEST(ErrorChecks, ACheckIsOneStatement) {
    bool const take_first = false;
    if (take_first)
        AXONN_REQUIRE(false, "the first branch");
    else
        AXONN_REQUIRE(true, "the second branch");
    EXPECT_THROW(AXONN_REQUIRE(false, "no arguments"), Error);
}

TEST(ErrorChecks, UsageErrorsConvertOnlyErrors) {
    EXPECT_THROW(as_usage_errors([] { AXONN_REQUIRE(false, "bad shape"); }), UsageError);
    EXPECT_THROW(as_usage_errors([] { AXONN_INVARIANT(false, "a bug"); }), InternalError);
}

}  // namespace
}  // namespace axonn
