// Learning-rate schedule: linear warm-up to the peak, cosine decay to the floor at the last step.
#include "axonn/core/error.h"
#include "axonn/train/schedule.h"

#include <gtest/gtest.h>

namespace axonn {
namespace {

TEST(LrSchedule, WarmupThenCosineToFloor) {
    LrSchedule const schedule{1.0f, 0.1f, 4, 14};
    EXPECT_FLOAT_EQ(schedule.at(0), 0.25f);
    EXPECT_FLOAT_EQ(schedule.at(3), 1.0f);
    EXPECT_FLOAT_EQ(schedule.at(4), 1.0f);   // decay starts at the peak
    EXPECT_FLOAT_EQ(schedule.at(9), 0.55f);  // half way: the mean of peak and floor
    EXPECT_FLOAT_EQ(schedule.at(14), 0.1f);
    for (int step = 5; step < 14; ++step) EXPECT_LT(schedule.at(step), schedule.at(step - 1));
}

TEST(LrSchedule, RejectsImpossibleValues) {
    EXPECT_THROW((LrSchedule{-1.0f, 0.0f, 0, 10}.validate()), Error);
    EXPECT_THROW((LrSchedule{1.0f, 2.0f, 0, 10}.validate()), Error);
    EXPECT_THROW((LrSchedule{1.0f, 0.1f, -1, 10}.validate()), Error);
    EXPECT_THROW((LrSchedule{1.0f, 0.1f, 0, 0}.validate()), Error);
}

}  // namespace
}  // namespace axonn
