// SGF in and out of the real `zf`: `zf match --sgf`, `zf games export --sgf` of stored self-play
// games, `zf position`/`zf analyze --sgf`, each file checked by an SGF parser nobody here wrote
// (the npm package @sabaki/sgf, tests/sgf_check/check_sgf.js).
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "actor/game_sink.h"
#include "actor/record_proto.h"
#include "common/testing/scratch_dir.h"
#include "common/testing/subprocess.h"
#include "games/go/go.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "replay/log.h"
#include "search/self_play.h"
#include "search/uniform_evaluator.h"
#include "tests/zf_cli_testing.h"

namespace zf {
namespace {

using ::testing::HasSubstr;
using ::zf::testing::ExpectUsageError;
using ::zf::testing::ProcessResult;
using ::zf::testing::RunProcess;
using ::zf::testing::Zf;

std::vector<std::string> SgfFiles(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".sgf") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Runs @sabaki/sgf over `files` (npm ci on first use) and returns its JSON lines, one per file;
// nullopt where node or npm is missing or the package cannot be installed (the caller skips).
std::optional<std::vector<std::string>> CheckWithSabaki(const std::vector<std::string>& files) {
  const std::string dir = ZF_SGF_CHECK_DIR;
  if (!std::filesystem::is_directory(dir + "/node_modules/@sabaki/sgf")) {
    absl::StatusOr<ProcessResult> install =
        RunProcess({"/bin/sh", "-c",
                    absl::StrCat("command -v node >/dev/null && cd ", dir,
                                 " && npm ci --no-audit --no-fund --silent")},
                   "", absl::Seconds(300));
    if (!install.ok() || install->exit_code != 0) return std::nullopt;
  }
  std::vector<std::string> argv = {"node", dir + "/check_sgf.js"};
  argv.insert(argv.end(), files.begin(), files.end());
  absl::StatusOr<ProcessResult> check = RunProcess(argv);
  EXPECT_TRUE(check.ok()) << check.status();
  if (!check.ok()) return std::vector<std::string>{};
  EXPECT_EQ(check->exit_code, 0) << check->stderr_text;
  return std::vector<std::string>(absl::StrSplit(check->stdout_text, '\n', absl::SkipEmpty()));
}

TEST(CliSgfTest, MatchGamesAreSgfThatAnOutsideParserReadsAndZfReadsBack) {
  const std::string dir = zf::testing::ScratchDir("cli_sgf_match");
  ProcessResult r = Zf({"match", "--game", "go:5", "--p1", "mcts:16", "--p2", "random", "--games",
                        "3", "--seed", "7", "--sgf", dir + "/sgf"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const std::vector<std::string> files = SgfFiles(dir + "/sgf");
  ASSERT_EQ(files.size(), 3u);
  // The game's moves as zf match printed them are the file's.
  const std::vector<std::string> lines = absl::StrSplit(r.stdout_text, '\n');
  const std::string first = lines[0].substr(lines[0].find(": ", lines[0].find("moves")) + 2);
  const std::vector<std::string> moves = absl::StrSplit(first, ',');
  ProcessResult position =
      Zf({"position", "--sgf", files[0], "--move", std::to_string(moves.size() - 1)});
  ASSERT_EQ(position.exit_code, 0) << position.stderr_text;
  EXPECT_THAT(position.stdout_text,
              HasSubstr(absl::StrCat("go:5 after ", moves.size() - 1, " of ")));
  ProcessResult analyze =
      Zf({"analyze", "--sgf", files[0], "--move", "4", "--player", "mcts:20", "--json"});
  ASSERT_EQ(analyze.exit_code, 0) << analyze.stderr_text;
  EXPECT_THAT(analyze.stdout_text, HasSubstr("\"root_visits\": 20"));

  const std::optional<std::vector<std::string>> summaries = CheckWithSabaki(files);
  if (!summaries) GTEST_SKIP() << "node or npm missing, or npm ci failed: no @sabaki/sgf";
  ASSERT_EQ(summaries->size(), 3u);
  for (const std::string& s : *summaries) {
    EXPECT_THAT(s, HasSubstr("\"SZ\":\"5\""));
    EXPECT_THAT(s, HasSubstr("\"KM\":\"7.5\""));
    EXPECT_THAT(s, HasSubstr("\"FF\":\"4\""));
    EXPECT_THAT(s, HasSubstr("\"RU\":\"Chinese\""));
    EXPECT_THAT(s, HasSubstr("p1 mcts:16"));
    EXPECT_THAT(s, HasSubstr("p2 random"));
  }
}

TEST(CliSgfTest, StoredSelfPlayGamesExportAsSgf) {
  const std::string dir = zf::testing::ScratchDir("cli_sgf_export");
  const games::Go start = *games::Go::Create(7, 7.5f);
  std::vector<zerofleet::v1::GameRecord> protos;
  {
    auto sink = actor::FileGameSink::Create({.dir = dir + "/run", .actor_id = "a1"});
    ASSERT_TRUE(sink.ok()) << sink.status();
    for (uint64_t seed = 1; seed <= 4; ++seed) {
      search::SelfPlayOptions options;
      options.mcts.num_simulations = 8;
      options.seed = seed;
      auto game = search::SelfPlayGame<games::Go>::Create(start, options);
      ASSERT_TRUE(game.ok()) << game.status();
      search::UniformEvaluator<games::Go> evaluator;
      ASSERT_TRUE((*game)->Play(evaluator).ok());
      auto proto = actor::ToProto((*game)->TakeRecord(), absl::StrCat("a1/", seed), {3}, {});
      ASSERT_TRUE(proto.ok()) << proto.status();
      if (seed == 4) proto->clear_actions();  // as records written before 2026-12-06 are
      ASSERT_TRUE((*sink)->Put(*proto, absl::InfiniteFuture()).ok());
      // The same record in a replay shard's log, as `zf run` keeps its games.
      protos.push_back(*proto);
    }
    (*sink)->Close();
  }
  {
    auto log =
        replay::Log::Open({.dir = dir + "/run/replay/shard-0"},
                          [](replay::SegmentId, absl::string_view) { return absl::OkStatus(); });
    ASSERT_TRUE(log.ok()) << log.status();
    for (const zerofleet::v1::GameRecord& proto : protos) {
      ASSERT_TRUE((*log)->Append(proto.SerializeAsString()).ok());
    }
  }
  ProcessResult r = Zf({"games", "export", "--sgf", dir + "/sgf", dir + "/run"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  // Three from the .zfgames file, the same three from the log (their names get "-1").
  EXPECT_THAT(r.stdout_text, HasSubstr("exported 6 Go games"));
  EXPECT_THAT(r.stdout_text, HasSubstr("2 without moves"));
  const std::vector<std::string> files = SgfFiles(dir + "/sgf");
  ASSERT_EQ(files.size(), 6u);
  EXPECT_EQ(std::filesystem::path(files[0]).filename(), "a1_1-1.sgf");
  EXPECT_EQ(std::filesystem::path(files[1]).filename(), "a1_1.sgf");
  ExpectUsageError({"games", "export", dir + "/run"}, "usage: zf games export --sgf DIR");
  ProcessResult missing = Zf({"games", "export", "--sgf", dir + "/sgf", dir + "/nothing"});
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_THAT(missing.stderr_text, HasSubstr("no such file or directory"));

  const std::optional<std::vector<std::string>> summaries = CheckWithSabaki(files);
  if (!summaries) GTEST_SKIP() << "node or npm missing, or npm ci failed: no @sabaki/sgf";
  ASSERT_EQ(summaries->size(), 6u);
  for (const std::string& s : *summaries) {
    EXPECT_THAT(s, HasSubstr("\"PB\":\"zerofleet v3\""));
    EXPECT_THAT(s, HasSubstr("\"SZ\":\"7\""));
  }
}

TEST(CliSgfTest, BadSgfGetsAClearErrorNamingThePropertyAndPosition) {
  const std::string dir = zf::testing::ScratchDir("cli_sgf_bad");
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/bad.sgf";
  std::ofstream(path) << "(;GM[1]FF[4]SZ[9]\n;B[ee];W[ee])";
  ExpectUsageError({"position", "--sgf", path}, "W[ee] at move 2 (E5): illegal");
  std::ofstream(path) << "(;GM[1]FF[4]SZ[9]AB[cc][dd];W[ee])";
  ExpectUsageError({"analyze", "--sgf", path, "--player", "random"},
                   "AB in the root node: setup properties are not supported");
  std::ofstream(path) << "(;GM[1]SZ[9];B[ee]";
  ExpectUsageError({"position", "--sgf", path}, "missing \")\" at the end of a game tree");
  std::ofstream(path) << "(;GM[1]SZ[9];B[ee])";
  ExpectUsageError({"position", "--sgf", path, "--move", "2"},
                   "--move 2 is past the end of the game (1 moves)");
  ExpectUsageError({"position", "--sgf", path, "--moves", "E5"}, "give one");
  ExpectUsageError(
      {"match", "--game", "connect4", "--p1", "random", "--p2", "random", "--sgf", dir},
      "--sgf writes Go games; connect4 is not Go");
}

}  // namespace
}  // namespace zf
