// The whole loop, end to end, as `zf run` runs it: replay shards, learner, model service,
// inference server and actor in one process over loopback gRPC. Checks that data flows through
// every stage (games played, stored in replay, sampled by the learner), that the model version
// advances and the inference server serves the new version, that the run directory holds what
// the documentation promises, and that --resume continues the run with newer versions.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/zf_cli_testing.h"

namespace zf {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using ::zf::testing::ExpectUsageError;
using ::zf::testing::ProcessResult;
using ::zf::testing::Zf;

std::string TempDir(const std::string& name) {
  fs::path dir = fs::path(::testing::TempDir()) / absl::StrCat(name, "-", getpid());
  fs::remove_all(dir);
  return dir.string();
}

// The whole file at `path` ("" if it cannot be read).
std::string FileText(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The value of "key" in one flat JSON line (numbers only).
double Field(const std::string& line, const std::string& key) {
  const std::string needle = absl::StrCat("\"", key, "\": ");
  size_t at = line.find(needle);
  if (at == std::string::npos) return -1;
  at += needle.size();
  size_t end = line.find_first_of(",}", at);
  double value = -1;
  EXPECT_TRUE(absl::SimpleAtod(line.substr(at, end - at), &value)) << line;
  return value;
}

std::vector<std::string> Lines(const std::string& path, const std::string& event) {
  std::ifstream in(path);
  std::vector<std::string> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.find(absl::StrCat("\"event\": \"", event, "\"")) != std::string::npos) {
      out.push_back(line);
    }
  }
  return out;
}

TEST(RunE2eTest, TheWholeLoopTrainsAndServesNewVersionsAndResumes) {
  const std::string dir = TempDir("zf-run");
  // Self-play with forced playouts and policy target pruning (issue 19), and the learning rate
  // decaying over the second half of the run, both kept by --resume.
  ProcessResult r = Zf({"run", "--game", "tictactoe", "--dir", dir, "--minutes", "0.4",
                        "--fleet_view", "--progress_s", "2", "--eval_games", "2", "--seed", "3",
                        "--forced_playout_k", "2", "--lr_decay_fraction", "0.5"});
  ASSERT_EQ(r.exit_code, 0) << r.stdout_text << r.stderr_text;
  EXPECT_THAT(r.stdout_text,
              HasSubstr("zf run: tictactoe, network 2x32, forced playouts k=2, 2 replay shards"));
  EXPECT_THAT(r.stdout_text, HasSubstr("peak resident memory"));
  EXPECT_THAT(r.stdout_text, HasSubstr("final evaluation v"));
  EXPECT_THAT(r.stdout_text, HasSubstr("bottleneck"));  // the zf top view, in-process
  // The components' informational lines went to DIR/zf.log; a normal stop printed no error
  // (and no other log line) on the terminal.
  EXPECT_THAT(r.stdout_text, HasSubstr(", log " + dir + "/zf.log"));
  EXPECT_EQ(r.stderr_text, "") << "a normal run and stop printed log lines on stderr";
  const std::string log = FileText(dir + "/zf.log");
  EXPECT_THAT(log, HasSubstr("learner: published version")) << "DIR/zf.log lacks the learner";

  // The run directory.
  const std::string run_json = FileText(dir + "/run.json");
  EXPECT_THAT(run_json, HasSubstr("\"forced_playout_k\": 2,"));
  EXPECT_THAT(run_json, HasSubstr("\"lr_decay_fraction\": 0.5, \"lr_final_fraction\": 0.1,"));
  EXPECT_TRUE(fs::exists(dir + "/replay/shard-0"));
  EXPECT_TRUE(fs::exists(dir + "/replay/shard-1"));
  ASSERT_TRUE(fs::exists(dir + "/checkpoints/latest"));

  // Data flowed through every stage, the version advanced, and the server served it.
  const std::vector<std::string> progress = Lines(dir + "/progress.jsonl", "progress");
  ASSERT_GE(progress.size(), 3u);
  const std::string& last = progress.back();
  EXPECT_GT(Field(last, "games"), 0) << last;
  EXPECT_GT(Field(last, "replay_positions"), 0) << last;
  EXPECT_GT(Field(last, "learner_steps"), 0) << last;
  double most_served = 0;
  for (const std::string& line : progress) {
    most_served = std::max(most_served, Field(line, "serving_version"));
  }
  EXPECT_GE(Field(last, "published_version"), 2) << last;
  EXPECT_GE(most_served, 2) << "the inference server never served a version the learner published";
  // The learning rate: the base rate (0.02) in the first half, falling towards 0.002 in the
  // second (the last progress line is in its last seconds).
  double highest_rate = 0;
  for (const std::string& line : progress) {
    highest_rate = std::max(highest_rate, Field(line, "learning_rate"));
  }
  EXPECT_DOUBLE_EQ(highest_rate, 0.02);
  EXPECT_GT(Field(last, "learning_rate"), 0.0019) << last;
  EXPECT_LT(Field(last, "learning_rate"), 0.015) << last;
  const std::vector<std::string> end = Lines(dir + "/progress.jsonl", "end");
  ASSERT_EQ(end.size(), 1u);
  const double first_version = Field(end[0], "published_version");
  EXPECT_GT(Field(end[0], "peak_resident_bytes"), 0);

  // The newest checkpoint is usable as a player.
  ProcessResult match = Zf({"match", "--game", "tictactoe", "--p1",
                            absl::StrCat("net:", dir, "/checkpoints/latest:8"), "--p2", "random",
                            "--games", "2", "--json"});
  EXPECT_EQ(match.exit_code, 0) << match.stderr_text;

  // A second start on the same directory must say --resume; with it, the run goes on.
  ExpectUsageError({"run", "--game", "tictactoe", "--dir", dir, "--minutes", "0.1"}, "--resume");
  // run.json keeps every digit: a seed past 2^53 (where a double would round it) is read back
  // and written again as it was.
  {
    std::string json = FileText(dir + "/run.json");
    const size_t at = json.find("\"seed\": ");
    ASSERT_NE(at, std::string::npos) << json;
    json = json.substr(0, at) + "\"seed\": 18446744073709551615}\n";
    std::ofstream(dir + "/run.json") << json;
  }
  // The resume turns the decay off (the schedule is the one setting it may change): the
  // resumed part trains at the base rate to its end, and run.json says so.
  r = Zf({"run", "--resume", "--dir", dir, "--minutes", "0.2", "--progress_s", "2",
          "--lr_decay_fraction", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.stdout_text << r.stderr_text;
  EXPECT_THAT(r.stdout_text, HasSubstr("(resumed)"));
  // Progress lines fit 100 columns (the details are in progress.jsonl and --fleet_view), and a
  // run whose games were all acknowledged leaves no spool.
  int progress_lines = 0;
  for (absl::string_view line : absl::StrSplit(r.stdout_text, '\n')) {
    if (!absl::StartsWith(line, "[") && !absl::StartsWith(line, " ")) continue;
    EXPECT_LE(line.size(), 100u) << line;
    if (absl::StrContains(line, "  evals ")) ++progress_lines;
  }
  EXPECT_GT(progress_lines, 0) << r.stdout_text;
  if (!absl::StrContains(r.stdout_text, "not yet acknowledged")) {
    EXPECT_FALSE(fs::exists(dir + "/actor.spool"));
  }
  const std::vector<std::string> ends = Lines(dir + "/progress.jsonl", "end");
  ASSERT_EQ(ends.size(), 2u);
  EXPECT_GT(Field(ends[1], "published_version"), first_version);
  const std::vector<std::string> resumed_progress = Lines(dir + "/progress.jsonl", "progress");
  ASSERT_FALSE(resumed_progress.empty());
  EXPECT_DOUBLE_EQ(Field(resumed_progress.back(), "learning_rate"), 0.02);
  EXPECT_THAT(FileText(dir + "/run.json"),
              HasSubstr("\"lr_decay_fraction\": 0, \"lr_final_fraction\": 0.1,"));
  EXPECT_THAT(FileText(dir + "/run.json"), HasSubstr("\"seed\": 18446744073709551615}"));
  fs::remove_all(dir);
}

// Go's run defaults carry what issue 19 measured to pay (ownership and score heads, the score
// utility, the decay, fast searches of 16, Gumbel root search); a flag given on the command line
// still turns each off.
TEST(RunE2eTest, GoDefaultsAndTheFlagsThatTurnThemOff) {
  // The run's first line and its run.json.
  const auto run =
      [](const std::vector<std::string>& extra) -> std::pair<std::string, std::string> {
    const std::string dir = TempDir("zf-run-go");
    std::vector<std::string> args = {"run",       "--game",    "go:5",   "--dir",  dir,
                                     "--minutes", "0.03",      "--net",  "1x8",    "--eval_games",
                                     "0",         "--eval_vs", "random", "--seed", "5"};
    args.insert(args.end(), extra.begin(), extra.end());
    ProcessResult r = Zf(args);
    EXPECT_EQ(r.exit_code, 0) << r.stdout_text << r.stderr_text;
    std::string json = FileText(dir + "/run.json");
    fs::remove_all(dir);
    return {r.stdout_text.substr(0, r.stdout_text.find('\n')), json};
  };
  // Go's defaults: the heads and the score utility over them, and Gumbel root search. The run
  // goes through with them (the server answers scores, the actor passes them to its searches)
  // and records them. That the scores arrive and steer the search is tested in
  // inference_service_test, remote_evaluator_client_test and mcts_test.
  const auto [defaults_line, defaults] = run({});
  EXPECT_THAT(defaults, HasSubstr("\"aux_heads\": 1,"));
  EXPECT_THAT(defaults, HasSubstr("\"forced_playout_k\": 0,"));
  EXPECT_THAT(defaults, HasSubstr("\"score_utility\": 0.3, \"gumbel_considered_actions\": 16,"));
  // The learning rate falls over the last quarter of --minutes (0.03 here).
  EXPECT_THAT(defaults, HasSubstr("\"lr_decay_fraction\": 0.25, \"lr_final_fraction\": 0.1,"));
  EXPECT_THAT(defaults_line,
              HasSubstr("2 replay shards at 4 samples per insert, learning rate 0.02 falling to "
                        "0.002 over the last "
                        "0.0075 minutes"));
  EXPECT_THAT(defaults_line,
              HasSubstr("network 1x8 with ownership and score heads, score utility 0.3, Gumbel "
                        "root search over 16 actions, fast searches of 16 simulations, 2 replay "
                        "shards"));
  // --noaux_heads turns the default utility off with the heads it needs; forced playouts turn
  // the default Gumbel root search off (they exclude each other; both given is an error, below).
  const auto [off_line, off] = run({"--noaux_heads", "--forced_playout_k", "2"});
  EXPECT_THAT(off, HasSubstr("\"aux_heads\": 0,"));
  EXPECT_THAT(off, HasSubstr("\"forced_playout_k\": 2,"));
  EXPECT_THAT(off, HasSubstr("\"score_utility\": 0,"));
  EXPECT_THAT(off, HasSubstr("\"gumbel_considered_actions\": 0,"));
  EXPECT_THAT(off_line, HasSubstr("network 1x8, forced playouts k=2, fast searches of 16 "
                                  "simulations, 2 replay shards"));
  // Go's fast searches of 16 simulations beside the full 64; the default is capped at a smaller
  // full budget (a given --selfplay_fast_sims above it is a usage error, below).
  EXPECT_THAT(defaults, HasSubstr("\"selfplay_sims\": 64, \"selfplay_fast_sims\": 16,"));
  EXPECT_THAT(defaults, HasSubstr("\"games_per_worker\": 32, \"requests_in_flight\": 2,"));
  EXPECT_THAT(defaults, HasSubstr("\"reanalysis_share\": 0,"));
  // --learner_threads: the learner trains on two (trainer_test checks the thread count stays
  // the learner's own).
  // --games_per_worker and --requests_in_flight size the actor's pipeline and are recorded.
  // Self-play with Gumbel root search goes through and is recorded.
  const auto [few_line, few] =
      run({"--selfplay_sims", "8", "--learner_threads", "2", "--games_per_worker", "12",
           "--requests_in_flight", "3", "--gumbel_considered_actions", "4", "--reanalysis_share",
           "0.25"});
  // Self-play's exploration flags replace the game's values and are recorded.
  // So do the rollout opponents'.
  const auto [explored_line, explored] = run(
      {"--temperature_moves", "4", "--dirichlet_alpha", "0.5", "--c_puct", "2", "--fpu_reduction",
       "0", "--rollout_opponent_share", "0.5", "--rollout_opponent_sims", "20"});
  EXPECT_THAT(explored,
              HasSubstr("\"temperature_moves\": 4, \"dirichlet_alpha\": 0.5, \"c_puct\": 2, "
                        "\"fpu_reduction\": 0, \"rollout_opponent_share\": 0.5, "
                        "\"rollout_opponent_sims\": 20,"));
  EXPECT_THAT(explored_line, HasSubstr("self-play 4 plies sampled, root noise alpha 0.5, c_puct 2, "
                                       "fpu reduction 0, rollout MCTS of 20 simulations as one "
                                       "side of 50% of the games"));
  EXPECT_THAT(defaults, HasSubstr("\"rollout_opponent_share\": 0, \"rollout_opponent_sims\": "
                                  "1000,"));
  EXPECT_THAT(defaults_line, Not(HasSubstr("rollout MCTS")));
  // Without them, Go's: 30 sampled plies, and the search's constants.
  EXPECT_THAT(defaults, HasSubstr("\"temperature_moves\": 30,"));
  EXPECT_THAT(defaults, HasSubstr("\"c_puct\": 1.5, \"fpu_reduction\": 0.25,"));
  EXPECT_THAT(defaults_line, Not(HasSubstr("plies sampled")));
  EXPECT_THAT(few, HasSubstr("\"reanalysis_share\": 0.25,"));
  EXPECT_THAT(few, HasSubstr("\"gumbel_considered_actions\": 4,"));
  EXPECT_THAT(few_line, HasSubstr("Gumbel root search over 4 actions, fast searches of 8"));
  EXPECT_THAT(few, HasSubstr("\"selfplay_sims\": 8, \"selfplay_fast_sims\": 8,"));
  EXPECT_THAT(few, HasSubstr("\"games_per_worker\": 12, \"requests_in_flight\": 3,"));
  EXPECT_THAT(few_line, HasSubstr("fast searches of 8 simulations, learner on 2 threads"));
  // --samples_per_insert sets the shards' rate limiter, --capacity their windows,
  // --position_averaging their sampling, --optimizer, --lr and --batch_size the learner; each is
  // recorded for --resume. --gumbel_considered_actions 0 turns Go's default root rule off.
  const auto [plain_line, plain] =
      run({"--score_utility", "0", "--selfplay_fast_sims", "8", "--samples_per_insert", "8",
           "--gumbel_considered_actions", "0", "--capacity", "5000", "--optimizer", "adamw", "--lr",
           "0.005", "--batch_size", "64", "--position_averaging"});
  EXPECT_THAT(plain, HasSubstr("\"batch_size\": 64, \"optimizer\": \"adamw\", \"lr\": 0.005,"));
  EXPECT_THAT(plain, HasSubstr("\"capacity\": 5000,"));
  EXPECT_THAT(plain, HasSubstr("\"score_utility\": 0, \"gumbel_considered_actions\": 0,"));
  EXPECT_THAT(plain, HasSubstr("\"selfplay_fast_sims\": 8,"));
  EXPECT_THAT(plain, HasSubstr("\"samples_per_insert\": 8, \"position_averaging\": 1,"));
  EXPECT_THAT(defaults, HasSubstr("\"position_averaging\": 0,"));
  EXPECT_THAT(plain_line,
              HasSubstr("with ownership and score heads, fast searches of 8 simulations, optimizer "
                        "adamw, position averaging, 2 replay shards at 8 samples per insert"));
  // Without them, the game's own: SGD at 0.02 in batches of 256 over windows of 200,000.
  EXPECT_THAT(defaults, HasSubstr("\"batch_size\": 256, \"optimizer\": \"sgd\", \"lr\": 0.02,"));
  EXPECT_THAT(defaults, HasSubstr("\"capacity\": 200000,"));
}

// Connect Four's shards sample distinct positions by default (position averaging, issue 50): the
// learner trains through them; --noposition_averaging turns it off. Its network is 2x32.
TEST(RunE2eTest, ConnectFourAveragesPositionsByDefault) {
  const std::string dir = TempDir("zf-run-c4");
  ProcessResult r = Zf({"run", "--game", "connect4", "--dir", dir, "--minutes", "0.15", "--net",
                        "1x8", "--eval_games", "0", "--seed", "5"});
  ASSERT_EQ(r.exit_code, 0) << r.stdout_text << r.stderr_text;
  EXPECT_THAT(r.stdout_text, HasSubstr("network 1x8, position averaging, 2 replay shards"));
  EXPECT_THAT(FileText(dir + "/run.json"), HasSubstr("\"position_averaging\": 1,"));
  // Its self-play samples 10 plies under root noise of alpha 1 (games/connect4/connect4.h).
  EXPECT_THAT(FileText(dir + "/run.json"),
              HasSubstr("\"temperature_moves\": 10, \"dirichlet_alpha\": 1, \"c_puct\": 1.5, "
                        "\"fpu_reduction\": 0.25,"));
  const std::vector<std::string> end = Lines(dir + "/progress.jsonl", "end");
  ASSERT_EQ(end.size(), 1u);
  EXPECT_GT(Field(end[0], "learner_steps"), 0) << "the learner never sampled: " << end[0];
  fs::remove_all(dir);
  // Without --net, Connect Four's own network: 2 blocks of 32 filters.
  r = Zf({"run", "--game", "connect4", "--dir", dir, "--minutes", "0.01", "--eval_games", "0",
          "--noposition_averaging"});
  ASSERT_EQ(r.exit_code, 0) << r.stdout_text << r.stderr_text;
  EXPECT_THAT(r.stdout_text, HasSubstr("network 2x32, 2 replay shards"));
  EXPECT_THAT(FileText(dir + "/run.json"), HasSubstr("\"position_averaging\": 0,"));
  fs::remove_all(dir);
}

// run.json is read back with nlohmann-json: a damaged file is refused naming what is wrong, never
// half-read into a run with other settings.
TEST(RunE2eTest, ADamagedRunJsonIsRefusedNamingTheKey) {
  const std::string dir = TempDir("zf-run-damaged");
  fs::create_directories(dir);
  const auto resume_with = [&](const std::string& run_json) {
    std::ofstream(dir + "/run.json") << run_json;
    return Zf({"run", "--resume", "--dir", dir, "--minutes", "0.05"});
  };
  ProcessResult r = resume_with("{\"game\": \"tictactoe\", \"blocks\": \"three\"}\n");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.stderr_text, HasSubstr("\"blocks\" has the wrong type: \"three\""))
      << r.stderr_text;
  r = resume_with("{\"game\": \"tictactoe\", \"blocks\": 2, \"filters\": 3.5}\n");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.stderr_text, HasSubstr("\"filters\" has the wrong type: 3.5")) << r.stderr_text;
  r = resume_with("{\"game\": \"tictactoe\", \"blocks\": 2}\n");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.stderr_text, HasSubstr("no \"filters\"")) << r.stderr_text;
  r = resume_with(
      "{\"game\": \"tictactoe\", \"blocks\": 1, \"filters\": 8, \"shards\": 1, "
      "\"selfplay_sims\": 8, \"games_per_worker\": 4, \"max_batch\": 8, \"batch_size\": 8, "
      "\"optimizer\": \"adam\"}\n");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.stderr_text, HasSubstr("\"optimizer\" must be sgd or adamw, got \"adam\""))
      << r.stderr_text;
  r = resume_with(
      "{\"game\": \"tictactoe\", \"blocks\": 1, \"filters\": 8, \"shards\": 1, "
      "\"selfplay_sims\": 8, \"c_puct\": 0, \"games_per_worker\": 4}\n");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.stderr_text, HasSubstr("c_puct is 0, expected 0.01..100")) << r.stderr_text;
  r = resume_with("{\"game\": \"tictactoe\", \"blocks\": 2,");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.stderr_text, HasSubstr("is not a JSON object")) << r.stderr_text;
}

TEST(RunE2eTest, BadInputIsAUsageError) {
  ExpectUsageError({"run", "--game", "chess"}, "chess");
  ExpectUsageError({"run", "--game", "tictactoe", "--net", "2by32"}, "--net");
  ExpectUsageError({"run", "--game", "tictactoe", "--shards", "0"}, "--shards");
  ExpectUsageError({"run", "--game", "tictactoe", "--minutes", "-1"}, "--minutes");
  ExpectUsageError({"run", "--game", "tictactoe", "--eval_vs", "perfectly"}, "perfectly");
  ExpectUsageError({"run", "--game", "tictactoe", "--eval_games", "-2"}, "--eval_games");
  ExpectUsageError({"run", "--game", "tictactoe", "--forced_playout_k", "101"},
                   "--forced_playout_k");
  ExpectUsageError({"run", "--game", "tictactoe", "--temperature_moves", "2000"},
                   "--temperature_moves is 2000, expected 0..1000");
  ExpectUsageError({"run", "--game", "tictactoe", "--c_puct", "0"},
                   "--c_puct is 0, expected 0.01..100");
  ExpectUsageError({"run", "--game", "tictactoe", "--forced_playout_k", "-3"},
                   "--forced_playout_k");
  ExpectUsageError({"run", "--game", "go:5", "--gumbel_considered_actions", "1"},
                   "--gumbel_considered_actions is 1, expected 0 (off) or 2..32767");
  ExpectUsageError(
      {"run", "--game", "go:5", "--gumbel_considered_actions", "16", "--forced_playout_k", "2"},
      "exclude each other");
  ExpectUsageError({"run", "--game", "go:5", "--score_utility", "1.5"},
                   "--score_utility is 1.5, expected 0..1");
  ExpectUsageError({"run", "--game", "go:5", "--score_utility", "nan"}, "--score_utility is nan");
  ExpectUsageError({"run", "--game", "go:5", "--minutes", "5", "--lr_decay_fraction", "1.2"},
                   "--lr_decay_fraction is 1.2, expected 0..1");
  ExpectUsageError({"run", "--game", "tictactoe", "--score_utility", "0.3"}, "score head");
  ExpectUsageError({"run", "--game", "go:5", "--selfplay_fast_sims", "1"},
                   "--selfplay_fast_sims is 1, expected 2..64");
  ExpectUsageError({"run", "--game", "go:5", "--selfplay_sims", "16", "--selfplay_fast_sims", "20"},
                   "--selfplay_fast_sims is 20, expected 2..16");
  ExpectUsageError({"run", "--game", "go:5", "--requests_in_flight", "1"},
                   "--requests_in_flight is 1, expected 2..64");
  ExpectUsageError({"run", "--game", "go:5", "--reanalysis_share", "0.95"},
                   "--reanalysis_share is 0.95, expected 0..0.9");
  ExpectUsageError({"run", "--game", "go:5", "--games_per_worker", "0"},
                   "--games_per_worker is 0, expected 1..4096");
  ExpectUsageError({"run", "--game", "go:5", "--learner_threads", "0"},
                   "--learner_threads is 0, expected 1..64");
  ExpectUsageError({"run", "--game", "go:5", "--samples_per_insert", "0"},
                   "--samples_per_insert is 0, expected 0.1..1000");
  ExpectUsageError({"run", "--game", "go:5", "--optimizer", "adam"},
                   "--optimizer must be sgd or adamw, got \"adam\"");
  ExpectUsageError({"run", "--game", "go:5", "--lr", "0"}, "--lr is 0, expected 1e-06..10");
  ExpectUsageError({"run", "--game", "go:5", "--batch_size", "0"},
                   "--batch_size is 0, expected 1..65536");
  // A window must hold the size a shard waits for before sampling plus one longest game (512
  // positions), or samples could wait forever; refused before the run directory is made.
  ExpectUsageError({"run", "--game", "go:5", "--capacity", "1000"},
                   "--capacity is 1000, expected 2512..100000000");
  ExpectUsageError({"run", "--game", "go:5", "--capacity", "2000"},
                   "--capacity is 2000, expected 2512..100000000");
  ExpectUsageError({"run", "--game", "go:5", "--noaux_heads", "--score_utility", "0.3"},
                   "score head");
  // Aux heads need a game with final ownership; the refusal leaves no run directory behind.
  const std::string aux_dir = TempDir("zf-run-aux");
  ExpectUsageError({"run", "--game", "connect4", "--aux_heads", "--dir", aux_dir},
                   "final ownership");
  EXPECT_FALSE(fs::exists(aux_dir + "/run.json"));
  ExpectUsageError({"run", "--game", "tictactoe", "--lr_decay_fraction", "0.3"}, "--minutes");
  ExpectUsageError({"run", "--game", "tictactoe", "--minutes", "1", "--lr_decay_fraction", "1.5"},
                   "--lr_decay_fraction");
  ExpectUsageError({"run", "--game", "tictactoe", "--minutes", "1", "--lr_final_fraction", "0"},
                   "--lr_final_fraction");
  ExpectUsageError({"run", "--resume"}, "--dir");
  ExpectUsageError({"run", "--resume", "--dir", TempDir("zf-run-none")}, "run.json");
  // A resume keeps the run's own settings: one given again is refused, not silently ignored.
  ExpectUsageError({"run", "--resume", "--dir", TempDir("zf-run-fixed"), "--net", "6x64"},
                   "--net is fixed by the run");
  ExpectUsageError({"run", "--resume", "--dir", TempDir("zf-run-fixed"), "--noaux_heads"},
                   "--aux_heads is fixed by the run");
  ExpectUsageError(
      {"run", "--resume", "--dir", TempDir("zf-run-fixed"), "--requests_in_flight", "4"},
      "--requests_in_flight is fixed by the run");
  ExpectUsageError({"run", "--resume", "--dir", TempDir("zf-run-fixed"), "--lr", "0.01"},
                   "--lr is fixed by the run");
}

}  // namespace
}  // namespace zf
