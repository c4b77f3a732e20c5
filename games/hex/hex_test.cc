#include "games/hex/hex.h"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/testing/status_matchers.h"
#include "games/testing/conformance.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "search/minimax.h"

namespace zf::games {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::zf::testing::StatusIs;

template <int N, bool kSwap>
struct HexTraits {
  using GameType = Hex;
  static Hex Make() { return *Hex::Create(N, kSwap); }
};
using HexBoards = ::testing::Types<HexTraits<3, false>, HexTraits<5, true>, HexTraits<7, false>,
                                   HexTraits<11, true>>;
INSTANTIATE_TYPED_TEST_SUITE_P(Hex, GameConformanceTest, HexBoards);

// An independent winner of a full board: a breadth-first flood fill from Black's top edge over
// Black's stones (rows of cells, owner 0 or 1 each).
int FloodFillWinner(const std::vector<int>& owner, int n) {
  std::vector<bool> seen(owner.size(), false);
  std::deque<int> queue;
  for (int col = 0; col < n; ++col) {
    if (owner[col] == 0) {
      seen[col] = true;
      queue.push_back(col);
    }
  }
  const int steps[6][2] = {{-1, 0}, {-1, 1}, {0, -1}, {0, 1}, {1, -1}, {1, 0}};
  while (!queue.empty()) {
    const int cell = queue.front();
    queue.pop_front();
    if (cell / n == n - 1) return 0;  // Black reached the bottom
    for (const auto& s : steps) {
      const int r = cell / n + s[0];
      const int c = cell % n + s[1];
      if (r < 0 || r >= n || c < 0 || c >= n) continue;
      const int next = r * n + c;
      if (!seen[next] && owner[next] == 0) {
        seen[next] = true;
        queue.push_back(next);
      }
    }
  }
  return 1;  // a full board has one winner: no top-bottom chain means a left-right one
}

TEST(HexTest, TheWinnerIsTheFloodFillWinnerOfTheFullBoard) {
  std::mt19937 rng(11);
  for (int n : {3, 5, 8, 11, 13}) {
    for (int g = 0; g < 100; ++g) {
      // A random full board, filled alternately in a random order; the game stops at the first
      // connection, which a full board completes for the same player.
      std::vector<int> order(n * n);
      for (int i = 0; i < n * n; ++i) order[i] = i;
      std::shuffle(order.begin(), order.end(), rng);
      std::vector<int> owner(n * n);
      for (int i = 0; i < n * n; ++i) owner[order[i]] = i % 2;
      Hex game = *Hex::Create(n);
      for (int i = 0; !game.IsTerminal(); ++i) {
        ASSERT_LT(i, n * n);
        game.Apply(order[i]);
      }
      EXPECT_EQ(game.Winner(), FloodFillWinner(owner, n)) << game.ToString();
      EXPECT_EQ(game.Returns()[game.Winner()], 1.0f);
    }
  }
}

// Nash's strategy stealing: the first player wins every board. With the swap rule the second
// player wins instead (every first move is a win, which White takes by swapping, or a loss).
TEST(HexTest, SolvedSmallBoards) {
  search::MinimaxSolver<Hex> solver;
  EXPECT_EQ(*solver.Value(*Hex::Create(3)), 1);
  search::MinimaxSolver<Hex> with_swap;
  EXPECT_EQ(*with_swap.Value(*Hex::Create(3, /*swap_rule=*/true)), -1);
}

TEST(HexTest, SwapTakesTheMirrorImageOfBlacksFirstStone) {
  Hex game = *Hex::Create(5, /*swap_rule=*/true);
  EXPECT_FALSE(game.IsLegal(game.SwapAction()));  // only as White's first move
  game.Apply(*game.ParseAction("b1"));            // row 0, column 1
  ASSERT_TRUE(game.IsLegal(game.SwapAction()));
  game.Apply(game.SwapAction());
  EXPECT_EQ(game.CellOwner(1), -1);
  EXPECT_EQ(game.CellOwner(1 * 5 + 0), 1);  // row 1, column 0: "a2"
  EXPECT_EQ(game.ToPlay(), 0);
  EXPECT_FALSE(game.IsLegal(game.SwapAction()));
  EXPECT_EQ(Hex::Create(5)->ToString(),
            "    a b c d e\n"
            " 1  . . . . .\n"
            " 2   . . . . .\n"
            " 3    . . . . .\n"
            " 4     . . . . .\n"
            " 5      . . . . .\n"
            "X to move\n");
}

TEST(HexTest, NamesSizesAndText) {
  EXPECT_EQ(Hex::Create()->Name(), "hex:11");
  EXPECT_EQ(Hex::Create(7, true)->Name(), "hex:7:swap");
  EXPECT_THAT(Hex::Create(14).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must be in 3..13")));
  EXPECT_THAT(Hex::FromParameters("7:pie").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("hex:N:swap")));
  const Hex game = *Hex::Create(13, true);
  EXPECT_EQ(*game.ParseAction("m13"), 168);
  EXPECT_EQ(*game.ParseAction("A1"), 0);
  EXPECT_EQ(*game.ParseAction("swap"), 169);
  EXPECT_EQ(game.ActionToString(168), "m13");
  EXPECT_THAT(game.ParseAction("n1").status(), StatusIs(absl::StatusCode::kInvalidArgument));
  std::vector<int> legal;
  game.LegalActions(&legal);
  EXPECT_EQ(legal.size(), 169u);
}

}  // namespace
}  // namespace zf::games
