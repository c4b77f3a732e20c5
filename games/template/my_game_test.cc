// TEMPLATE: the tests every game has. The conformance suite checks the games/game.h contract;
// it cannot check that the rules are the game's rules. Add, for your game, checks against an
// outside reference: published perft counts (games/perft.h), a naive second implementation
// compared over random games, known positions and results (see games/othello/othello_test.cc).
#include "games/template/my_game.h"

#include <vector>

#include "games/perft.h"
#include "games/testing/conformance.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zf::games {
namespace {

struct MyGameTraits {
  using GameType = MyGame;
  static MyGame Make() { return MyGame(); }
};
INSTANTIATE_TYPED_TEST_SUITE_P(MyGame, GameConformanceTest, ::testing::Types<MyGameTraits>);

// The rules' own facts: every ordering of the 7 cells is a game, so perft is 7!/(7-d)!.
TEST(MyGameTest, PerftCountsEveryOrderOfTheCells) {
  EXPECT_THAT(Perft(MyGame(), 7), ::testing::ElementsAre(1, 7, 42, 210, 840, 2520, 5040, 5040));
}

TEST(MyGameTest, WhoeverFillsTheLastCellWins) {
  MyGame game;
  for (int cell = 0; cell < MyGame::kCells; ++cell) game.Apply(cell);
  ASSERT_TRUE(game.IsTerminal());
  EXPECT_EQ(game.Returns()[0], 1.0f);  // 7 cells: player 0 filled the last
}

}  // namespace
}  // namespace zf::games
