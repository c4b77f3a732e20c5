#include "games/connect4/connect4.h"

#include <cstdint>
#include <random>
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

struct ConnectFourTraits {
  using GameType = ConnectFour;
  static ConnectFour Make() { return ConnectFour(); }
};
INSTANTIATE_TYPED_TEST_SUITE_P(ConnectFour, GameConformanceTest,
                               ::testing::Types<ConnectFourTraits>);

// An independent, deliberately naive Connect Four: a plain 2D array and a scan of every
// four-cell window after each move. The bitboard implementation is checked against it.
class NaiveConnectFour {
 public:
  static constexpr int kRows = 6;
  static constexpr int kCols = 7;

  bool IsTerminal() const { return winner_ >= 0 || moves_ == kRows * kCols; }
  int Winner() const { return winner_; }
  int ToPlay() const { return moves_ % 2; }
  std::vector<int> Legal() const {
    std::vector<int> out;
    if (IsTerminal()) return out;
    for (int c = 0; c < kCols; ++c) {
      if (board_[kRows - 1][c] < 0) out.push_back(c);
    }
    return out;
  }
  void Apply(int col) {
    int row = 0;
    while (board_[row][col] >= 0) ++row;
    board_[row][col] = ToPlay();
    ++moves_;
    if (HasFour(board_[row][col])) winner_ = board_[row][col];
  }
  // row 0 = bottom here.
  int At(int row, int col) const { return board_[row][col]; }

 private:
  bool HasFour(int player) const {
    const int directions[4][2] = {{0, 1}, {1, 0}, {1, 1}, {1, -1}};
    for (int r = 0; r < kRows; ++r) {
      for (int c = 0; c < kCols; ++c) {
        for (const auto& d : directions) {
          int k = 0;
          while (k < 4) {
            const int rr = r + d[0] * k;
            const int cc = c + d[1] * k;
            if (rr < 0 || rr >= kRows || cc < 0 || cc >= kCols || board_[rr][cc] != player) break;
            ++k;
          }
          if (k == 4) return true;
        }
      }
    }
    return false;
  }

  int board_[kRows][kCols] = {{-1, -1, -1, -1, -1, -1, -1}, {-1, -1, -1, -1, -1, -1, -1},
                              {-1, -1, -1, -1, -1, -1, -1}, {-1, -1, -1, -1, -1, -1, -1},
                              {-1, -1, -1, -1, -1, -1, -1}, {-1, -1, -1, -1, -1, -1, -1}};
  int moves_ = 0;
  int winner_ = -1;
};

void NaivePerft(const NaiveConnectFour& game, int ply, std::vector<uint64_t>* counts) {
  ++(*counts)[ply];
  if (ply + 1 >= static_cast<int>(counts->size()) || game.IsTerminal()) return;
  for (int col : game.Legal()) {
    NaiveConnectFour child = game;
    child.Apply(col);
    NaivePerft(child, ply + 1, counts);
  }
}

ConnectFour Play(const std::string& columns) {
  ConnectFour game;
  for (char ch : columns) {
    const int col = ch - '0';
    EXPECT_TRUE(game.IsLegal(col)) << col << "\n" << game.ToString();
    game.Apply(col);
  }
  return game;
}

std::vector<int> Legal(const ConnectFour& game) {
  std::vector<int> out;
  game.LegalActions(&out);
  return out;
}

TEST(ConnectFourTest, PerftIsSevenToTheDepthWhileNoGameCanEnd) {
  const std::vector<uint64_t> counts = Perft(ConnectFour(), 6);
  uint64_t expected = 1;
  for (int d = 0; d <= 6; ++d) {
    EXPECT_EQ(counts[d], expected) << "depth " << d;
    expected *= 7;
  }
}

TEST(ConnectFourTest, PerftMatchesNaiveReference) {
  constexpr int kDepth = 7;  // the first depth at which a game can end
  std::vector<uint64_t> naive(kDepth + 1, 0);
  NaivePerft(NaiveConnectFour(), 0, &naive);
  EXPECT_EQ(Perft(ConnectFour(), kDepth), naive);
  // 7^7 less the 7 sequences that drop a seventh piece into one column.
  EXPECT_EQ(naive[7], 823543u - 7u);
}

TEST(ConnectFourTest, PerftMatchesPublishedCounts) {
  // OEIS A212693 (move sequences of Connect Four); the naive reference agrees to depth 8 too,
  // which this test does not repeat because the naive scan is slow in sanitizer builds.
  EXPECT_THAT(Perft(ConnectFour(), 8),
              ElementsAre(1u, 7u, 49u, 343u, 2401u, 16807u, 117649u, 823536u, 5673234u));
}

TEST(ConnectFourTest, RandomGamesMatchNaiveReference) {
  std::mt19937 rng(42);
  for (int game_index = 0; game_index < 2000; ++game_index) {
    ConnectFour game;
    NaiveConnectFour naive;
    while (true) {
      ASSERT_EQ(game.IsTerminal(), naive.IsTerminal()) << game.ToString();
      ASSERT_EQ(Legal(game), naive.Legal()) << game.ToString();
      ASSERT_EQ(game.Winner(), naive.Winner()) << game.ToString();
      for (int r = 0; r < 6; ++r) {
        for (int c = 0; c < 7; ++c) ASSERT_EQ(game.CellOwner(5 - r, c), naive.At(r, c));
      }
      if (game.IsTerminal()) break;
      ASSERT_EQ(game.ToPlay(), naive.ToPlay());
      const std::vector<int> legal = naive.Legal();
      const int col = legal[std::uniform_int_distribution<size_t>(0, legal.size() - 1)(rng)];
      game.Apply(col);
      naive.Apply(col);
    }
  }
}

TEST(ConnectFourTest, StartPosition) {
  const ConnectFour game;
  EXPECT_EQ(game.Name(), "connect4");
  EXPECT_EQ(game.NumActions(), 7);
  EXPECT_EQ(game.MaxGameLength(), 42);
  EXPECT_EQ(game.Shape(), (PlaneShape{3, 6, 7}));
  EXPECT_THAT(Legal(game), ElementsAre(0, 1, 2, 3, 4, 5, 6));
}

TEST(ConnectFourTest, VerticalWin) {
  ConnectFour game = Play("010101");
  EXPECT_FALSE(game.IsTerminal());
  game.Apply(0);
  EXPECT_TRUE(game.IsTerminal());
  EXPECT_EQ(game.Winner(), 0);
  EXPECT_EQ(game.Returns(), (Returns{1.0f, -1.0f}));
  EXPECT_THAT(Legal(game), IsEmpty());
  EXPECT_FALSE(game.IsLegal(3));
}

TEST(ConnectFourTest, HorizontalWinForSecondPlayer) {
  const ConnectFour game = Play("60615253");
  EXPECT_TRUE(game.IsTerminal());
  EXPECT_EQ(game.Winner(), 1);
  EXPECT_EQ(game.Returns(), (Returns{-1.0f, 1.0f}));
}

TEST(ConnectFourTest, DiagonalWins) {
  // X on (col 0, row 0), (1, 1), (2, 2), (3, 3) counted from the bottom, then its mirror image.
  const ConnectFour rising = Play("01123223633");
  EXPECT_TRUE(rising.IsTerminal());
  EXPECT_EQ(rising.Winner(), 0);
  EXPECT_FALSE(Play("0112322363").IsTerminal());
  const ConnectFour falling = Play("65543443033");
  EXPECT_TRUE(falling.IsTerminal());
  EXPECT_EQ(falling.Winner(), 0);
}

TEST(ConnectFourTest, ThreeOnTopOfAColumnAndOneAtTheBottomOfTheNextIsNotAWin) {
  // X on rows 3, 4, 5 of column 0 and row 0 of column 1 would be four consecutive bits without
  // the sentinel bit between columns.
  const ConnectFour game = Play("001002020");
  EXPECT_EQ(game.CellOwner(0, 0), 0);
  EXPECT_EQ(game.CellOwner(5, 1), 0);
  EXPECT_FALSE(game.IsTerminal());
  EXPECT_EQ(game.Winner(), -1);
}

TEST(ConnectFourTest, FullBoardWithoutFourIsDraw) {
  // Columns alternate in pairs (XOXOXO from the bottom in columns 0, 1, 4, 5, the opposite in
  // 2, 3, 6), which has no four anywhere.
  const std::string moves = "000000111111422222233333344444555556666665";
  ConnectFour game = Play(moves.substr(0, 41));
  EXPECT_FALSE(game.IsTerminal());
  EXPECT_THAT(Legal(game), ElementsAre(5));
  game.Apply(5);
  EXPECT_TRUE(game.IsTerminal());
  EXPECT_EQ(game.NumMoves(), 42);
  EXPECT_EQ(game.Winner(), -1);
  EXPECT_EQ(game.Returns(), (Returns{0.0f, 0.0f}));
}

TEST(ConnectFourTest, FullColumnIsIllegal) {
  const ConnectFour game = Play("000000");
  EXPECT_EQ(game.Height(0), 6);
  EXPECT_FALSE(game.IsLegal(0));
  EXPECT_THAT(Legal(game), ElementsAre(1, 2, 3, 4, 5, 6));
}

TEST(ConnectFourTest, EncodeIsFromThePlayerToMoveWithRowZeroOnTop) {
  // X in columns 3 and 2, O on top of X in column 3; O to move.
  const ConnectFour game = Play("332");
  std::vector<uint8_t> planes(3 * 42);
  game.Encode(planes.data());
  std::vector<uint8_t> expected(3 * 42, 0);
  expected[0 * 42 + 4 * 7 + 3] = 1;  // O (to move): row 4 (second from the bottom), column 3
  expected[1 * 42 + 5 * 7 + 3] = 1;  // X: bottom row, columns 3 and 2
  expected[1 * 42 + 5 * 7 + 2] = 1;
  for (int i = 2 * 42; i < 3 * 42; ++i) expected[i] = 1;
  EXPECT_THAT(planes, ElementsAreArray(expected));
}

TEST(ConnectFourTest, ToStringDrawsBoardWithColumnNumbers) {
  EXPECT_EQ(Play("332").ToString(),
            ". . . . . . .\n"
            ". . . . . . .\n"
            ". . . . . . .\n"
            ". . . . . . .\n"
            ". . . O . . .\n"
            ". . X X . . .\n"
            "0 1 2 3 4 5 6\n"
            "O to move\n");
}

TEST(ConnectFourTest, ActionText) {
  const ConnectFour game;
  EXPECT_EQ(game.ActionToString(4), "4");
  EXPECT_EQ(*game.ParseAction("6"), 6);
  for (const char* bad : {"7", "a", "3x", "c3"}) {
    const absl::StatusOr<int> parsed = game.ParseAction(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  }
}

TEST(ConnectFourTest, MirrorSymmetry) {
  const std::vector<Symmetry> symmetries = ConnectFour().Symmetries();
  ASSERT_EQ(symmetries.size(), 2u);
  EXPECT_EQ(symmetries[0].name, "identity");
  EXPECT_EQ(symmetries[1].name, "mirror");
  EXPECT_THAT(symmetries[1].action_map, ElementsAre(6, 5, 4, 3, 2, 1, 0));
  EXPECT_EQ(symmetries[1].cell_map[0], 6);
  EXPECT_EQ(symmetries[1].cell_map[7 + 2], 7 + 4);
}

TEST(ConnectFourTest, TranspositionsHashEqually) {
  EXPECT_EQ(Play("3024").Hash(), Play("2430").Hash());
  EXPECT_NE(Play("3024").Hash(), Play("3042").Hash());
  EXPECT_NE(Play("33").Hash(), Play("3").Hash());
}

}  // namespace
}  // namespace zf::games
