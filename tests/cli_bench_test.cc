// `zf bench inference` and `zf bench replay` with tiny settings: the JSON they print parses and
// carries the fields docs/benchmarks.md and the issues require (values are not checked: speed is
// measured by the benchmarks, never asserted). And their usage errors.
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/zf_cli_testing.h"

namespace zf {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::zf::testing::ExpectUsageError;
using ::zf::testing::ProcessResult;
using ::zf::testing::Zf;

struct CommandResult {
  int exit_code = -1;
  std::string output;
};

CommandResult RunShell(const std::string& command) {
  CommandResult result;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  size_t n;
  while ((n = ::fread(buffer, 1, sizeof(buffer), pipe)) > 0) result.output.append(buffer, n);
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// Parses `json` with python3's json module and checks that it is one object whose `numbers` are
// finite numbers and whose `strings` are non-empty strings. Returns python's complaint, or "".
std::string CheckJson(const std::string& json, const std::vector<std::string>& numbers,
                      const std::vector<std::string>& strings) {
  const std::string path = ::testing::TempDir() + absl::StrCat("/cli_bench_", getpid(), ".json");
  FILE* file = ::fopen(path.c_str(), "w");
  if (file == nullptr) return "cannot write " + path;
  ::fwrite(json.data(), 1, json.size(), file);
  ::fclose(file);
  const std::string script = absl::StrCat(
      "import json, math, sys\n"
      "d = json.load(open(sys.argv[1]))\n"
      "assert isinstance(d, dict), 'not an object'\n"
      "for k in [",
      absl::StrJoin(numbers, ",",
                    [](std::string* o, const std::string& k) { absl::StrAppend(o, "'", k, "'"); }),
      "]:\n"
      "  v = d.get(k)\n"
      "  assert isinstance(v, (int, float)) and math.isfinite(v), k + ' is not a number: ' + "
      "repr(v)\n"
      "for k in [",
      absl::StrJoin(strings, ",",
                    [](std::string* o, const std::string& k) { absl::StrAppend(o, "'", k, "'"); }),
      "]:\n"
      "  v = d.get(k)\n"
      "  assert isinstance(v, str) and v, k + ' is not a string: ' + repr(v)\n");
  const CommandResult r =
      RunShell(absl::StrCat("python3 -c \"$(cat <<'PY'\n", script, "PY\n)\" '", path, "'"));
  ::unlink(path.c_str());
  return r.exit_code == 0 ? "" : r.output;
}

TEST(CliBenchTest, InferenceJsonHasTheRequiredFields) {
  ProcessResult r = Zf({"bench", "inference", "--game", "tictactoe", "--blocks", "1", "--filters",
                        "8", "--max_batch", "4", "--streams", "2", "--baseline_threads", "2",
                        "--seconds", "0.2", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_EQ(CheckJson(r.stdout_text,
                      {"evals_per_sec", "mean_batch", "p50_ms", "p99_ms", "serving_efficiency",
                       "batching_speedup", "baseline_evals_per_sec", "blocks", "filters",
                       "max_batch", "cores"},
                      {"device", "game", "shape", "cpu"}),
            "")
      << r.stdout_text;
  EXPECT_THAT(r.stdout_text, HasSubstr("\"game\": \"tictactoe\""));
  EXPECT_THAT(r.stdout_text, HasSubstr("1 blocks x 8 filters"));
}

TEST(CliBenchTest, InferenceTable) {
  ProcessResult r =
      Zf({"bench", "inference", "--game", "tictactoe", "--blocks", "1", "--filters", "8",
          "--max_batch", "2", "--streams", "1", "--baseline_threads", "1", "--seconds", "0.1"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, HasSubstr("(1) raw forward pass"));
  EXPECT_THAT(r.stdout_text, HasSubstr("served over tcp"));
  EXPECT_THAT(r.stdout_text, HasSubstr("serving efficiency"));
  EXPECT_THAT(r.stdout_text, HasSubstr("batching speedup"));
}

// Served over a Unix domain socket: answers arrive; a transport other than tcp or unix is refused.
TEST(CliBenchTest, InferenceOverAUnixSocket) {
  ProcessResult r = Zf({"bench", "inference", "--game", "tictactoe", "--blocks", "1", "--filters",
                        "8", "--max_batch", "4", "--streams", "2", "--baseline_threads", "1",
                        "--seconds", "0.2", "--transport", "unix", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, HasSubstr("\"transport\": \"unix\""));
  EXPECT_THAT(r.stdout_text, Not(HasSubstr("\"evals_per_sec\": 0.0,")));
  ExpectUsageError({"bench", "inference", "--transport", "pigeon"},
                   "--transport must be tcp or unix");
}

// The tuner's choice is reported; with tuning off the flags are what the batcher used.
TEST(CliBenchTest, InferenceReportsTheBatchersLimits) {
  ProcessResult tuned =
      Zf({"bench", "inference", "--game", "tictactoe", "--blocks", "1", "--filters", "8",
          "--max_batch", "8", "--streams", "2", "--baseline_threads", "1", "--seconds", "0.2",
          "--batch_tuning", "auto", "--json"});
  ASSERT_EQ(tuned.exit_code, 0) << tuned.stderr_text;
  EXPECT_THAT(tuned.stdout_text, HasSubstr("\"batch_tuning\": true"));
  EXPECT_THAT(tuned.stdout_text, HasSubstr("\"tuning_curve\": \"1:"));
  ProcessResult fixed =
      Zf({"bench",          "inference", "--game",      "tictactoe", "--blocks",           "1",
          "--filters",      "8",         "--max_batch", "4",         "--max_delay_us",     "300",
          "--batch_tuning", "off",       "--streams",   "2",         "--baseline_threads", "1",
          "--seconds",      "0.2",       "--json"});
  ASSERT_EQ(fixed.exit_code, 0) << fixed.stderr_text;
  EXPECT_THAT(fixed.stdout_text,
              HasSubstr("\"served_max_batch\": 4, \"served_max_delay_ms\": 0.300"));
  EXPECT_THAT(fixed.stdout_text, HasSubstr("\"tuning_curve\": \"\""));
  ExpectUsageError({"bench", "inference", "--batch_tuning", "sometimes"},
                   "--batch_tuning must be auto or off");
}

// One server process, streams from this one: every step measured, threads and memory read.
TEST(CliBenchTest, StreamsJsonHasEveryStep) {
  ProcessResult r = Zf({"bench", "streams", "--game", "tictactoe", "--blocks", "1", "--filters",
                        "8", "--stream_counts", "2,5", "--seconds", "0.2", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, HasSubstr("\"benchmark\": \"streams\""));
  EXPECT_THAT(r.stdout_text, HasSubstr("{\"streams\": 2, "));
  EXPECT_THAT(r.stdout_text, HasSubstr("{\"streams\": 5, "));
  EXPECT_THAT(r.stdout_text, Not(HasSubstr("\"threads_idle\": 0,")));
  EXPECT_THAT(r.stdout_text, Not(HasSubstr("\"rss_idle_bytes\": 0,")));
  EXPECT_THAT(r.stdout_text, Not(HasSubstr("\"evals_per_sec\": 0.0,")));
  EXPECT_THAT(r.stdout_text, HasSubstr("\"failed_requests\": 0}"));
  ExpectUsageError({"bench", "streams", "--stream_counts", "5,2"}, "increasing counts");
}

TEST(CliBenchTest, ReplayJsonHasTheRequiredFields) {
  const std::string dir = ::testing::TempDir() + absl::StrCat("/cli_bench_replay_", getpid());
  ProcessResult r = Zf({"bench", "replay", "--capacity", "10000", "--inserters", "2", "--seconds",
                        "0.2", "--dir", dir, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_EQ(CheckJson(r.stdout_text,
                      {"insert_positions_per_sec", "sample_positions_per_sec",
                       "insert_games_per_sec", "resident_bytes_per_position_full",
                       "record_bytes_per_position", "capacity", "stored_positions"},
                      {"fsync_policy", "game"}),
            "")
      << r.stdout_text;
  EXPECT_FALSE(std::filesystem::exists(dir)) << "the benchmark leaves its shard directory behind";
}

TEST(CliBenchTest, ReplayTable) {
  const std::string dir = ::testing::TempDir() + absl::StrCat("/cli_bench_replay_t_", getpid());
  ProcessResult r = Zf({"bench", "replay", "--capacity", "10000", "--inserters", "1", "--seconds",
                        "0.1", "--dir", dir});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, HasSubstr("durable insert"));
  EXPECT_THAT(r.stdout_text, HasSubstr("resident memory per stored position"));
  EXPECT_THAT(r.stdout_text, Not(HasSubstr("position averaging")));
  // With position averaging the table keeps one distinct entry a position; the table says so.
  r = Zf({"bench", "replay", "--capacity", "10000", "--inserters", "1", "--seconds", "0.1", "--dir",
          dir, "--position_averaging"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, HasSubstr("capacity 10000 positions, position averaging"));
}

TEST(CliBenchTest, TheJsonCheckIsNotVacuous) {
  EXPECT_NE(CheckJson("{\"a\": 1}", {"a", "b"}, {}), "");
  EXPECT_NE(CheckJson("{\"a\": \"x\"}", {"a"}, {}), "");
  EXPECT_NE(CheckJson("not json", {}, {}), "");
  EXPECT_EQ(CheckJson("{\"a\": 1.5, \"s\": \"x\"}", {"a"}, {"s"}), "");
}

TEST(CliBenchUsageTest, BadFlagsAreUsageErrors) {
  ExpectUsageError({"bench", "nope"}, "unknown benchmark");
  ExpectUsageError({"bench", "replay", "--capacity", "5"}, "--capacity");
  ExpectUsageError({"bench", "replay", "--inserters", "0"}, "--inserters");
  ExpectUsageError({"bench", "inference", "--streams", "0"}, "--streams");
  ExpectUsageError({"bench", "inference", "--game", "chess"}, "chess");
  ExpectUsageError({"bench", "inference", "--seconds", "0"}, "--seconds");
}

}  // namespace
}  // namespace zf
