#include "evaluator/sprt.h"

#include <cmath>
#include <random>

#include "common/testing/status_matchers.h"
#include "evaluator/ratings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zf::evaluator {
namespace {

using ::testing::HasSubstr;
using ::zf::testing::StatusIs;

// A match source with a known strength: the candidate scores ExpectedScore(elo) per game, with
// `draw_ratio` of the games drawn.
struct FakeMatch {
  double elo;
  double draw_ratio;
};

// Runs the SPRT on games from `match` until it decides (or max_games). Returns the decision.
SprtDecision RunToDecision(const SprtOptions& options, const FakeMatch& match, std::mt19937_64& rng,
                           int max_games = 200000) {
  const double score = ExpectedScore(match.elo);
  const double win = score - match.draw_ratio / 2, draw = match.draw_ratio;
  std::uniform_real_distribution<double> uniform(0, 1);
  double w = 0, d = 0, l = 0;
  for (int n = 1; n <= max_games; ++n) {
    const double x = uniform(rng);
    (x < win ? w : x < win + draw ? d : l) += 1;
    const SprtState state = EvaluateSprt(options, w, d, l);
    if (state.decision != SprtDecision::kContinue) return state.decision;
  }
  return SprtDecision::kContinue;
}

struct Rates {
  double accepted = 0, rejected = 0, undecided = 0;
};

Rates Trials(const SprtOptions& options, const FakeMatch& match, int trials, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Rates rates;
  for (int t = 0; t < trials; ++t) {
    switch (RunToDecision(options, match, rng)) {
      case SprtDecision::kAccept:
        rates.accepted += 1.0 / trials;
        break;
      case SprtDecision::kReject:
        rates.rejected += 1.0 / trials;
        break;
      case SprtDecision::kContinue:
        rates.undecided += 1.0 / trials;
        break;
    }
  }
  return rates;
}

// Wald's bounds make the error rates at most about alpha and beta (a little under, since the
// ratio overshoots the bound when it crosses it). 1,000 trials: one standard error of a 5% rate
// is 0.7%, so 8% is four of them above.
TEST(SprtTest, ErrorRatesAtTheHypothesesWithDraws) {
  SprtOptions options;
  options.elo0 = 0, options.elo1 = 40, options.alpha = 0.05, options.beta = 0.05;
  const Rates at_h0 = Trials(options, {0, 0.3}, 1000, 1);
  EXPECT_LT(at_h0.accepted, 0.08);
  EXPECT_EQ(at_h0.undecided, 0);
  const Rates at_h1 = Trials(options, {40, 0.3}, 1000, 2);
  EXPECT_LT(at_h1.rejected, 0.08);
  EXPECT_EQ(at_h1.undecided, 0);
  // And a real test of power: they are not just small, they are near the nominal rates and the
  // right answer wins otherwise.
  EXPECT_GT(at_h0.rejected, 0.90);
  EXPECT_GT(at_h1.accepted, 0.90);
}

TEST(SprtTest, UnequalErrorRatesWithoutDraws) {
  SprtOptions options;
  options.elo0 = -10, options.elo1 = 30, options.alpha = 0.02, options.beta = 0.2;
  const Rates at_h0 = Trials(options, {-10, 0}, 1000, 3);
  EXPECT_LT(at_h0.accepted, 0.02 + 0.018);  // 4 standard errors of 2%
  const Rates at_h1 = Trials(options, {30, 0}, 1000, 4);
  EXPECT_LT(at_h1.rejected, 0.2 + 0.05);  // 4 standard errors of 20%
  EXPECT_GT(at_h1.rejected, 0.2 - 0.12);  // beta is a real rate, not zero
}

TEST(SprtTest, ClearDifferencesAreDecidedTheRightWay) {
  SprtOptions options;
  options.elo0 = 0, options.elo1 = 20;
  EXPECT_GT(Trials(options, {120, 0.2}, 200, 5).accepted, 0.995);
  EXPECT_GT(Trials(options, {-100, 0.2}, 200, 6).rejected, 0.995);
}

TEST(SprtTest, LopsidedResultsAreNotOverCounted) {
  // 20 straight wins against H0 at 50% and H1 at elo 10: the exact ratio for a win-or-loss game
  // is 20 log(s1 / s0).
  SprtOptions options;
  options.elo0 = 0, options.elo1 = 10;
  const SprtState state = EvaluateSprt(options, 20, 0, 0);
  EXPECT_NEAR(state.llr, 20 * std::log(ExpectedScore(10) / 0.5), 0.01);
  EXPECT_EQ(state.decision, SprtDecision::kContinue);
  EXPECT_NEAR(state.upper, std::log(0.95 / 0.05), 1e-12);
  EXPECT_NEAR(state.lower, std::log(0.05 / 0.95), 1e-12);
}

TEST(SprtTest, MirroredResultsGiveTheOppositeRatio) {
  SprtOptions up, down;
  up.elo0 = -15, up.elo1 = 15;
  down.elo0 = -15, down.elo1 = 15;
  const SprtState a = EvaluateSprt(up, 70, 40, 50);
  const SprtState b = EvaluateSprt(down, 50, 40, 70);
  EXPECT_NEAR(a.llr, -b.llr, 1e-6);
  EXPECT_GT(a.llr, 0);
  EXPECT_NEAR(EvaluateSprt(up, 0, 0, 0).llr, 0, 1e-9);
}

TEST(SprtTest, OptionsAreValidated) {
  SprtOptions options;
  EXPECT_OK(options.Validate());
  options.elo1 = options.elo0;
  EXPECT_THAT(options.Validate(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("elo0 < elo1")));
  options = SprtOptions{};
  options.alpha = 0.5;
  EXPECT_THAT(options.Validate(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("alpha")));
  options = SprtOptions{};
  options.beta = 0;
  EXPECT_THAT(options.Validate(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("beta")));
  options = SprtOptions{};
  options.elo1 = 5000;
  EXPECT_THAT(options.Validate(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("1000")));
  EXPECT_EQ(SprtDecisionName(SprtDecision::kAccept), "accept");
}

}  // namespace
}  // namespace zf::evaluator
