// `zf gtp` and `zf analyze` as GTP programs, scripts and GNU Go see them, and GNU Go as a `zf
// match` player (gnugo:LEVEL).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/testing/subprocess.h"
#include "games/go/go.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "gtp/gtp_client.h"
#include "tests/zf_cli_testing.h"

namespace zf {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::zf::testing::ExpectUsageError;
using ::zf::testing::ProcessResult;
using ::zf::testing::Zf;

TEST(CliGtpTest, AnswersAScriptIncludingErrorsAndNeverExitsOnBadInput) {
  const std::string script =
      "1 protocol_version\n"
      "2 name\n"
      "# a comment line\n"
      "\n"
      "3 boardsize 5\n"
      "4 clear_board\n"
      "5 komi 6.5\n"
      "6 play black C3\n"
      "7 play white C3\n"   // occupied
      "8 play white Z9\n"   // no such vertex
      "9 play purple D4\n"  // no such colour
      "10 frobnicate\n"     // unknown command
      "11 boardsize 42\n"   // unacceptable
      "12 genmove white\n"
      "13 undo\n"
      "14 genmove white\n"
      "15 final_score\n"
      "16 known_command genmove\n"
      "quit\n"
      "17 name\n";  // after quit: not read
  ProcessResult r = Zf({"gtp", "--game", "go:9", "--player", "mcts:30", "--seed", "3"}, script);
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  std::vector<std::string> replies = absl::StrSplit(r.stdout_text, "\n\n", absl::SkipEmpty());
  ASSERT_EQ(replies.size(), 17u) << r.stdout_text;
  EXPECT_EQ(replies[0], "=1 2");
  EXPECT_EQ(replies[1], "=2 zerofleet");
  EXPECT_EQ(replies[2], "=3");
  EXPECT_EQ(replies[3], "=4");
  EXPECT_EQ(replies[4], "=5");
  EXPECT_EQ(replies[5], "=6");
  EXPECT_EQ(replies[6], "?7 illegal move");
  EXPECT_EQ(replies[7], "?8 invalid vertex \"Z9\"");
  EXPECT_EQ(replies[8], "?9 invalid color \"purple\"");
  EXPECT_EQ(replies[9], "?10 unknown command");
  EXPECT_EQ(replies[10], "?11 unacceptable size");
  EXPECT_THAT(replies[11], MatchesRegex("=12 ([A-E][1-5]|pass)"));
  EXPECT_NE(replies[11], "=12 C3");
  EXPECT_EQ(replies[12], "=13");
  EXPECT_THAT(replies[13], MatchesRegex("=14 ([A-E][1-5]|pass)"));
  EXPECT_THAT(replies[14], MatchesRegex("=15 (B|W)\\+[0-9.]+|=15 0"));
  EXPECT_EQ(replies[15], "=16 true");
  EXPECT_EQ(replies[16], "=");
}

TEST(CliGtpTest, EndOfInputEndsTheEngineCleanly) {
  ProcessResult r = Zf({"gtp", "--game", "tictactoe", "--player", "perfect", "--seed", "1"},
                       "play b B2\ngenmove w\nplay b ZZ\n");
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, MatchesRegex("=\n\n= [AC][13]\n\n\\? invalid vertex \"ZZ\"\n\n"));
}

TEST(CliGtpTest, GamesWithoutVerticesAndBadPlayersAreUsageErrors) {
  ExpectUsageError({"gtp", "--game", "dotsboxes", "--player", "random"}, "vertices");
  ExpectUsageError({"gtp", "--game", "go:5", "--player", "mcts:0"}, "simulations");
  ExpectUsageError({"gtp", "--game", "go:5", "--player", "perfect"}, "tictactoe");
  ExpectUsageError({"match", "--game", "go:5", "--p1", "gnugo:11", "--p2", "random"}, "0..10");
  ExpectUsageError({"match", "--game", "connect4", "--p1", "gnugo:1", "--p2", "random"},
                   "only available for go");
}

// The "visits" object of analyze's JSON as (move, visits) pairs.
std::vector<std::pair<std::string, int>> Visits(const std::string& json) {
  std::smatch m;
  std::vector<std::pair<std::string, int>> out;
  if (!std::regex_search(json, m, std::regex("\"visits\": \\{([^}]*)\\}"))) return out;
  const std::string body = m[1];
  std::regex entry("\"([^\"]+)\": ([0-9]+)");
  for (auto it = std::sregex_iterator(body.begin(), body.end(), entry);
       it != std::sregex_iterator(); ++it) {
    out.emplace_back((*it)[1], std::stoi((*it)[2]));
  }
  return out;
}

TEST(CliAnalyzeTest, JsonHasTheMoveTheValueAndVisitsThatSumToTheSimulations) {
  ProcessResult r = Zf({"analyze", "--game", "go:5", "--moves", "C3,D4,pass", "--player", "mcts:64",
                        "--seed", "2", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text,
              MatchesRegex("\\{\"game\": \"go:5\", \"to_play\": 1, \"player\": \"mcts:64\", "
                           "\"move\": \"([A-E][1-5]|pass)\", \"value\": -?[0-9.]+, "
                           "\"root_visits\": [0-9]+, \"visits\": \\{.*\\}, \"values\": \\{.*\\}, "
                           "\"priors\": \\{.*\\}\\}\n"));
  const std::vector<std::pair<std::string, int>> visits = Visits(r.stdout_text);
  // Every legal move of White is listed: the 23 empty points and pass.
  ASSERT_EQ(visits.size(), 24u) << r.stdout_text;
  int total = 0, most = -1;
  std::string best;
  for (const auto& [move, n] : visits) {
    EXPECT_NE(move, "C3");
    EXPECT_NE(move, "D4");
    total += n;
    if (n > most) most = n, best = move;
  }
  // The first simulation expands the root; each of the other 63 visits one child.
  EXPECT_THAT(r.stdout_text, HasSubstr("\"root_visits\": 64,"));
  EXPECT_EQ(total, 63);
  EXPECT_THAT(r.stdout_text, HasSubstr(absl::StrCat("\"move\": \"", best, "\"")));
  // Seeded: the same command gives the same analysis.
  EXPECT_EQ(Zf({"analyze", "--game", "go:5", "--moves", "C3,D4,pass", "--player", "mcts:64",
                "--seed", "2", "--json"})
                .stdout_text,
            r.stdout_text);
}

TEST(CliAnalyzeTest, TextTableAndPlayersWithoutSearch) {
  ProcessResult r = Zf({"analyze", "--game", "connect4", "--moves", "3,3", "--player",
                        "uniform:100", "--seed", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text,
              HasSubstr("connect4 after 2 moves, player 0 to move: uniform:100 plays"));
  EXPECT_THAT(r.stdout_text, ContainsRegex("move +visits +value +prior\n"));
  EXPECT_THAT(r.stdout_text, ContainsRegex("\n[0-6] +[0-9]+ +[-+][0-9.]+ +0\\.143\n"));

  r = Zf({"analyze", "--game", "tictactoe", "--moves", "a1,b2", "--player", "perfect", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, HasSubstr("\"value\": null, \"root_visits\": 0, \"visits\": {}"));

  ExpectUsageError({"analyze", "--game", "tictactoe", "--moves", "a1,a1", "--player", "random"},
                   "illegal");
  ExpectUsageError(
      {"analyze", "--game", "tictactoe", "--moves", "a1,b1,a2,b2,a3", "--player", "random"},
      "game is over");
}

// The stones of `mark` ('X' or 'O') on a showboard of zf's Go board, as sorted GTP vertices.
std::vector<std::string> StonesOnBoard(const std::string& board, char mark) {
  std::vector<std::string> out;
  const std::string letters = "ABCDEFGHJKLMNOPQRST";
  std::regex row_line("^ ?([0-9]+) ((?:[.XO] )+)[0-9]+$");
  for (absl::string_view line : absl::StrSplit(board, '\n')) {
    std::smatch m;
    const std::string text(line);
    if (!std::regex_match(text, m, row_line)) continue;
    const std::string cells = m[2];
    for (size_t col = 0; 2 * col < cells.size(); ++col) {
      if (cells[2 * col] == mark)
        out.push_back(absl::StrCat(std::string(1, letters[col]), m[1].str()));
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// zf gtp plays GNU Go on 5 x 5, the two engines connected through this test as the referee:
// each genmove answer is played into the other engine, which must accept it as legal.
TEST(CliGtpTest, PlaysACompleteGameAgainstGnuGo) {
  absl::StatusOr<std::string> gnugo_path = gtp::FindGnuGo();
  ASSERT_TRUE(gnugo_path.ok()) << gnugo_path.status();
  absl::StatusOr<std::unique_ptr<gtp::GtpClient>> gnugo = gtp::GtpClient::Create(
      {.argv = {*gnugo_path, "--mode", "gtp", "--level", "0", "--chinese-rules",
                "--positional-superko", "--forbid-suicide"}});
  ASSERT_TRUE(gnugo.ok()) << gnugo.status();
  absl::StatusOr<std::unique_ptr<gtp::GtpClient>> zf = gtp::GtpClient::Create(
      {.argv = {ZF_BINARY, "gtp", "--game", "go", "--player", "mcts:50", "--seed", "4"}});
  ASSERT_TRUE(zf.ok()) << zf.status();
  gtp::GtpClient* engines[2] = {zf->get(), gnugo->get()};  // zf plays Black
  for (gtp::GtpClient* e : engines) {
    ASSERT_TRUE(e->Send("boardsize 5").ok());
    ASSERT_TRUE(e->Send("komi 2.5").ok());
    ASSERT_TRUE(e->Send("clear_board").ok());
  }
  const char* colors[2] = {"black", "white"};
  int passes = 0, plies = 0;
  std::string record;
  std::string resigned;
  while (passes < 2 && plies < 50) {
    const int mover = plies % 2;
    absl::StatusOr<std::string> move =
        engines[mover]->Send(absl::StrCat("genmove ", colors[mover]));
    ASSERT_TRUE(move.ok()) << move.status() << " after" << record;
    absl::StrAppend(&record, " ", *move);
    if (*move == "resign") {
      resigned = colors[mover];
      break;
    }
    absl::StatusOr<std::string> played =
        engines[1 - mover]->Send(absl::StrCat("play ", colors[mover], " ", *move));
    ASSERT_TRUE(played.ok()) << played.status() << " after" << record;
    passes = absl::EqualsIgnoreCase(*move, "pass") ? passes + 1 : 0;
    ++plies;
  }
  EXPECT_TRUE(passes == 2 || !resigned.empty() || plies == 50) << record;
  EXPECT_GE(plies, 2) << record;
  // Both engines hold the same stones at the end.
  absl::StatusOr<std::string> board = zf->get()->Send("showboard");
  ASSERT_TRUE(board.ok()) << board.status();
  for (int color = 0; color < 2; ++color) {
    absl::StatusOr<std::string> theirs =
        gnugo->get()->Send(absl::StrCat("list_stones ", colors[color]));
    ASSERT_TRUE(theirs.ok()) << theirs.status();
    std::vector<std::string> expected = absl::StrSplit(*theirs, ' ', absl::SkipEmpty());
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(StonesOnBoard(*board, color == 0 ? 'X' : 'O'), expected) << *board << record;
  }
  std::printf("zf (black, mcts:50) vs GNU Go level 0 on 5x5:%s\n", record.c_str());
}

TEST(CliGtpTest, MatchAgainstGnuGoPlaysCompleteGames) {
  ProcessResult r = Zf({"match", "--game", "go:5", "--p1", "mcts:50", "--p2", "gnugo:1", "--games",
                        "2", "--seed", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, ContainsRegex("game 1: p1 plays first, (win|loss|draw) for p1"));
  EXPECT_THAT(r.stdout_text, ContainsRegex("game 2: p1 plays second, (win|loss|draw) for p1"));
  EXPECT_THAT(r.stdout_text, HasSubstr("over 2 games"));
}

// The acceptance check, on a small board: a network player against GNU Go plays complete
// games (each ends by two passes, the length cap or a resignation).
TEST(CliGtpTest, NetworkPlayerAgainstGnuGoPlaysCompleteGames) {
  const std::string ckpt =
      ::testing::TempDir() + "/cli_gtp_go5_" + std::to_string(::getpid()) + ".zfckpt";
  ProcessResult r = Zf({"checkpoint", "new", "--game", "go:5", "--out", ckpt, "--blocks", "1",
                        "--filters", "8", "--seed", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  r = Zf({"match", "--game", "go:5", "--p1", "net:" + ckpt + ":8", "--p2", "gnugo:1", "--games",
          "2", "--seed", "1"});
  std::remove(ckpt.c_str());
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  for (absl::string_view line : absl::StrSplit(r.stdout_text, '\n', absl::SkipEmpty())) {
    if (!absl::StartsWith(line, "game ")) continue;
    EXPECT_TRUE(absl::EndsWith(line, ",pass,pass") || absl::EndsWith(line, ",resign") ||
                absl::StrContains(line, "in 50 moves"))
        << line;
  }
  EXPECT_THAT(r.stdout_text, HasSubstr("over 2 games"));
}

// What Lizzie 0.7.4 (Debian's liblizzie-java) sent `zf gtp` when the picture in docs/gtp.md was
// taken: its start, then a `play` and an `lz-analyze 10` per stone placed on the board. Lizzie
// reads every reply's id with Integer.parseInt, the analysis as "info" entries of key-value
// pairs up to "pv", with integer winrate, prior and lcb (Leela Zero's form); this test reads
// the replies the same way, with the trained 9x9 reference network as the engine.
TEST(CliGtpTest, LizziesRecordedExchangeGetsRepliesLizzieCanRead) {
  const std::vector<std::string> sent = {
      "1 name",           "2 version",    "3 boardsize 9",    "4 komi 7.5",
      "5 lz-analyze 10",  "6 play B E5",  "7 lz-analyze 10",  "8 play W C4",
      "9 lz-analyze 10",  "10 play B F3", "11 lz-analyze 10", "12 play W D6",
      "13 lz-analyze 10", "14 play B G6", "15 lz-analyze 10", "16 play W E7",
      "17 lz-analyze 10", "18 play B C6", "19 lz-analyze 10", "20 play W D7",
      "21 lz-analyze 10", "22 showboard"};
  std::string script;
  for (const std::string& line : sent) script += line + "\n";
  ProcessResult r =
      Zf({"gtp", "--game", "go:9", "--player",
          absl::StrCat("net:", ZF_SOURCE_DIR, "/bench/reference/go9-gumbel-105min.zfckpt:400")},
         script);
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  std::vector<std::string> replies = absl::StrSplit(r.stdout_text, "\n\n", absl::SkipEmpty());
  ASSERT_EQ(replies.size(), sent.size()) << r.stdout_text;
  int analyses = 0;
  for (size_t i = 0; i < sent.size(); ++i) {
    const std::vector<std::string> lines = absl::StrSplit(replies[i], '\n');
    // "=ID ..." with the command's id, as Lizzie's Integer.parseInt(params[0].substring(1)).
    const std::string head = lines[0].substr(0, lines[0].find(' '));
    int id = 0;
    ASSERT_TRUE(head.size() > 1 && head[0] == '=' && absl::SimpleAtoi(head.substr(1), &id))
        << replies[i];
    EXPECT_EQ(id, static_cast<int>(i) + 1);
    if (!absl::StrContains(sent[i], "lz-analyze")) continue;
    ++analyses;
    ASSERT_GE(lines.size(), 2u) << "no info line: " << replies[i];
    for (size_t k = 1; k < lines.size(); ++k) {
      ASSERT_TRUE(absl::StartsWith(lines[k], "info ")) << lines[k];
      for (absl::string_view entry : absl::StrSplit(lines[k].substr(5), " info ")) {
        std::vector<std::string> tokens = absl::StrSplit(entry, ' ');
        std::map<std::string, std::string> fields;
        size_t t = 0;
        for (; t + 1 < tokens.size() && tokens[t] != "pv"; t += 2)
          fields[tokens[t]] = tokens[t + 1];
        ASSERT_LT(t, tokens.size()) << entry;
        EXPECT_EQ(tokens[t], "pv") << entry;
        EXPECT_GT(tokens.size(), t + 1) << "an empty pv: " << entry;
        for (const char* key : {"move", "visits", "winrate", "prior", "lcb", "order"}) {
          EXPECT_TRUE(fields.count(key)) << key << " missing: " << entry;
        }
        for (const char* key : {"visits", "winrate", "prior", "lcb", "order"}) {
          int value = -1;
          EXPECT_TRUE(absl::SimpleAtoi(fields[key], &value) && value >= 0) << key << ": " << entry;
        }
        int winrate = -1;
        ASSERT_TRUE(absl::SimpleAtoi(fields["winrate"], &winrate));
        EXPECT_LE(winrate, 10000);
      }
    }
  }
  EXPECT_EQ(analyses, 9);
  // The board after the eight stones Lizzie placed.
  EXPECT_THAT(replies.back(), HasSubstr("move 8"));
}

}  // namespace
}  // namespace zf
