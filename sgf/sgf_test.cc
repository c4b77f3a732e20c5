#include "sgf/sgf.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sgf/go_sgf.h"

namespace zf::sgf {
namespace {

using ::testing::HasSubstr;

TEST(SgfParseTest, MainLineEscapesAndOldStyleNames) {
  absl::StatusOr<std::vector<GameTree>> trees = Parse(
      "  (;FF[4]GM[1]SZ[9]C[a \\] bracket\\\\ and\nnewline]\n"
      " ;B[ee] ( ;W[dc] ;B[cc] ) ( ;W[aa] ) )\n(;AddBlack[aa][bb])");
  ASSERT_TRUE(trees.ok()) << trees.status();
  ASSERT_EQ(trees->size(), 2u);
  const std::vector<Node>& nodes = (*trees)[0].nodes;
  ASSERT_EQ(nodes.size(), 4u);  // root, B[ee], then the first variation
  EXPECT_EQ(nodes[0].Find("C")->values[0], "a ] bracket\\ and\nnewline");
  EXPECT_EQ(nodes[2].Find("W")->values[0], "dc");
  EXPECT_EQ(nodes[3].Find("B")->values[0], "cc");
  EXPECT_EQ(nodes[1].line, 3);  // the comment holds a newline
  EXPECT_EQ((*trees)[1].nodes[0].Find("AB")->values.size(), 2u);
  EXPECT_EQ(nodes[0].Find("XX"), nullptr);
}

TEST(SgfParseTest, ErrorsSayWhatAndWhere) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "no game tree"},
      {"FF[4]", "line 1, column 1: expected \"(\""},
      {"(;B[aa]", "missing \")\""},
      {"(;C[never closed)", "missing \"]\" at the end of the value of C"},
      {"(;B)", "property B has no value"},
      {"(;[aa])", "a value without a property name"},
      {"(B[aa])", "expected \";\" to start a node"},
      {"(;B[aa]\n 5)", "line 2, column 2: expected a node, a variation or \")\""},
      {"(;B[aa]\n x[b])", "line 2, column 2: a property name needs an upper-case letter"},
  };
  for (const auto& [text, message] : cases) {
    absl::StatusOr<std::vector<GameTree>> trees = Parse(text);
    ASSERT_FALSE(trees.ok()) << text;
    EXPECT_EQ(trees.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(trees.status().message(), HasSubstr(message)) << text;
  }
  std::string nested;
  for (int i = 0; i <= kMaxDepth; ++i) nested += "(;";
  EXPECT_THAT(Parse(nested).status().message(), HasSubstr("nested deeper than"));
}

TEST(GoSgfTest, WritesAndReadsBackAGame) {
  GoGameRecord game{.start = *games::Go::Create(9, 6.5f)};
  games::Go position = game.start;
  for (const char* move : {"E5", "C3", "pass", "G7", "pass", "pass"}) {
    const int action = *position.ParseAction(move);
    position.Apply(action);
    game.moves.push_back(action);
  }
  game.comments = {"value +0.12\ntop: E5 0.45 [sic]", "", "", "", "", ""};
  game.black = "zf net v12 400 sims";
  game.white = "gnugo:10";
  game.result = GoResult(position, false, -1, false);
  game.date = "2026-12-05";
  const std::string text = WriteGoGame(game);
  EXPECT_THAT(text, HasSubstr("(;FF[4]GM[1]CA[UTF-8]AP[zerofleet]SZ[9]KM[6.5]RU[Chinese]RE["));
  EXPECT_THAT(text,
              HasSubstr(";B[ee]C[value +0.12\ntop: E5 0.45 [sic\\]];W[cg];B[];W[gc];B[];W[])"));
  absl::StatusOr<GoGameRecord> back = ReadGoGame(text);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->moves, game.moves);
  EXPECT_EQ(back->comments, game.comments);
  EXPECT_EQ(back->black, game.black);
  EXPECT_EQ(back->result, game.result);
  EXPECT_EQ(back->start.Komi(), 6.5f);
  EXPECT_TRUE(GoPositionAfter(*back, -1)->IsTerminal());
  EXPECT_EQ(GoPositionAfter(*back, 1)->ToPlay(), 1);
  EXPECT_THAT(GoPositionAfter(*back, 7).status().message(),
              HasSubstr("past the end of the game (6 moves)"));
}

TEST(GoSgfTest, DefaultsAndPassAsTt) {
  absl::StatusOr<GoGameRecord> game = ReadGoGame("(;;B[pd];W[tt];B[dp])");
  ASSERT_TRUE(game.ok()) << game.status();
  EXPECT_EQ(game->start.Size(), 19);
  EXPECT_EQ(game->start.Komi(), 0.0f);
  EXPECT_EQ(game->moves[1], game->start.PassAction());
  EXPECT_EQ(game->start.ActionToString(game->moves[0]), "Q16");
}

TEST(GoSgfTest, WhatCannotBeReplayedIsNamed) {
  const std::pair<const char*, const char*> cases[] = {
      {"(;GM[3]SZ[9])", "GM[3] in the root node is not Go"},
      {"(;SZ[19:13])", "SZ[19:13] in the root node: zerofleet's Go boards are square"},
      {"(;SZ[25])", "SZ[25] in the root node: expected a board size 5..19"},
      {"(;SZ[9]KM[x])", "KM[x] in the root node is not a number"},
      {"(;SZ[9]KM[7.3])", "in the root node: "},
      {"(;SZ[9]AB[ee])", "AB in the root node: setup properties are not supported"},
      {"(;SZ[9];B[ee];AW[aa]W[cc])", "AW in move 2"},
      {"(;SZ[9];B[ee];B[cc])", "B[cc] at move 2: it is White's turn"},
      {"(;SZ[9];B[ee];W[ee])", "W[ee] at move 2 (E5): illegal"},
      {"(;SZ[9];B[jj])", "B[jj] at move 1: not a point of the 9x9 board (two letters a..i)"},
      {"(;SZ[9];B[];W[];B[ee])", "B[ee] at move 3: the game is already over"},
      {"(;SZ[9]\n;B[ee]W[cc])", "B and W in one node (move 1) (SGF line 2, column 1)"},
  };
  for (const auto& [text, message] : cases) {
    absl::StatusOr<GoGameRecord> game = ReadGoGame(text);
    ASSERT_FALSE(game.ok()) << text;
    EXPECT_THAT(game.status().message(), HasSubstr(message)) << text;
  }
}

TEST(GoSgfTest, ResultText) {
  games::Go go = *games::Go::Create(5, 0.5f);
  EXPECT_EQ(GoResult(go, true, 0, false), "W+R");
  EXPECT_EQ(GoResult(go, true, 1, false), "B+R");
  EXPECT_EQ(GoResult(go, false, -1, true), "Void");
  EXPECT_EQ(GoResult(go, false, -1, false), "W+0.5");
}

}  // namespace
}  // namespace zf::sgf
