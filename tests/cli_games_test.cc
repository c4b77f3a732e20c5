// The `zf` game subcommands as a user or a script sees them: output, JSON and exit codes.
#include <string>
#include <vector>

#include "common/testing/status_matchers.h"
#include "common/testing/subprocess.h"
#include "tests/zf_cli_testing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zf {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using ::zf::testing::ProcessResult;
using ::zf::testing::ExpectUsageError;
using ::zf::testing::Zf;

TEST(CliPerftTest, JsonCountsForEachGame) {
  ProcessResult r = Zf({"perft", "--game", "tictactoe", "--depth", "9", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_EQ(r.stdout_text,
            "{\"game\": \"tictactoe\", \"counts\": [1, 9, 72, 504, 3024, 15120, 54720, 148176, "
            "200448, 127872]}\n");

  r = Zf({"perft", "--game=connect4", "--depth=4", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_EQ(r.stdout_text, "{\"game\": \"connect4\", \"counts\": [1, 7, 49, 343, 2401]}\n");

  // 1x1 boxes: 4 lines, every order is legal and nothing ends the game early.
  r = Zf({"perft", "--game", "dotsboxes:1x1", "--depth", "5", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_EQ(r.stdout_text, "{\"game\": \"dotsboxes:1x1\", \"counts\": [1, 4, 12, 24, 24, 0]}\n");
}

TEST(CliPerftTest, TextOutput) {
  ProcessResult r = Zf({"perft", "--game", "connect4", "--depth", "2"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.stdout_text, HasSubstr("depth 2: 49"));
}

TEST(CliPositionTest, JsonForOngoingAndFinishedGames) {
  ProcessResult r = Zf({"position", "--game", "tictactoe", "--moves", "0,3,1,4", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_EQ(r.stdout_text,
            "{\"to_play\": 0, \"terminal\": false, \"returns\": null, \"legal\": [2, 5, 6, 7, 8]}\n");

  r = Zf({"position", "--game", "tictactoe", "--moves", "0,3,1,4,2", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, HasSubstr("\"terminal\": true, \"returns\": [1, -1], \"legal\": []"));

  // Connect Four: player 1 stacks four in column 1 while player 0 scatters.
  r = Zf({"position", "--game", "connect4", "--moves", "0,1,2,1,3,1,5,1", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, HasSubstr("\"returns\": [-1, 1]"));

  // Dots and Boxes 1x1: the fourth line completes the box for the player who draws it.
  r = Zf({"position", "--game", "dotsboxes:1x1", "--moves", "0,1,2,3", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, HasSubstr("\"terminal\": true, \"returns\": [-1, 1]"));
}

TEST(CliPositionTest, TextFormsOfMovesAreAccepted) {
  ProcessResult r = Zf({"position", "--game", "dotsboxes:2x2", "--moves", "h0-0,v1-2"});
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, HasSubstr("player 0 to play"));
  r = Zf({"position", "--game", "tictactoe", "--moves", "b2"});
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, HasSubstr("player 1 to play"));
}

TEST(CliErrorsTest, BadInputIsOneLineAndExitCode2) {
  ExpectUsageError({"perft", "--game", "chess", "--depth", "2"}, "unknown game \"chess\"");
  ExpectUsageError({"perft", "--game", "dotsboxes:0x3"}, "dotsboxes:0x3");
  ExpectUsageError({"perft", "--game", "dotsboxes:3by3"}, "dotsboxes:3by3");
  ExpectUsageError({"perft", "--game", "connect4", "--depth", "x"}, "--depth");
  ExpectUsageError({"perft", "--game", "connect4", "--depth", "-1"}, "--depth must be in 0..20");
  ExpectUsageError({"perft", "--game", "connect4", "--depth"}, "needs a value");
  ExpectUsageError({"perft", "--bogus"}, "unknown flag --bogus");
  ExpectUsageError({"perft", "--moves", "1"}, "unknown flag --moves");
  ExpectUsageError({"perft", "stray"}, "unexpected argument \"stray\"");
  ExpectUsageError({"position", "--game", "connect4", "--moves", "3,7"}, "move 2 \"7\"");
  ExpectUsageError({"position", "--game", "connect4", "--moves", "3,,4"}, "move 2 \"\"");
  ExpectUsageError({"position", "--game", "connect4", "--moves", "0,0,0,0,0,0,0"},
                   "move 7 \"0\" is illegal");
  ExpectUsageError({"position", "--game", "tictactoe", "--moves", "0,3,1,4,2,5"},
                   "already over");
  ExpectUsageError({"position", "--game", "tictactoe", "--moves", "0,0"}, "illegal");
  ExpectUsageError({"position", "--game", "tictactoe", "--moves", "99999999999999999999"},
                   "move 1");
  ExpectUsageError({"random", "--delay_ms", "-5"}, "--delay_ms");
  ExpectUsageError({"frobnicate"}, "unknown command");
}

TEST(CliHelpTest, HelpListsCommandsAndFlags) {
  ProcessResult r = Zf({"help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.stdout_text, HasSubstr("perft"));
  EXPECT_THAT(r.stdout_text, HasSubstr("position"));
  r = Zf({"perft", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.stdout_text, HasSubstr("--depth"));
  EXPECT_THAT(r.stdout_text, ::testing::Not(HasSubstr("--moves")));
}

TEST(CliRandomTest, PlaysAGameToTheEnd) {
  for (const char* game : {"tictactoe", "connect4", "dotsboxes:2x3"}) {
    ProcessResult r = Zf({"random", "--game", game, "--seed", "7"});
    EXPECT_EQ(r.exit_code, 0) << game << r.stderr_text;
    EXPECT_THAT(r.stdout_text, HasSubstr("result: ")) << game;
    // The same seed replays the same game.
    EXPECT_EQ(Zf({"random", "--game", game, "--seed", "7"}).stdout_text, r.stdout_text);
  }
}

}  // namespace
}  // namespace zf
