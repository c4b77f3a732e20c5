#include "search/minimax.h"

#include "common/testing/status_matchers.h"
#include "games/connect4/connect4.h"
#include "games/dotsboxes/dotsboxes.h"
#include "games/tictactoe/tictactoe.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zf::search {
namespace {

using ::testing::ElementsAre;
using ::zf::testing::IsOkAndHolds;
using ::zf::testing::StatusIs;

games::TicTacToe Play(std::initializer_list<int> moves) {
  games::TicTacToe g;
  for (int m : moves) g.Apply(m);
  return g;
}

TEST(MinimaxSolverTest, TicTacToeIsADraw) {
  MinimaxSolver<games::TicTacToe> solver;
  EXPECT_THAT(solver.Value(games::TicTacToe()), IsOkAndHolds(0));
  // Memoized by hash: each position is solved at most once, and tic-tac-toe has 4,520
  // non-terminal legal positions (5,478 in all); the win cut-off skips some of them.
  EXPECT_GT(solver.positions_solved(), 0);
  EXPECT_LE(solver.positions_solved(), 4520);
}

TEST(MinimaxSolverTest, FindsWinAndBlock) {
  MinimaxSolver<games::TicTacToe> solver;
  // X: 0, 1; O: 3, 4. X to move wins with 2 (O would otherwise win with 5).
  EXPECT_THAT(solver.OptimalActions(Play({0, 3, 1, 4})), IsOkAndHolds(ElementsAre(2)));
  // X: 0, 8; O: 4. O to move must not lose: a corner reply loses, an edge draws.
  EXPECT_THAT(solver.OptimalActions(Play({0, 4, 8})), IsOkAndHolds(ElementsAre(1, 3, 5, 7)));
  // X took a corner, O replies at an edge and loses.
  EXPECT_THAT(solver.Value(Play({0, 1})), IsOkAndHolds(1));
}

TEST(MinimaxSolverTest, ExtraTurnsKeepTheSign) {
  // Dots and Boxes 1x1: whoever draws the fourth line takes the only box; with 4 lines and
  // alternating turns the second player always does.
  MinimaxSolver<games::DotsAndBoxes> solver;
  ASSERT_OK_AND_ASSIGN(games::DotsAndBoxes g, games::DotsAndBoxes::Create(1, 1));
  EXPECT_THAT(solver.Value(g), IsOkAndHolds(-1));
  // Three lines drawn around the box: the mover takes it and wins.
  g.Apply(0);
  g.Apply(1);
  g.Apply(2);
  EXPECT_THAT(solver.Value(g), IsOkAndHolds(1));
  EXPECT_THAT(solver.OptimalActions(g), IsOkAndHolds(ElementsAre(3)));
}

TEST(MinimaxSolverTest, RefusesLargeGames) {
  MinimaxSolver<games::ConnectFour> solver(/*max_positions=*/1000);
  EXPECT_THAT(solver.Value(games::ConnectFour()),
              StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_THAT(solver.OptimalActions(games::ConnectFour()),
              StatusIs(absl::StatusCode::kResourceExhausted));
}

}  // namespace
}  // namespace zf::search
