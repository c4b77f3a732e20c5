#include "evaluator/results_log.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zf::evaluator {
namespace {

using ::testing::HasSubstr;
using zerofleet::v1::EvaluationGame;
using ::zf::testing::StatusIs;

EvaluationGame Game(const std::string& first, const std::string& second,
                    EvaluationGame::Result result, uint64_t seed = 1) {
  EvaluationGame g;
  g.set_first(first);
  g.set_second(second);
  g.set_result(result);
  g.set_game("tictactoe");
  g.set_moves(9);
  g.set_seed(seed);
  g.set_match(absl::StrCat(first, " vs ", second));
  return g;
}

class ResultsLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(::testing::TempDir(), "/results_log_test_", ::getpid(), "_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(ResultsLogTest, GamesSurviveReopeningAndCanBeReadWhileOpen) {
  {
    ASSERT_OK_AND_ASSIGN(auto log, ResultsLog::Open(dir_));
    EXPECT_TRUE(log->games().empty());
    ASSERT_OK(log->Append(Game("v1", "random", EvaluationGame::FIRST_WON)));
    ASSERT_OK(log->Append(Game("random", "v1", EvaluationGame::DRAW)));
    ASSERT_OK_AND_ASSIGN(auto read, ResultsLog::Read(dir_));
    ASSERT_EQ(read.size(), 2u);
    EXPECT_EQ(read[1].first(), "random");
  }
  ASSERT_OK_AND_ASSIGN(auto log, ResultsLog::Open(dir_));
  ASSERT_EQ(log->games().size(), 2u);
  ASSERT_OK(log->Append(Game("v2", "v1", EvaluationGame::SECOND_WON)));
  const std::vector<GameOutcome> outcomes = ToOutcomes(log->games());
  ASSERT_EQ(outcomes.size(), 3u);
  EXPECT_EQ(outcomes[0].outcome, Outcome::kFirstWon);
  EXPECT_EQ(outcomes[1].outcome, Outcome::kDraw);
  EXPECT_EQ(outcomes[2].outcome, Outcome::kSecondWon);
  EXPECT_EQ(outcomes[2].first, "v2");
}

TEST_F(ResultsLogTest, RefusesGamesItCouldNotRate) {
  ASSERT_OK_AND_ASSIGN(auto log, ResultsLog::Open(dir_));
  EXPECT_THAT(log->Append(Game("v1", "v1", EvaluationGame::DRAW)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("against itself")));
  EXPECT_THAT(log->Append(Game("v1", "", EvaluationGame::DRAW)),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(log->Append(Game("v1", "random", EvaluationGame::RESULT_UNSPECIFIED)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("without a result")));
  EvaluationGame no_game = Game("v1", "random", EvaluationGame::DRAW);
  no_game.clear_game();
  EXPECT_THAT(log->Append(no_game), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_TRUE(log->games().empty());
}

TEST_F(ResultsLogTest, AForeignRecordIsDataLossNotSilence) {
  {
    replay::LogOptions options;
    options.dir = dir_;
    ASSERT_OK_AND_ASSIGN(auto raw,
                         replay::Log::Open(options, [](auto, auto) { return absl::OkStatus(); }));
    ASSERT_OK(raw->Append("\xff\xff\xff not a proto").status());
  }
  EXPECT_THAT(ResultsLog::Open(dir_), StatusIs(absl::StatusCode::kDataLoss));
  EXPECT_THAT(ResultsLog::Read(dir_), StatusIs(absl::StatusCode::kDataLoss));
  EXPECT_THAT(ResultsLog::Read(dir_ + "/missing"), StatusIs(absl::StatusCode::kNotFound));
}

// A writer killed with SIGKILL at any moment keeps every game whose Append had returned.
TEST_F(ResultsLogTest, AcknowledgedGamesSurviveKill9) {
  int acks[2];
  ASSERT_EQ(pipe(acks), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(acks[0]);
    auto log = ResultsLog::Open(dir_);
    if (!log.ok()) _exit(3);
    for (int k = 0;; ++k) {
      if (!(*log)->Append(Game("v1", "random", EvaluationGame::FIRST_WON, k)).ok()) _exit(4);
      char byte = 1;
      if (write(acks[1], &byte, 1) != 1) _exit(5);
    }
  }
  close(acks[1]);
  int acknowledged = 0;
  char byte;
  while (acknowledged < 50 && read(acks[0], &byte, 1) == 1) ++acknowledged;
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  while (read(acks[0], &byte, 1) == 1) ++acknowledged;  // acks written before the kill
  close(acks[0]);
  ASSERT_TRUE(WIFSIGNALED(status));
  ASSERT_EQ(acknowledged >= 50, true);
  ASSERT_OK_AND_ASSIGN(auto log, ResultsLog::Open(dir_));
  const auto games = log->games();
  EXPECT_GE(static_cast<int>(games.size()), acknowledged);
  for (size_t k = 0; k < games.size(); ++k) EXPECT_EQ(games[k].seed(), k);  // in order, no gap
}

}  // namespace
}  // namespace zf::evaluator
