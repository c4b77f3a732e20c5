#include "gtp/vertex.h"

#include <vector>

#include "gtest/gtest.h"

namespace zf::gtp {
namespace {

TEST(VertexTest, GoVerticesAreTheGamesOwnNotation) {
  for (int n : {5, 9, 19}) {
    games::Go game = *games::Go::Create(n);
    for (int action = 0; action < game.NumActions(); ++action) {
      const std::string vertex = VertexOf(game, action);
      EXPECT_EQ(vertex, game.ActionToString(action));
      ASSERT_TRUE(ParseVertex(game, vertex).ok()) << vertex;
      EXPECT_EQ(*ParseVertex(game, vertex), action);
    }
  }
  games::Go game;
  EXPECT_EQ(*ParseVertex(game, "a1"), 72);  // bottom-left of 9 x 9
  EXPECT_EQ(*ParseVertex(game, "J9"), 8);   // top-right: J follows H
  EXPECT_EQ(*ParseVertex(game, "PASS"), 81);
}

TEST(VertexTest, RejectsWhatIsNoVertexOfTheBoard) {
  games::Go game;
  for (const char* bad : {"", "I5", "K1", "A0", "A10", "5", "D", "D4x", "-", "Z9", "A01x"}) {
    absl::StatusOr<int> parsed = ParseVertex(game, bad);
    EXPECT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  games::TicTacToe ttt;
  for (const char* bad : {"D1", "A4", "pass", "4", "a"}) {
    EXPECT_FALSE(ParseVertex(ttt, bad).ok()) << bad;
  }
  games::ConnectFour c4;
  for (const char* bad : {"H", "H1", "pass", "3", "A8"}) {
    EXPECT_FALSE(ParseVertex(c4, bad).ok()) << bad;
  }
}

TEST(VertexTest, TicTacToeRowsCountFromTheBottom) {
  games::TicTacToe game;
  EXPECT_EQ(*ParseVertex(game, "A3"), 0);  // the game's "a1", top left
  EXPECT_EQ(*ParseVertex(game, "b2"), 4);
  EXPECT_EQ(*ParseVertex(game, "C1"), 8);
  for (int action = 0; action < 9; ++action) {
    EXPECT_EQ(*ParseVertex(game, VertexOf(game, action)), action);
  }
  EXPECT_EQ(VertexOf(game, 2), "C3");
}

TEST(VertexTest, ConnectFourLettersAreColumnsAndVerticesShowWhereTheDiscLands) {
  games::ConnectFour game;
  EXPECT_EQ(*ParseVertex(game, "A"), 0);
  EXPECT_EQ(*ParseVertex(game, "d"), 3);
  EXPECT_EQ(*ParseVertex(game, "D5"), 3);  // the row is ignored: the disc falls
  EXPECT_EQ(*ParseVertex(game, "G1"), 6);
  EXPECT_EQ(VertexOf(game, 3), "D1");
  game.Apply(3);
  EXPECT_EQ(VertexOf(game, 3), "D2");
  EXPECT_EQ(VertexOf(game, 6), "G1");
}

TEST(VertexTest, HexVerticesAreHexGuisRowsFromTheTopAndTheSwap) {
  for (int n : {3, 9, 11, 13}) {
    games::Hex game = *games::Hex::Create(n, /*swap_rule=*/true);
    for (int action = 0; action < game.SwapAction(); ++action) {
      const std::string vertex = VertexOf(game, action);
      EXPECT_EQ(vertex, game.ActionToString(action));
      EXPECT_EQ(*ParseVertex(game, vertex), action) << vertex;
    }
  }
  games::Hex game = *games::Hex::Create(11, /*swap_rule=*/true);
  EXPECT_EQ(*ParseVertex(game, "a1"), 0);     // top left
  EXPECT_EQ(*ParseVertex(game, "I1"), 8);     // Hex keeps the letter i
  EXPECT_EQ(*ParseVertex(game, "k11"), 120);  // bottom right
  EXPECT_EQ(*ParseVertex(game, "swap-pieces"), game.SwapAction());
  EXPECT_EQ(*ParseVertex(game, "SWAP"), game.SwapAction());
  EXPECT_EQ(VertexOf(game, game.SwapAction()), "swap-pieces");
  for (const char* bad : {"", "pass", "l1", "a0", "a12", "5", "121", "swap-sides", "a"}) {
    EXPECT_FALSE(ParseVertex(game, bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace zf::gtp
