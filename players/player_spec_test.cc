// The net player's spec and options, in process: a fake network evaluator stands in for
// LibTorch (cli/network_runtime.h's hook), so this runs without a checkpoint.
#include "players/player_spec.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "search/uniform_evaluator.h"

namespace zf::players {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::zf::testing::IsOkAndHolds;
using ::zf::testing::StatusIs;

// Uniform priors, value 0, and `score` for every position; counts the calls that asked for
// scores and keeps the largest batch of positions evaluated at once.
class ScoringEvaluator final : public search::Evaluator<games::Go> {
 public:
  ScoringEvaluator(float score, int* score_calls, size_t* largest_batch)
      : score_(score), score_calls_(score_calls), largest_batch_(largest_batch) {}

  absl::Status Evaluate(std::span<const games::Go> positions, std::span<float> policies,
                        std::span<float> values) override {
    *largest_batch_ = std::max(*largest_batch_, positions.size());
    return uniform_.Evaluate(positions, policies, values);
  }
  absl::Status EvaluateWithScores(std::span<const games::Go> positions, std::span<float> policies,
                                  std::span<float> values, std::span<float> scores) override {
    ++*score_calls_;
    ZF_RETURN_IF_ERROR(Evaluate(positions, policies, values));
    std::fill(scores.begin(), scores.end(), score_);
    return absl::OkStatus();
  }

 private:
  search::UniformEvaluator<games::Go> uniform_;
  float score_;
  int* score_calls_;
  size_t* largest_batch_;
};

class NetPlayerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    NetworkEvaluatorHook<games::Go>() =
        [this](const std::string& checkpoint,
               const games::Go&) -> absl::StatusOr<std::unique_ptr<search::Evaluator<games::Go>>> {
      checkpoints_.push_back(checkpoint);
      return std::make_unique<ScoringEvaluator>(score_, &score_calls_, &largest_batch_);
    };
  }
  void TearDown() override { NetworkEvaluatorHook<games::Go>() = nullptr; }

  const games::Go start_ = *games::Go::Create(5);
  float score_ = 0.5f;
  int score_calls_ = 0;
  size_t largest_batch_ = 0;
  std::vector<std::string> checkpoints_;
};

TEST_F(NetPlayerTest, ScoreUtilityReachesTheSearch) {
  ASSERT_OK_AND_ASSIGN(auto plain, MakePlayer<games::Go>("net:runs/a:b.zfckpt:16", start_, 1));
  ASSERT_OK(plain->ChooseAction(start_).status());
  EXPECT_EQ(score_calls_, 0);  // without the utility the search never asks for scores

  ASSERT_OK_AND_ASSIGN(
      auto scoring, MakePlayer<games::Go>("net:runs/a:b.zfckpt:16:score_utility=0.3", start_, 1));
  EXPECT_EQ(score_calls_, 1);  // the check that the network has a score head
  ASSERT_OK(scoring->ChooseAction(start_).status());
  EXPECT_GT(score_calls_, 1);
  // The checkpoint keeps its own ':'; only the trailing SIMS and options are split off.
  EXPECT_THAT(checkpoints_, ElementsAre("runs/a:b.zfckpt", "runs/a:b.zfckpt"));
}

TEST_F(NetPlayerTest, OptionsComeInAnyOrder) {
  ASSERT_OK_AND_ASSIGN(
      auto player,
      MakePlayer<games::Go>("net:runs/a:b.zfckpt:16:lcb=5:score_utility=0.3", start_, 1));
  ASSERT_OK(player->ChooseAction(start_).status());
  EXPECT_GT(score_calls_, 1);  // the utility reached the search
  ASSERT_OK_AND_ASSIGN(
      player, MakePlayer<games::Go>("net:runs/a:b.zfckpt:16:score_utility=0.3:lcb=0", start_, 1));
  EXPECT_THAT(checkpoints_, ElementsAre("runs/a:b.zfckpt", "runs/a:b.zfckpt"));
}

// Uniform priors; values for Black's first stones: the center a steady 0.32, the top-left
// corner (without the center) 0.35 on average but noisily (0.95 or -0.25 by the position's
// hash), anything else -0.5; values for the player to move.
class NoisyCornerEvaluator final : public search::Evaluator<games::Go> {
 public:
  absl::Status Evaluate(std::span<const games::Go> positions, std::span<float> policies,
                        std::span<float> values) override {
    ZF_RETURN_IF_ERROR(uniform_.Evaluate(positions, policies, values));
    for (size_t i = 0; i < positions.size(); ++i) {
      const games::Go& g = positions[i];
      float black = -0.5f;
      if (g.StoneAt(2, 2) == 0) {
        black = 0.32f;
      } else if (g.StoneAt(0, 0) == 0) {
        black = (g.Hash() & 1) != 0 ? 0.95f : -0.25f;
      }
      values[i] = g.ToPlay() == 0 ? black : -black;
    }
    return absl::OkStatus();
  }

 private:
  search::UniformEvaluator<games::Go> uniform_;
};

TEST_F(NetPlayerTest, LcbReachesTheSearch) {
  NetworkEvaluatorHook<games::Go>() =
      [](const std::string&,
         const games::Go&) -> absl::StatusOr<std::unique_ptr<search::Evaluator<games::Go>>> {
    return std::make_unique<NoisyCornerEvaluator>();
  };
  const int corner = 0, center = 2 * 5 + 2;
  ASSERT_OK_AND_ASSIGN(auto plain, MakePlayer<games::Go>("net:x.zfckpt:400", start_, 1));
  ASSERT_OK_AND_ASSIGN(int plain_move, plain->ChooseAction(start_));
  // The premise: the noisy corner is searched most, the steady center enough to be eligible.
  const std::optional<SearchReport> report = plain->LastSearch();
  ASSERT_TRUE(report.has_value());
  ASSERT_EQ(plain_move, corner) << plain->Thinking(start_);
  int corner_visits = 0, center_visits = 0;
  for (const search::ChildStats& c : report->children) {
    if (c.action == corner) corner_visits = c.visits;
    if (c.action == center) center_visits = c.visits;
  }
  ASSERT_GE(center_visits, 0.15 * corner_visits) << plain->Thinking(start_);

  ASSERT_OK_AND_ASSIGN(auto lcb, MakePlayer<games::Go>("net:x.zfckpt:400:lcb=5", start_, 1));
  EXPECT_THAT(lcb->ChooseAction(start_), IsOkAndHolds(center)) << lcb->Thinking(start_);
  ASSERT_OK_AND_ASSIGN(auto off, MakePlayer<games::Go>("net:x.zfckpt:400:lcb=0", start_, 1));
  EXPECT_THAT(off->ChooseAction(start_), IsOkAndHolds(corner));
}

// c_puct and fpu reach the search: over NoisyCornerEvaluator's uniform priors, a large
// exploration constant spreads the root's visits, a small one piles them on its best child; an
// optimistic first play urgency (negative reduction) tries every move, a pessimistic one few.
TEST_F(NetPlayerTest, CPuctAndFpuReachTheSearch) {
  NetworkEvaluatorHook<games::Go>() =
      [](const std::string&,
         const games::Go&) -> absl::StatusOr<std::unique_ptr<search::Evaluator<games::Go>>> {
    return std::make_unique<NoisyCornerEvaluator>();
  };
  struct Spread {
    int most_visits = 0, children_visited = 0, children = 0;
  };
  auto spread = [&](const std::string& spec) -> absl::StatusOr<Spread> {
    ZF_ASSIGN_OR_RETURN(auto player, MakePlayer<games::Go>(spec, start_, 1));
    ZF_RETURN_IF_ERROR(player->ChooseAction(start_).status());
    const std::optional<SearchReport> report = player->LastSearch();
    if (!report.has_value()) return absl::InternalError("no search report");
    Spread out;
    out.children = static_cast<int>(report->children.size());
    for (const search::ChildStats& c : report->children) {
      out.most_visits = std::max(out.most_visits, c.visits);
      if (c.visits > 0) ++out.children_visited;
    }
    return out;
  };
  ASSERT_OK_AND_ASSIGN(const Spread greedy, spread("net:x.zfckpt:400:c_puct=0.05"));
  ASSERT_OK_AND_ASSIGN(const Spread plain, spread("net:x.zfckpt:400"));
  ASSERT_OK_AND_ASSIGN(const Spread exploring, spread("net:x.zfckpt:400:c_puct=50"));
  EXPECT_GT(greedy.most_visits, plain.most_visits);
  EXPECT_GT(plain.most_visits, exploring.most_visits);

  ASSERT_OK_AND_ASSIGN(const Spread optimistic, spread("net:x.zfckpt:400:fpu=-2:c_puct=0.05"));
  ASSERT_OK_AND_ASSIGN(const Spread pessimistic, spread("net:x.zfckpt:400:c_puct=0.05:fpu=2"));
  EXPECT_EQ(optimistic.children_visited, optimistic.children);  // every legal move tried
  EXPECT_GT(optimistic.children, 20);
  EXPECT_LT(pessimistic.children_visited, optimistic.children_visited);
}

TEST_F(NetPlayerTest, LeavesSetTheLeavesOfEachNetworkCall) {
  ASSERT_OK_AND_ASSIGN(auto plain, MakePlayer<games::Go>("net:x.zfckpt:64", start_, 1));
  ASSERT_OK(plain->ChooseAction(start_).status());
  EXPECT_EQ(largest_batch_, 8u);  // the default
  largest_batch_ = 0;
  ASSERT_OK_AND_ASSIGN(auto single, MakePlayer<games::Go>("net:x.zfckpt:64:leaves=1", start_, 1));
  ASSERT_OK(single->ChooseAction(start_).status());
  EXPECT_EQ(largest_batch_, 1u);
  ASSERT_OK_AND_ASSIGN(auto wide, MakePlayer<games::Go>("net:x.zfckpt:64:leaves=16", start_, 1));
  ASSERT_OK(wide->ChooseAction(start_).status());
  EXPECT_EQ(largest_batch_, 16u);
}

TEST_F(NetPlayerTest, ANetworkWithoutAScoreHeadIsRefused) {
  score_ = std::numeric_limits<float>::quiet_NaN();  // what an evaluator without scores gives
  EXPECT_THAT(MakePlayer<games::Go>("net:x.zfckpt:16:score_utility=0.3", start_, 1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("score head")));
  // Without the option the same network plays.
  EXPECT_OK(MakePlayer<games::Go>("net:x.zfckpt:16", start_, 1).status());
}

TEST_F(NetPlayerTest, BadOptionsAreNamed) {
  auto error = [&](const std::string& spec) {
    return MakePlayer<games::Go>(spec, start_, 1).status();
  };
  EXPECT_THAT(error("net:x.zfckpt:16:score_utility=1.5"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("0..1, got \"1.5\"")));
  EXPECT_THAT(error("net:x.zfckpt:16:score_utility=nan"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("0..1")));
  EXPECT_THAT(error("net:x.zfckpt:16:cpuct=2"), StatusIs(absl::StatusCode::kInvalidArgument,
                                                         HasSubstr("unknown option \"cpuct=2\"")));
  EXPECT_THAT(error("net:x.zfckpt:16:score_utility=0.1:score_utility=0.2"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("given twice")));
  EXPECT_THAT(
      error("net:x.zfckpt:16:lcb=11"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("lcb must be a number in 0..10")));
  EXPECT_THAT(error("net:x.zfckpt:16:lcb=-1"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("got \"-1\"")));
  EXPECT_THAT(error("net:x.zfckpt:16:c_puct=0"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("c_puct must be a number in 0.01..100, got \"0\"")));
  EXPECT_THAT(error("net:x.zfckpt:16:fpu=-3"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("fpu must be a number in -2..2, got \"-3\"")));
  EXPECT_THAT(error("net:x.zfckpt:16:leaves=2.5"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("leaves must be a whole number in 1..64, got \"2.5\"")));
  EXPECT_THAT(error("net:x.zfckpt:16:leaves=0"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("got \"0\"")));
  EXPECT_THAT(error("net:x.zfckpt:16:lcb=5:lcb=5"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("lcb is given twice")));
  EXPECT_THAT(error("net:x.zfckpt:score_utility=0.3"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("net:CHECKPOINT:SIMS")));
  EXPECT_THAT(error("net:x.zfckpt:sixteen:score_utility=0.3"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("1..1000000")));
  EXPECT_TRUE(checkpoints_.empty());  // every one refused before a network was made
}

TEST(PerfectPlayerTest, ConnectFourPerfectBlocksAndWinsAndOtherGamesAreRefused) {
  games::ConnectFour start;
  absl::StatusOr<std::unique_ptr<Player<games::ConnectFour>>> perfect =
      MakePlayer<games::ConnectFour>("perfect", start, 1);
  ASSERT_TRUE(perfect.ok()) << perfect.status();
  games::ConnectFour g;
  // Columns 1 and 2 filled first (a late position, solved at once); then O must block column 0.
  for (int col : {1, 2, 2, 1, 1, 2, 2, 1, 1, 2, 2, 1, 0, 6, 0, 6, 0}) g.Apply(col);
  EXPECT_THAT((*perfect)->ChooseAction(g), IsOkAndHolds(0));
  g.Apply(3);  // O did not block: X wins at once in column 0
  EXPECT_THAT((*perfect)->ChooseAction(g), IsOkAndHolds(0));
  EXPECT_THAT((*perfect)->Thinking(g), HasSubstr("optimal moves: 0"));
  EXPECT_THAT(MakePlayer<games::Go>("perfect", games::Go(), 1).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("tictactoe and connect4")));
}

}  // namespace
}  // namespace zf::players
