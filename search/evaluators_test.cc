#include <cstdint>
#include <initializer_list>
#include <memory>
#include <random>
#include <set>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "common/testing/status_matchers.h"
#include "games/connect4/connect4.h"
#include "games/dotsboxes/dotsboxes.h"
#include "games/tictactoe/tictactoe.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "search/caching_evaluator.h"
#include "search/evaluator.h"
#include "search/mcts.h"
#include "search/random_rollout_evaluator.h"
#include "search/testing/fake_evaluators.h"
#include "search/uniform_evaluator.h"

namespace zf::search {
namespace {

using ::testing::HasSubstr;
using ::zf::games::ConnectFour;
using ::zf::games::DotsAndBoxes;
using ::zf::games::TicTacToe;
using ::zf::testing::StatusIs;
using testing::RecordingEvaluator;

template <typename G>
G Play(G game, std::initializer_list<int> actions) {
  for (const int a : actions) game.Apply(a);
  return game;
}

// Distinct non-terminal Connect Four positions from seeded random games.
std::vector<ConnectFour> RandomPositions(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<ConnectFour> out;
  std::set<uint64_t> seen;
  std::vector<int> legal;
  ConnectFour game;
  while (static_cast<int>(out.size()) < n) {
    if (game.IsTerminal()) game = ConnectFour();
    if (seen.insert(game.Hash()).second) out.push_back(game);
    game.LegalActions(&legal);
    game.Apply(legal[std::uniform_int_distribution<size_t>(0, legal.size() - 1)(rng)]);
  }
  return out;
}

// A deterministic fake network: priors and value are functions of the position's hash.
class HashEvaluator final : public Evaluator<ConnectFour> {
 public:
  absl::Status Evaluate(std::span<const ConnectFour> positions, std::span<float> policies,
                        std::span<float> values) override {
    ++calls;
    if (!fail_with.ok()) return fail_with;
    batch_sizes.push_back(static_cast<int>(positions.size()));
    for (size_t i = 0; i < positions.size(); ++i) {
      const uint64_t h = positions[i].Hash();
      float sum = 0.0f;
      for (int a = 0; a < 7; ++a) {
        const float p = positions[i].IsLegal(a) ? 1.0f + static_cast<float>((h >> (a * 4)) & 15)
                                                : 0.0f;
        policies[i * 7 + a] = p;
        sum += p;
      }
      for (int a = 0; a < 7; ++a) policies[i * 7 + a] /= sum;
      values[i] = static_cast<float>(h % 2001) / 1000.0f - 1.0f;
    }
    return absl::OkStatus();
  }
  int calls = 0;
  std::vector<int> batch_sizes;
  absl::Status fail_with;
};

struct Answers {
  std::vector<float> policies;
  std::vector<float> values;
  bool operator==(const Answers&) const = default;
};

template <typename G>
absl::StatusOr<Answers> EvaluateAll(Evaluator<G>& evaluator, const std::vector<G>& positions) {
  Answers answers;
  const size_t a = positions.empty() ? 0 : positions[0].NumActions();
  answers.policies.resize(positions.size() * a);
  answers.values.resize(positions.size());
  absl::Status status = evaluator.Evaluate(positions, answers.policies, answers.values);
  if (!status.ok()) return status;
  return answers;
}

TEST(UniformEvaluatorTest, UniformOverLegalActionsAndValueZero) {
  const ConnectFour full_column = Play(ConnectFour(), {0, 0, 0, 0, 0, 0});
  const std::vector<ConnectFour> positions = {ConnectFour(), full_column};
  UniformEvaluator<ConnectFour> evaluator;
  ASSERT_OK_AND_ASSIGN(Answers answers, EvaluateAll<ConnectFour>(evaluator, positions));
  for (int a = 0; a < 7; ++a) EXPECT_FLOAT_EQ(answers.policies[a], 1.0f / 7);
  EXPECT_FLOAT_EQ(answers.policies[7 + 0], 0.0f);
  for (int a = 1; a < 7; ++a) EXPECT_FLOAT_EQ(answers.policies[7 + a], 1.0f / 6);
  EXPECT_EQ(answers.values, std::vector<float>({0.0f, 0.0f}));
}

TEST(UniformEvaluatorTest, RejectsWrongSpanSizes) {
  const std::vector<ConnectFour> positions(2);
  std::vector<float> policies(13), values(2);
  UniformEvaluator<ConnectFour> evaluator;
  EXPECT_THAT(evaluator.Evaluate(positions, policies, values),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("policies")));
  policies.resize(14);
  values.resize(3);
  EXPECT_THAT(evaluator.Evaluate(positions, policies, values),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("values")));
}

TEST(RandomRolloutEvaluatorTest, ValueIsForThePlayerToMove) {
  //   X O X
  //   O X O
  //   . X .    O to move: X threatens both diagonals (8 and 6), so every rollout loses for O;
  // after O's 6, X to move has one cell left (8), which wins: every rollout wins for X.
  const TicTacToe o_to_move = Play(TicTacToe(), {0, 1, 2, 3, 4, 5, 7});
  const TicTacToe x_to_move = Play(o_to_move, {6});
  ASSERT_FALSE(x_to_move.IsTerminal());
  auto evaluator = RandomRolloutEvaluator<TicTacToe>::Create({.num_rollouts = 16, .seed = 1});
  ASSERT_OK(evaluator.status());
  ASSERT_OK_AND_ASSIGN(Answers answers,
                       EvaluateAll<TicTacToe>(**evaluator, {o_to_move, x_to_move}));
  EXPECT_FLOAT_EQ(answers.values[0], -1.0f);
  EXPECT_FLOAT_EQ(answers.values[1], 1.0f);
  EXPECT_FLOAT_EQ(answers.policies[6], 0.5f);
  EXPECT_FLOAT_EQ(answers.policies[8], 0.5f);
  EXPECT_FLOAT_EQ(answers.policies[9 + 8], 1.0f);
}

TEST(RandomRolloutEvaluatorTest, DeterministicUnderASeed) {
  const std::vector<ConnectFour> positions = RandomPositions(20, 1);
  auto a = RandomRolloutEvaluator<ConnectFour>::Create({.num_rollouts = 3, .seed = 9});
  auto b = RandomRolloutEvaluator<ConnectFour>::Create({.num_rollouts = 3, .seed = 9});
  auto c = RandomRolloutEvaluator<ConnectFour>::Create({.num_rollouts = 3, .seed = 10});
  ASSERT_OK(a.status());
  ASSERT_OK(b.status());
  ASSERT_OK(c.status());
  ASSERT_OK_AND_ASSIGN(Answers ra, EvaluateAll<ConnectFour>(**a, positions));
  ASSERT_OK_AND_ASSIGN(Answers rb, EvaluateAll<ConnectFour>(**b, positions));
  ASSERT_OK_AND_ASSIGN(Answers rc, EvaluateAll<ConnectFour>(**c, positions));
  EXPECT_EQ(ra, rb);
  EXPECT_NE(ra.values, rc.values);
  for (const float v : ra.values) {
    EXPECT_GE(v, -1.0f);
    EXPECT_LE(v, 1.0f);
  }
}

TEST(RandomRolloutEvaluatorTest, RejectsBadOptionsAndTerminalPositions) {
  EXPECT_THAT(RandomRolloutEvaluator<ConnectFour>::Create({.num_rollouts = 0}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("num_rollouts")));
  auto evaluator = RandomRolloutEvaluator<TicTacToe>::Create({});
  ASSERT_OK(evaluator.status());
  const TicTacToe over = Play(TicTacToe(), {0, 3, 1, 4, 2});
  EXPECT_THAT(EvaluateAll<TicTacToe>(**evaluator, {over}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("terminal")));
}

TEST(CachingEvaluatorTest, IdenticalAnswersAndOnlyMissesForwarded) {
  HashEvaluator wrapped;
  auto cache = CachingEvaluator<ConnectFour>::Create(&wrapped, {.capacity = 1 << 12});
  ASSERT_OK(cache.status());
  const std::vector<ConnectFour> positions = RandomPositions(20, 2);
  const std::vector<ConnectFour> first(positions.begin(), positions.begin() + 10);

  HashEvaluator direct;
  ASSERT_OK_AND_ASSIGN(Answers expected, EvaluateAll<ConnectFour>(direct, positions));
  ASSERT_OK_AND_ASSIGN(Answers expected_first, EvaluateAll<ConnectFour>(direct, first));

  // All misses: one forwarded call with all 10.
  ASSERT_OK_AND_ASSIGN(Answers a, EvaluateAll<ConnectFour>(**cache, first));
  EXPECT_EQ(a, expected_first);
  EXPECT_EQ(wrapped.batch_sizes, std::vector<int>({10}));
  EXPECT_EQ((*cache)->misses(), 10);
  EXPECT_EQ((*cache)->hits(), 0);

  // All hits: no call.
  ASSERT_OK_AND_ASSIGN(Answers b, EvaluateAll<ConnectFour>(**cache, first));
  EXPECT_EQ(b, expected_first);
  EXPECT_EQ(wrapped.calls, 1);
  EXPECT_EQ((*cache)->hits(), 10);

  // 10 hits and 10 misses: one call with exactly the 10 new positions.
  ASSERT_OK_AND_ASSIGN(Answers c, EvaluateAll<ConnectFour>(**cache, positions));
  EXPECT_EQ(c, expected);
  EXPECT_EQ(wrapped.batch_sizes, std::vector<int>({10, 10}));
  EXPECT_EQ((*cache)->hits(), 20);
  EXPECT_EQ((*cache)->misses(), 20);
  EXPECT_EQ((*cache)->forwarded(), 20);
  EXPECT_EQ((*cache)->wrapped_calls(), 2);
}

TEST(CachingEvaluatorTest, DuplicatesInABatchAreForwardedOnce) {
  HashEvaluator wrapped;
  auto cache = CachingEvaluator<ConnectFour>::Create(&wrapped, {});
  ASSERT_OK(cache.status());
  const std::vector<ConnectFour> distinct = RandomPositions(3, 3);
  const std::vector<ConnectFour> batch = {distinct[0], distinct[1], distinct[0], distinct[2],
                                          distinct[1], distinct[0]};
  HashEvaluator direct;
  ASSERT_OK_AND_ASSIGN(Answers expected, EvaluateAll<ConnectFour>(direct, batch));
  ASSERT_OK_AND_ASSIGN(Answers got, EvaluateAll<ConnectFour>(**cache, batch));
  EXPECT_EQ(got, expected);
  EXPECT_EQ(wrapped.batch_sizes, std::vector<int>({3}));
  EXPECT_EQ((*cache)->misses(), 6);
  EXPECT_EQ((*cache)->forwarded(), 3);
}

TEST(CachingEvaluatorTest, MemoryIsBounded) {
  HashEvaluator wrapped;
  auto cache = CachingEvaluator<ConnectFour>::Create(&wrapped, {.capacity = 8});
  ASSERT_OK(cache.status());
  const std::vector<ConnectFour> positions = RandomPositions(1000, 4);
  HashEvaluator direct;
  size_t bytes = 0;
  for (int start = 0; start < 1000; start += 50) {
    const std::vector<ConnectFour> batch(positions.begin() + start,
                                         positions.begin() + start + 50);
    ASSERT_OK_AND_ASSIGN(Answers expected, EvaluateAll<ConnectFour>(direct, batch));
    ASSERT_OK_AND_ASSIGN(Answers got, EvaluateAll<ConnectFour>(**cache, batch));
    EXPECT_EQ(got, expected);  // still right while evicting
    EXPECT_LE((*cache)->size(), 8);
    if (bytes == 0) bytes = (*cache)->TableBytes();
    EXPECT_EQ((*cache)->TableBytes(), bytes);
  }
  EXPECT_EQ((*cache)->size(), 8);
  EXPECT_GT((*cache)->evictions(), 900);
  EXPECT_LE(bytes, 8 * (8 + 1 + 4 + 7 * 4));
}

TEST(CachingEvaluatorTest, ErrorsPropagateAndNothingIsStored) {
  HashEvaluator wrapped;
  auto cache = CachingEvaluator<ConnectFour>::Create(&wrapped, {});
  ASSERT_OK(cache.status());
  const std::vector<ConnectFour> positions = RandomPositions(4, 5);
  wrapped.fail_with = absl::UnavailableError("down");
  EXPECT_THAT(EvaluateAll<ConnectFour>(**cache, positions),
              StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_EQ((*cache)->size(), 0);
  wrapped.fail_with = absl::OkStatus();
  ASSERT_OK(EvaluateAll<ConnectFour>(**cache, positions).status());
  EXPECT_EQ(wrapped.batch_sizes, std::vector<int>({4}));
}

TEST(CachingEvaluatorTest, RejectsBadOptionsAndMixedActionCounts) {
  HashEvaluator wrapped;
  EXPECT_THAT(CachingEvaluator<ConnectFour>::Create(&wrapped, {.capacity = 0}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("capacity")));
  EXPECT_THAT(CachingEvaluator<ConnectFour>::Create(nullptr, {}),
              StatusIs(absl::StatusCode::kInvalidArgument));

  UniformEvaluator<DotsAndBoxes> uniform;
  auto cache = CachingEvaluator<DotsAndBoxes>::Create(&uniform, {});
  ASSERT_OK(cache.status());
  auto small = DotsAndBoxes::Create(2, 2);
  auto large = DotsAndBoxes::Create(3, 3);
  ASSERT_OK(small.status());
  ASSERT_OK(large.status());
  ASSERT_OK(EvaluateAll<DotsAndBoxes>(**cache, {*small}).status());
  EXPECT_THAT(EvaluateAll<DotsAndBoxes>(**cache, {*large}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("actions")));
}

TEST(CachingEvaluatorTest, LookupAndInsertForAsynchronousCallers) {
  UniformEvaluator<ConnectFour> uniform;
  auto cache = CachingEvaluator<ConnectFour>::Create(&uniform, {.capacity = 64});
  ASSERT_OK(cache.status());
  const ConnectFour position = Play(ConnectFour(), {3});
  std::vector<float> policy(7);
  float value = 0.0f;
  EXPECT_FALSE((*cache)->Lookup(position, policy, &value));
  const std::vector<float> answer = {0.1f, 0.2f, 0.3f, 0.1f, 0.1f, 0.1f, 0.1f};
  (*cache)->Insert(position, answer, 0.25f);
  EXPECT_TRUE((*cache)->Lookup(position, policy, &value));
  EXPECT_EQ(policy, answer);
  EXPECT_FLOAT_EQ(value, 0.25f);
  EXPECT_EQ((*cache)->hits(), 1);
  EXPECT_EQ((*cache)->misses(), 1);
}

TEST(CachingEvaluatorTest, SearchThroughTheCacheIsUnchanged) {
  HashEvaluator plain;
  HashEvaluator wrapped;
  auto cache = CachingEvaluator<ConnectFour>::Create(&wrapped, {});
  ASSERT_OK(cache.status());
  MctsOptions options;
  options.num_simulations = 600;
  auto a = Mcts<ConnectFour>::Create(ConnectFour(), options);
  auto b = Mcts<ConnectFour>::Create(ConnectFour(), options);
  ASSERT_OK(a.status());
  ASSERT_OK(b.status());
  ASSERT_OK((*a)->Run(plain, 8));
  ASSERT_OK((*b)->Run(**cache, 8));
  EXPECT_EQ((*a)->VisitCounts(), (*b)->VisitCounts());
  // Connect Four transposes a lot: the tree holds positions reached by several orders.
  EXPECT_GT((*cache)->hits(), 0);
  EXPECT_EQ((*cache)->misses() + (*cache)->hits(), (*b)->stats().evaluations);
  EXPECT_LE((*cache)->forwarded(), (*cache)->misses());
}

}  // namespace
}  // namespace zf::search
