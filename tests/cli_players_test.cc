// `zf match`, `zf play`, `zf bench mcts` and `zf checkpoint` as a user or a script sees them.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "common/testing/status_matchers.h"
#include "common/testing/subprocess.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/zf_cli_testing.h"

namespace zf {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::zf::testing::ExpectUsageError;
using ::zf::testing::ProcessResult;
using ::zf::testing::Zf;

class CliPlayersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("zf_cli_players_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  std::filesystem::path dir_;
};

TEST_F(CliPlayersTest, PerfectNeverLosesAndBeatsRandom) {
  ProcessResult r = Zf({"match", "--game", "tictactoe", "--p1", "perfect", "--p2", "random",
                        "--games", "40", "--seed", "5", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  // {"wins": W, "draws": D, "losses": 0} with W + D = 40 and most games won.
  EXPECT_THAT(r.stdout_text,
              MatchesRegex("\\{\"wins\": [0-9]+, \"draws\": [0-9]+, \"losses\": 0\\}\n"));
  int wins = 0, draws = 0, losses = 0;
  ASSERT_EQ(std::sscanf(r.stdout_text.c_str(), "{\"wins\": %d, \"draws\": %d, \"losses\": %d}",
                        &wins, &draws, &losses),
            3);
  EXPECT_EQ(wins + draws + losses, 40);
  EXPECT_GE(wins, 25);

  // Perfect against perfect: every game is a draw.
  r = Zf({"match", "--game", "tictactoe", "--p1", "perfect", "--p2", "perfect", "--games", "6",
          "--json"});
  EXPECT_EQ(r.stdout_text, "{\"wins\": 0, \"draws\": 6, \"losses\": 0}\n");
}

TEST_F(CliPlayersTest, MctsBeatsRandomAtConnectFour) {
  ProcessResult r = Zf({"match", "--game", "connect4", "--p1", "mcts:300", "--p2", "random",
                        "--games", "6", "--seed", "1", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  int wins = 0, draws = 0, losses = 0;
  ASSERT_EQ(std::sscanf(r.stdout_text.c_str(), "{\"wins\": %d, \"draws\": %d, \"losses\": %d}",
                        &wins, &draws, &losses),
            3);
  EXPECT_EQ(wins + draws + losses, 6);
  EXPECT_GE(wins, 5);
}

TEST_F(CliPlayersTest, TextMatchAlternatesColours) {
  ProcessResult r = Zf({"match", "--game", "dotsboxes:2x2", "--p1", "uniform:50", "--p2", "random",
                        "--games", "2", "--seed", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, HasSubstr("game 1: p1 plays first"));
  EXPECT_THAT(r.stdout_text, HasSubstr("game 2: p1 plays second"));
  EXPECT_THAT(r.stdout_text,
              ContainsRegex("over 2 games: [0-9]+ wins, [0-9]+ draws, [0-9]+ losses"));
}

// The moves of each game of a text match ("game N: ...: m1,m2,...").
std::vector<std::vector<std::string>> MatchMoves(const std::string& out) {
  std::vector<std::vector<std::string>> games;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("game ", 0) != 0) continue;
    games.push_back(absl::StrSplit(line.substr(line.rfind(": ") + 2), ','));
  }
  return games;
}

// Two deterministic players (MCTS with uniform priors) replay the same game without openings;
// with the default two random plies, games 2k and 2k+1 share their opening (colours swapped)
// and the pairs differ.
TEST_F(CliPlayersTest, RandomOpeningsVaryTheGamesOfDeterministicPlayers) {
  ProcessResult r = Zf({"match", "--game", "connect4", "--p1", "uniform:20", "--p2", "uniform:30",
                        "--games", "6", "--seed", "4"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text,
              HasSubstr("(2 random opening plies a game, each opening played with both colours)"));
  std::vector<std::vector<std::string>> games = MatchMoves(r.stdout_text);
  ASSERT_EQ(games.size(), 6u) << r.stdout_text;
  for (int pair = 0; pair < 3; ++pair) {
    const auto& a = games[2 * pair];
    const auto& b = games[2 * pair + 1];
    ASSERT_GE(std::min(a.size(), b.size()), 2u);
    EXPECT_EQ(std::vector<std::string>(a.begin(), a.begin() + 2),
              std::vector<std::string>(b.begin(), b.begin() + 2))
        << r.stdout_text;
  }
  EXPECT_FALSE(games[0] == games[2] && games[2] == games[4]) << r.stdout_text;

  r = Zf({"match", "--game", "connect4", "--p1", "uniform:20", "--p2", "uniform:30", "--games", "4",
          "--seed", "4", "--opening_moves", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  games = MatchMoves(r.stdout_text);
  ASSERT_EQ(games.size(), 4u) << r.stdout_text;
  EXPECT_EQ(games[0], games[2]);  // p1 first in both: the same game
  EXPECT_EQ(games[1], games[3]);
}

TEST_F(CliPlayersTest, NetworkPlayerFromACheckpoint) {
  const std::string ckpt = Path("c4.zfckpt");
  ProcessResult r = Zf({"checkpoint", "new", "--game", "connect4", "--out", ckpt, "--blocks", "1",
                        "--filters", "8", "--seed", "3", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, HasSubstr("\"game\": \"connect4\", \"version\": 0"));
  EXPECT_THAT(r.stdout_text, HasSubstr("\"input\": [3, 6, 7], \"num_actions\": 7"));

  r = Zf({"checkpoint", "show", ckpt});
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, HasSubstr("(verified)"));

  r = Zf({"match", "--game", "connect4", "--p1", "net:" + ckpt + ":8", "--p2", "random", "--games",
          "2", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text,
              MatchesRegex("\\{\"wins\": [0-2], \"draws\": [0-2], \"losses\": [0-2]\\}\n"));

  // The checkpoint is for Connect Four: using it for tic-tac-toe is bad input.
  ExpectUsageError({"match", "--game", "tictactoe", "--p1", "net:" + ckpt + ":8", "--p2", "random"},
                   "connect4");
  // Score utility needs the score head, which this network has not.
  ExpectUsageError({"match", "--game", "connect4", "--p1", "net:" + ckpt + ":8:score_utility=0.3",
                    "--p2", "random"},
                   "score_utility needs a network with the score head");

  // A flipped byte in the weights: refused, with the file named.
  std::string bytes;
  {
    std::ifstream in(ckpt, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  bytes[bytes.size() - 10] ^= 0x20;
  {
    std::ofstream out(ckpt, std::ios::binary | std::ios::trunc);
    out << bytes;
  }
  ExpectUsageError({"match", "--game", "connect4", "--p1", "net:" + ckpt + ":8", "--p2", "random"},
                   ckpt);
  r = Zf({"checkpoint", "show", ckpt});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.stderr_text, HasSubstr(ckpt));
}

// A Go network with ownership and score heads: written, shown, and played (inference loads the
// heads' weights; it computes the score head only for a player with score utility).
TEST_F(CliPlayersTest, GoNetworkWithAuxHeads) {
  const std::string ckpt = Path("go5.zfckpt");
  ProcessResult r = Zf({"checkpoint", "new", "--game", "go:5", "--out", ckpt, "--blocks", "1",
                        "--filters", "8", "--aux_heads"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, HasSubstr("ownership and score heads"));
  r = Zf({"checkpoint", "show", ckpt});
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, HasSubstr("ownership and score heads"));
  r = Zf({"match", "--game", "go:5", "--p1", "net:" + ckpt + ":4", "--p2", "random", "--games", "2",
          "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  // The score head steers a match's search too (score utility), and a bad option is named.
  r = Zf({"match", "--game", "go:5", "--p1", "net:" + ckpt + ":8:score_utility=0.3", "--p2",
          "random", "--games", "2", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text,
              MatchesRegex("\\{\"wins\": [0-2], \"draws\": [0-2], \"losses\": [0-2]\\}\n"));
  ExpectUsageError(
      {"match", "--game", "go:5", "--p1", "net:" + ckpt + ":8:score_utility=2", "--p2", "random"},
      "score_utility must be a number in 0..1, got \"2\"");
  ExpectUsageError(
      {"match", "--game", "go:5", "--p1", "net:" + ckpt + ":8:cpuct=2", "--p2", "random"},
      "unknown option \"cpuct=2\"");
  // Only games with final ownership have them.
  ExpectUsageError(
      {"checkpoint", "new", "--game", "connect4", "--out", Path("c4aux.zfckpt"), "--aux_heads"},
      "final ownership (Go); connect4 has none");
}

// A network with global pooling blocks (any game): written, shown, and played.
TEST_F(CliPlayersTest, NetworkWithGlobalPooling) {
  const std::string ckpt = Path("c4pool.zfckpt");
  ProcessResult r = Zf({"checkpoint", "new", "--game", "connect4", "--out", ckpt, "--blocks", "2",
                        "--filters", "8", "--global_pooling"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, HasSubstr("2 blocks x 8 filters, value hidden 64, global pooling"));
  r = Zf({"checkpoint", "show", ckpt, "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, HasSubstr("\"global_pooling\": true"));
  r = Zf({"match", "--game", "connect4", "--p1", "net:" + ckpt + ":4", "--p2", "random", "--games",
          "2", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
}

TEST_F(CliPlayersTest, BadPlayerSpecsAndNumbers) {
  ExpectUsageError({"match", "--game", "tictactoe", "--p1", "mcts:x", "--p2", "random"}, "mcts:x");
  ExpectUsageError({"match", "--game", "tictactoe", "--p1", "mcts:0", "--p2", "random"},
                   "1..1000000");
  ExpectUsageError({"match", "--game", "tictactoe", "--p1", "alphabeta", "--p2", "random"},
                   "unknown player \"alphabeta\"");
  ExpectUsageError({"match", "--game", "dotsboxes", "--p1", "perfect", "--p2", "random"},
                   "only available for tictactoe and connect4");
  ExpectUsageError(
      {"match", "--game", "connect4", "--p1", "gtp:gnugo --mode gtp", "--p2", "random"},
      "GTP engines play go only");
  ExpectUsageError({"match", "--game", "go:9", "--p1", "gtp:", "--p2", "random"},
                   "expected gtp:COMMAND");
  ExpectUsageError({"match", "--game", "go:9", "--p1", "gtp:zf-no-such-engine", "--p2", "random"},
                   "\"zf-no-such-engine\" not found on PATH");
  ExpectUsageError({"accuracy", "--game", "go:9", "--player", "random"}, "only connect4");
  ExpectUsageError(
      {"accuracy", "--game", "connect4", "--player", "random", "--positions", Path("missing.txt")},
      "cannot read");
  ExpectUsageError({"accuracy", "make", "--p1", "random", "--p2", "random"}, "--positions");
  ExpectUsageError(
      {"match", "--game", "connect4", "--p1", "net:" + Path("missing") + ":5", "--p2", "random"},
      "missing");
  ExpectUsageError({"match", "--game", "connect4", "--p1", "net:5", "--p2", "random"},
                   "net:CHECKPOINT:SIMS");
  ExpectUsageError({"match", "--game", "connect4", "--p1", "random"}, "--p1 and --p2");
  ExpectUsageError(
      {"match", "--game", "connect4", "--p1", "random", "--p2", "random", "--games", "0"},
      "--games");
  ExpectUsageError(
      {"match", "--game", "connect4", "--p1", "random", "--p2", "random", "--opening_moves", "101"},
      "--opening_moves is 101, expected 0..100");
  ExpectUsageError({"bench", "mcts", "--game", "connect4", "--sims", "0"}, "--sims");
  ExpectUsageError({"bench", "gpu"}, "unknown benchmark");
  ExpectUsageError({"checkpoint", "new", "--game", "connect4"}, "--out");
  ExpectUsageError({"checkpoint", "new", "--game", "connect4", "--out", Path("x"), "--blocks", "0"},
                   "blocks");
}

// Any GTP engine as a player: GNU Go by its own command line, and `zf gtp` itself.
TEST_F(CliPlayersTest, GtpEnginesPlayGo) {
  ProcessResult r = Zf({"match", "--game", "go:9", "--p1", "gtp:gnugo --mode gtp --level 0", "--p2",
                        "random", "--games", "2", "--seed", "3", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, HasSubstr("\"losses\": 0"));  // GNU Go beats random moves
  r = Zf({"match", "--game", "go:5", "--p1",
          std::string("gtp:") + ZF_BINARY + " gtp --game go:5 --player mcts:30", "--p2", "random",
          "--games", "2", "--seed", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, ContainsRegex("over 2 games: [0-9]+ wins"));
}

// Accuracy against perfect play: a set made from games, perfect play scores 100% on it, and a
// weak player less.
TEST_F(CliPlayersTest, AccuracyAgainstPerfectPlay) {
  const std::string set = Path("positions.txt");
  ProcessResult r = Zf({"accuracy", "make", "--p1", "random", "--p2", "mcts:50", "--positions", set,
                        "--count", "12", "--min_ply", "18", "--seed", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, HasSubstr("12 positions written"));
  r = Zf({"accuracy", "--game", "connect4", "--player", "perfect", "--positions", set, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, HasSubstr("\"positions\": 12, \"correct\": 12, \"accuracy\": 1.0000"));
  r = Zf({"accuracy", "--game", "connect4", "--player", "random", "--positions", set});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, ContainsRegex("random keeps the best outcome in [0-9.]+% \\[[0-9.]+, "
                                           "[0-9.]+\\] of 12 positions"));
  // The perfect player in a match, from positions its budget solves (16 random plies).
  r = Zf({"match", "--game", "connect4", "--p1", "perfect", "--p2", "mcts:50", "--games", "2",
          "--opening_moves", "16", "--seed", "4", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
}

TEST_F(CliPlayersTest, BenchMctsPrintsJson) {
  ProcessResult r =
      Zf({"bench", "mcts", "--game", "tictactoe", "--sims", "50", "--seconds", "0.2", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text,
              MatchesRegex("\\{\"game\": \"tictactoe\", \"sims_per_sec\": [0-9]+, .*\\}\n"));
}

TEST_F(CliPlayersTest, PlayAgainstTheEngine) {
  // The person plays the centre, then garbage, an illegal move, and stops at end of input.
  ProcessResult r =
      Zf({"play", "--game", "tictactoe", "--vs", "perfect", "--seed", "2"}, "b2\nzz\nb2\nlegal\n");
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, HasSubstr("engine plays"));
  EXPECT_THAT(r.stdout_text, HasSubstr("optimal moves:"));
  EXPECT_THAT(r.stdout_text, HasSubstr("not a move"));
  EXPECT_THAT(r.stdout_text, HasSubstr("illegal move b2"));
  EXPECT_THAT(r.stdout_text, HasSubstr("legal moves:"));
  EXPECT_THAT(r.stdout_text, HasSubstr("end of input"));

  // The engine first with MCTS: its thinking shows visits and values.
  r = Zf({"play", "--game", "connect4", "--vs", "uniform:200", "--engine_first"}, "quit\n");
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, ContainsRegex("over 200 visits; top moves:.*visits"));
}

}  // namespace
}  // namespace zf
