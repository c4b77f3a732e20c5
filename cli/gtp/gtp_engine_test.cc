#include "cli/gtp/gtp_engine.h"

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zf::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// Plays a scripted list of answers, then the lowest legal action.
template <games::Game G>
class ScriptedPlayer final : public players::Player<G> {
 public:
  explicit ScriptedPlayer(std::vector<absl::StatusOr<int>>* script) : script_(script) {}
  absl::StatusOr<int> ChooseAction(const G& game) override {
    if (!script_->empty()) {
      absl::StatusOr<int> next = script_->front();
      script_->erase(script_->begin());
      return next;
    }
    std::vector<int> legal;
    game.LegalActions(&legal);
    return legal.front();
  }

 private:
  std::vector<absl::StatusOr<int>>* script_;
};

template <games::Game G>
class GtpEngineFixture {
 public:
  explicit GtpEngineFixture(const G& start) {
    absl::StatusOr<std::unique_ptr<GtpEngine<G>>> engine = GtpEngine<G>::Create(
        {.start = start,
         .make_player = [this](const G& s) -> absl::StatusOr<std::unique_ptr<players::Player<G>>> {
           ++players_made;
           starts.push_back(s.Name());
           return std::unique_ptr<players::Player<G>>(new ScriptedPlayer<G>(&script));
         }});
    EXPECT_TRUE(engine.ok()) << engine.status();
    engine_ = std::move(*engine);
  }
  std::string operator()(const std::string& line) { return engine_->Handle(line); }
  GtpEngine<G>& engine() { return *engine_; }

  std::vector<absl::StatusOr<int>> script;
  int players_made = 0;
  std::vector<std::string> starts;

 private:
  std::unique_ptr<GtpEngine<G>> engine_;
};

using GoGtp = GtpEngineFixture<games::Go>;

TEST(GtpEngineTest, AdministrativeCommands) {
  GoGtp gtp(*games::Go::Create(5));
  EXPECT_EQ(gtp("protocol_version"), "= 2\n\n");
  EXPECT_EQ(gtp("name"), "= zerofleet\n\n");
  EXPECT_EQ(gtp("version"), "= 0.1\n\n");
  EXPECT_EQ(gtp("known_command genmove"), "= true\n\n");
  EXPECT_EQ(gtp("known_command frobnicate"), "= false\n\n");
  EXPECT_EQ(gtp("list_commands"),
            "= protocol_version\nname\nversion\nknown_command\nlist_commands\nboardsize\n"
            "clear_board\nkomi\nplay\ngenmove\nundo\nfinal_score\nshowboard\nquit\n\n");
  EXPECT_FALSE(gtp.engine().quit_requested());
  EXPECT_EQ(gtp("quit"), "=\n\n");
  EXPECT_TRUE(gtp.engine().quit_requested());
}

TEST(GtpEngineTest, IdsCommentsAndBlankLines) {
  GoGtp gtp(*games::Go::Create(5));
  EXPECT_EQ(gtp("7 name"), "=7 zerofleet\n\n");
  EXPECT_EQ(gtp("12 frobnicate"), "?12 unknown command\n\n");
  EXPECT_EQ(gtp(""), "");
  EXPECT_EQ(gtp("   \t  "), "");
  EXPECT_EQ(gtp("# just a comment"), "");
  EXPECT_EQ(gtp("\tname # trailing comment\r\n"), "= zerofleet\n\n");
  EXPECT_EQ(gtp("3"), "?3 syntax error: no command\n\n");
  EXPECT_EQ(gtp("frobnicate"), "? unknown command\n\n");
}

TEST(GtpEngineTest, PlayAndItsErrors) {
  GoGtp gtp(*games::Go::Create(5));
  EXPECT_EQ(gtp("play black C3"), "=\n\n");
  EXPECT_EQ(gtp.engine().position().StoneAt(2, 2), 0);
  EXPECT_EQ(gtp("2 play w c3"), "?2 illegal move\n\n");  // occupied
  EXPECT_EQ(gtp("play white Z9"), "? invalid vertex \"Z9\"\n\n");
  EXPECT_EQ(gtp("play white F1"), "? invalid vertex \"F1\"\n\n");  // off a 5 x 5 board
  EXPECT_EQ(gtp("play white I1"), "? invalid vertex \"I1\"\n\n");
  EXPECT_EQ(gtp("play red C4"), "? invalid color \"red\"\n\n");
  EXPECT_EQ(gtp("play black C4"), "? illegal move: it is white's turn\n\n");
  EXPECT_THAT(gtp("play white"), StartsWith("? syntax error"));
  EXPECT_THAT(gtp("play"), StartsWith("? syntax error"));
  EXPECT_EQ(gtp.engine().position().NumMoves(), 1);  // no error changed anything
  EXPECT_EQ(gtp("play W pass"), "=\n\n");
  EXPECT_EQ(gtp("play B PASS"), "=\n\n");
  EXPECT_TRUE(gtp.engine().position().IsTerminal());
  EXPECT_EQ(gtp("play W A1"), "? illegal move: the game is over\n\n");
}

TEST(GtpEngineTest, SuicideIsIllegal) {
  GoGtp gtp(*games::Go::Create(5));
  for (const char* line : {"play b A2", "play w E5", "play b B1"}) ASSERT_EQ(gtp(line), "=\n\n");
  EXPECT_EQ(gtp("play w A1"), "? illegal move\n\n");
}

TEST(GtpEngineTest, GenmoveAsksThePlayerAndPlaysItsMove) {
  GoGtp gtp(*games::Go::Create(5));
  gtp.script = {7, players::kResignAction, absl::UnavailableError("engine died"), 99};
  EXPECT_EQ(gtp("5 genmove b"), "=5 C4\n\n");  // action 7 = row 1, col 2
  EXPECT_EQ(gtp.engine().position().StoneAt(1, 2), 0);
  EXPECT_EQ(gtp("genmove black"), "? illegal move: it is white's turn\n\n");
  EXPECT_EQ(gtp("genmove white"), "= resign\n\n");
  EXPECT_EQ(gtp.engine().position().NumMoves(), 1);
  EXPECT_EQ(gtp("genmove white"), "? engine error: engine died\n\n");
  EXPECT_EQ(gtp("genmove white"), "? engine error: the player chose illegal action 99\n\n");
  EXPECT_EQ(gtp("genmove white"), "= A5\n\n");  // the lowest legal action, 0
  EXPECT_EQ(gtp("genmove purple"), "? invalid color \"purple\"\n\n");
  EXPECT_THAT(gtp("genmove"), StartsWith("? syntax error"));
  EXPECT_EQ(gtp.engine().position().NumMoves(), 2);
  // A finished Go game: genmove passes without playing.
  ASSERT_EQ(gtp("play b pass"), "=\n\n");
  ASSERT_EQ(gtp("play w pass"), "=\n\n");
  EXPECT_EQ(gtp("genmove b"), "= pass\n\n");
  EXPECT_EQ(gtp.engine().position().NumMoves(), 4);
}

TEST(GtpEngineTest, UndoAndClearBoard) {
  GoGtp gtp(*games::Go::Create(5));
  EXPECT_EQ(gtp("undo"), "? cannot undo\n\n");
  ASSERT_EQ(gtp("play b C3"), "=\n\n");
  ASSERT_EQ(gtp("play w C4"), "=\n\n");
  EXPECT_EQ(gtp("undo"), "=\n\n");
  EXPECT_EQ(gtp.engine().position().NumMoves(), 1);
  EXPECT_EQ(gtp.engine().position().StoneAt(1, 2), -1);
  EXPECT_EQ(gtp("play w C4"), "=\n\n");  // white to play again
  EXPECT_EQ(gtp("clear_board"), "=\n\n");
  EXPECT_EQ(gtp.engine().position().NumMoves(), 0);
  EXPECT_EQ(gtp("undo"), "? cannot undo\n\n");
}

TEST(GtpEngineTest, BoardsizeChangesTheGoBoard) {
  GoGtp gtp(*games::Go::Create(9, 6.5f));
  ASSERT_EQ(gtp("play b E5"), "=\n\n");
  EXPECT_EQ(gtp("boardsize 13"), "=\n\n");
  EXPECT_EQ(gtp.engine().position().Name(), "go:13:komi=6.5");
  EXPECT_EQ(gtp.engine().position().NumMoves(), 0);
  EXPECT_EQ(gtp.starts.back(), "go:13:komi=6.5");  // a player for the new board
  EXPECT_EQ(gtp("play b N13"), "=\n\n");
  for (const char* bad : {"boardsize 4", "boardsize 20", "boardsize 25"}) {
    EXPECT_EQ(gtp(bad), "? unacceptable size\n\n") << bad;
  }
  EXPECT_THAT(gtp("boardsize nine"), StartsWith("? syntax error"));
  EXPECT_THAT(gtp("boardsize"), StartsWith("? syntax error"));
  EXPECT_EQ(gtp.engine().position().Name(), "go:13:komi=6.5");
  EXPECT_EQ(gtp.engine().position().NumMoves(), 1);
}

TEST(GtpEngineTest, KomiKeepsTheMoves) {
  GoGtp gtp(*games::Go::Create(5));
  ASSERT_EQ(gtp("play b C3"), "=\n\n");
  EXPECT_EQ(gtp("komi 0.5"), "=\n\n");
  EXPECT_EQ(gtp.engine().position().Name(), "go:5:komi=0.5");
  EXPECT_EQ(gtp.engine().position().NumMoves(), 1);
  EXPECT_EQ(gtp.engine().position().StoneAt(2, 2), 0);
  EXPECT_THAT(gtp("komi 0.3"), StartsWith("? syntax error"));
  EXPECT_THAT(gtp("komi lots"), StartsWith("? syntax error"));
  EXPECT_EQ(gtp.engine().position().Name(), "go:5:komi=0.5");
}

TEST(GtpEngineTest, FinalScoreIsTheAreaScore) {
  GoGtp gtp(*games::Go::Create(5));
  EXPECT_EQ(gtp("final_score"), "= W+7.5\n\n");  // empty board: komi only
  ASSERT_EQ(gtp("play b C3"), "=\n\n");
  EXPECT_EQ(gtp("final_score"), "= B+17.5\n\n");  // 25 points for Black, minus 7.5
  ASSERT_EQ(gtp("komi 25"), "=\n\n");
  EXPECT_EQ(gtp("final_score"), "= 0\n\n");
}

TEST(GtpEngineTest, ShowboardIsOneResponseWithoutBlankLines) {
  GoGtp gtp(*games::Go::Create(5));
  ASSERT_EQ(gtp("play b C3"), "=\n\n");
  const std::string board = gtp("showboard");
  EXPECT_THAT(board, StartsWith("=\n   A B C D E\n"));
  EXPECT_EQ(board.find("\n\n"), board.size() - 2) << board;
  EXPECT_THAT(board, HasSubstr("X"));
}

TEST(GtpEngineTest, TicTacToeOnAThreeByThreeBoard) {
  GtpEngineFixture<games::TicTacToe> gtp{games::TicTacToe()};
  EXPECT_EQ(gtp("boardsize 3"), "=\n\n");
  EXPECT_EQ(gtp("boardsize 9"), "? unacceptable size\n\n");
  EXPECT_EQ(gtp("komi 6.5"), "=\n\n");  // accepted and ignored
  EXPECT_EQ(gtp("play b pass"), "? invalid vertex \"pass\": tictactoe has no pass\n\n");
  EXPECT_EQ(gtp("play b D1"), "? invalid vertex \"D1\"\n\n");
  EXPECT_EQ(gtp("final_score"), "? cannot score: the game is not over\n\n");
  // X takes the top row: A3, B3, C3 (the game's a1, b1, c1).
  for (const char* line : {"play b A3", "play w A1", "play b B3", "play w B1", "play b C3"}) {
    ASSERT_EQ(gtp(line), "=\n\n") << line;
  }
  EXPECT_TRUE(gtp.engine().position().IsTerminal());
  EXPECT_EQ(gtp("final_score"), "= B+1\n\n");
  EXPECT_EQ(gtp("genmove w"), "? illegal move: the game is over\n\n");
  EXPECT_EQ(gtp("undo"), "=\n\n");
  EXPECT_EQ(gtp("genmove b"), "= C3\n\n");  // lowest legal action 2 = "c1" = C3
}

TEST(GtpEngineTest, ConnectFourColumnsAsLetters) {
  GtpEngineFixture<games::ConnectFour> gtp{games::ConnectFour()};
  EXPECT_EQ(gtp("boardsize 7"), "=\n\n");
  EXPECT_EQ(gtp("boardsize 6"), "? unacceptable size\n\n");
  EXPECT_EQ(gtp("play b D"), "=\n\n");
  EXPECT_EQ(gtp("play w D6"), "=\n\n");  // falls onto the first disc
  EXPECT_EQ(gtp.engine().position().Height(3), 2);
  EXPECT_EQ(gtp("genmove b"), "= A1\n\n");
  EXPECT_EQ(gtp("play w H"), "? invalid vertex \"H\"\n\n");
  for (int i = 0; i < 4; ++i) ASSERT_EQ(gtp(i % 2 == 0 ? "play w D" : "play b D"), "=\n\n");
  EXPECT_EQ(gtp("play w D"), "? illegal move\n\n");  // the column is full
}

TEST(GtpEngineTest, OthelloPointsCountRowsFromTheBottom) {
  GtpEngineFixture<games::Othello> gtp{*games::Othello::Create(4)};
  EXPECT_EQ(gtp("boardsize 6"), "=\n\n");
  EXPECT_EQ(gtp.engine().position().Size(), 6);
  EXPECT_EQ(gtp("boardsize 5"), "? unacceptable size\n\n");
  EXPECT_EQ(gtp("boardsize 4"), "=\n\n");
  EXPECT_EQ(gtp("play b pass"), "? illegal move\n\n");  // Black has moves: no pass
  // The lowest legal action, 1: row 0 (the top), column b: GTP's B4 on 4 x 4.
  EXPECT_EQ(gtp("genmove b"), "= B4\n\n");
  EXPECT_EQ(gtp("play w A4"), "=\n\n");  // the top-left corner, the game's "a1"
  EXPECT_EQ(gtp.engine().position().CellOwner(0), 1);
  EXPECT_EQ(gtp("final_score"), "? cannot score: the game is not over\n\n");
}

TEST(GtpEngineTest, HexSpeaksHexGuisNotationWithTheSwap) {
  GtpEngineFixture<games::Hex> gtp{*games::Hex::Create(5, /*swap_rule=*/true)};
  EXPECT_EQ(gtp("boardsize 7 7"), "=\n\n");  // HexGui's form
  EXPECT_EQ(gtp.engine().position().Name(), "hex:7:swap");
  EXPECT_EQ(gtp("boardsize 7 6"), "? unacceptable size\n\n");
  EXPECT_EQ(gtp("boardsize 14"), "? unacceptable size\n\n");
  EXPECT_EQ(gtp("boardsize 3"), "=\n\n");
  EXPECT_THAT(gtp("play b pass"), HasSubstr("has no pass"));
  EXPECT_EQ(gtp("play w swap-pieces"), "? illegal move: it is black's turn\n\n");
  EXPECT_EQ(gtp("play b swap-pieces"), "? illegal move\n\n");  // only White's first move
  EXPECT_EQ(gtp("play b c1"), "=\n\n");                        // the top row, column c: action 2
  EXPECT_EQ(gtp.engine().position().CellOwner(2), 0);
  EXPECT_EQ(gtp("play w swap-pieces"), "=\n\n");  // the stone moves to its mirror, a3
  EXPECT_EQ(gtp.engine().position().CellOwner(2), -1);
  EXPECT_EQ(gtp.engine().position().CellOwner(6), 1);
  EXPECT_EQ(gtp("undo"), "=\n\n");
  gtp.script.push_back(gtp.engine().position().SwapAction());
  EXPECT_EQ(gtp("genmove w"), "= swap-pieces\n\n");
  EXPECT_EQ(gtp("final_score"), "? cannot score: the game is not over\n\n");
  for (const char* move : {"play b b1", "play w b2", "play b b3"}) ASSERT_EQ(gtp(move), "=\n\n");
  EXPECT_EQ(gtp("genmove w"), "= a1\n\n");
  EXPECT_EQ(gtp("genmove b"), "= c1\n\n");
}

TEST(GtpEngineTest, CreateNeedsAPlayerFactory) {
  EXPECT_EQ(GtpEngine<games::Go>::Create({.start = games::Go()}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// The gnugo:LEVEL player joins a game it did not see start (an evaluation's random opening) by
// rebuilding the position from the empty board, then follows it move by move.
TEST(GnuGoPlayerTest, JoinsAfterAnOpeningItDidNotSeeThenFollows) {
  if (!gtp::FindGnuGo().ok()) GTEST_SKIP() << "GNU Go is not installed";
  games::Go game = *games::Go::Create(9);
  absl::StatusOr<std::unique_ptr<players::Player<games::Go>>> gnugo =
      players::MakePlayer<games::Go>("gnugo:0", game, 1);
  ASSERT_TRUE(gnugo.ok()) << gnugo.status();
  for (const char* move : {"E5", "pass", "C3"}) game.Apply(*game.ParseAction(move));
  for (int ply = 0; ply < 6 && !game.IsTerminal(); ++ply) {
    absl::StatusOr<int> action = (*gnugo)->ChooseAction(game);
    ASSERT_TRUE(action.ok()) << "ply " << ply << ": " << action.status();
    ASSERT_TRUE(action.value() == players::kResignAction || game.IsLegal(*action)) << *action;
    if (*action == players::kResignAction) break;
    game.Apply(*action);
  }
  EXPECT_GE(game.NumMoves(), 4);

  // A new game in which Black captured a White stone out of GNU Go's sight: the same board with
  // White to move is rebuilt with a pass in place of the captured stone.
  games::Go captured = *games::Go::Create(9);
  for (const char* move : {"B9", "A9", "A8"}) captured.Apply(*captured.ParseAction(move));
  ASSERT_EQ(captured.StoneAt(0, 0), -1);  // A9 was taken
  absl::StatusOr<int> reply = (*gnugo)->ChooseAction(captured);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_TRUE(*reply == players::kResignAction || captured.IsLegal(*reply)) << *reply;
}

}  // namespace
}  // namespace zf::cli
