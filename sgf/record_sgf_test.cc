#include "sgf/record_sgf.h"

#include "absl/strings/str_cat.h"
#include "actor/record_proto.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "search/self_play.h"
#include "search/uniform_evaluator.h"

namespace zf::sgf {
namespace {

using ::testing::HasSubstr;

zerofleet::v1::GameRecord SelfPlayRecord(const games::Go& start, uint64_t seed) {
  search::SelfPlayOptions options;
  options.mcts.num_simulations = 8;
  options.full_search_probability = 0.5f;
  options.fast_simulations = 2;
  options.seed = seed;
  auto game = search::SelfPlayGame<games::Go>::Create(start, options);
  EXPECT_TRUE(game.ok()) << game.status();
  search::UniformEvaluator<games::Go> evaluator;
  EXPECT_OK((*game)->Play(evaluator));
  auto proto = actor::ToProto((*game)->TakeRecord(), absl::StrCat("actor-1/", seed), {11, 12}, {});
  EXPECT_TRUE(proto.ok()) << proto.status();
  return *proto;
}

TEST(RecordSgfTest, SelfPlayGamesBecomeSgfThatReadsBackToTheSameMoves) {
  const games::Go start = *games::Go::Create(7, 5.5f);
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    const zerofleet::v1::GameRecord record = SelfPlayRecord(start, seed);
    ASSERT_OK_AND_ASSIGN(GoGameRecord game, GoGameFromRecord(record));
    EXPECT_EQ(game.black, "zerofleet v11-v12");
    EXPECT_EQ(game.start.Name(), start.Name());
    ASSERT_EQ(game.moves.size(), static_cast<size_t>(record.num_positions()));
    EXPECT_THAT(game.comments[0], HasSubstr("for Black\nsearch: "));
    const std::string text = WriteGoGame(game);
    EXPECT_THAT(text, HasSubstr("KM[5.5]"));
    ASSERT_OK_AND_ASSIGN(GoGameRecord back, ReadGoGame(text));
    EXPECT_EQ(back.moves, game.moves);
    EXPECT_EQ(back.comments, game.comments);
    EXPECT_EQ(back.result, game.result);
    EXPECT_EQ(back.name, absl::StrCat("actor-1/", seed));
    // The result agrees with the record's returns.
    ASSERT_FALSE(game.result.empty());
    if (game.result != "Void" && game.result != "0") {
      EXPECT_EQ(game.result[0] == 'B', record.returns(0) > 0) << game.result;
    }
  }
}

TEST(RecordSgfTest, RefusesOtherGamesAndRecordsWithoutMoves) {
  zerofleet::v1::GameRecord record = SelfPlayRecord(*games::Go::Create(5, 0.5f), 1);
  record.clear_actions();
  EXPECT_THAT(GoGameFromRecord(record).status().message(), HasSubstr("has no moves"));
  record.set_game("connect4");
  EXPECT_THAT(GoGameFromRecord(record).status().message(), HasSubstr("connect4 is not Go"));
  record = SelfPlayRecord(*games::Go::Create(5, 0.5f), 2);
  record.set_actions(1, record.actions(0));  // the same point twice
  EXPECT_THAT(GoGameFromRecord(record).status().message(), HasSubstr("move 2"));
}

}  // namespace
}  // namespace zf::sgf
