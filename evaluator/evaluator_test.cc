#include "evaluator/evaluator.h"

#include <atomic>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/metrics/exposition.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace zf::evaluator {
namespace {

using ::testing::HasSubstr;
using zerofleet::v1::EvaluationGame;
using ::zf::testing::StatusIs;

// Players of known strength (Elo), games drawn from the rating model (ratings.h) with the seed
// the evaluator gives. Fails every call after `fail_after` games when that is >= 0.
class FakeRunner : public MatchRunner {
 public:
  explicit FakeRunner(std::map<std::string, double> elo) : elo_(std::move(elo)) {}
  absl::StatusOr<EvaluationGame> Play(const std::string& first, const std::string& second,
                                      int opening_moves, uint64_t seed) override {
    if (fail_after >= 0 && played >= fail_after) return absl::UnavailableError("engine died");
    for (const std::string* player : {&first, &second}) {
      if (unavailable.contains(*player)) return absl::NotFoundError("no checkpoint: " + *player);
    }
    ++played;
    EXPECT_EQ(opening_moves, 2);
    std::mt19937_64 rng(seed);
    const double x = std::uniform_real_distribution<double>(0, 1)(rng);
    const double diff = elo_.at(first) - elo_.at(second);
    const double win = ExpectedScore(diff - 60), loss = ExpectedScore(-diff - 60);
    EvaluationGame game;
    game.set_result(x < win          ? EvaluationGame::FIRST_WON
                    : x < win + loss ? EvaluationGame::SECOND_WON
                                     : EvaluationGame::DRAW);
    game.set_moves(12);
    return game;
  }
  bool Available(const std::string& player) const override { return !unavailable.contains(player); }
  int played = 0;
  int fail_after = -1;
  std::set<std::string> unavailable;

 private:
  std::map<std::string, double> elo_;
};

class EvaluatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(::testing::TempDir(), "/evaluator_test_", ::getpid(), "_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    Reopen();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Reopen() {
    log_.reset();
    auto log = ResultsLog::Open(dir_);
    ASSERT_TRUE(log.ok()) << log.status();
    log_ = *std::move(log);
  }
  EvaluatorOptions Options(bool gate) {
    EvaluatorOptions o;
    o.game = "connect4";
    o.anchors = {"random", "mcts:200"};
    o.games_per_opponent = 20;
    o.gate = gate;
    o.sprt.elo0 = 0;
    o.sprt.elo1 = 50;
    o.registry = &registry_;
    return o;
  }
  // Games in the log per match name.
  std::map<std::string, int> Matches() {
    std::map<std::string, int> out;
    for (const EvaluationGame& g : log_->games()) ++out[g.match()];
    return out;
  }

  std::string dir_;
  std::unique_ptr<ResultsLog> log_;
  prometheus::Registry registry_;
  std::atomic<bool> stop_{false};
  FakeRunner runner_{{{"random", 0},
                      {"mcts:200", 300},
                      {"v1", 100},
                      {"v2", 250},
                      {"v3", 380},
                      {"v4", 330},
                      {"v5", 700},
                      {"v6", 420},
                      {"v7", 450}}};
};

TEST_F(EvaluatorTest, PlaysAnchorsPreviousAndBestWithAlternatingColours) {
  ASSERT_OK_AND_ASSIGN(auto evaluator, Evaluator::Create(Options(false), log_.get(), &runner_));
  ASSERT_OK_AND_ASSIGN(VersionReport r1, evaluator->EvaluateVersion(1, stop_));
  EXPECT_EQ(r1.matches.size(), 2u);  // anchors only
  EXPECT_TRUE(r1.best);
  ASSERT_TRUE(r1.rating.has_value());
  ASSERT_OK_AND_ASSIGN(VersionReport r2, evaluator->EvaluateVersion(2, stop_));
  EXPECT_EQ(r2.matches.size(), 3u);  // anchors and v1 (the previous, also the best)
  ASSERT_OK_AND_ASSIGN(VersionReport r3, evaluator->EvaluateVersion(3, stop_));
  ASSERT_OK_AND_ASSIGN(VersionReport r4, evaluator->EvaluateVersion(4, stop_));
  const std::map<std::string, int> matches = Matches();
  EXPECT_EQ(matches.at("v1 vs random"), 20);
  EXPECT_EQ(matches.at("v1 vs mcts:200"), 20);
  EXPECT_EQ(matches.at("v2 vs v1"), 20);
  EXPECT_EQ(matches.at("v4 vs v3"), 20);
  // v4 played the best too when v3 was not it.
  const EvaluatorStatus status = evaluator->status();
  EXPECT_EQ(status.newest_version, 4);
  EXPECT_EQ(status.games, 20 * static_cast<int64_t>(log_->games().size() / 20));
  ASSERT_TRUE(status.ratings.has_value());
  // The best is the highest-rated version.
  for (const PlayerRating& p : status.ratings->players) {
    if (ParseVersionPlayer(p.player).has_value()) {
      EXPECT_EQ(VersionPlayer(status.best_version), p.player);
      break;
    }
  }
  // Colours alternate and every game of a match has its own seed.
  int v_first = 0;
  std::set<uint64_t> seeds;
  for (const EvaluationGame& g : log_->games()) {
    if (g.match() != "v2 vs random") continue;
    v_first += g.first() == "v2";
    seeds.insert(g.seed());
    EXPECT_EQ(g.game(), "connect4");
    EXPECT_EQ(g.opening_moves(), 2);
  }
  EXPECT_EQ(v_first, 10);
  EXPECT_EQ(seeds.size(), 20u);
  EXPECT_THAT(evaluator->EvaluateVersion(4, stop_),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("not newer")));
  EXPECT_THAT(metrics::TextExposition(registry_),
              HasSubstr("zf_evaluator_version{which=\"newest\"} 4"));

  // A restart finds every version done, whichever was best when each was played.
  const int played = runner_.played;
  evaluator.reset();
  Reopen();
  prometheus::Registry fresh;
  EvaluatorOptions options = Options(false);
  options.registry = &fresh;
  ASSERT_OK_AND_ASSIGN(auto again, Evaluator::Create(options, log_.get(), &runner_));
  EXPECT_EQ(again->status().newest_version, 4);
  EXPECT_EQ(again->status().best_version, status.best_version);
  ASSERT_OK(again->EvaluateVersion(5, stop_).status());
  // Anchors and v4, and the best when it is not v4.
  EXPECT_EQ(runner_.played - played, 60 + (status.best_version != 4 ? 20 : 0));

  // A best whose network is gone (pruned) is not an opponent: the next available one is.
  ASSERT_OK(again->EvaluateVersion(6, stop_).status());  // weaker than v5, the best
  ASSERT_EQ(again->status().best_version, 5);
  runner_.unavailable.insert("v5");
  ASSERT_OK_AND_ASSIGN(VersionReport r7, again->EvaluateVersion(7, stop_));
  EXPECT_NE(again->status().best_version, 5);
  for (const MatchScore& m : r7.matches) EXPECT_NE(m.opponent, "v5");
}

TEST_F(EvaluatorTest, GateAcceptsStrongerAndRejectsWeakerVersions) {
  ASSERT_OK_AND_ASSIGN(auto evaluator, Evaluator::Create(Options(true), log_.get(), &runner_));
  ASSERT_OK_AND_ASSIGN(VersionReport r1, evaluator->EvaluateVersion(1, stop_));
  EXPECT_TRUE(r1.best);  // nothing to beat
  EXPECT_FALSE(r1.sprt.has_value());
  ASSERT_OK_AND_ASSIGN(VersionReport r2, evaluator->EvaluateVersion(2, stop_));  // +150
  ASSERT_TRUE(r2.sprt.has_value());
  EXPECT_EQ(r2.sprt->decision, SprtDecision::kAccept);
  EXPECT_TRUE(r2.best);
  ASSERT_OK_AND_ASSIGN(VersionReport r3, evaluator->EvaluateVersion(3, stop_));  // +130 over v2
  EXPECT_TRUE(r3.best);
  ASSERT_OK_AND_ASSIGN(VersionReport r4, evaluator->EvaluateVersion(4, stop_));  // -50 vs v3
  EXPECT_EQ(r4.sprt->decision, SprtDecision::kReject);
  EXPECT_FALSE(r4.best);
  EXPECT_EQ(evaluator->status().best_version, 3);
  ASSERT_OK_AND_ASSIGN(VersionReport r5, evaluator->EvaluateVersion(5, stop_));
  EXPECT_TRUE(r5.best);
  const EvaluatorStatus status = evaluator->status();
  EXPECT_EQ(status.gate_accepted, 3);
  EXPECT_EQ(status.gate_rejected, 1);
  EXPECT_EQ(Matches().count("v5 vs v3 (gate)"), 1u);  // the gate match is against the best
  EXPECT_EQ(Matches().count("v5 vs v4"), 1u);         // and the previous is played too
  EXPECT_THAT(metrics::TextExposition(registry_),
              HasSubstr("zf_evaluator_gate_decisions_total{decision=\"reject\"} 1"));

  // A restart re-makes every decision from the log without playing a game.
  const int played = runner_.played;
  evaluator.reset();
  Reopen();
  prometheus::Registry fresh;
  EvaluatorOptions options = Options(true);
  options.registry = &fresh;
  ASSERT_OK_AND_ASSIGN(auto again, Evaluator::Create(options, log_.get(), &runner_));
  EXPECT_EQ(runner_.played, played);
  const EvaluatorStatus restored = again->status();
  EXPECT_EQ(restored.best_version, 5);
  EXPECT_EQ(restored.newest_version, 5);
  EXPECT_EQ(restored.gate_accepted, 3);
  EXPECT_EQ(restored.gate_rejected, 1);
  EXPECT_EQ(restored.games, status.games);
}

TEST_F(EvaluatorTest, AMatchCutShortResumesWhereItStopped) {
  ASSERT_OK_AND_ASSIGN(auto evaluator, Evaluator::Create(Options(false), log_.get(), &runner_));
  ASSERT_OK(evaluator->EvaluateVersion(1, stop_).status());
  runner_.fail_after = runner_.played + 27;  // dies in v2's second match
  EXPECT_THAT(evaluator->EvaluateVersion(2, stop_),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("engine died")));
  evaluator.reset();
  Reopen();
  runner_.fail_after = -1;
  ASSERT_OK_AND_ASSIGN(auto again, Evaluator::Create(Options(false), log_.get(), &runner_));
  EXPECT_EQ(again->status().newest_version, 1);  // v2 is not done
  const int before = runner_.played;
  ASSERT_OK(again->EvaluateVersion(2, stop_).status());
  EXPECT_EQ(runner_.played - before, 60 - 27);  // only the games not yet in the log
  const std::map<std::string, int> matches = Matches();
  EXPECT_EQ(matches.at("v2 vs random"), 20);
  EXPECT_EQ(matches.at("v2 vs mcts:200"), 20);
  EXPECT_EQ(matches.at("v2 vs v1"), 20);
}

// zf run --resume evaluates its newest checkpoint, not the version a stop cut short, so the log
// can hold a version cut short before complete ones: it must not hold them back at the next
// restart (it once did: the restored newest stayed at the version before it, long pruned, and
// every later evaluation failed on playing it).
TEST_F(EvaluatorTest, AVersionCutShortDoesNotHoldBackTheOnesAfterIt) {
  ASSERT_OK_AND_ASSIGN(auto evaluator, Evaluator::Create(Options(false), log_.get(), &runner_));
  ASSERT_OK(evaluator->EvaluateVersion(1, stop_).status());
  runner_.fail_after = runner_.played + 27;  // a stop in v2's second match
  EXPECT_FALSE(evaluator->EvaluateVersion(2, stop_).ok());
  evaluator.reset();
  Reopen();
  runner_.fail_after = -1;
  ASSERT_OK_AND_ASSIGN(auto resumed, Evaluator::Create(Options(false), log_.get(), &runner_));
  EXPECT_EQ(resumed->status().newest_version, 1);
  ASSERT_OK(resumed->EvaluateVersion(3, stop_).status());  // the resumed run's newest
  resumed.reset();
  Reopen();
  ASSERT_OK_AND_ASSIGN(auto again, Evaluator::Create(Options(false), log_.get(), &runner_));
  EXPECT_EQ(again->status().newest_version, 3);
  runner_.unavailable = {"v1", "v2"};  // pruned
  ASSERT_OK(again->EvaluateVersion(4, stop_).status());
  EXPECT_EQ(Matches().at("v4 vs v3"), 20);

  // A previous version whose network is gone is skipped too; the anchors still rate the next.
  runner_.unavailable.insert("v4");
  ASSERT_OK_AND_ASSIGN(VersionReport r5, again->EvaluateVersion(5, stop_));
  for (const MatchScore& m : r5.matches) EXPECT_NE(m.opponent, "v4");
  EXPECT_EQ(again->status().newest_version, 5);
  ASSERT_TRUE(r5.rating.has_value());
}

TEST_F(EvaluatorTest, StopsBetweenGames) {
  ASSERT_OK_AND_ASSIGN(auto evaluator, Evaluator::Create(Options(false), log_.get(), &runner_));
  stop_ = true;
  EXPECT_THAT(evaluator->EvaluateVersion(1, stop_), StatusIs(absl::StatusCode::kCancelled));
  EXPECT_EQ(runner_.played, 0);
}

// The final line of one demo named "best v2" (24 games, Elo 496.8) over v9 (60 games, 496.5):
// a tie read as a ranking. "best" alone now means the intervals separate it.
TEST(BestVersionTextTest, NamesTheBestOnlyWhereTheIntervalsSeparateIt) {
  auto rating = [](const char* player, double elo, double lower, double upper) {
    PlayerRating r;
    r.player = player;
    r.elo = elo;
    r.lower = lower;
    r.upper = upper;
    return r;
  };
  EvaluatorStatus status;
  EXPECT_EQ(BestVersionText(status), "");
  status.best_version = 2;
  EXPECT_EQ(BestVersionText(status), "best v2 (not rated)");
  status.ratings = RatingTable();
  status.ratings->players = {rating("v2", 496.8, 380, 610), rating("mcts:200", 450, 450, 450),
                             rating("v9", 496.5, 430, 560), rating("v1", 0, -80, 70)};
  EXPECT_EQ(BestVersionText(status), "best v2 (tied within the intervals with v9)");
  status.ratings->players = {rating("v9", 700, 640, 760), rating("v2", 496.8, 380, 610),
                             rating("mcts:200", 650, 650, 650)};  // an anchor is not a version
  status.best_version = 9;
  EXPECT_EQ(BestVersionText(status), "best v9");
  status.ratings->players = {rating("v9", 700, 500, 900), rating("v8", 690, 490, 890),
                             rating("v7", 680, 480, 880), rating("v6", 670, 470, 870),
                             rating("v5", 660, 460, 860)};
  EXPECT_EQ(BestVersionText(status),
            "best v9 (tied within the intervals with v8, v7, v6 and 1 more)");
}

TEST(EvaluatorOptionsTest, NamesTheBadField) {
  EvaluatorOptions o;
  o.game = "connect4";
  EXPECT_OK(o.Validate());
  o.games_per_opponent = 3;
  EXPECT_THAT(o.Validate(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("even")));
  o = EvaluatorOptions{};
  o.game = "connect4";
  o.anchors = {"mcts:200"};
  EXPECT_THAT(o.Validate(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("rating anchor")));
  o.anchors = {"random", "v3"};
  EXPECT_THAT(o.Validate(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("\"v3\"")));
  o.anchors = {"random"};
  o.gate = true;
  o.sprt.alpha = 0;
  EXPECT_THAT(o.Validate(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("alpha")));
  EXPECT_EQ(ParseVersionPlayer("v12"), 12);
  EXPECT_EQ(ParseVersionPlayer("v012"), std::nullopt);
  EXPECT_EQ(ParseVersionPlayer("random"), std::nullopt);
  EXPECT_EQ(ParseVersionPlayer("v0"), std::nullopt);
}

}  // namespace
}  // namespace zf::evaluator
