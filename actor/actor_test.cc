// Actor: complete games against a real InferenceServer (FakeBackend) over loopback into the file
// sink, read back and checked with the replay validator; reconnection when the server is shut
// down and restarted on the same port mid-run; two requests in flight from one worker; games
// into two replay shards through ReplayGameSink; errors.
#include "actor/actor.h"

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/testing/scratch_dir.h"
#include "common/testing/status_matchers.h"
#include "common/testing/wait.h"
#include "common/thread.h"
#include "games/tictactoe/tictactoe.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "inference_server/fake_backend.h"
#include "inference_server/service/inference_server.h"
#include "inference_server/testing/test_server.h"
#include "replay/service/replay_server.h"
#include "replay/validate.h"

namespace zf::actor {
namespace {

using inference::FakeBackend;
using inference::InferenceServer;

inference::ModelSpec TicTacToeSpec() {
  const games::TicTacToe t;
  return {.input_channels = t.Shape().channels,
          .board_height = t.Shape().height,
          .board_width = t.Shape().width,
          .num_actions = t.NumActions()};
}

std::shared_ptr<FakeBackend> Fake(int64_t version) {
  auto backend =
      FakeBackend::Create({.spec = TicTacToeSpec(), .max_batch = 1024, .version = version});
  EXPECT_TRUE(backend.ok()) << backend.status();
  return std::shared_ptr<FakeBackend>(std::move(*backend));
}

std::unique_ptr<InferenceServer> StartServer(std::shared_ptr<inference::Backend> backend,
                                             const std::string& address = "127.0.0.1:0") {
  return inference::StartTestServer(
      std::move(backend),
      {.address = address, .game = "tictactoe", .max_batch = 64, .max_request_rows = 1024});
}

std::shared_ptr<AsyncEvaluator> Connect(int port) {
  inference::RemoteEvaluatorClient::Options options;
  options.target = absl::StrCat("127.0.0.1:", port);
  const games::PlaneShape shape = games::TicTacToe().Shape();
  options.input_channels = shape.channels;
  options.board_height = shape.height;
  options.board_width = shape.width;
  options.initial_backoff = absl::Milliseconds(10);
  options.max_backoff = absl::Milliseconds(200);
  auto client = inference::RemoteEvaluatorClient::Create(options);
  EXPECT_TRUE(client.ok()) << client.status();
  return std::make_shared<RemoteAsyncEvaluator>(
      std::shared_ptr<inference::RemoteEvaluatorClient>(std::move(*client)));
}

ActorOptions SmallOptions(int64_t games) {
  ActorOptions options = ActorOptions::ForGame("tictactoe");
  options.workers = 2;
  options.games_per_worker = 4;
  options.max_games = games;
  options.self_play.mcts.num_simulations = 24;
  options.self_play.fast_simulations = 8;
  options.actor_id = "test";
  options.seed = 5;
  return options;
}

std::string TempDir(const std::string& name) {
  return zf::testing::ScratchDir(absl::StrCat("actor_", name));
}

// Every game in `dir`, checked: valid for the replay shard, ids unique.
std::vector<zerofleet::v1::GameRecord> ReadAll(const std::string& dir) {
  std::vector<zerofleet::v1::GameRecord> games;
  std::set<std::string> ids;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    auto file = ReadGameFile(entry.path().string());
    EXPECT_TRUE(file.ok()) << file.status();
    if (!file.ok()) continue;
    EXPECT_TRUE(file->torn_tail.empty()) << file->torn_tail;
    for (auto& game : file->games) {
      EXPECT_OK(replay::ValidateGameRecord(game, replay::TableOptions{}));
      EXPECT_TRUE(ids.insert(game.game_id()).second) << "duplicate id " << game.game_id();
      games.push_back(std::move(game));
    }
  }
  return games;
}

TEST(ActorTest, PlaysCompleteGamesAgainstAnInferenceServerIntoTheFileSink) {
  auto server = StartServer(Fake(7));
  ASSERT_NE(server, nullptr);
  const std::string dir = TempDir("complete");
  ASSERT_OK_AND_ASSIGN(auto sink, FileGameSink::Create({.dir = dir, .actor_id = "test"}));
  auto registry = std::make_shared<prometheus::Registry>();
  ASSERT_OK_AND_ASSIGN(
      auto actor, Actor::Create(SmallOptions(20), Connect(server->port()), sink.get(), registry));
  ASSERT_OK(actor->Start());
  ASSERT_OK(actor->Wait(absl::Now() + absl::Seconds(120)));
  actor->Stop();
  sink->Close();
  const ActorStats stats = actor->stats();
  EXPECT_EQ(stats.games, 20);
  EXPECT_EQ(stats.dropped_games, 0);
  EXPECT_EQ(stats.model_version, 7);
  EXPECT_EQ(stats.requests_in_flight, 0);
  EXPECT_GT(stats.leaf_evaluations, 0);
  EXPECT_GE(stats.simulations, stats.leaf_evaluations);
  std::vector<zerofleet::v1::GameRecord> games = ReadAll(dir);
  ASSERT_EQ(games.size(), 20u);
  int64_t moves = 0;
  for (const auto& game : games) {
    EXPECT_EQ(game.game(), "tictactoe");
    EXPECT_THAT(game.model_versions(), ::testing::ElementsAre(7));
    EXPECT_THAT(game.game_id(), ::testing::StartsWith("test/"));
    moves += game.num_positions();
  }
  EXPECT_EQ(stats.moves, moves);
  // The metrics carry the same counts.
  bool found_games = false;
  for (const prometheus::MetricFamily& family : registry->Collect()) {
    if (family.name == "zf_actor_games_total") {
      found_games = true;
      EXPECT_EQ(family.metric.at(0).counter.value, 20);
    }
  }
  EXPECT_TRUE(found_games);
}

TEST(ActorTest, ReanalysisSearchesItsOwnGamesAgainForItsShareOfTheEvaluations) {
  auto server = StartServer(Fake(3));
  ASSERT_NE(server, nullptr);
  const std::string dir = TempDir("reanalysis");
  ASSERT_OK_AND_ASSIGN(auto sink, FileGameSink::Create({.dir = dir, .actor_id = "test"}));
  auto registry = std::make_shared<prometheus::Registry>();
  ActorOptions options = SmallOptions(80);
  options.reanalysis_share = 0.5;
  options.reanalysis_window = 10;
  ASSERT_OK_AND_ASSIGN(auto actor,
                       Actor::Create(options, Connect(server->port()), sink.get(), registry));
  ASSERT_OK(actor->Start());
  ASSERT_OK(actor->Wait(absl::Now() + absl::Seconds(120)));
  actor->Stop();
  sink->Close();
  const ActorStats stats = actor->stats();
  EXPECT_EQ(stats.games + stats.reanalysis_games, 80);
  EXPECT_GT(stats.reanalysis_games, 0);
  EXPECT_GT(stats.games, 0);
  // The share is steered per worker from the evaluations counted so far; the first games of
  // each worker have nothing to reanalyse yet.
  const double share = static_cast<double>(stats.reanalysis_leaf_evaluations) /
                       static_cast<double>(stats.leaf_evaluations);
  EXPECT_GT(share, 0.3) << stats.reanalysis_leaf_evaluations << " of " << stats.leaf_evaluations;
  EXPECT_LT(share, 0.7) << stats.reanalysis_leaf_evaluations << " of " << stats.leaf_evaluations;

  std::vector<zerofleet::v1::GameRecord> games = ReadAll(dir);
  ASSERT_EQ(games.size(), 80u);
  std::set<std::string> played_positions;  // the planes of each self-play game
  for (const auto& game : games) {
    if (!game.reanalysis()) played_positions.insert(game.planes());
  }
  int64_t reanalysed = 0;
  for (const auto& game : games) {
    if (!game.reanalysis()) continue;
    ++reanalysed;
    // The positions of one of the actor's own games, every one with a policy target.
    EXPECT_TRUE(played_positions.contains(game.planes())) << game.game_id();
    EXPECT_EQ(game.full_search(), std::string(static_cast<size_t>(game.num_positions()), '\1'));
  }
  EXPECT_EQ(reanalysed, stats.reanalysis_games);
  for (const prometheus::MetricFamily& family : registry->Collect()) {
    if (family.name == "zf_actor_reanalysis_games_total") {
      EXPECT_EQ(family.metric.at(0).counter.value, static_cast<double>(stats.reanalysis_games));
    }
    if (family.name == "zf_actor_games_total") {
      EXPECT_EQ(family.metric.at(0).counter.value, static_cast<double>(stats.games));
    }
  }
}

TEST(ActorTest, KeepsPlayingWhenTheServerIsRestartedOnTheSamePort) {
  std::shared_ptr<FakeBackend> first = Fake(1);
  auto server = StartServer(first);
  ASSERT_NE(server, nullptr);
  const int port = server->port();
  const std::string dir = TempDir("restart");
  ASSERT_OK_AND_ASSIGN(auto sink, FileGameSink::Create({.dir = dir, .actor_id = "test"}));
  ASSERT_OK_AND_ASSIGN(auto actor,
                       Actor::Create(SmallOptions(16), Connect(port), sink.get(), nullptr));
  // Hold the first batch in the backend so the server goes down with work in flight.
  first->PauseRuns();
  ASSERT_OK(actor->Start());
  ASSERT_TRUE(testing::WaitFor([&] { return first->NumBlockedRuns() == 1; }));
  {
    Thread shutdown("shutdown", [&] { server->Shutdown(); });
    ASSERT_TRUE(testing::WaitFor([&] { return !server->serving(); }));
    first->ResumeRuns();
  }
  server.reset();
  auto restarted = StartServer(Fake(2), absl::StrCat("127.0.0.1:", port));
  ASSERT_NE(restarted, nullptr);
  ASSERT_OK(actor->Wait(absl::Now() + absl::Seconds(120)));
  actor->Stop();
  sink->Close();
  std::vector<zerofleet::v1::GameRecord> games = ReadAll(dir);
  ASSERT_EQ(games.size(), 16u);
  std::set<int64_t> versions;
  for (const auto& game : games)
    versions.insert(game.model_versions().begin(), game.model_versions().end());
  EXPECT_TRUE(versions.count(2)) << "no game was played by the restarted server";
  EXPECT_EQ(actor->stats().model_version, 2);
}

TEST(ActorTest, PutsGamesIntoReplayShardsThroughTheReplaySink) {
  auto server = StartServer(Fake(4));
  ASSERT_NE(server, nullptr);
  const std::string dir = TempDir("replay");
  std::vector<std::unique_ptr<replay::ReplayServer>> shards;
  replay::ShardedReplayWriterOptions writer_options;
  for (int i = 0; i < 2; ++i) {
    replay::ReplayServerOptions o;
    o.listen = "127.0.0.1:0";
    o.dir = absl::StrCat(dir, "/shard", i);
    o.capacity_positions = 100000;
    o.min_size_to_sample = 10;
    o.max_positions_per_game = 16;
    o.max_sample_positions = 64;
    o.insert_workers.num_threads = 2;
    auto shard = replay::ReplayServer::Create(o);
    ASSERT_OK(shard.status());
    writer_options.shards.push_back(absl::StrCat("127.0.0.1:", (*shard)->port()));
    shards.push_back(std::move(*shard));
  }
  writer_options.seed = 1;
  ASSERT_OK_AND_ASSIGN(auto writer, replay::ShardedReplayWriter::Create(writer_options));
  ReplayGameSink sink(std::move(writer));
  ASSERT_OK_AND_ASSIGN(auto actor,
                       Actor::Create(SmallOptions(12), Connect(server->port()), &sink, nullptr));
  ASSERT_OK(actor->Start());
  ASSERT_OK(actor->Wait(absl::Now() + absl::Seconds(120)));
  ASSERT_OK(sink.Flush(absl::Now() + absl::Seconds(60)));
  EXPECT_EQ(sink.writer().stats().acked, 12);
  EXPECT_EQ(sink.writer().stats().rejected, 0);
  int64_t stored = 0;
  for (const auto& shard : shards) stored += shard->shard().stats().games;
  EXPECT_EQ(stored, 12);
  sink.Close();
  for (auto& shard : shards) shard->Shutdown();
  std::filesystem::remove_all(dir);
}

// An evaluator that holds every request until Release(); after that it answers at once (inside
// Submit) with FakeBackend's function.
class HoldingEvaluator final : public AsyncEvaluator {
 public:
  absl::Status Submit(std::span<const uint8_t> planes, int rows, Callback done) override {
    absl::MutexLock lock(&mu_);
    ++submitted_;
    held_.push_back({std::vector<uint8_t>(planes.begin(), planes.end()), rows, std::move(done)});
    max_held_ = std::max(max_held_, static_cast<int>(held_.size()));
    if (released_) AnswerAll();
    return absl::OkStatus();
  }
  int held() {
    absl::MutexLock lock(&mu_);
    return static_cast<int>(held_.size());
  }
  int max_held() {
    absl::MutexLock lock(&mu_);
    return max_held_;
  }
  void Release() {
    absl::MutexLock lock(&mu_);
    released_ = true;
    AnswerAll();
  }

 private:
  struct Held {
    std::vector<uint8_t> planes;
    int rows;
    Callback done;
  };
  void AnswerAll() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const inference::ModelSpec spec = TicTacToeSpec();
    for (Held& h : held_) {
      Result result;
      result.rows = h.rows;
      result.model_version = 3;
      result.policy_logits.resize(static_cast<size_t>(h.rows) * spec.num_actions);
      result.wdl.resize(static_cast<size_t>(h.rows) * 3);
      for (int i = 0; i < h.rows; ++i) {
        FakeBackend::Evaluate(
            3, std::span<const uint8_t>(h.planes).subspan(i * spec.PlaneSize(), spec.PlaneSize()),
            std::span<float>(result.policy_logits).subspan(i * spec.num_actions, spec.num_actions),
            std::span<float>(result.wdl).subspan(i * 3, 3));
      }
      h.done(std::move(result));
    }
    held_.clear();
  }

  absl::Mutex mu_;
  std::vector<Held> held_ ABSL_GUARDED_BY(mu_);
  int submitted_ ABSL_GUARDED_BY(mu_) = 0;
  int max_held_ ABSL_GUARDED_BY(mu_) = 0;
  bool released_ ABSL_GUARDED_BY(mu_) = false;
};

TEST(ActorTest, OneWorkerKeepsTwoRequestsInFlight) {
  auto evaluator = std::make_shared<HoldingEvaluator>();
  const std::string dir = TempDir("inflight");
  ASSERT_OK_AND_ASSIGN(auto sink, FileGameSink::Create({.dir = dir, .actor_id = "test"}));
  ActorOptions options = SmallOptions(6);
  options.workers = 1;
  ASSERT_OK_AND_ASSIGN(auto actor, Actor::Create(options, evaluator, sink.get(), nullptr));
  ASSERT_OK(actor->Start());
  // Neither request is answered, yet the single worker has sent a second one.
  ASSERT_TRUE(testing::WaitFor([&] { return evaluator->held() == 2; }));
  EXPECT_EQ(actor->stats().requests_in_flight, 2);
  evaluator->Release();
  ASSERT_OK(actor->Wait(absl::Now() + absl::Seconds(120)));
  EXPECT_EQ(evaluator->max_held(), 2);  // never more than requests_in_flight
  EXPECT_EQ(actor->stats().games, 6);
  EXPECT_EQ(actor->stats().model_version, 3);
}

TEST(ActorTest, StopDropsGamesInFlightAndWaitSaysCancelled) {
  auto evaluator = std::make_shared<HoldingEvaluator>();
  const std::string dir = TempDir("stop");
  ASSERT_OK_AND_ASSIGN(auto sink, FileGameSink::Create({.dir = dir, .actor_id = "test"}));
  ASSERT_OK_AND_ASSIGN(auto actor, Actor::Create(SmallOptions(0), evaluator, sink.get(), nullptr));
  ASSERT_OK(actor->Start());
  ASSERT_TRUE(testing::WaitFor([&] { return evaluator->held() == 4; }));  // 2 workers x 2
  actor->Stop();
  EXPECT_EQ(actor->Wait(absl::Now()).code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(actor->stats().games, 0);
  evaluator->Release();  // late answers land in the dead workers' mailboxes harmlessly
  EXPECT_EQ(sink->games_written(), 0);
}

TEST(ActorTest, AModelThatDoesNotFitTheGameStopsTheActorWithInvalidArgument) {
  auto backend = FakeBackend::Create(
      {.spec = {.input_channels = 2, .board_height = 3, .board_width = 3, .num_actions = 5}});
  ASSERT_OK(backend.status());
  auto server = StartServer(std::shared_ptr<FakeBackend>(std::move(*backend)));
  ASSERT_NE(server, nullptr);
  const std::string dir = TempDir("misfit");
  ASSERT_OK_AND_ASSIGN(auto sink, FileGameSink::Create({.dir = dir, .actor_id = "test"}));
  ASSERT_OK_AND_ASSIGN(
      auto actor, Actor::Create(SmallOptions(4), Connect(server->port()), sink.get(), nullptr));
  ASSERT_OK(actor->Start());
  const absl::Status status = actor->Wait(absl::Now() + absl::Seconds(60));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
}

TEST(ActorOptionsTest, ValidateNamesTheBadField) {
  ActorOptions options = ActorOptions::ForGame("connect4");
  EXPECT_OK(options.Validate());
  options.requests_in_flight = 1;
  EXPECT_THAT(options.Validate().message(), ::testing::HasSubstr("requests_in_flight"));
  options = ActorOptions::ForGame("chess");
  EXPECT_EQ(options.Validate().code(), absl::StatusCode::kInvalidArgument);
  options = ActorOptions::ForGame("tictactoe");
  options.actor_id = "bad id";
  EXPECT_THAT(options.Validate().message(), ::testing::HasSubstr("actor_id"));
  options = ActorOptions::ForGame("tictactoe");
  options.reanalysis_share = 0.95;
  EXPECT_THAT(options.Validate().message(), ::testing::HasSubstr("reanalysis_share"));
  options.reanalysis_share = 0.5;
  options.reanalysis_window = 0;
  EXPECT_THAT(options.Validate().message(), ::testing::HasSubstr("reanalysis_window"));
  EXPECT_EQ(
      Actor::Create(ActorOptions::ForGame("tictactoe"), nullptr, nullptr, nullptr).status().code(),
      absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace zf::actor
