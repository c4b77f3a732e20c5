// `zf ratings` over a real evaluation log, and `zf evaluator`'s refusals of bad flags.
#include <unistd.h>

#include <filesystem>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/testing/status_matchers.h"
#include "evaluator/ratings.h"
#include "evaluator/results_log.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/zf_cli_testing.h"

namespace zf {
namespace {

using ::testing::HasSubstr;
using zerofleet::v1::EvaluationGame;
using ::zf::testing::ExpectUsageError;
using ::zf::testing::ProcessResult;
using ::zf::testing::Zf;

class CliEvaluatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(::testing::TempDir(), "/cli_evaluator_test_", ::getpid(), "_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Games between random (0), v1 (200) and v2 (400) in the rating model, colours alternating.
  void WriteGames(int per_pair) {
    ASSERT_OK_AND_ASSIGN(auto log, evaluator::ResultsLog::Open(dir_ + "/evaluation"));
    std::mt19937_64 rng(3);
    const std::pair<const char*, double> players[] = {{"random", 0}, {"v1", 200}, {"v2", 400}};
    for (const auto& [a, ra] : players) {
      for (const auto& [b, rb] : players) {
        if (ra >= rb) continue;
        for (int k = 0; k < per_pair; ++k) {
          const bool a_first = k % 2 == 0;
          const double d = (a_first ? ra - rb : rb - ra);
          const double win = evaluator::ExpectedScore(d - 50);
          const double loss = evaluator::ExpectedScore(-d - 50);
          const double x = std::uniform_real_distribution<double>(0, 1)(rng);
          EvaluationGame g;
          g.set_first(a_first ? a : b);
          g.set_second(a_first ? b : a);
          g.set_result(x < win          ? EvaluationGame::FIRST_WON
                       : x < win + loss ? EvaluationGame::SECOND_WON
                                        : EvaluationGame::DRAW);
          g.set_game("connect4");
          g.set_match(absl::StrCat(b, " vs ", a));
          ASSERT_OK(log->Append(g));
        }
      }
    }
  }
  std::string dir_;
};

TEST_F(CliEvaluatorTest, RatingsPrintsTheTableStrongestFirst) {
  WriteGames(200);
  const ProcessResult text = Zf({"ratings", "--dir", dir_});
  ASSERT_EQ(text.exit_code, 0) << text.stderr_text;
  EXPECT_THAT(text.stdout_text, HasSubstr("600 games in"));
  const size_t v2 = text.stdout_text.find("\nv2 "), v1 = text.stdout_text.find("\nv1 ");
  const size_t random = text.stdout_text.find("\nrandom ");
  ASSERT_NE(v2, std::string::npos);
  EXPECT_LT(v2, v1);
  EXPECT_LT(v1, random);
  EXPECT_THAT(text.stdout_text, HasSubstr("(anchor)"));

  const ProcessResult json = Zf({"ratings", "--dir", dir_, "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.stderr_text;
  EXPECT_THAT(json.stdout_text, HasSubstr("\"games\": 600"));
  EXPECT_THAT(json.stdout_text, HasSubstr("\"player\": \"v2\""));
  EXPECT_THAT(json.stdout_text, HasSubstr("\"anchor\": \"random\""));

  // Another anchor moves every rating; an unknown one is named.
  const ProcessResult v1_anchor = Zf({"ratings", "--dir", dir_, "--anchor", "v1", "--json"});
  EXPECT_EQ(v1_anchor.exit_code, 0) << v1_anchor.stderr_text;
  const ProcessResult missing = Zf({"ratings", "--dir", dir_, "--anchor", "gnugo:3"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.stderr_text, HasSubstr("anchor gnugo:3 played no game"));
}

TEST_F(CliEvaluatorTest, RatingsSaysWhatIsMissing) {
  ExpectUsageError({"ratings"}, "--dir");
  const ProcessResult none = Zf({"ratings", "--dir", dir_});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_THAT(none.stderr_text, HasSubstr("no evaluation log"));
}

TEST_F(CliEvaluatorTest, EvaluatorRefusesBadFlagsBeforeDoingAnything) {
  ExpectUsageError({"evaluator", "--game", "connect4", "--dir", dir_}, "--model_service");
  ExpectUsageError({"evaluator", "--model_service", "127.0.0.1:1", "--game", "connect4"}, "--dir");
  ExpectUsageError({"evaluator", "--model_service", "127.0.0.1:1", "--dir", dir_, "--game",
                    "dotsboxes", "--anchors", "random,perfect"},
                   "perfect");
  ExpectUsageError({"evaluator", "--model_service", "127.0.0.1:1", "--dir", dir_, "--game",
                    "connect4", "--anchors", "random,gtp:gnugo"},
                   "GTP engines play go only");
  ExpectUsageError({"evaluator", "--model_service", "127.0.0.1:1", "--dir", dir_, "--game",
                    "connect4", "--games_per_opponent", "3"},
                   "even");
  ExpectUsageError({"evaluator", "--model_service", "127.0.0.1:1", "--dir", dir_, "--game",
                    "connect4", "--gate"},
                   "--gate_listen");
  ExpectUsageError({"evaluator", "--model_service", "127.0.0.1:1", "--dir", dir_, "--game",
                    "connect4", "--gate", "--gate_listen", "127.0.0.1:0", "--sprt_alpha", "0.7"},
                   "alpha");
}

}  // namespace
}  // namespace zf
