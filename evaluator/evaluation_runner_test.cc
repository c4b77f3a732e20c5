#include "evaluator/evaluation_runner.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/testing/scratch_dir.h"
#include "common/testing/status_matchers.h"
#include "games/connect4/connect4.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sgf/go_sgf.h"

namespace zf::evaluator {
namespace {

using ::testing::HasSubstr;

TEST(PlayersMatchRunnerTest, WritesEachGoGameAsSgf) {
  const std::string dir = zf::testing::ScratchDir("evaluation_runner_sgf");
  PlayersMatchRunner<games::Go> runner(*games::Go::Create(5), dir + "/checkpoints", 8,
                                       dir + "/sgf");
  ASSERT_OK_AND_ASSIGN(zerofleet::v1::EvaluationGame game, runner.Play("mcts:8", "random", 2, 7));
  const std::string path = dir + "/sgf/mcts_8-vs-random-0000000000000007.sgf";
  ASSERT_TRUE(std::filesystem::exists(path));
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  ASSERT_OK_AND_ASSIGN(sgf::GoGameRecord record, sgf::ReadGoGame(text.str()));
  EXPECT_EQ(static_cast<int>(record.moves.size()), game.moves());
  EXPECT_EQ(record.black, "mcts:8");
  EXPECT_EQ(record.white, "random");
  EXPECT_EQ(record.comments[0], "random opening move");
  EXPECT_THAT(record.comments[2], HasSubstr("for Black, 8 visits; top:"));
  EXPECT_EQ(record.result[0] == 'B', game.result() == zerofleet::v1::EvaluationGame::FIRST_WON)
      << record.result;
}

TEST(PlayersMatchRunnerTest, OtherGamesAndNoDirectoryWriteNothing) {
  const std::string dir = zf::testing::ScratchDir("evaluation_runner_no_sgf");
  PlayersMatchRunner<games::ConnectFour> c4(games::ConnectFour(), dir, 8, dir + "/sgf");
  ASSERT_OK(c4.Play("random", "random", 2, 1).status());
  PlayersMatchRunner<games::Go> go(*games::Go::Create(5), dir, 8);
  ASSERT_OK(go.Play("random", "random", 2, 1).status());
  EXPECT_FALSE(std::filesystem::exists(dir + "/sgf"));
}

}  // namespace
}  // namespace zf::evaluator
