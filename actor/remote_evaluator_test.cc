// RemoteEvaluator<G>: a game's positions through a real inference server (FakeBackend) and back
// as priors over the legal actions, values and scores.
#include "actor/remote_evaluator.h"

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/testing/status_matchers.h"
#include "games/tictactoe/tictactoe.h"
#include "gtest/gtest.h"
#include "inference_server/client/remote_evaluator_client.h"
#include "inference_server/fake_backend.h"
#include "inference_server/service/inference_server.h"
#include "inference_server/testing/test_server.h"

namespace zf::actor {
namespace {

using inference::FakeBackend;
using inference::InferenceServer;
using inference::ModelSpec;
using inference::RemoteEvaluatorClient;

std::shared_ptr<FakeBackend> Fake(int64_t version, ModelSpec spec) {
  auto backend = FakeBackend::Create({.spec = spec, .max_batch = 1024, .version = version});
  EXPECT_TRUE(backend.ok()) << backend.status();
  return std::shared_ptr<FakeBackend>(std::move(*backend));
}

std::unique_ptr<InferenceServer> StartServer(std::shared_ptr<inference::Backend> backend) {
  return inference::StartTestServer(std::move(backend));
}

std::unique_ptr<RemoteEvaluatorClient> Client(int port, ModelSpec spec) {
  RemoteEvaluatorClient::Options options;
  options.target = absl::StrCat("127.0.0.1:", port);
  options.input_channels = spec.input_channels;
  options.board_height = spec.board_height;
  options.board_width = spec.board_width;
  auto client = RemoteEvaluatorClient::Create(options);
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? *std::move(client) : nullptr;
}

TEST(RemoteEvaluatorTest, GivesPriorsOverLegalActionsAndValues) {
  games::TicTacToe game;
  const games::PlaneShape shape = game.Shape();
  const ModelSpec spec{shape.channels, shape.height, shape.width, game.NumActions()};
  auto server = StartServer(Fake(3, spec));
  ASSERT_NE(server, nullptr);
  auto client = Client(server->port(), spec);
  RemoteEvaluator<games::TicTacToe> evaluator(client.get());
  games::TicTacToe after = game;
  after.Apply(4);
  std::vector<games::TicTacToe> positions = {game, after};
  std::vector<float> policies(2 * 9), values(2);
  ASSERT_OK(evaluator.Evaluate(positions, policies, values));
  for (int i = 0; i < 2; ++i) {
    std::vector<uint8_t> planes(spec.PlaneSize());
    positions[i].Encode(planes.data());
    std::vector<float> logits(9), wdl(3);
    FakeBackend::Evaluate(3, planes, logits, wdl);
    EXPECT_FLOAT_EQ(values[i], wdl[0] - wdl[2]);
    float sum = 0;
    for (int a = 0; a < 9; ++a) sum += policies[i * 9 + a];
    EXPECT_NEAR(sum, 1.0f, 1e-5);
  }
  EXPECT_EQ(policies[9 + 4], 0.0f);  // the occupied centre is illegal after the first move
  EXPECT_GT(policies[9 + 0], 0.0f);
  // This model has no score head: no scores (NaN), the same priors and values.
  std::vector<float> scores(2), again(2 * 9), again_values(2);
  ASSERT_OK(evaluator.EvaluateWithScores(positions, again, again_values, scores));
  EXPECT_TRUE(std::isnan(scores[0]) && std::isnan(scores[1]));
  EXPECT_EQ(again, policies);
  EXPECT_EQ(again_values, values);
}

TEST(RemoteEvaluatorTest, GivesTheServersScoresWhenItsModelHasAScoreHead) {
  games::TicTacToe game;
  const games::PlaneShape shape = game.Shape();
  const ModelSpec spec{.input_channels = shape.channels,
                       .board_height = shape.height,
                       .board_width = shape.width,
                       .num_actions = game.NumActions(),
                       .score = true};
  auto server = StartServer(Fake(3, spec));
  ASSERT_NE(server, nullptr);
  auto client = Client(server->port(), spec);
  RemoteEvaluator<games::TicTacToe> evaluator(client.get());
  std::vector<games::TicTacToe> positions = {game};
  std::vector<float> policies(9), values(1), scores(1);
  ASSERT_OK(evaluator.EvaluateWithScores(positions, policies, values, scores));
  std::vector<uint8_t> planes(spec.PlaneSize());
  game.Encode(planes.data());
  EXPECT_EQ(scores[0], FakeBackend::Score(3, planes));
  EXPECT_EQ(evaluator.EvaluateWithScores(positions, policies, values, {}).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace zf::actor
