#include "games/othello/othello.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/testing/status_matchers.h"
#include "games/perft.h"
#include "games/testing/conformance.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zf::games {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::zf::testing::StatusIs;

template <int N>
struct OthelloTraits {
  using GameType = Othello;
  static Othello Make() { return *Othello::Create(N); }
};
using OthelloSizes = ::testing::Types<OthelloTraits<4>, OthelloTraits<6>, OthelloTraits<8>>;
INSTANTIATE_TYPED_TEST_SUITE_P(Othello, GameConformanceTest, OthelloSizes);

// An independent, deliberately naive Othello: a 2D array, and a walk from the cell along each
// direction for every move and every flip. The bitboard implementation is checked against it.
class NaiveOthello {
 public:
  explicit NaiveOthello(int n) : n_(n), board_(n * n, -1) {
    board_[(n / 2 - 1) * n + n / 2 - 1] = 1;
    board_[(n / 2) * n + n / 2] = 1;
    board_[(n / 2) * n + n / 2 - 1] = 0;
    board_[(n / 2 - 1) * n + n / 2] = 0;
  }
  int ToPlay() const { return to_play_; }
  int At(int cell) const { return board_[cell]; }
  // The placements of the player to move, in increasing order.
  std::vector<int> Placements(int player) const {
    std::vector<int> out;
    for (int cell = 0; cell < n_ * n_; ++cell) {
      if (board_[cell] < 0 && !FlipsOf(player, cell).empty()) out.push_back(cell);
    }
    return out;
  }
  bool Over() const { return Placements(0).empty() && Placements(1).empty(); }
  // A placement, or -1 for a pass.
  void Play(int cell) {
    if (cell >= 0) {
      for (int f : FlipsOf(to_play_, cell)) board_[f] = to_play_;
      board_[cell] = to_play_;
    }
    to_play_ ^= 1;
  }

 private:
  std::vector<int> FlipsOf(int player, int cell) const {
    std::vector<int> flips;
    const int row = cell / n_;
    const int col = cell % n_;
    for (int dr = -1; dr <= 1; ++dr) {
      for (int dc = -1; dc <= 1; ++dc) {
        if (dr == 0 && dc == 0) continue;
        std::vector<int> line;
        int r = row + dr;
        int c = col + dc;
        while (r >= 0 && r < n_ && c >= 0 && c < n_ && board_[r * n_ + c] == 1 - player) {
          line.push_back(r * n_ + c);
          r += dr;
          c += dc;
        }
        if (!line.empty() && r >= 0 && r < n_ && c >= 0 && c < n_ && board_[r * n_ + c] == player) {
          flips.insert(flips.end(), line.begin(), line.end());
        }
      }
    }
    return flips;
  }

  int n_;
  std::vector<int> board_;
  int to_play_ = 0;
};

TEST(OthelloTest, CreateRefusesOtherSizes) {
  for (int size : {0, 2, 3, 5, 7, 10}) {
    EXPECT_THAT(Othello::Create(size).status(),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected 4, 6 or 8")));
  }
}

TEST(OthelloTest, StartPositionAndNames) {
  const Othello game = *Othello::Create();
  EXPECT_EQ(game.Name(), "othello");
  EXPECT_EQ(Othello::Create(6)->Name(), "othello:6");
  EXPECT_EQ(game.NumActions(), 65);
  EXPECT_EQ(game.Discs(0), 2);
  EXPECT_EQ(game.Discs(1), 2);
  EXPECT_EQ(game.CellOwner(*game.ParseAction("d4")), 1);
  EXPECT_EQ(game.CellOwner(*game.ParseAction("e4")), 0);
  std::vector<int> legal;
  game.LegalActions(&legal);
  std::vector<std::string> moves;
  for (int a : legal) moves.push_back(game.ActionToString(a));
  // Black's four openings, in action order.
  EXPECT_THAT(moves, ElementsAre("d3", "c4", "f5", "e6"));
  EXPECT_FALSE(game.IsLegal(game.PassAction()));
  EXPECT_EQ(game.ToString(),
            "   a b c d e f g h\n"
            " 1 . . . . . . . .\n"
            " 2 . . . . . . . .\n"
            " 3 . . . . . . . .\n"
            " 4 . . . O X . . .\n"
            " 5 . . . X O . . .\n"
            " 6 . . . . . . . .\n"
            " 7 . . . . . . . .\n"
            " 8 . . . . . . . .\n"
            "X to move (X 2, O 2)\n");
}

TEST(OthelloTest, AMoveFlipsTheLineItCloses) {
  Othello game = *Othello::Create();
  game.Apply(*game.ParseAction("d3"));
  EXPECT_EQ(game.CellOwner(*game.ParseAction("d4")), 0);  // flipped
  EXPECT_EQ(game.Discs(0), 4);
  EXPECT_EQ(game.Discs(1), 1);
  EXPECT_EQ(game.ToPlay(), 1);
}

// Aart Bik's perft for reversi from the standard start (aartbik.blogspot.com, "Perft for
// Reversi", 2009, confirmed there by an independent count): passes count as plies, and through
// depth 9 no game has ended, so the counts are exactly sequences of 9 plies.
TEST(OthelloTest, PerftMatchesThePublishedCounts) {
  const std::vector<uint64_t> counts = Perft(*Othello::Create(), 9);
  EXPECT_THAT(counts, ElementsAre(1, 4, 12, 56, 244, 1396, 8200, 55092, 390216, 3005288));
}

TEST(OthelloTest, AgreesWithANaiveReferenceOverRandomGamesOfEverySize) {
  std::mt19937 rng(7);
  for (int n : {4, 6, 8}) {
    int passes = 0;
    for (int g = 0; g < 60; ++g) {
      Othello game = *Othello::Create(n);
      NaiveOthello naive(n);
      std::vector<int> legal;
      for (int ply = 0;; ++ply) {
        ASSERT_LE(ply, game.MaxGameLength());
        for (int cell = 0; cell < n * n; ++cell) ASSERT_EQ(game.CellOwner(cell), naive.At(cell));
        ASSERT_EQ(game.ToPlay(), naive.ToPlay());
        ASSERT_EQ(game.IsTerminal(), naive.Over()) << game.ToString();
        if (game.IsTerminal()) break;
        game.LegalActions(&legal);
        const std::vector<int> placements = naive.Placements(naive.ToPlay());
        if (placements.empty()) {
          ASSERT_THAT(legal, ElementsAre(game.PassAction())) << game.ToString();
          ++passes;
          game.Apply(game.PassAction());
          naive.Play(-1);
          continue;
        }
        ASSERT_EQ(legal, placements) << game.ToString();
        const int a = legal[std::uniform_int_distribution<size_t>(0, legal.size() - 1)(rng)];
        game.Apply(a);
        naive.Play(a);
      }
      const int black = game.Discs(0);
      const int white = game.Discs(1);
      const float expected = black > white ? 1.0f : black < white ? -1.0f : 0.0f;
      EXPECT_EQ(game.Returns()[0], expected);
    }
    EXPECT_GT(passes, 0) << "no pass in 60 random games on " << n << "x" << n;
  }
}

TEST(OthelloTest, ParseActionTakesCellsPassAndNumbers) {
  const Othello game = *Othello::Create(6);
  EXPECT_EQ(*game.ParseAction("a1"), 0);
  EXPECT_EQ(*game.ParseAction("F6"), 35);
  EXPECT_EQ(*game.ParseAction("pass"), 36);
  EXPECT_EQ(*game.ParseAction("36"), 36);
  EXPECT_EQ(game.ActionToString(36), "pass");
  EXPECT_THAT(game.ParseAction("g1").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("a column a-f")));
}

}  // namespace
}  // namespace zf::games
