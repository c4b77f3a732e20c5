// The flag checks and the self-play budget helper that `zf actor` and `zf run` share
// (cli/common_flags.h), in process.
#include "cli/common_flags.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "cli/command.h"
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

// A command that takes only the exploration flags, parsed as `zf` parses any command's.
absl::Status ParseExplorationFlags(const std::vector<std::string>& args) {
  const Command command{.name = "probe", .flags = WithSelfPlayExplorationFlags({})};
  std::vector<std::string> positional;
  bool help = false;
  return ParseCommandFlags(command, args, &positional, &help);
}

TEST(SelfPlayExplorationTest, GivenFlagsReplaceTheirFieldsAndReachTheOptions) {
  search::SelfPlayOptions options;
  options.temperature_moves = 10;
  options.mcts.dirichlet_alpha = 0.3f;
  options.mcts.c_puct = 1.5f;
  options.mcts.fpu_reduction = 0.25f;
  SelfPlayExploration exploration = SelfPlayExploration::Of(options);
  // The float's shortest decimal, as run.json writes it.
  EXPECT_EQ(exploration.dirichlet_alpha, 0.3);
  EXPECT_EQ(exploration.fpu_reduction, 0.25);

  EXPECT_EQ(exploration.rollout_opponent_share, 0.0);
  EXPECT_EQ(exploration.rollout_opponent_sims, 1000);

  ASSERT_OK(ParseExplorationFlags(
      {"--temperature_moves", "20", "--c_puct=0.75", "--rollout_opponent_share", "0.3"}));
  ASSERT_OK(SelfPlayExplorationFromFlags(&exploration));
  exploration.ApplyTo(&options);
  EXPECT_EQ(options.temperature_moves, 20);
  EXPECT_EQ(options.mcts.c_puct, 0.75f);
  EXPECT_EQ(options.rollout_opponent_share, 0.3f);
  EXPECT_EQ(options.mcts.dirichlet_alpha, 0.3f);  // not given: kept
  EXPECT_EQ(options.mcts.fpu_reduction, 0.25f);
  EXPECT_EQ(options.rollout_opponent_simulations, 1000);
  EXPECT_EQ(SelfPlayExploration::Of(options).rollout_opponent_share, 0.3);

  // The flags stay set in absl, but a later command that does not give them keeps its own.
  ASSERT_OK(ParseExplorationFlags(
      {"--dirichlet_alpha", "1", "--fpu_reduction", "-0.5", "--rollout_opponent_sims", "200"}));
  SelfPlayExploration fresh = SelfPlayExploration::Of(search::SelfPlayOptions{});
  const double own_c_puct = fresh.c_puct;
  ASSERT_OK(SelfPlayExplorationFromFlags(&fresh));
  EXPECT_EQ(fresh.dirichlet_alpha, 1.0);
  EXPECT_EQ(fresh.fpu_reduction, -0.5);
  EXPECT_EQ(fresh.rollout_opponent_sims, 200);
  EXPECT_EQ(fresh.c_puct, own_c_puct);
  EXPECT_EQ(fresh.rollout_opponent_share, 0.0);
}

TEST(SelfPlayExplorationTest, RefusesValuesOutsideTheirRangesNamingTheFlag) {
  const struct {
    std::vector<std::string> args;
    std::string error;
  } cases[] = {
      {{"--temperature_moves", "-1"}, "--temperature_moves is -1, expected 0..1000"},
      {{"--temperature_moves", "1001"}, "--temperature_moves is 1001, expected 0..1000"},
      {{"--dirichlet_alpha", "0"}, "--dirichlet_alpha is 0, expected 0.01..100"},
      {{"--c_puct", "nan"}, "--c_puct is nan, expected 0.01..100"},
      {{"--fpu_reduction", "3"}, "--fpu_reduction is 3, expected -2..2"},
      {{"--rollout_opponent_share", "1.5"}, "--rollout_opponent_share is 1.5, expected 0..1"},
      {{"--rollout_opponent_sims", "1"}, "--rollout_opponent_sims is 1, expected 2..100000"},
  };
  for (const auto& c : cases) {
    ASSERT_OK(ParseExplorationFlags(c.args));
    SelfPlayExploration exploration;
    EXPECT_THAT(SelfPlayExplorationFromFlags(&exploration),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.error)))
        << c.args[0];
  }
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
