// GameSink: FileGameSink round trip, rotation, no overwrite on restart, torn tail and corruption
// reporting; ToProto output accepted by the replay shard's validator.
#include "actor/game_sink.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "actor/record_proto.h"
#include "common/testing/scratch_dir.h"
#include "common/testing/status_matchers.h"
#include "games/connect4/connect4.h"
#include "games/go/go.h"
#include "games/tictactoe/tictactoe.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "replay/validate.h"
#include "search/self_play.h"
#include "search/uniform_evaluator.h"

namespace zf::actor {
namespace {

std::string TempDir(const std::string& name) {
  return zf::testing::ScratchDir(absl::StrCat("actor_sink_", name));
}

template <typename G>
search::GameRecord PlayOne(uint64_t seed, float full_search_probability) {
  search::SelfPlayOptions options;
  options.mcts.num_simulations = 16;
  options.mcts.add_noise = true;
  options.full_search_probability = full_search_probability;
  options.fast_simulations = 4;
  options.seed = seed;
  auto game = search::SelfPlayGame<G>::Create(G(), options);
  EXPECT_TRUE(game.ok()) << game.status();
  search::UniformEvaluator<G> evaluator;
  EXPECT_OK((*game)->Play(evaluator));
  return (*game)->TakeRecord();
}

zerofleet::v1::GameRecord Proto(const std::string& id, uint64_t seed) {
  search::GameRecord record = PlayOne<games::TicTacToe>(seed, 1.0f);
  auto proto = ToProto(record, id, {3, 1, 3}, games::TicTacToe().Symmetries());
  EXPECT_TRUE(proto.ok()) << proto.status();
  return *proto;
}

TEST(RecordProtoTest, SelfPlayGamesPassTheReplayValidator) {
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    search::GameRecord record = PlayOne<games::ConnectFour>(seed, 0.5f);
    ASSERT_OK_AND_ASSIGN(
        zerofleet::v1::GameRecord proto,
        ToProto(record, absl::StrCat("g", seed), {2, 1, 2}, games::ConnectFour().Symmetries()));
    EXPECT_OK(replay::ValidateGameRecord(proto, replay::TableOptions{}));
    EXPECT_EQ(proto.num_positions(), record.NumPositions());
    EXPECT_EQ(proto.game(), "connect4");
    // The moves and the search's values travel, for replays and SGF export.
    EXPECT_EQ(std::vector<int32_t>(proto.actions().begin(), proto.actions().end()), record.actions);
    EXPECT_EQ(std::vector<float>(proto.root_values().begin(), proto.root_values().end()),
              record.root_values);
    EXPECT_THAT(proto.model_versions(), ::testing::ElementsAre(1, 2));
    // Connect Four has the mirror besides the identity; the identity is left out.
    EXPECT_EQ(proto.symmetries_size(),
              static_cast<int>(games::ConnectFour().Symmetries().size()) - 1);
    EXPECT_EQ(proto.returns(0), record.returns[0]);
    EXPECT_EQ(proto.planes().size(), record.planes.size());
  }
}

TEST(RecordProtoTest, GoGamesCarryOwnershipAndScore) {
  ASSERT_OK_AND_ASSIGN(games::Go start, games::Go::Create(5, 0.5f));
  int with_targets = 0;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    search::SelfPlayOptions options;
    options.mcts.num_simulations = 8;
    options.seed = seed;
    ASSERT_OK_AND_ASSIGN(auto game, search::SelfPlayGame<games::Go>::Create(start, options));
    search::UniformEvaluator<games::Go> evaluator;
    ASSERT_OK(game->Play(evaluator));
    const search::GameRecord record = game->TakeRecord();
    ASSERT_OK_AND_ASSIGN(zerofleet::v1::GameRecord proto,
                         ToProto(record, absl::StrCat("go", seed), {1}, start.Symmetries()));
    EXPECT_OK(replay::ValidateGameRecord(proto, replay::TableOptions{}));
    EXPECT_EQ(proto.has_final_score(), record.final_score.has_value());
    if (!proto.has_final_score()) continue;
    ++with_targets;
    EXPECT_EQ(proto.final_score(), *record.final_score);
    ASSERT_EQ(proto.final_ownership().size(), 25u);
    for (int c = 0; c < 25; ++c) {
      EXPECT_EQ(static_cast<int8_t>(proto.final_ownership()[c]), record.final_ownership[c]);
    }
  }
  EXPECT_GT(with_targets, 0);
}

TEST(RecordProtoTest, RefusesEmptyGamesAndBadIds) {
  search::GameRecord record = PlayOne<games::TicTacToe>(7, 1.0f);
  EXPECT_THAT(ToProto(record, "", {}, {}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(ToProto(record, std::string(129, 'x'), {}, {}).status().code(),
              absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(ToProto(record, "ok", {-1}, {}).status().code(), absl::StatusCode::kInvalidArgument);
  search::GameRecord empty;
  empty.game = "tictactoe";
  empty.shape = games::TicTacToe().Shape();
  empty.num_actions = 9;
  EXPECT_THAT(ToProto(empty, "e", {}, {}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(FileGameSinkTest, WritesRecordsThatReadBackWhole) {
  const std::string dir = TempDir("roundtrip");
  ASSERT_OK_AND_ASSIGN(auto sink, FileGameSink::Create({.dir = dir, .actor_id = "t1"}));
  for (int i = 0; i < 5; ++i)
    ASSERT_OK(sink->Put(Proto(absl::StrCat("id", i), i + 1), absl::Now()));
  ASSERT_OK(sink->Flush(absl::InfiniteFuture()));
  ASSERT_EQ(sink->files().size(), 1u);
  EXPECT_EQ(sink->files()[0], dir + "/games-t1-0.zfgames");
  ASSERT_OK_AND_ASSIGN(GameFile file, ReadGameFile(sink->files()[0]));
  ASSERT_EQ(file.games.size(), 5u);
  EXPECT_TRUE(file.torn_tail.empty());
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(file.games[i].game_id(), absl::StrCat("id", i));
    EXPECT_OK(replay::ValidateGameRecord(file.games[i], replay::TableOptions{}));
  }
  sink->Close();
  EXPECT_EQ(sink->Put(Proto("late", 9), absl::Now()).code(), absl::StatusCode::kCancelled);
}

TEST(FileGameSinkTest, RotatesBySizeAndNeverOverwritesOnRestart) {
  const std::string dir = TempDir("rotate");
  {
    ASSERT_OK_AND_ASSIGN(auto sink,
                         FileGameSink::Create({.dir = dir, .actor_id = "r", .max_file_bytes = 1}));
    for (int i = 0; i < 3; ++i)
      ASSERT_OK(sink->Put(Proto(absl::StrCat("a", i), i + 1), absl::Now()));
    EXPECT_EQ(sink->files().size(), 3u);  // one record per file
  }
  ASSERT_OK_AND_ASSIGN(auto again, FileGameSink::Create({.dir = dir, .actor_id = "r"}));
  ASSERT_OK(again->Put(Proto("b", 4), absl::Now()));
  EXPECT_EQ(again->files()[0], dir + "/games-r-3.zfgames");
  ASSERT_OK_AND_ASSIGN(GameFile first, ReadGameFile(dir + "/games-r-0.zfgames"));
  ASSERT_EQ(first.games.size(), 1u);
  EXPECT_EQ(first.games[0].game_id(), "a0");
}

TEST(FileGameSinkTest, ReportsATornTailAndKeepsTheRecordsBeforeIt) {
  const std::string dir = TempDir("torn");
  std::string path;
  {
    ASSERT_OK_AND_ASSIGN(auto sink, FileGameSink::Create({.dir = dir, .actor_id = "x"}));
    for (int i = 0; i < 3; ++i)
      ASSERT_OK(sink->Put(Proto(absl::StrCat("t", i), i + 1), absl::Now()));
    path = sink->files()[0];
  }
  const auto size = std::filesystem::file_size(path);
  std::filesystem::resize_file(path, size - 10);
  ASSERT_OK_AND_ASSIGN(GameFile file, ReadGameFile(path));
  EXPECT_EQ(file.games.size(), 2u);
  EXPECT_THAT(file.torn_tail, ::testing::HasSubstr("torn tail"));
  EXPECT_THAT(file.torn_tail, ::testing::HasSubstr("after record 2"));
}

TEST(FileGameSinkTest, ReportsCorruptionAsDataLoss) {
  const std::string dir = TempDir("corrupt");
  std::string path;
  {
    ASSERT_OK_AND_ASSIGN(auto sink, FileGameSink::Create({.dir = dir, .actor_id = "c"}));
    ASSERT_OK(sink->Put(Proto("c0", 1), absl::Now()));
    path = sink->files()[0];
  }
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(20);
    f.put('\x7f');
  }
  EXPECT_EQ(ReadGameFile(path).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(ReadGameFile(dir + "/none.zfgames").status().code(), absl::StatusCode::kNotFound);
}

TEST(FileGameSinkTest, RejectsBadOptions) {
  EXPECT_EQ(FileGameSink::Create({.dir = ""}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FileGameSink::Create({.dir = "/tmp/x", .actor_id = "a/b"}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace zf::actor
