#include "evaluator/ratings.h"

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zf::evaluator {
namespace {

using ::testing::HasSubstr;
using ::zf::testing::StatusIs;

// Plays `games_per_order` games for each ordered pair of `elo` in the rating model (ratings.h),
// with first-move advantage `advantage` and draw width `draw_width`.
std::vector<GameOutcome> Simulate(const std::map<std::string, double>& elo, int games_per_order,
                                  double advantage, double draw_width, std::mt19937_64& rng) {
  std::vector<GameOutcome> games;
  std::uniform_real_distribution<double> uniform(0, 1);
  for (const auto& [a, ra] : elo) {
    for (const auto& [b, rb] : elo) {
      if (a == b) continue;
      const double win = ExpectedScore(ra - rb + advantage - draw_width);
      const double loss = ExpectedScore(rb - ra - advantage - draw_width);
      for (int k = 0; k < games_per_order; ++k) {
        const double x = uniform(rng);
        games.push_back({a, b,
                         x < win          ? Outcome::kFirstWon
                         : x < win + loss ? Outcome::kSecondWon
                                          : Outcome::kDraw});
      }
    }
  }
  return games;
}

std::map<std::string, PlayerRating> ByName(const RatingTable& table) {
  std::map<std::string, PlayerRating> out;
  for (const PlayerRating& r : table.players) out[r.player] = r;
  return out;
}

TEST(EloTest, ExpectedScoreAndItsInverse) {
  EXPECT_DOUBLE_EQ(ExpectedScore(0), 0.5);
  EXPECT_NEAR(ExpectedScore(400), 10.0 / 11.0, 1e-12);
  EXPECT_NEAR(EloFromScore(0.75), 190.848501887865, 1e-9);
  for (double elo : {-800.0, -35.0, 0.0, 12.5, 600.0}) {
    EXPECT_NEAR(EloFromScore(ExpectedScore(elo)), elo, 1e-9);
  }
}

TEST(RatingsTest, RecoversKnownRatingsAdvantageAndDrawWidth) {
  std::mt19937_64 rng(7);
  const std::map<std::string, double> truth = {
      {"random", 0}, {"v1", 150}, {"v2", 320}, {"v3", 410}};
  const std::vector<GameOutcome> games = Simulate(truth, 3000, 40, 80, rng);
  RatingOptions options;
  options.prior_draws = 0;
  ASSERT_OK_AND_ASSIGN(RatingTable table, ComputeRatings(games, options));
  EXPECT_EQ(table.games, static_cast<int>(games.size()));
  ASSERT_EQ(table.players.size(), 4u);
  EXPECT_EQ(table.players[0].player, "v3");  // strongest first
  EXPECT_EQ(table.players[3].player, "random");
  for (const auto& [name, r] : ByName(table)) {
    const double sigma = (r.upper - r.lower) / (2 * 1.959964);
    EXPECT_NEAR(r.elo, truth.at(name), 4 * sigma + 1e-9) << name;
    if (name == "random") {
      EXPECT_EQ(r.elo, 0);
      EXPECT_EQ(r.lower, 0);
      EXPECT_EQ(r.upper, 0);
    } else {
      EXPECT_GT(sigma, 1);  // 18,000 games pin a rating to a few Elo, not to nothing
      EXPECT_LT(sigma, 15);
    }
    EXPECT_EQ(r.games, 6 * 3000);
    EXPECT_EQ(r.wins + r.draws + r.losses, r.games);
  }
  EXPECT_NEAR(table.first_move_elo, 40, 6);
  EXPECT_NEAR(table.draw_elo, 80, 6);
}

// The 95% intervals contain the true rating about 95% of the time.
TEST(RatingsTest, IntervalsHaveTheirCoverage) {
  std::mt19937_64 rng(11);
  const std::map<std::string, double> truth = {{"random", 0}, {"a", 100}, {"b", 180}, {"c", -60}};
  RatingOptions options;
  options.prior_draws = 0;
  int intervals = 0, covered = 0;
  for (int trial = 0; trial < 300; ++trial) {
    ASSERT_OK_AND_ASSIGN(RatingTable table,
                         ComputeRatings(Simulate(truth, 40, 25, 60, rng), options));
    for (const PlayerRating& r : table.players) {
      if (r.player == "random") continue;
      ++intervals;
      covered += r.lower <= truth.at(r.player) && truth.at(r.player) <= r.upper;
    }
  }
  const double coverage = static_cast<double>(covered) / intervals;
  EXPECT_GT(coverage, 0.92) << covered << " of " << intervals;
  EXPECT_LT(coverage, 0.98) << covered << " of " << intervals;
}

TEST(RatingsTest, NarrowerConfidenceGivesNarrowerIntervals) {
  std::mt19937_64 rng(3);
  const auto games = Simulate({{"random", 0}, {"v1", 200}}, 100, 0, 50, rng);
  RatingOptions wide, narrow;
  narrow.confidence = 0.5;
  ASSERT_OK_AND_ASSIGN(RatingTable w, ComputeRatings(games, wide));
  ASSERT_OK_AND_ASSIGN(RatingTable n, ComputeRatings(games, narrow));
  const PlayerRating v_wide = ByName(w).at("v1"), v_narrow = ByName(n).at("v1");
  EXPECT_DOUBLE_EQ(v_wide.elo, v_narrow.elo);
  // z(0.95) / z(0.5) = 1.959964 / 0.674490
  EXPECT_NEAR((v_wide.upper - v_wide.lower) / (v_narrow.upper - v_narrow.lower), 2.905847, 1e-4);
}

TEST(RatingsTest, ThePriorKeepsAPerfectRecordFinite) {
  std::vector<GameOutcome> games;
  for (int k = 0; k < 10; ++k) {
    games.push_back({k % 2 ? "v1" : "random", k % 2 ? "random" : "v1",
                     k % 2 ? Outcome::kFirstWon : Outcome::kSecondWon});
  }
  ASSERT_OK_AND_ASSIGN(RatingTable table, ComputeRatings(games));
  const PlayerRating v1 = ByName(table).at("v1");
  EXPECT_EQ(v1.wins, 10);
  EXPECT_GT(v1.elo, 200);
  EXPECT_LT(v1.elo, 2000);
  EXPECT_LT(v1.lower, v1.elo - 100);  // ten games say little
  // More wins, higher rating.
  for (int k = 0; k < 30; ++k) games.push_back({"v1", "random", Outcome::kFirstWon});
  ASSERT_OK_AND_ASSIGN(RatingTable more, ComputeRatings(games));
  EXPECT_GT(ByName(more).at("v1").elo, v1.elo);
}

// The evaluator's first match in a Go run: 4-0 against random, 0-4 against GNU Go, no draws
// (Go has none). Without the draw width's prior the fit ran up a ridge (a wider draw width and
// ratings spread as far apart) and said 1766 [-178265, 181798].
TEST(RatingsTest, OneSidedRecordsWithoutDrawsKeepASensibleInterval) {
  std::vector<GameOutcome> games;
  for (int k = 0; k < 4; ++k) {
    games.push_back({k % 2 ? "random" : "v2", k % 2 ? "v2" : "random",
                     k % 2 ? Outcome::kSecondWon : Outcome::kFirstWon});
    games.push_back({k % 2 ? "gnugo:1" : "v2", k % 2 ? "v2" : "gnugo:1",
                     k % 2 ? Outcome::kFirstWon : Outcome::kSecondWon});
  }
  ASSERT_OK_AND_ASSIGN(RatingTable table, ComputeRatings(games));
  const auto by_name = ByName(table);
  const PlayerRating v2 = by_name.at("v2"), gnugo = by_name.at("gnugo:1");
  EXPECT_GT(v2.elo, 0);
  EXPECT_LT(v2.elo, gnugo.elo);
  EXPECT_LT(v2.upper - v2.lower, 2000) << v2.elo << " [" << v2.lower << ", " << v2.upper << "]";
  EXPECT_LT(gnugo.upper - gnugo.lower, 4000);
  EXPECT_GT(table.draw_elo, 10);
  EXPECT_LT(table.draw_elo, 1000);
  // Where real draws are many, they and not the prior set the draw width.
  RatingOptions narrow_prior;
  narrow_prior.draw_prior_elo = 30;
  std::mt19937_64 rng(17);
  const auto drawn = Simulate({{"random", 0}, {"v1", 100}}, 1000, 0, 150, rng);
  ASSERT_OK_AND_ASSIGN(RatingTable fit, ComputeRatings(drawn, narrow_prior));
  EXPECT_NEAR(fit.draw_elo, 150, 15);
}

TEST(RatingsTest, AnchorEloShiftsEveryRating) {
  std::mt19937_64 rng(5);
  const auto games = Simulate({{"random", 0}, {"v1", 90}, {"v2", 200}}, 50, 10, 40, rng);
  RatingOptions shifted;
  shifted.anchor_elo = 1000;
  ASSERT_OK_AND_ASSIGN(RatingTable base, ComputeRatings(games));
  ASSERT_OK_AND_ASSIGN(RatingTable moved, ComputeRatings(games, shifted));
  for (const auto& [name, r] : ByName(base)) {
    EXPECT_NEAR(ByName(moved).at(name).elo, r.elo + 1000, 1e-6) << name;
  }
}

TEST(RatingsTest, NamesWhatCannotBeRated) {
  EXPECT_THAT(ComputeRatings({}), StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(ComputeRatings({{"v1", "v2", Outcome::kDraw}}),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("anchor random")));
  EXPECT_THAT(ComputeRatings({{"v1", "random", Outcome::kDraw}, {"v2", "v3", Outcome::kDraw}}),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("links v2, v3")));
  EXPECT_THAT(ComputeRatings({{"v1", "v1", Outcome::kDraw}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("v1 played itself")));
  EXPECT_THAT(ComputeRatings({{"", "random", Outcome::kDraw}}),
              StatusIs(absl::StatusCode::kInvalidArgument));
  RatingOptions no_prior;
  no_prior.prior_draws = 0;
  EXPECT_THAT(
      ComputeRatings({{"v1", "random", Outcome::kFirstWon}, {"random", "v1", Outcome::kFirstWon}},
                     no_prior),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("prior_draws")));
  RatingOptions bad;
  bad.confidence = 1;
  EXPECT_THAT(ComputeRatings({{"v1", "random", Outcome::kDraw}}, bad),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("confidence")));
  bad = RatingOptions{};
  bad.prior_draws = -1;
  EXPECT_THAT(ComputeRatings({{"v1", "random", Outcome::kDraw}}, bad),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("prior_draws")));
  bad = RatingOptions{};
  bad.draw_prior_elo = 0;
  EXPECT_THAT(ComputeRatings({{"v1", "random", Outcome::kDraw}}, bad),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("draw_prior_elo")));
  bad = RatingOptions{};
  bad.draw_prior_spread = NAN;
  EXPECT_THAT(ComputeRatings({{"v1", "random", Outcome::kDraw}}, bad),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("draw_prior_spread")));
}

TEST(RatingsTest, HundredsOfVersionsInAChain) {
  // The evaluator's shape: each version plays the previous one and the anchor.
  std::mt19937_64 rng(13);
  std::uniform_real_distribution<double> uniform(0, 1);
  std::vector<GameOutcome> games;
  std::vector<double> truth = {0};
  for (int v = 1; v <= 300; ++v) truth.push_back(truth.back() + 1);
  auto name = [](int v) { return v == 0 ? std::string("random") : "v" + std::to_string(v); };
  auto play = [&](int a, int b) {
    const double win = ExpectedScore(truth[a] - truth[b] - 30),
                 loss = ExpectedScore(truth[b] - truth[a] - 30);
    const double x = uniform(rng);
    games.push_back({name(a), name(b),
                     x < win          ? Outcome::kFirstWon
                     : x < win + loss ? Outcome::kSecondWon
                                      : Outcome::kDraw});
  };
  for (int v = 1; v <= 300; ++v) {
    for (int k = 0; k < 20; ++k)
      play(k % 2 ? v : v - 1, k % 2 ? v - 1 : v), play(k % 2 ? v : 0, k % 2 ? 0 : v);
  }
  ASSERT_OK_AND_ASSIGN(RatingTable table, ComputeRatings(games));
  EXPECT_EQ(table.players.size(), 301u);
  const PlayerRating last = ByName(table).at("v300");
  EXPECT_NEAR(last.elo, 300, 3 * (last.upper - last.lower) / (2 * 1.96));
  // The chain's slope comes through: the last 50 versions average about 250 Elo above the first
  // 50 (single ratings are +-100 here; averages of 50 are a few times tighter).
  double first50 = 0, last50 = 0;
  for (int v = 1; v <= 50; ++v) {
    first50 += ByName(table).at(name(v)).elo / 50;
    last50 += ByName(table).at(name(250 + v)).elo / 50;
  }
  EXPECT_NEAR(last50 - first50, 250, 60) << first50 << " " << last50;
}

}  // namespace
}  // namespace zf::evaluator
