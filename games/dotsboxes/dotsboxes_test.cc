#include "games/dotsboxes/dotsboxes.h"

#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "games/perft.h"
#include "games/testing/conformance.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zf::games {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

template <int R, int C, int kPlayouts = 200>
struct DotsAndBoxesTraits {
  using GameType = DotsAndBoxes;
  static DotsAndBoxes Make() { return *DotsAndBoxes::Create(R, C); }
  static constexpr int kNumPlayouts = kPlayouts;
};
// Square and oblong boards (8 and 4 symmetries), and the largest board, whose lines and boxes
// span several 64-bit words.
using DotsAndBoxesBoards =
    ::testing::Types<DotsAndBoxesTraits<1, 1>, DotsAndBoxesTraits<2, 3>, DotsAndBoxesTraits<3, 3>,
                     DotsAndBoxesTraits<5, 5, 50>, DotsAndBoxesTraits<10, 3, 20>,
                     DotsAndBoxesTraits<10, 10, 8>>;
INSTANTIATE_TYPED_TEST_SUITE_P(DotsAndBoxes, GameConformanceTest, DotsAndBoxesBoards);

DotsAndBoxes Board(int rows, int cols) {
  absl::StatusOr<DotsAndBoxes> game = DotsAndBoxes::Create(rows, cols);
  EXPECT_TRUE(game.ok()) << game.status();
  return *game;
}

void Play(DotsAndBoxes* game, const std::vector<int>& actions) {
  for (int action : actions) {
    ASSERT_TRUE(game->IsLegal(action)) << action << "\n" << game->ToString();
    game->Apply(action);
  }
}

std::vector<int> Legal(const DotsAndBoxes& game) {
  std::vector<int> out;
  game.LegalActions(&out);
  return out;
}

TEST(DotsAndBoxesTest, CreateChecksTheSize) {
  EXPECT_TRUE(DotsAndBoxes::Create(1, 1).ok());
  EXPECT_TRUE(DotsAndBoxes::Create(10, 10).ok());
  EXPECT_TRUE(DotsAndBoxes::Create(1, 10).ok());
  for (auto [rows, cols] :
       std::vector<std::pair<int, int>>{{0, 3}, {3, 0}, {11, 3}, {3, 11}, {-1, -1}, {100, 2}}) {
    const absl::StatusOr<DotsAndBoxes> game = DotsAndBoxes::Create(rows, cols);
    ASSERT_FALSE(game.ok()) << rows << "x" << cols;
    EXPECT_EQ(game.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(game.status().message()),
                HasSubstr(absl::StrCat("rows=", rows, " x cols=", cols)));
  }
}

TEST(DotsAndBoxesTest, DefaultIsThreeByThree) {
  const DotsAndBoxes game;
  EXPECT_EQ(game.Name(), "dotsboxes:3x3");
  EXPECT_EQ(game.rows(), 3);
  EXPECT_EQ(game.cols(), 3);
  EXPECT_EQ(game.NumActions(), 24);
  EXPECT_EQ(game.MaxGameLength(), 24);
  EXPECT_EQ(game.Shape(), (PlaneShape{4, 7, 7}));
  EXPECT_EQ(Board(2, 5).Name(), "dotsboxes:2x5");
  EXPECT_EQ(Board(2, 5).NumActions(), 2 * 2 * 5 + 2 + 5);
  EXPECT_EQ(Board(2, 5).Shape(), (PlaneShape{4, 5, 11}));
}

TEST(DotsAndBoxesTest, ActionNumbering) {
  const DotsAndBoxes game;  // 3x3: 12 horizontal lines, then 12 vertical
  EXPECT_EQ(game.HorizontalLine(0, 0), 0);
  EXPECT_EQ(game.HorizontalLine(0, 1), 1);
  EXPECT_EQ(game.HorizontalLine(3, 2), 11);
  EXPECT_EQ(game.VerticalLine(0, 0), 12);
  EXPECT_EQ(game.VerticalLine(2, 3), 12 + 2 * 4 + 3);
  EXPECT_EQ(game.ActionToString(1), "h0-1");
  EXPECT_EQ(game.ActionToString(11), "h3-2");
  EXPECT_EQ(game.ActionToString(12), "v0-0");
  EXPECT_EQ(game.ActionToString(23), "v2-3");
  EXPECT_EQ(*game.ParseAction("h0-1"), 1);
  EXPECT_EQ(*game.ParseAction("v2-3"), 23);
  EXPECT_EQ(*game.ParseAction("17"), 17);
  for (const char* bad : {"h4-0", "h0-3", "v3-0", "v0-4", "h0", "h-1", "h0-", "x0-0", "h0-1x",
                          "h00-1x", "v123-1", "24"}) {
    const absl::StatusOr<int> parsed = game.ParseAction(bad);
    ASSERT_FALSE(parsed.ok()) << bad << " parsed as " << *parsed;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(parsed.status().message()), HasSubstr(bad));
  }
  const DotsAndBoxes wide = Board(2, 10);  // two-digit coordinates
  EXPECT_EQ(wide.ActionToString(wide.VerticalLine(1, 10)), "v1-10");
  EXPECT_EQ(*wide.ParseAction("v1-10"), wide.VerticalLine(1, 10));
}

TEST(DotsAndBoxesTest, PerftIsTheFallingFactorialOfTheLineCount) {
  // Every undrawn line is legal until all are drawn, whoever moves.
  for (auto [rows, cols, depth] :
       std::vector<std::tuple<int, int, int>>{{1, 1, 4}, {1, 2, 7}, {2, 1, 7}, {2, 2, 6}}) {
    const DotsAndBoxes game = Board(rows, cols);
    const uint64_t lines = game.NumActions();
    std::vector<uint64_t> expected = {1};
    for (int d = 1; d <= depth; ++d) expected.push_back(expected.back() * (lines - d + 1));
    EXPECT_EQ(Perft(game, depth), expected) << game.Name();
  }
  EXPECT_THAT(Perft(Board(1, 1), 5), ElementsAre(1u, 4u, 12u, 24u, 24u, 0u));
}

TEST(DotsAndBoxesTest, CompletingABoxGivesAnotherTurn) {
  // 1x2: h0-0=0 h0-1=1 h1-0=2 h1-1=3 v0-0=4 v0-1=5 v0-2=6.
  DotsAndBoxes game = Board(1, 2);
  Play(&game, {0, 2, 4});  // A, B, A: three sides of the left box
  EXPECT_EQ(game.ToPlay(), 1);
  game.Apply(5);  // B closes the left box and moves again
  EXPECT_EQ(game.BoxOwner(0, 0), 1);
  EXPECT_EQ(game.BoxOwner(0, 1), -1);
  EXPECT_EQ(game.Score(1), 1);
  EXPECT_EQ(game.ToPlay(), 1);
  Play(&game, {1});  // B: no box, turn passes
  EXPECT_EQ(game.ToPlay(), 0);
  Play(&game, {3});  // A: three sides of the right box
  EXPECT_EQ(game.ToPlay(), 1);
  EXPECT_FALSE(game.IsTerminal());
  game.Apply(6);  // B closes it: all lines drawn
  EXPECT_TRUE(game.IsTerminal());
  EXPECT_THAT(Legal(game), IsEmpty());
  EXPECT_EQ(game.Score(0), 0);
  EXPECT_EQ(game.Score(1), 2);
  EXPECT_EQ(game.Returns(), (Returns{-1.0f, 1.0f}));
}

TEST(DotsAndBoxesTest, OneLineCanCompleteTwoBoxes) {
  // 1x3: h0-c = c, h1-c = 3 + c, v0-c = 6 + c. All but v0-1 and v0-3, no box closed yet.
  DotsAndBoxes game = Board(1, 3);
  Play(&game, {0, 1, 2, 3, 4, 5, 6, 8});
  EXPECT_EQ(game.Score(0) + game.Score(1), 0);
  EXPECT_EQ(game.ToPlay(), 0);
  EXPECT_THAT(Legal(game), ElementsAre(7, 9));
  game.Apply(7);  // the shared side of the two left boxes
  EXPECT_EQ(game.Score(0), 2);
  EXPECT_EQ(game.BoxOwner(0, 0), 0);
  EXPECT_EQ(game.BoxOwner(0, 1), 0);
  EXPECT_EQ(game.BoxOwner(0, 2), -1);
  EXPECT_EQ(game.ToPlay(), 0);
  EXPECT_FALSE(game.IsTerminal());
  game.Apply(9);
  EXPECT_TRUE(game.IsTerminal());
  EXPECT_EQ(game.Score(0), 3);
  EXPECT_EQ(game.Score(1), 0);
  EXPECT_EQ(game.Returns(), (Returns{1.0f, -1.0f}));
}

TEST(DotsAndBoxesTest, EqualScoresDraw) {
  DotsAndBoxes game = Board(1, 2);
  Play(&game, {0, 2, 5, 1});  // A B A B
  EXPECT_EQ(game.ToPlay(), 0);
  game.Apply(4);  // A closes the left box
  EXPECT_EQ(game.ToPlay(), 0);
  game.Apply(3);  // A's extra move gives B the right box
  EXPECT_EQ(game.ToPlay(), 1);
  game.Apply(6);
  EXPECT_TRUE(game.IsTerminal());
  EXPECT_EQ(game.Score(0), 1);
  EXPECT_EQ(game.Score(1), 1);
  EXPECT_EQ(game.Returns(), (Returns{0.0f, 0.0f}));
  EXPECT_THAT(game.ToString(), HasSubstr("A 1 - B 1: draw"));
}

TEST(DotsAndBoxesTest, FullGameOnTheLargestBoardScoresEveryBox) {
  DotsAndBoxes game = Board(10, 10);
  ASSERT_EQ(game.NumActions(), 220);
  std::mt19937 rng(7);
  std::vector<int> legal;
  int plies = 0;
  while (!game.IsTerminal()) {
    game.LegalActions(&legal);
    ASSERT_EQ(static_cast<int>(legal.size()), 220 - plies);
    game.Apply(legal[std::uniform_int_distribution<size_t>(0, legal.size() - 1)(rng)]);
    ++plies;
  }
  EXPECT_EQ(plies, 220);
  EXPECT_EQ(game.Score(0) + game.Score(1), 100);
  int owned = 0;
  for (int r = 0; r < 10; ++r) {
    for (int c = 0; c < 10; ++c) owned += game.BoxOwner(r, c) >= 0;
  }
  EXPECT_EQ(owned, 100);
}

TEST(DotsAndBoxesTest, EncodeOneByOne) {
  // 3x3 grid: dots at the corners, lines on the edges' midpoints, the box in the centre.
  DotsAndBoxes game = Board(1, 1);  // h0-0=0 h1-0=1 v0-0=2 v0-1=3
  std::vector<uint8_t> planes(4 * 9);
  game.Apply(0);
  game.Encode(planes.data());
  EXPECT_THAT(planes, ElementsAreArray<uint8_t>({
                          0, 1, 0, 0, 0, 0, 0, 0, 0,  // lines
                          0, 0, 0, 0, 0, 0, 0, 0, 0,  // boxes of B (to move)
                          0, 0, 0, 0, 0, 0, 0, 0, 0,  // boxes of A
                          1, 1, 1, 1, 1, 1, 1, 1, 1,  // ones
                      }));
  Play(&game, {2, 3, 1});  // B, A, B: B closes the box
  ASSERT_TRUE(game.IsTerminal());
  EXPECT_EQ(game.ToPlay(), 1);
  EXPECT_EQ(game.Returns(), (Returns{-1.0f, 1.0f}));
  game.Encode(planes.data());
  EXPECT_THAT(planes, ElementsAreArray<uint8_t>({
                          0, 1, 0, 1, 0, 1, 0, 1, 0,  // lines
                          0, 0, 0, 0, 1, 0, 0, 0, 0,  // boxes of B (to move)
                          0, 0, 0, 0, 0, 0, 0, 0, 0,  // boxes of A
                          1, 1, 1, 1, 1, 1, 1, 1, 1,  // ones
                      }));
}

TEST(DotsAndBoxesTest, EncodeOneByTwoWithOpponentBox) {
  DotsAndBoxes game = Board(1, 2);
  Play(&game, {0, 2, 5, 1, 4, 3});  // A owns the left box; B to move
  ASSERT_EQ(game.ToPlay(), 1);
  std::vector<uint8_t> planes(4 * 15);
  game.Encode(planes.data());
  std::vector<uint8_t> expected(4 * 15, 0);
  // Grid 3 x 5. h0-0 (0,1), h0-1 (0,3), v0-0 (1,0), v0-1 (1,2), h1-0 (2,1), h1-1 (2,3).
  for (int cell : {1, 3, 5, 7, 11, 13}) expected[cell] = 1;
  expected[2 * 15 + 6] = 1;  // box (0,0) at grid (1,1), owned by the opponent of B
  for (int i = 3 * 15; i < 4 * 15; ++i) expected[i] = 1;
  EXPECT_THAT(planes, ElementsAreArray(expected));
}

TEST(DotsAndBoxesTest, ToStringDrawsLinesOwnersAndScore) {
  DotsAndBoxes game = Board(1, 2);
  EXPECT_EQ(game.ToString(),
            "+   +   +\n"
            "         \n"
            "+   +   +\n"
            "A 0 - B 0: A to move\n");
  Play(&game, {0, 2, 5, 1, 4});
  EXPECT_EQ(game.ToString(),
            "+---+---+\n"
            "| A |    \n"
            "+---+   +\n"
            "A 1 - B 0: A to move\n");
  Play(&game, {3, 6});
  EXPECT_EQ(game.ToString(),
            "+---+---+\n"
            "| A | B |\n"
            "+---+---+\n"
            "A 1 - B 1: draw\n");
}

TEST(DotsAndBoxesTest, SymmetriesOfTheOneByOneBoard) {
  const std::vector<Symmetry> symmetries = Board(1, 1).Symmetries();
  ASSERT_EQ(symmetries.size(), 8u);
  std::vector<std::string> names;
  for (const Symmetry& s : symmetries) names.push_back(s.name);
  EXPECT_THAT(names, ElementsAre("identity", "mirror", "flip", "rot180", "transpose",
                                 "antitranspose", "rot90", "rot270"));
  // h0-0=0 h1-0=1 v0-0=2 v0-1=3
  EXPECT_THAT(symmetries[1].action_map, ElementsAre(0, 1, 3, 2));  // mirror
  EXPECT_THAT(symmetries[2].action_map, ElementsAre(1, 0, 2, 3));  // flip
  EXPECT_THAT(symmetries[4].action_map, ElementsAre(2, 3, 0, 1));  // transpose
  EXPECT_THAT(symmetries[6].action_map, ElementsAre(3, 2, 0, 1));  // rot90 (clockwise)
}

TEST(DotsAndBoxesTest, OblongBoardsHaveFourSymmetries) {
  const std::vector<Symmetry> symmetries = Board(2, 3).Symmetries();
  ASSERT_EQ(symmetries.size(), 4u);
  EXPECT_EQ(symmetries[0].name, "identity");
  EXPECT_EQ(symmetries[3].name, "rot180");
  EXPECT_EQ(symmetries[1].cell_map.size(), 5u * 7u);
}

TEST(DotsAndBoxesTest, HashCoversLinesBoxOwnersAndPlayerToMove) {
  // Every position reachable on 1x3, keyed by its full state. The same lines and owners can
  // come with either player to move (one line closing two boxes versus two lines closing one
  // each changes how often the turn passed), so the side to move must be in the hash.
  struct State {
    std::vector<bool> lines;
    std::vector<int> owners;
    int to_play;
    auto operator<=>(const State&) const = default;
  };
  const auto state_of = [](const DotsAndBoxes& game) {
    State state;
    for (int a = 0; a < game.NumActions(); ++a) state.lines.push_back(game.IsDrawn(a));
    for (int c = 0; c < game.cols(); ++c) state.owners.push_back(game.BoxOwner(0, c));
    state.to_play = game.ToPlay();
    return state;
  };
  std::map<State, uint64_t> hash_of_state;
  std::map<uint64_t, State> state_of_hash;
  std::map<std::pair<std::vector<bool>, std::vector<int>>, std::set<int>> players_to_move;
  std::vector<DotsAndBoxes> frontier = {Board(1, 3)};
  while (!frontier.empty()) {
    const DotsAndBoxes game = frontier.back();
    frontier.pop_back();
    const State state = state_of(game);
    const auto [it, inserted] = hash_of_state.emplace(state, game.Hash());
    if (!inserted) {
      ASSERT_EQ(it->second, game.Hash()) << "equal positions hash differently:\n"
                                         << game.ToString();
      continue;  // already expanded
    }
    const auto [hit, hash_inserted] = state_of_hash.emplace(game.Hash(), state);
    ASSERT_TRUE(hash_inserted) << "collision:\n" << game.ToString();
    players_to_move[{state.lines, state.owners}].insert(state.to_play);
    for (int a : Legal(game)) {
      DotsAndBoxes child = game;
      child.Apply(a);
      frontier.push_back(child);
    }
  }
  int ambiguous = 0;
  for (const auto& [board, players] : players_to_move) ambiguous += players.size() > 1;
  EXPECT_GT(ambiguous, 0) << "no two positions differ only in the player to move";
  EXPECT_GT(hash_of_state.size(), 1024u);  // more than the 2^10 line sets: owners count too
}

}  // namespace
}  // namespace zf::games
