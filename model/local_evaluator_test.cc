#include "model/local_evaluator.h"

#include <cmath>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

#include "common/testing/status_matchers.h"
#include "games/connect4/connect4.h"
#include "games/dotsboxes/dotsboxes.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/game_network.h"
#include "model/inference_session.h"

namespace zf::model {
namespace {

using ::testing::HasSubstr;
using ::zf::testing::StatusIs;

template <typename G>
std::shared_ptr<const InferenceSession> SessionFor(const G& game, uint64_t seed = 1) {
  auto session = InferenceSession::CreateFresh(
      NetworkShapeForGame(game, /*blocks=*/1, /*filters=*/16, /*value_hidden=*/16), seed);
  EXPECT_OK(session);
  return session.ok() ? std::shared_ptr<const InferenceSession>(std::move(*session)) : nullptr;
}

// Random non-terminal positions reached by random play from `start`.
template <typename G>
std::vector<G> RandomPositions(const G& start, int count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<G> positions;
  std::vector<int> legal;
  while (static_cast<int>(positions.size()) < count) {
    G game = start;
    const int plies = static_cast<int>(rng() % static_cast<uint32_t>(start.MaxGameLength()));
    for (int i = 0; i < plies && !game.IsTerminal(); ++i) {
      game.LegalActions(&legal);
      game.Apply(legal[rng() % legal.size()]);
    }
    if (!game.IsTerminal()) positions.push_back(game);
  }
  return positions;
}

template <typename G>
void ExpectValidEvaluations(const std::vector<G>& positions, const std::vector<float>& policies,
                            const std::vector<float>& values) {
  const int actions = positions[0].NumActions();
  for (size_t i = 0; i < positions.size(); ++i) {
    double sum = 0;
    for (int a = 0; a < actions; ++a) {
      const float p = policies[i * actions + a];
      if (positions[i].IsLegal(a)) {
        EXPECT_GT(p, 0.0f) << "position " << i << " action " << a;
      } else {
        EXPECT_EQ(p, 0.0f) << "illegal action " << a << " in position " << i;
      }
      sum += p;
    }
    EXPECT_NEAR(sum, 1.0, 1e-5) << "position " << i;
    EXPECT_GE(values[i], -1.0f);
    EXPECT_LE(values[i], 1.0f);
    EXPECT_TRUE(std::isfinite(values[i]));
  }
}

TEST(LocalEvaluatorTest, ConnectFourGivesZeroPriorToFullColumns) {
  const games::ConnectFour start;
  auto session = SessionFor(start);
  ASSERT_NE(session, nullptr);
  EXPECT_EQ(session->shape().PlaneSize(), 3 * 6 * 7);
  EXPECT_EQ(session->shape().num_actions, 7);
  ASSERT_OK_AND_ASSIGN(auto evaluator, LocalEvaluator<games::ConnectFour>::Create(session, start));

  // Fill column 3 (six alternating pieces, no four in a row).
  games::ConnectFour full_column;
  for (int i = 0; i < 6; ++i) full_column.Apply(3);
  ASSERT_FALSE(full_column.IsTerminal());
  ASSERT_FALSE(full_column.IsLegal(3));
  std::vector<games::ConnectFour> positions = RandomPositions(start, 30, 1);
  positions.push_back(full_column);

  std::vector<float> policies(positions.size() * 7, -1.0f);
  std::vector<float> values(positions.size(), -2.0f);
  ASSERT_OK(evaluator->Evaluate(positions, policies, values));
  ExpectValidEvaluations(positions, policies, values);
  EXPECT_EQ(policies[(positions.size() - 1) * 7 + 3], 0.0f);
}

TEST(LocalEvaluatorTest, DotsAndBoxesTwoByThree) {
  ASSERT_OK_AND_ASSIGN(games::DotsAndBoxes start, games::DotsAndBoxes::Create(2, 3));
  auto session = SessionFor(start);
  ASSERT_NE(session, nullptr);
  EXPECT_EQ(session->shape().num_actions, 17);
  ASSERT_OK_AND_ASSIGN(auto evaluator, LocalEvaluator<games::DotsAndBoxes>::Create(session, start));
  const std::vector<games::DotsAndBoxes> positions = RandomPositions(start, 20, 2);
  std::vector<float> policies(positions.size() * 17);
  std::vector<float> values(positions.size());
  ASSERT_OK(evaluator->Evaluate(positions, policies, values));
  ExpectValidEvaluations(positions, policies, values);

  // The raw session agrees: the priors are the softmax of its logits over the legal actions,
  // and the value is P(win) - P(loss).
  std::vector<uint8_t> planes(start.Shape().Size());
  positions[0].Encode(planes.data());
  std::vector<float> logits(17), wdl(3);
  ASSERT_OK(session->Run(planes, 1, logits, wdl));
  std::vector<int> legal;
  positions[0].LegalActions(&legal);
  double z = 0;
  for (int a : legal) z += std::exp(static_cast<double>(logits[a]));
  for (int a : legal) EXPECT_NEAR(policies[a], std::exp(logits[a]) / z, 1e-5);
  EXPECT_NEAR(values[0], wdl[0] - wdl[2], 1e-6);
}

TEST(LocalEvaluatorTest, SessionsCanBeShared) {
  const games::ConnectFour start;
  auto session = SessionFor(start);
  ASSERT_NE(session, nullptr);
  ASSERT_OK_AND_ASSIGN(auto a, LocalEvaluator<games::ConnectFour>::Create(session, start));
  ASSERT_OK_AND_ASSIGN(auto b, LocalEvaluator<games::ConnectFour>::Create(session, start));
  const std::vector<games::ConnectFour> positions = RandomPositions(start, 3, 3);
  std::vector<float> pa(21), pb(21), va(3), vb(3);
  ASSERT_OK(a->Evaluate(positions, pa, va));
  ASSERT_OK(b->Evaluate(positions, pb, vb));
  EXPECT_EQ(pa, pb);
  EXPECT_EQ(va, vb);
  EXPECT_EQ(&a->session(), session.get());
}

TEST(LocalEvaluatorTest, ScoresFromANetworkWithTheScoreHeadAndNaNWithout) {
  const games::ConnectFour start;
  const std::vector<games::ConnectFour> positions = RandomPositions(start, 4, 5);
  NetworkShape shape = NetworkShapeForGame(start, /*blocks=*/1, /*filters=*/16, 16);
  shape.aux_heads = true;
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<const InferenceSession> scored,
                       InferenceSession::CreateFresh(shape, 2));
  for (const auto& session : {scored, SessionFor(start)}) {
    ASSERT_NE(session, nullptr);
    ASSERT_OK_AND_ASSIGN(auto evaluator,
                         LocalEvaluator<games::ConnectFour>::Create(session, start));
    std::vector<float> policies(28), values(4), scores(4, 0.0f), p2(28), v2(4);
    ASSERT_OK(evaluator->EvaluateWithScores(positions, policies, values, scores));
    ASSERT_OK(evaluator->Evaluate(positions, p2, v2));
    EXPECT_EQ(policies, p2);
    EXPECT_EQ(values, v2);
    for (const float score : scores) {
      EXPECT_EQ(std::isfinite(score), session->shape().aux_heads) << score;
    }
    std::vector<float> short_scores(3);
    EXPECT_THAT(evaluator->EvaluateWithScores(positions, policies, values, short_scores),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("scores")));
  }
}

TEST(LocalEvaluatorTest, NetworkMustFitTheGame) {
  ASSERT_OK_AND_ASSIGN(games::DotsAndBoxes three, games::DotsAndBoxes::Create(3, 3));
  ASSERT_OK_AND_ASSIGN(games::DotsAndBoxes two, games::DotsAndBoxes::Create(2, 3));
  auto session = SessionFor(three);
  ASSERT_NE(session, nullptr);
  EXPECT_THAT(LocalEvaluator<games::DotsAndBoxes>::Create(session, two),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("dotsboxes:2x3")));
  EXPECT_THAT(LocalEvaluator<games::DotsAndBoxes>::Create(nullptr, two),
              StatusIs(absl::StatusCode::kInvalidArgument));

  // A position of another size in a call.
  ASSERT_OK_AND_ASSIGN(auto evaluator, LocalEvaluator<games::DotsAndBoxes>::Create(session, three));
  std::vector<games::DotsAndBoxes> positions = {three, two};
  std::vector<float> policies(2 * 24), values(2);
  EXPECT_THAT(evaluator->Evaluate(positions, policies, values),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("position 1")));
}

TEST(LocalEvaluatorTest, BadArgumentsAreInvalidArgument) {
  const games::ConnectFour start;
  auto session = SessionFor(start);
  ASSERT_NE(session, nullptr);
  ASSERT_OK_AND_ASSIGN(auto evaluator, LocalEvaluator<games::ConnectFour>::Create(session, start));
  std::vector<games::ConnectFour> positions(2);
  std::vector<float> policies(14), values(2);
  std::vector<float> short_policies(13), long_values(3);
  EXPECT_THAT(evaluator->Evaluate(positions, short_policies, values),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("policies")));
  EXPECT_THAT(evaluator->Evaluate(positions, policies, long_values),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("values")));
  EXPECT_OK(evaluator->Evaluate({}, {}, {}));

  // A finished game: X wins with four in column 0.
  games::ConnectFour won;
  for (int a : {0, 1, 0, 1, 0, 1, 0}) won.Apply(a);
  ASSERT_TRUE(won.IsTerminal());
  positions[1] = won;
  EXPECT_THAT(evaluator->Evaluate(positions, policies, values),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("position 1 is terminal")));
}

}  // namespace
}  // namespace zf::model
