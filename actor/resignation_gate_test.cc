#include "actor/resignation_gate.h"

#include <thread>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace zf::actor {
namespace {

using ::zf::testing::StatusIs;

TEST(ResignationGateTest, StaysClosedUntilEnoughSamples) {
  ResignationGate gate({.min_samples = 10, .window = 20, .max_false_positive_rate = 0.1});
  EXPECT_FALSE(gate.open());
  for (int i = 0; i < 9; ++i) gate.Record(/*false_positive=*/false);
  EXPECT_FALSE(gate.open()) << "9 of 10 samples";
  gate.Record(false);
  EXPECT_TRUE(gate.open());
  EXPECT_EQ(gate.stats().samples, 10);
  EXPECT_EQ(gate.stats().false_positives, 0);
}

TEST(ResignationGateTest, StaysClosedWhileTooManyResignationsWouldHaveBeenWrong) {
  ResignationGate gate({.min_samples = 10, .window = 10, .max_false_positive_rate = 0.2});
  // 3 of 10 wrong: 30% > 20%.
  for (int i = 0; i < 10; ++i) gate.Record(/*false_positive=*/i < 3);
  EXPECT_FALSE(gate.open());
  // The window slides: after two more right calls, 1 of the last 10 is wrong.
  gate.Record(false);
  gate.Record(false);
  EXPECT_TRUE(gate.open());
  EXPECT_EQ(gate.stats().false_positives, 1);
  EXPECT_EQ(gate.stats().total_samples, 12);
}

TEST(ResignationGateTest, ClosesAgainWhenTheNetworkGetsWorse) {
  ResignationGate gate({.min_samples = 4, .window = 4, .max_false_positive_rate = 0.25});
  for (int i = 0; i < 4; ++i) gate.Record(false);
  ASSERT_TRUE(gate.open());
  gate.Record(true);  // 1 of 4
  EXPECT_TRUE(gate.open());
  gate.Record(true);  // 2 of 4
  EXPECT_FALSE(gate.open());
}

TEST(ResignationGateTest, ZeroMinSamplesTrustsTheThresholdFromTheStart) {
  ResignationGate gate({.min_samples = 0, .window = 10, .max_false_positive_rate = 0.0});
  EXPECT_TRUE(gate.open());
  gate.Record(true);
  EXPECT_TRUE(gate.open());
}

TEST(ResignationGateTest, RecordsFromManyThreads) {
  ResignationGate gate({.min_samples = 100, .window = 1000, .max_false_positive_rate = 0.5});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&gate, t] {
      for (int i = 0; i < 100; ++i) gate.Record(/*false_positive=*/t == 0);
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(gate.stats().samples, 400);
  EXPECT_EQ(gate.stats().false_positives, 100);
  EXPECT_TRUE(gate.open());
}

TEST(ResignationGateTest, ValidateNamesTheBadField) {
  using O = ResignationGate::Options;
  EXPECT_THAT(O{.min_samples = -1}.Validate(), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT((O{.min_samples = 10, .window = 5}.Validate()),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(O{.max_false_positive_rate = 1.5}.Validate(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_OK(O{}.Validate());
}

}  // namespace
}  // namespace zf::actor
