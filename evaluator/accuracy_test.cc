#include "evaluator/accuracy.h"

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "common/testing/status_matchers.h"
#include "games/connect4/connect4.h"
#include "games/connect4/solver.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "players/player.h"

namespace zf::evaluator {
namespace {

using ::testing::HasSubstr;
using ::zf::testing::StatusIs;

games::ConnectFour Replay(const AccuracyPosition& p) {
  games::ConnectFour g;
  for (const std::string& m : p.moves) g.Apply(*g.ParseAction(m));
  return g;
}

TEST(AccuracyTest, TheStandardSetIsSolvedRightAndDecisive) {
  const std::vector<AccuracyPosition>& positions = ConnectFourAccuracyPositions();
  ASSERT_GE(positions.size(), 100u);
  games::ConnectFourSolver solver;
  // Every position replays, is from ply 8 on, and (a sample, for time) is solved as stored.
  for (size_t i = 0; i < positions.size(); ++i) {
    const games::ConnectFour g = Replay(positions[i]);
    ASSERT_FALSE(g.IsTerminal());
    EXPECT_GE(g.NumMoves(), 8);
    if (i % 10 != 0 || g.NumMoves() < 14) continue;
    absl::StatusOr<std::vector<games::ConnectFourSolver::Outcome>> outcomes =
        solver.MoveOutcomes(g);
    ASSERT_TRUE(outcomes.ok()) << outcomes.status();
    for (int col = 0; col < 7; ++col) {
      const char expected = !g.IsLegal(col) ? '-' : "LDW"[static_cast<int>((*outcomes)[col]) + 1];
      EXPECT_EQ(positions[i].outcomes[col], expected) << "position " << i << " column " << col;
    }
  }
}

TEST(AccuracyTest, PerfectPlayIsExactlyRightAndRandomPlayIsNot) {
  const std::vector<AccuracyPosition>& all = ConnectFourAccuracyPositions();
  std::vector<AccuracyPosition> late;  // quick to solve
  for (const AccuracyPosition& p : all) {
    if (p.moves.size() >= 16) late.push_back(p);
  }
  ASSERT_GE(late.size(), 30u);
  players::PerfectPlayer<games::ConnectFour, games::ConnectFourSolver> perfect(/*seed=*/1);
  absl::StatusOr<AccuracyResult> r = MeasureAccuracy(perfect, games::ConnectFour(), late);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->correct, r->positions);
  EXPECT_EQ(r->positions, static_cast<int>(late.size()));
  EXPECT_DOUBLE_EQ(r->accuracy, 1.0);
  EXPECT_EQ(r->win_positions + r->draw_positions, r->positions);

  players::RandomPlayer<games::ConnectFour> random(/*seed=*/1);
  r = MeasureAccuracy(random, games::ConnectFour(), late);
  ASSERT_TRUE(r.ok());
  EXPECT_LT(r->correct, r->positions);
  EXPECT_LT(r->interval.lower, r->accuracy);
  EXPECT_GT(r->interval.upper, r->accuracy);
}

TEST(AccuracyTest, WilsonIntervalMatchesKnownValues) {
  // 84 of 100: the Wilson interval is [0.7558, 0.8991].
  Interval i = WilsonInterval(84, 100);
  EXPECT_NEAR(i.lower, 0.7558, 1e-3);
  EXPECT_NEAR(i.upper, 0.8991, 1e-3);
  i = WilsonInterval(10, 10);
  EXPECT_NEAR(i.upper, 1.0, 1e-12);
  EXPECT_NEAR(i.lower, 0.7225, 1e-3);
  i = WilsonInterval(0, 0);
  EXPECT_EQ(i.lower, 0.0);
  EXPECT_EQ(i.upper, 1.0);
}

TEST(AccuracyTest, BadPositionSetsAreRefusedNamingTheLine) {
  EXPECT_THAT(ParseAccuracyPositions("# only a comment\n", 7),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no positions")));
  EXPECT_THAT(ParseAccuracyPositions("3,3 WWL\n", 7),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("line 1: OUTCOMES must have one character per action (7)")));
  EXPECT_THAT(ParseAccuracyPositions("\n3,3 WWLXLLL\n", 7),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("line 2: OUTCOMES may")));
  EXPECT_THAT(ParseAccuracyPositions("3,3 WWWWWW-\n", 7),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not decisive")));
  EXPECT_THAT(ParseAccuracyPositions("3,3\n", 7),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected MOVES OUTCOMES")));
  EXPECT_THAT(ParseAccuracyPositions("3,,3 WWLLLLL\n", 7),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty move")));
  EXPECT_THAT(ParseAccuracyPositions("3,3, WWLLLLL\n", 7),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty move")));
  // Tabs and CRLF line ends are whitespace; '-' is the start position.
  EXPECT_EQ(ParseAccuracyPositions("3,3\tWWLLLLL\r\n- DDDWDDD\n", 7)->size(), 2u);
  // A set that parses but does not replay is refused when measured.
  absl::StatusOr<std::vector<AccuracyPosition>> bad =
      ParseAccuracyPositions("0,0,0,0,0,0,0 WLLLLLL\n", 7);
  ASSERT_TRUE(bad.ok());
  players::RandomPlayer<games::ConnectFour> random(1);
  EXPECT_THAT(MeasureAccuracy(random, games::ConnectFour(), *bad),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is not legal there")));
  // Round trip.
  const std::string text = FormatAccuracyPositions(*bad, {"a header"});
  EXPECT_THAT(text, HasSubstr("# a header\n0,0,0,0,0,0,0 WLLLLLL\n"));
  EXPECT_EQ(ParseAccuracyPositions(text, 7)->size(), 1u);
}

TEST(AccuracyTest, MadePositionsAreDecisiveDistinctAndLateEnough) {
  players::RandomPlayer<games::ConnectFour> a(1), b(2);
  games::ConnectFourSolver solver;
  MakePositionsOptions options;
  options.positions = 20;
  options.min_ply = 14;  // quick to solve
  options.per_game = 2;
  absl::StatusOr<std::vector<AccuracyPosition>> made =
      MakeConnectFourAccuracyPositions(a, b, solver, options);
  ASSERT_TRUE(made.ok()) << made.status();
  ASSERT_EQ(made->size(), 20u);
  // Formatting and parsing them again checks that each is decisive.
  ASSERT_TRUE(ParseAccuracyPositions(FormatAccuracyPositions(*made, {}), 7).ok());
  absl::flat_hash_set<uint64_t> hashes;
  for (const AccuracyPosition& p : *made) {
    EXPECT_GE(p.moves.size(), 14u);
    EXPECT_TRUE(hashes.insert(Replay(p).Hash()).second);
  }
  // Too few games for the count: an error, not a short set.
  options.max_games = 1;
  EXPECT_THAT(MakeConnectFourAccuracyPositions(a, b, solver, options).status(),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("of 20 decisive positions in 1 games")));
  options.min_ply = 42;
  EXPECT_THAT(MakeConnectFourAccuracyPositions(a, b, solver, options).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("min_ply")));
}

}  // namespace
}  // namespace zf::evaluator
