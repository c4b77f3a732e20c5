// The flag checks and the self-play budget helper that `zf actor` and `zf run` share
// (cli/common_flags.h), in process.
#include "cli/common_flags.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <thread>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "search/self_play.h"

namespace zf::cli {
namespace {

using ::testing::HasSubstr;
using ::zf::testing::StatusIs;

TEST(CheckFlagRangeTest, NamesTheFlagTheValueAndTheRange) {
  EXPECT_TRUE(CheckFlagRange("workers", 1, 1, 256).ok());
  EXPECT_TRUE(CheckFlagRange("workers", 256, 1, 256).ok());
  EXPECT_THAT(
      CheckFlagRange("workers", 257, 1, 256),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--workers is 257, expected 1..256")));
  EXPECT_THAT(
      CheckFlagRange("workers", 0, 1, 256),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--workers is 0, expected 1..256")));
}

TEST(CheckRealFlagRangeTest, RefusesValuesOutsideAndNaN) {
  EXPECT_TRUE(CheckRealFlagRange("score_utility", 0, 0, 1).ok());
  EXPECT_TRUE(CheckRealFlagRange("score_utility", 1, 0, 1).ok());
  EXPECT_THAT(CheckRealFlagRange("score_utility", 1.5, 0, 1),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--score_utility is 1.5, expected 0..1")));
  EXPECT_FALSE(
      CheckRealFlagRange("score_utility", std::numeric_limits<double>::quiet_NaN(), 0, 1).ok());
  EXPECT_FALSE(
      CheckRealFlagRange("score_utility", std::numeric_limits<double>::infinity(), 0, 1).ok());
}

search::SelfPlayOptions Budgets(int full, int fast) {
  search::SelfPlayOptions options;
  options.mcts.num_simulations = full;
  options.fast_simulations = fast;
  return options;
}

TEST(SetSelfPlaySimulationsTest, ZeroKeepsTheOptionsBudgets) {
  search::SelfPlayOptions options = Budgets(64, 32);
  ASSERT_TRUE(SetSelfPlaySimulations(&options, 0, 0, "fast_sims").ok());
  EXPECT_EQ(options.mcts.num_simulations, 64);
  EXPECT_EQ(options.fast_simulations, 32);
}

TEST(SetSelfPlaySimulationsTest, TheDefaultFastBudgetIsCappedAtTheFullOneAndNeverBelowTwo) {
  search::SelfPlayOptions options = Budgets(160, 32);
  ASSERT_TRUE(SetSelfPlaySimulations(&options, 16, 0, "fast_sims").ok());
  EXPECT_EQ(options.mcts.num_simulations, 16);
  EXPECT_EQ(options.fast_simulations, 16);

  options = Budgets(160, 1);
  ASSERT_TRUE(SetSelfPlaySimulations(&options, 0, 0, "fast_sims").ok());
  EXPECT_EQ(options.fast_simulations, 2);
}

TEST(SetSelfPlaySimulationsTest, AGivenFastBudgetIsTakenWithinTwoToTheFullOne) {
  search::SelfPlayOptions options = Budgets(160, 32);
  ASSERT_TRUE(SetSelfPlaySimulations(&options, 128, 16, "selfplay_fast_sims").ok());
  EXPECT_EQ(options.mcts.num_simulations, 128);
  EXPECT_EQ(options.fast_simulations, 16);

  options = Budgets(64, 32);
  ASSERT_TRUE(SetSelfPlaySimulations(&options, 0, 64, "fast_sims").ok());
  EXPECT_EQ(options.fast_simulations, 64);
  ASSERT_TRUE(SetSelfPlaySimulations(&options, 0, 2, "fast_sims").ok());
  EXPECT_EQ(options.fast_simulations, 2);
}

TEST(SetSelfPlaySimulationsTest, RefusesAFastBudgetOutsideTwoToTheFullOneNamingTheFlag) {
  search::SelfPlayOptions options = Budgets(64, 32);
  EXPECT_THAT(SetSelfPlaySimulations(&options, 16, 20, "selfplay_fast_sims"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--selfplay_fast_sims is 20, expected 2..16")));
  EXPECT_EQ(options.mcts.num_simulations, 64);  // a refusal changes nothing
  EXPECT_EQ(options.fast_simulations, 32);
  EXPECT_THAT(
      SetSelfPlaySimulations(&options, 0, 1, "fast_sims"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--fast_sims is 1, expected 2..64")));
  EXPECT_THAT(SetSelfPlaySimulations(&options, 0, -3, "fast_sims"),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(DefaultIntraOpThreadsTest, TakesOmpNumThreadsWhenItIsAThreadCountElseEveryCore) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  ASSERT_EQ(setenv("OMP_NUM_THREADS", "3", /*overwrite=*/1), 0);
  EXPECT_EQ(DefaultIntraOpThreads(), 3);
  for (const char* bad : {"0", "-2", "257", "four", ""}) {
    ASSERT_EQ(setenv("OMP_NUM_THREADS", bad, /*overwrite=*/1), 0);
    EXPECT_EQ(DefaultIntraOpThreads(), cores) << "OMP_NUM_THREADS=" << bad;
  }
  ASSERT_EQ(unsetenv("OMP_NUM_THREADS"), 0);
  EXPECT_EQ(DefaultIntraOpThreads(), cores);
}

}  // namespace
}  // namespace zf::cli
