#include "cli/gtp/gtp_engine.h"

#include <fstream>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "search/uniform_evaluator.h"

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
            "clear_board\nkomi\nplay\ngenmove\nundo\nfinal_score\nshowboard\nquit\nlz-analyze\n"
            "kata-analyze\nlz-genmove_analyze\nkata-genmove_analyze\nloadsgf\n\n");
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

// A uniform evaluator with a score (player 0 leads by 0.4 points / sqrt(cells) everywhere) and
// an ownership (cell k: k / 100, from the side to move), for the analysis fields.
class ScoringEvaluator final : public search::Evaluator<games::Go> {
 public:
  absl::Status Evaluate(std::span<const games::Go> positions, std::span<float> policies,
                        std::span<float> values) override {
    return uniform_.Evaluate(positions, policies, values);
  }
  absl::Status EvaluateWithScores(std::span<const games::Go> positions, std::span<float> policies,
                                  std::span<float> values, std::span<float> scores) override {
    for (size_t i = 0; i < positions.size(); ++i) {
      scores[i] = positions[i].ToPlay() == 0 ? 0.4f : -0.4f;
    }
    return uniform_.Evaluate(positions, policies, values);
  }
  absl::StatusOr<std::vector<float>> Ownership(const games::Go& position) override {
    std::vector<float> out(static_cast<size_t>(position.Size() * position.Size()));
    for (size_t k = 0; k < out.size(); ++k) out[k] = static_cast<float>(k) / 100.0f;
    return out;
  }

 private:
  search::UniformEvaluator<games::Go> uniform_;
};

// An engine whose player searches: MCTS with `sims` simulations over ScoringEvaluator.
std::unique_ptr<GtpEngine<games::Go>> SearchingEngine(int sims) {
  auto engine = GtpEngine<games::Go>::Create(
      {.start = *games::Go::Create(5),
       .make_player = [sims](const games::Go& s)
           -> absl::StatusOr<std::unique_ptr<players::Player<games::Go>>> {
         ZF_ASSIGN_OR_RETURN(auto player, players::MctsPlayer<games::Go>::Create(
                                              s, sims, std::make_unique<ScoringEvaluator>(), 1, 8));
         return std::unique_ptr<players::Player<games::Go>>(std::move(player));
       }});
  EXPECT_TRUE(engine.ok()) << engine.status();
  return std::move(*engine);
}

// Streams a pending analysis until `lines` info lines were emitted (the next command then
// "arrives"); returns {lines emitted, the response's end}.
std::pair<std::vector<std::string>, std::string> Stream(GtpEngine<games::Go>& engine, int lines) {
  std::vector<std::string> emitted;
  std::string end = engine.StreamAnalysis(
      [&](absl::Duration) { return static_cast<int>(emitted.size()) >= lines; },
      [&](const std::string& line) { emitted.push_back(line); });
  return {emitted, end};
}

TEST(GtpEngineAnalysisTest, LzAnalyzeStreamsLeelaZerosInfoLinesUntilTheNextCommand) {
  auto engine = SearchingEngine(64);
  ASSERT_EQ(engine->Handle("play b C3"), "=\n\n");
  EXPECT_EQ(engine->Handle("7 lz-analyze 1"), "=7\n");  // 1 centisecond
  ASSERT_TRUE(engine->analysis_pending());
  const auto [lines, end] = Stream(*engine, 3);
  EXPECT_EQ(end, "\n");
  ASSERT_GE(lines.size(), 3u);
  const std::regex entry(
      R"(info move ([A-HJ-T]\d+|pass) visits \d+ winrate \d+ prior \d+ lcb \d+ order \d+ pv( [A-HJ-T]\d+| pass)+)");
  for (const std::string& line : lines) {
    ASSERT_TRUE(absl::EndsWith(line, "\n")) << line;
    for (absl::string_view one : absl::StrSplit(line.substr(0, line.size() - 1), " info ")) {
      std::string text(one);
      if (!absl::StartsWith(text, "info ")) text = "info " + text;
      EXPECT_TRUE(std::regex_match(text, entry)) << text;
    }
  }
  EXPECT_THAT(lines.back(), HasSubstr("winrate 5000 "));  // the uniform evaluator's value 0
  EXPECT_THAT(lines.back(), HasSubstr(" order 0 pv "));
  // The analysis changes nothing: White is still to move, one stone on the board.
  EXPECT_FALSE(engine->analysis_pending());
  EXPECT_EQ(engine->position().NumMoves(), 1);
  EXPECT_EQ(engine->Handle("genmove w").substr(0, 2), "= ");
}

TEST(GtpEngineAnalysisTest, KataAnalyzeHasFloatsScoreLeadAndOwnership) {
  auto engine = SearchingEngine(64);
  EXPECT_EQ(engine->Handle("kata-analyze B interval 1 ownership true"), "=\n");
  const auto [lines, end] = Stream(*engine, 2);
  ASSERT_GE(lines.size(), 2u);
  const std::string& line = lines.back();
  EXPECT_THAT(line, StartsWith("info move "));
  EXPECT_THAT(line, HasSubstr(" winrate 0.500000 "));
  // Black to move, 0.4 points / sqrt(25 cells) ahead: 2 points.
  EXPECT_THAT(line, HasSubstr(" scoreLead 2.000000 "));
  EXPECT_THAT(line, HasSubstr(" order 0 pv "));
  const size_t at = line.find(" ownership ");
  ASSERT_NE(at, std::string::npos);
  const std::vector<std::string> values =
      absl::StrSplit(line.substr(at + 11, line.size() - at - 12), ' ');
  ASSERT_EQ(values.size(), 25u);
  EXPECT_EQ(values[0], "0.0000");
  EXPECT_EQ(values[24], "0.2400");
}

TEST(GtpEngineAnalysisTest, GenmoveAnalyzeSearchesThePlayersBudgetThenPlays) {
  auto engine = SearchingEngine(48);
  EXPECT_EQ(engine->Handle("3 lz-genmove_analyze b 1"), "=3\n");
  const auto [lines, end] = Stream(*engine, 0);  // input never stops a genmove
  EXPECT_THAT(end, ::testing::MatchesRegex("play [A-E][1-5]\n\n"));
  EXPECT_EQ(engine->position().NumMoves(), 1);
  EXPECT_EQ(engine->position().ToPlay(), 1);
  for (const std::string& line : lines) EXPECT_THAT(line, StartsWith("info move "));
}

TEST(GtpEngineAnalysisTest, NothingToReportPrintsNoEmptyLineBeforeTheEnd) {
  auto engine = SearchingEngine(64);
  EXPECT_EQ(engine->Handle("lz-analyze 1 maxmoves 0"), "=\n");
  const auto [lines, end] = Stream(*engine, 0);
  EXPECT_TRUE(lines.empty());  // an empty line would have ended the response early
  EXPECT_EQ(end, "\n");
}

TEST(GtpEngineAnalysisTest, GenmoveAnalyzeSearchesExactlyThePlayersSimulations) {
  auto engine = SearchingEngine(50);  // not a multiple of the 16-simulation steps
  EXPECT_EQ(engine->Handle("lz-genmove_analyze b 1"), "=\n");
  std::string last;
  const std::string end = engine->StreamAnalysis([](absl::Duration) { return true; },
                                                 [&](const std::string& line) { last = line; });
  EXPECT_THAT(end, StartsWith("play "));
  ASSERT_FALSE(last.empty());
  int visits = 0;
  for (absl::string_view entry : absl::StrSplit(last, " info ")) {
    const std::vector<std::string> tokens = absl::StrSplit(entry, ' ');
    for (size_t t = 0; t + 1 < tokens.size(); ++t) {
      if (tokens[t] == "visits") visits += std::stoi(tokens[t + 1]);
    }
  }
  // The children's visits: at most the root's 50 (before, a 16-simulation step overshot it).
  EXPECT_LE(visits, 50);
  EXPECT_GT(visits, 0);
  EXPECT_EQ(engine->position().NumMoves(), 1);
}

TEST(GtpEngineAnalysisTest, BadArgumentsAndPlayersThatDoNotSearch) {
  auto engine = SearchingEngine(16);
  EXPECT_EQ(engine->Handle("lz-analyze w 10"), "? illegal move: it is black's turn\n\n");
  EXPECT_EQ(engine->Handle("lz-analyze 10 avoid b D4 1"),
            "? syntax error: avoid is not supported\n\n");
  EXPECT_EQ(engine->Handle("kata-analyze 10 ownership maybe"),
            "? syntax error: ownership takes true or false\n\n");
  EXPECT_EQ(engine->Handle("kata-analyze 10 interval"),
            "? syntax error: interval needs a value\n\n");
  EXPECT_EQ(engine->Handle("lz-analyze 10 frob 1"),
            "? syntax error: unknown analysis key \"frob\"\n\n");
  EXPECT_EQ(engine->Handle("lz-genmove_analyze"),
            "? syntax error: usage: lz-genmove_analyze COLOR [INTERVAL] [KEY VALUE]...\n\n");
  EXPECT_FALSE(engine->analysis_pending());
  GoGtp scripted(*games::Go::Create(5));
  EXPECT_EQ(scripted("lz-analyze 10"),
            "? engine error: this player does not search: no analysis\n\n");
  EXPECT_EQ(scripted("known_command kata-analyze"), "= true\n\n");
}

TEST(GtpEngineTest, LoadsgfSetsUpTheGameBeforeTheGivenMove) {
  const std::string path = ::testing::TempDir() + "/loadsgf_test.sgf";
  std::ofstream(path) << "(;GM[1]FF[4]SZ[7]KM[5.5];B[dd];W[cc];B[ee])";
  GoGtp gtp(*games::Go::Create(5));
  EXPECT_EQ(gtp(absl::StrCat("loadsgf ", path, " 3")), "=\n\n");  // before move 3
  EXPECT_EQ(gtp.engine().position().Size(), 7);
  EXPECT_EQ(gtp.engine().position().Komi(), 5.5f);
  EXPECT_EQ(gtp.engine().position().NumMoves(), 2);
  EXPECT_EQ(gtp(absl::StrCat("loadsgf ", path)), "=\n\n");
  EXPECT_EQ(gtp.engine().position().NumMoves(), 3);
  EXPECT_EQ(gtp("undo"), "=\n\n");
  EXPECT_EQ(gtp.engine().position().NumMoves(), 2);
  std::ofstream(path) << "(;GM[1]SZ[7];B[dd];B[cc])";
  EXPECT_THAT(gtp(absl::StrCat("loadsgf ", path)),
              StartsWith("? cannot load file: B[cc] at move 2: it is White's turn"));
  EXPECT_THAT(gtp("loadsgf /nonexistent.sgf"), StartsWith("? cannot load file: /nonexistent"));
  EXPECT_EQ(gtp("loadsgf /dev/zero"), "? cannot load file: /dev/zero: not a regular file\n\n");
  EXPECT_EQ(gtp(absl::StrCat("loadsgf ", ::testing::TempDir())),
            absl::StrCat("? cannot load file: ", ::testing::TempDir(), ": not a regular file\n\n"));
  EXPECT_EQ(gtp.engine().position().NumMoves(), 2);  // unchanged by the failures
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
