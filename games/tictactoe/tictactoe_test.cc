#include "games/tictactoe/tictactoe.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "games/perft.h"
#include "games/testing/conformance.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zf::games {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::IsEmpty;

struct TicTacToeTraits {
  using GameType = TicTacToe;
  static TicTacToe Make() { return TicTacToe(); }
  static constexpr int kNumPlayouts = 300;
};
INSTANTIATE_TYPED_TEST_SUITE_P(TicTacToe, GameConformanceTest, ::testing::Types<TicTacToeTraits>);

TicTacToe Play(const std::vector<int>& actions) {
  TicTacToe game;
  for (int action : actions) {
    EXPECT_TRUE(game.IsLegal(action)) << action << "\n" << game.ToString();
    game.Apply(action);
  }
  return game;
}

std::vector<int> Legal(const TicTacToe& game) {
  std::vector<int> out;
  game.LegalActions(&out);
  return out;
}

TEST(TicTacToeTest, PerftMatchesKnownCounts) {
  EXPECT_THAT(Perft(TicTacToe(), 10),
              ElementsAre(1u, 9u, 72u, 504u, 3024u, 15120u, 54720u, 148176u, 200448u, 127872u, 0u));
}

TEST(TicTacToeTest, StartPosition) {
  TicTacToe game;
  EXPECT_EQ(game.Name(), "tictactoe");
  EXPECT_EQ(game.NumActions(), 9);
  EXPECT_EQ(game.MaxGameLength(), 9);
  EXPECT_EQ(game.ToPlay(), 0);
  EXPECT_THAT(Legal(game), ElementsAre(0, 1, 2, 3, 4, 5, 6, 7, 8));
  EXPECT_EQ(game.Shape(), (PlaneShape{3, 3, 3}));
}

TEST(TicTacToeTest, XWinsWithTopRow) {
  TicTacToe game = Play({0, 3, 1, 4});
  EXPECT_FALSE(game.IsTerminal());
  EXPECT_EQ(game.ToPlay(), 0);
  game.Apply(2);
  EXPECT_TRUE(game.IsTerminal());
  EXPECT_EQ(game.Winner(), 0);
  EXPECT_EQ(game.Returns(), (Returns{1.0f, -1.0f}));
  EXPECT_THAT(Legal(game), IsEmpty());
  EXPECT_FALSE(game.IsLegal(5));
}

TEST(TicTacToeTest, OWinsWithAntiDiagonal) {
  const TicTacToe game = Play({0, 2, 1, 4, 8, 6});
  EXPECT_TRUE(game.IsTerminal());
  EXPECT_EQ(game.Winner(), 1);
  EXPECT_EQ(game.Returns(), (Returns{-1.0f, 1.0f}));
}

TEST(TicTacToeTest, XWinsWithColumnOnLastMove) {
  // X O X / X O O / X X O: X's ninth stone completes the left column.
  const TicTacToe game = Play({0, 1, 2, 4, 3, 5, 7, 8, 6});
  EXPECT_TRUE(game.IsTerminal());
  EXPECT_EQ(game.Returns(), (Returns{1.0f, -1.0f}));
}

TEST(TicTacToeTest, FullBoardWithoutLineIsDraw) {
  // X O X / X O O / O X X
  TicTacToe game = Play({0, 1, 2, 4, 3, 5, 7, 6});
  EXPECT_FALSE(game.IsTerminal());
  EXPECT_THAT(Legal(game), ElementsAre(8));
  game.Apply(8);
  EXPECT_TRUE(game.IsTerminal());
  EXPECT_EQ(game.Winner(), -1);
  EXPECT_EQ(game.Returns(), (Returns{0.0f, 0.0f}));
}

TEST(TicTacToeTest, OccupiedCellsAreIllegal) {
  const TicTacToe game = Play({4, 0});
  EXPECT_FALSE(game.IsLegal(4));
  EXPECT_FALSE(game.IsLegal(0));
  EXPECT_TRUE(game.IsLegal(8));
  EXPECT_THAT(Legal(game), ElementsAre(1, 2, 3, 5, 6, 7, 8));
  EXPECT_EQ(game.CellOwner(4), 0);
  EXPECT_EQ(game.CellOwner(0), 1);
  EXPECT_EQ(game.CellOwner(8), -1);
}

TEST(TicTacToeTest, EncodeIsFromThePlayerToMove) {
  // X in the centre, O top-left; X to move.
  const TicTacToe game = Play({4, 0});
  std::vector<uint8_t> planes(27);
  game.Encode(planes.data());
  EXPECT_THAT(planes, ElementsAreArray<uint8_t>({
                          0, 0, 0, 0, 1, 0, 0, 0, 0,  // X (to move)
                          1, 0, 0, 0, 0, 0, 0, 0, 0,  // O
                          1, 1, 1, 1, 1, 1, 1, 1, 1,  // ones
                      }));
  // X then plays c3 (8): O is to move, so O's stones come first.
  TicTacToe next = game;
  next.Apply(8);
  next.Encode(planes.data());
  EXPECT_THAT(planes, ElementsAreArray<uint8_t>({
                          1, 0, 0, 0, 0, 0, 0, 0, 0,  // O (to move)
                          0, 0, 0, 0, 1, 0, 0, 0, 1,  // X
                          1, 1, 1, 1, 1, 1, 1, 1, 1,  // ones
                      }));
}

TEST(TicTacToeTest, ActionText) {
  const TicTacToe game;
  EXPECT_EQ(game.ActionToString(0), "a1");
  EXPECT_EQ(game.ActionToString(2), "c1");
  EXPECT_EQ(game.ActionToString(5), "c2");
  EXPECT_EQ(game.ActionToString(6), "a3");
  EXPECT_EQ(game.ActionToString(8), "c3");
  EXPECT_EQ(*game.ParseAction("b2"), 4);
  EXPECT_EQ(*game.ParseAction("a3"), 6);
  EXPECT_EQ(*game.ParseAction("7"), 7);
  for (const char* bad : {"d1", "a4", "a0", "b", "b22", "9", "x"}) {
    const absl::StatusOr<int> parsed = game.ParseAction(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  }
}

TEST(TicTacToeTest, ToStringShowsBoardAndTurn) {
  EXPECT_EQ(Play({4, 0}).ToString(),
            "1 O . .\n"
            "2 . X .\n"
            "3 . . .\n"
            "  a b c\n"
            "X to move\n");
  EXPECT_EQ(Play({0, 3, 1, 4, 2}).ToString(),
            "1 X X X\n"
            "2 O O .\n"
            "3 . . .\n"
            "  a b c\n"
            "X wins\n");
}

TEST(TicTacToeTest, TranspositionsHashEquallyAndDifferentPositionsDiffer) {
  EXPECT_EQ(Play({0, 4, 8}).Hash(), Play({8, 4, 0}).Hash());
  EXPECT_NE(Play({0, 4, 8}).Hash(), Play({0, 8, 4}).Hash());
  EXPECT_NE(TicTacToe().Hash(), Play({4}).Hash());
}

TEST(TicTacToeTest, SymmetriesAreTheEightOfTheSquare) {
  const std::vector<Symmetry> symmetries = TicTacToe().Symmetries();
  ASSERT_EQ(symmetries.size(), 8u);
  EXPECT_EQ(symmetries[0].name, "identity");
  auto find = [&](const std::string& name) {
    for (const Symmetry& s : symmetries) {
      if (s.name == name) return s;
    }
    ADD_FAILURE() << "no symmetry " << name;
    return Symmetry{};
  };
  EXPECT_THAT(find("mirror").action_map, ElementsAre(2, 1, 0, 5, 4, 3, 8, 7, 6));
  EXPECT_THAT(find("flip").action_map, ElementsAre(6, 7, 8, 3, 4, 5, 0, 1, 2));
  EXPECT_THAT(find("rot90").action_map, ElementsAre(2, 5, 8, 1, 4, 7, 0, 3, 6));
  EXPECT_THAT(find("transpose").action_map, ElementsAre(0, 3, 6, 1, 4, 7, 2, 5, 8));
}

}  // namespace
}  // namespace zf::games
