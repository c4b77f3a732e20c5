// `zf actor` and `zf games dump` as an operator runs them: a real `zf inference` process, a
// `zf actor --games 4 --out DIR` process playing against it, the run directory read back with
// `zf games dump` (text and --json) and checked with the replay validator; usage errors.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "actor/game_sink.h"
#include "common/testing/background_process.h"
#include "common/testing/status_matchers.h"
#include "common/testing/wait.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "replay/validate.h"
#include "tests/zf_cli_testing.h"

namespace zf {
namespace {

using ::testing::HasSubstr;
using ::zf::testing::BackgroundProcess;
using ::zf::testing::ExpectUsageError;
using ::zf::testing::ProcessResult;
using ::zf::testing::ServedPort;
using ::zf::testing::Zf;

TEST(CliActorTest, PlaysGamesAgainstZfInferenceIntoARunDirectoryThatGamesDumpReads) {
  const std::string dir = absl::StrCat(::testing::TempDir(), "/cli_actor_", getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<BackgroundProcess> server,
                       testing::StartTicTacToeInference(dir + "/server"));
  const int port = ServedPort(server->Stdout());

  const std::string games_dir = dir + "/games";
  ProcessResult actor =
      Zf({"actor", "--game=tictactoe", absl::StrCat("--inference=127.0.0.1:", port),
          "--out=" + games_dir, "--games=4", "--sims=16", "--workers=1", "--games_per_worker=3",
          "--seed=9"});
  ASSERT_EQ(actor.exit_code, 0) << actor.stderr_text;
  EXPECT_THAT(actor.stdout_text, HasSubstr(" 4 games"));

  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(games_dir)) {
    files.push_back(entry.path().string());
  }
  ASSERT_EQ(files.size(), 1u);
  ASSERT_OK_AND_ASSIGN(actor::GameFile file, actor::ReadGameFile(files[0]));
  ASSERT_EQ(file.games.size(), 4u);
  std::set<std::string> ids;
  for (const auto& game : file.games) {
    EXPECT_OK(replay::ValidateGameRecord(game, replay::TableOptions{}));
    EXPECT_THAT(game.model_versions(), ::testing::ElementsAre(0));  // a fresh network
    ids.insert(game.game_id());
  }
  EXPECT_EQ(ids.size(), 4u);

  ProcessResult dump = Zf({"games", "dump", files[0]});
  ASSERT_EQ(dump.exit_code, 0) << dump.stderr_text;
  for (const auto& game : file.games) {
    EXPECT_THAT(dump.stdout_text, HasSubstr(absl::StrCat("game ", game.game_id(), "  tictactoe  ",
                                                         game.num_positions(), " moves")));
  }
  EXPECT_THAT(dump.stdout_text, HasSubstr("top:"));

  ProcessResult json = Zf({"games", "dump", files[0], "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.stderr_text;
  std::vector<std::string> lines = absl::StrSplit(json.stdout_text, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 4u);
  for (size_t i = 0; i < lines.size(); ++i) {
    EXPECT_THAT(lines[i], ::testing::StartsWith("{\"game_id\": \"" + file.games[i].game_id()));
    EXPECT_THAT(lines[i], HasSubstr("\"model_versions\": [0]"));
  }

  // A torn tail is reported on stderr; the whole records before it are still printed.
  std::filesystem::resize_file(files[0], std::filesystem::file_size(files[0]) - 5);
  ProcessResult torn = Zf({"games", "dump", files[0], "--json"});
  EXPECT_EQ(torn.exit_code, 0);
  EXPECT_THAT(torn.stderr_text, HasSubstr("torn tail"));
  EXPECT_EQ(std::count(torn.stdout_text.begin(), torn.stdout_text.end(), '\n'), 3);

  server->Signal(SIGTERM);
  ASSERT_OK_AND_ASSIGN(int code, server->Wait(absl::Seconds(60)));
  EXPECT_EQ(code, 0);
  std::filesystem::remove_all(dir);
}

TEST(CliActorTest, UsageErrors) {
  ExpectUsageError({"actor", "--game=tictactoe", "--out=/tmp/x"}, "--inference");
  ExpectUsageError({"actor", "--game=tictactoe", "--inference=127.0.0.1:1"}, "--out");
  ExpectUsageError({"actor", "--game=chess", "--inference=127.0.0.1:1", "--out=/tmp/x"},
                   "unknown game");
  ExpectUsageError({"actor", "--game=tictactoe", "--inference=127.0.0.1:1", "--out=/tmp/x",
                    "--games_per_worker=0"},
                   "games_per_worker");
  ExpectUsageError({"actor", "--game=tictactoe", "--inference=127.0.0.1:1", "--out=/tmp/x",
                    "--requests_in_flight=65"},
                   "--requests_in_flight is 65, expected 2..64");
  ExpectUsageError({"actor", "--game=tictactoe", "--inference=127.0.0.1:1", "--out=/tmp/x",
                    "--reanalysis_share=-0.1"},
                   "--reanalysis_share is -0.1, expected 0..0.9");
  ExpectUsageError(
      {"actor", "--game=go:9", "--inference=127.0.0.1:1", "--out=/tmp/x", "--score_utility=1.5"},
      "--score_utility is 1.5, expected 0..1");
  ExpectUsageError(
      {"actor", "--game=go:9", "--inference=127.0.0.1:1", "--out=/tmp/x", "--forced_playout_k=-3"},
      "--forced_playout_k is -3, expected 0..100");
  ExpectUsageError({"actor", "--game=go:9", "--inference=127.0.0.1:1", "--out=/tmp/x",
                    "--gumbel_considered_actions=40000"},
                   "--gumbel_considered_actions is 40000, expected 0 (off) or 2..32767");
  ExpectUsageError({"actor", "--game=go:9", "--inference=127.0.0.1:1", "--out=/tmp/x", "--sims=64",
                    "--fast_sims=65"},
                   "--fast_sims is 65, expected 2..64");
  ExpectUsageError({"actor", "--game=connect4", "--inference=127.0.0.1:1", "--out=/tmp/x",
                    "--temperature_moves=5000"},
                   "--temperature_moves is 5000, expected 0..1000");
  ExpectUsageError({"actor", "--game=connect4", "--inference=127.0.0.1:1", "--out=/tmp/x",
                    "--dirichlet_alpha=0"},
                   "--dirichlet_alpha is 0, expected 0.01..100");
  ExpectUsageError({"games", "dump"}, "zf games dump FILE");
  ExpectUsageError({"bench", "selfplay", "--actors=0"}, "--actors");
}

TEST(CliActorTest, GamesDumpOfAMissingFileFails) {
  ProcessResult r = Zf({"games", "dump", "/nonexistent/x.zfgames"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.stderr_text, HasSubstr("no file"));
}

}  // namespace
}  // namespace zf
