// `zf run`: the whole fleet in one process. Replay shards, the learner with its model service,
// one inference server following it, and an actor, connected through real gRPC servers on
// loopback (the same code paths as a cluster), with live progress and the evaluator
// (evaluator/evaluator.h) rating each new checkpoint it has time for: Elo against the baselines,
// the previous rated version and the best one.
//
// Run directory (DIR):
//   run.json             the run's configuration (game, network, self-play and training settings)
//   checkpoints/         the learner's checkpoints; checkpoints/latest names the newest complete
//   replay/shard-K/      each replay shard's durable log
//   actor.spool          games not yet acknowledged when every shard was down (normally absent)
//   progress.jsonl       one JSON object per progress line, and one per evaluation
//   evaluation/          every evaluation game (zf ratings --dir DIR rates them)
//   evaluator/checkpoints/  the evaluator's copies of the newest and best rated versions
//
// Stopping (Ctrl-C, SIGTERM or --minutes): the actor stops (games in flight are dropped), the
// games it finished are flushed to the shards (acknowledged = durable), the learner finishes its
// step and publishes a final checkpoint, then the servers drain in reverse start order.
#include "cli/commands/run_commands.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "actor/actor.h"
#include "actor/game_sink.h"
#include "cli/command.h"
#include "cli/common_flags.h"
#include "common/host_info.h"
#include "common/json.h"
#include "common/log_file.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "evaluator/accuracy.h"
#include "evaluator/evaluation_runner.h"
#include "evaluator/evaluator.h"
#include "evaluator/results_log.h"
#include "fleet/fleet_view.h"
#include "fleet/in_process_fleet.h"
#include "games/registry.h"
#include "learner/learner.h"
#include "learner/lr_schedule.h"
#include "model/game_network.h"
#include "nlohmann/json.hpp"
#include "players/player_spec.h"
#include "search/self_play.h"

ABSL_FLAG(double, minutes, 0, "run: stop after this many minutes (0: until Ctrl-C)");
ABSL_FLAG(bool, resume, false,
          "run: continue the run in --dir (its run.json decides the settings; only "
          "--lr_decay_fraction and --lr_final_fraction may change them)");
ABSL_FLAG(std::string, net, "", "run: network shape BLOCKSxFILTERS, e.g. 2x32 (default: per game)");
ABSL_FLAG(int, shards, 2, "run: replay shards (1..16)");
ABSL_FLAG(int, selfplay_sims, 0, "run: simulations per full self-play search (0: per game)");
ABSL_FLAG(int, selfplay_fast_sims, 0,
          "run: simulations per fast self-play search, 2..--selfplay_sims (playout cap "
          "randomization: a quarter of the moves get a full search, whose visits are the policy "
          "targets, the others a fast one; 0: the game's default, Go 16 and the others 32, or the "
          "full budget when that is smaller)");
ABSL_FLAG(int, eval_games, -1,
          "run: games per baseline in each evaluation (0: no evaluations; -1: per game)");
ABSL_FLAG(int, eval_sims, 0, "run: simulations of the network player in evaluations (0: per game)");
ABSL_FLAG(double, eval_cpu_share, 0.5,
          "run: the evaluator's share of one core (0.05..1), at the process's priority: what it "
          "gets however busy the machine is, and no more");
ABSL_FLAG(std::string, eval_vs, "",
          "run: comma-separated baseline players for evaluations (default: per game)");
ABSL_FLAG(
    bool, fleet_view, false,
    "run: print the whole `zf top` fleet view at each progress line, not only its bottleneck");
ABSL_FLAG(double, lr_decay_fraction, -1,
          "run: the learning rate falls linearly over this last fraction of --minutes, 0..1, 0 "
          "off (needs --minutes); not given (-1): the game's default (0.25 for Go, applied when "
          "--minutes is given; 0 for the other games), or with --resume the run's own value; a "
          "resumed run decays over the resumed part's --minutes");
ABSL_FLAG(double, lr_final_fraction, 0.1,
          "run: the learning rate at the end of --lr_decay_fraction's decay, as a fraction of "
          "the base rate, (0, 1]");
// Defined with `zf replay`, whose flags they are too.
ABSL_DECLARE_FLAG(double, samples_per_insert);
ABSL_DECLARE_FLAG(bool, position_averaging);
// Defined with `zf learner`, whose flags they are too.
ABSL_DECLARE_FLAG(double, search_value_weight);
ABSL_DECLARE_FLAG(std::string, optimizer);
ABSL_DECLARE_FLAG(double, lr);
ABSL_DECLARE_FLAG(int, batch_size);
// Defined with `zf replay`, whose flag it is too: the window of each shard.
ABSL_DECLARE_FLAG(int64_t, capacity);
// Defined with `zf actor`, whose flags they are too.
ABSL_DECLARE_FLAG(int, games_per_worker);
ABSL_DECLARE_FLAG(int, requests_in_flight);
ABSL_DECLARE_FLAG(double, reanalysis_share);
ABSL_FLAG(int, learner_threads, 1,
          "run: the learner's LibTorch threads, 1..64 (the inference server's stay at 1); a "
          "--resume may change it");
ABSL_FLAG(double, progress_s, 10, "run: seconds between progress lines (0.5..3600)");

namespace zf::cli {
namespace {

// Settings of one run; written to DIR/run.json, read back by --resume.
struct RunConfig {
  std::string game;
  int blocks = 2, filters = 32;
  int shards = 2;
  int selfplay_sims = 0;              // 0: ActorOptions::ForGame's
  int selfplay_fast_sims = 0;         // SelfPlayOptions::fast_simulations; 0: ForGame's, capped
  double forced_playout_k = 0;        // MctsOptions::forced_playout_k of self-play; 0: off
  double score_utility = 0;           // MctsOptions::score_utility of self-play; 0: off
  int gumbel_considered_actions = 0;  // MctsOptions::gumbel_considered_actions; 0: off
  SelfPlayExploration exploration;    // ActorOptions::ForGame's, unless given
  bool aux_heads = false;             // NetworkShape::aux_heads
  bool global_pooling = false;        // NetworkShape::global_pooling
  int games_per_worker = 32;
  int requests_in_flight = 2;   // ActorOptions::requests_in_flight of the one actor worker
  double reanalysis_share = 0;  // ActorOptions::reanalysis_share; 0: off
  int max_batch = 64;
  int batch_size = 128;
  learner::OptimizerKind optimizer = learner::OptimizerKind::kSgd;
  double lr = 0.02;
  learner::TimeDecay lr_decay;  // over the run's --minutes (each part's, when resumed)
  int64_t steps_per_checkpoint = 100;
  int64_t capacity = 100'000;         // per shard, positions
  int64_t min_size_to_sample = 1000;  // per shard
  double samples_per_insert = 4;
  double search_value_weight = 0;   // LearnerOptions::search_value_weight; 0: the result alone
  bool position_averaging = false;  // replay::TableOptions::position_averaging
  int eval_games = 20;
  int eval_sims = 64;
  std::string eval_vs = "mcts:200";
  uint64_t seed = 1;

  // One line of JSON, keys in this order. Numbers are the shortest text that reads back as the
  // same value (JsonNumber), strings escaped (JsonString).
  std::string ToJson() const {
    return absl::StrCat(
        "{\"game\": ", JsonString(game), ", \"blocks\": ", blocks, ", \"filters\": ", filters,
        ", \"shards\": ", shards, ", \"selfplay_sims\": ", selfplay_sims,
        ", \"selfplay_fast_sims\": ", selfplay_fast_sims,
        ", \"forced_playout_k\": ", JsonNumber(forced_playout_k),
        ", \"score_utility\": ", JsonNumber(score_utility),
        ", \"gumbel_considered_actions\": ", gumbel_considered_actions,
        ", \"temperature_moves\": ", exploration.temperature_moves,
        ", \"dirichlet_alpha\": ", JsonNumber(exploration.dirichlet_alpha),
        ", \"c_puct\": ", JsonNumber(exploration.c_puct),
        ", \"fpu_reduction\": ", JsonNumber(exploration.fpu_reduction),
        ", \"rollout_opponent_share\": ", JsonNumber(exploration.rollout_opponent_share),
        ", \"rollout_opponent_sims\": ", exploration.rollout_opponent_sims,
        ", \"aux_heads\": ", aux_heads ? 1 : 0, ", \"global_pooling\": ", global_pooling ? 1 : 0,
        ", \"games_per_worker\": ", games_per_worker,
        ", \"requests_in_flight\": ", requests_in_flight,
        ", \"reanalysis_share\": ", JsonNumber(reanalysis_share), ", \"max_batch\": ", max_batch,
        ", \"batch_size\": ", batch_size,
        ", \"optimizer\": ", JsonString(learner::OptimizerKindName(optimizer)),
        ", \"lr\": ", JsonNumber(lr),
        ", \"lr_decay_fraction\": ", JsonNumber(lr_decay.decay_fraction),
        ", \"lr_final_fraction\": ", JsonNumber(lr_decay.final_fraction),
        ", \"steps_per_checkpoint\": ", steps_per_checkpoint, ", \"capacity\": ", capacity,
        ", \"min_size_to_sample\": ", min_size_to_sample,
        ", \"samples_per_insert\": ", JsonNumber(samples_per_insert),
        ", \"position_averaging\": ", position_averaging ? 1 : 0,
        ", \"search_value_weight\": ", JsonNumber(search_value_weight),
        ", \"eval_games\": ", eval_games, ", \"eval_sims\": ", eval_sims,
        ", \"eval_vs\": ", JsonString(eval_vs), ", \"seed\": ", seed, "}\n");
  }
};

// Self-play's exploration as the game's own (ActorOptions::ForGame) sets it.
SelfPlayExploration GameExploration(const std::string& game) {
  return SelfPlayExploration::Of(actor::ActorOptions::ForGame(game).self_play);
}

// Per-game defaults sized for a 2-core CPU machine: small networks, modest searches.
RunConfig DefaultConfig(const games::GameConfig& game) {
  RunConfig c;
  c.game = game.name;
  c.exploration = GameExploration(game.name);
  if (game.Is<games::TicTacToe>()) {
    c.blocks = 2, c.filters = 32, c.selfplay_sims = 64, c.batch_size = 128;
    c.steps_per_checkpoint = 50, c.capacity = 40'000, c.min_size_to_sample = 500;
    c.eval_games = 20, c.eval_sims = 32, c.eval_vs = "random,perfect";
  } else if (game.Is<games::ConnectFour>()) {
    // Two blocks: after 30 one-core minutes 1.5 and 3.7 points more accurate against perfect play
    // than three, and 74% and 62% of 100 games head to head, with 1.35x the games and 1.41x the
    // learner steps (issue 50; docs/benchmarks.md "Two blocks on Connect Four").
    c.blocks = 2, c.filters = 32, c.selfplay_sims = 128, c.batch_size = 256;
    c.steps_per_checkpoint = 100, c.capacity = 150'000, c.min_size_to_sample = 2000;
    c.eval_games = 20, c.eval_sims = 128, c.eval_vs = "mcts:200,mcts:1000";
    // Position averaging: 2 points more accurate against perfect play after 30 one-core minutes
    // in both of issue 50's pairs (docs/benchmarks.md, "Position averaging on Connect Four").
    c.position_averaging = true;
  } else if (game.Is<games::Go>()) {
    // GNU Go is the fixed baseline (zf match's gnugo:LEVEL player; Debian's gnugo package).
    c.blocks = 4, c.filters = 32, c.selfplay_sims = 64, c.batch_size = 256;
    c.steps_per_checkpoint = 100, c.capacity = 200'000, c.min_size_to_sample = 2000;
    c.eval_games = 4, c.eval_sims = 64, c.eval_vs = "random,gnugo:1";
    // Ownership and score targets, and the score utility over their score head: the two of
    // KataGo's signals that paid on this machine (issue 19, docs/benchmarks.md "Go strength
    // per hour"). --noaux_heads turns both off.
    c.aux_heads = true;
    c.score_utility = 0.3;
    // With --minutes, the learning rate falls over the last quarter to a tenth (issue 19:
    // stronger at 60 and at 105 minutes, paired; docs/benchmarks.md "The learning-rate decay").
    c.lr_decay.decay_fraction = 0.25;
    // Fast searches of 16 simulations beside the full 64 (playout cap randomization at 4:1):
    // issue 19's 105 minutes took 27 of 100 from gnugo:1 with it against 8 without, and 74%
    // head to head (docs/benchmarks.md "Fast searches of 16 simulations").
    c.selfplay_fast_sims = 16;
    // Gumbel root search over 16 actions in self-play: ahead against GNU Go in all three of
    // issue 19's comparisons (75 minutes paired, 105 and 150 minutes; docs/benchmarks.md
    // "Gumbel root search taken to 150 minutes"), though no stronger head to head. Forced
    // playouts, which exclude it, turn it off when given.
    c.gumbel_considered_actions = 16;
  } else {
    // Every other game, a new one included: a small network and modest searches.
    c.blocks = 3, c.filters = 32, c.selfplay_sims = 128, c.batch_size = 256;
    c.steps_per_checkpoint = 100, c.capacity = 150'000, c.min_size_to_sample = 2000;
    c.eval_games = 10, c.eval_sims = 64, c.eval_vs = "mcts:200";
  }
  return c;
}

// Reads DIR/run.json back (nlohmann-json). Keys added after a run began (fast searches, forced
// playouts, the score utility, Gumbel, the heads, requests in flight, the decay) may be absent:
// such a run keeps what it ran with, the defaults below.
// Returns: the config; InvalidArgument when the file is missing; DataLoss naming the key when it
//          is not JSON, a key is missing, or a value has the wrong type or range.
absl::StatusOr<RunConfig> ReadConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, " not found: is --dir a zf run directory?"));
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  const nlohmann::json json =
      nlohmann::json::parse(buffer.str(), /*cb=*/nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) {
    return absl::DataLossError(absl::StrCat(path, " is not a JSON object"));
  }
  RunConfig c;
  // A required key (or an optional one, which keeps its default when absent).
  auto get = [&](const char* key, auto* out, bool required = true) -> absl::Status {
    using T = std::remove_pointer_t<decltype(out)>;
    const auto it = json.find(key);
    if (it == json.end()) {
      return required ? absl::DataLossError(absl::StrCat(path, ": no \"", key, "\""))
                      : absl::OkStatus();
    }
    const bool fits = [&] {
      if constexpr (std::is_same_v<T, std::string>) {
        return it->is_string();
      } else if constexpr (std::is_same_v<T, bool>) {
        return it->is_boolean() || it->is_number_integer();
      } else if constexpr (std::is_integral_v<T>) {
        if (!it->is_number_integer()) return false;
        if constexpr (std::is_unsigned_v<T>) {
          return it->is_number_unsigned();
        } else {
          const int64_t v = it->template get<int64_t>();
          return v >= std::numeric_limits<T>::min() && v <= std::numeric_limits<T>::max();
        }
      } else {
        return it->is_number();
      }
    }();
    if (!fits) {
      return absl::DataLossError(
          absl::StrCat(path, ": \"", key, "\" has the wrong type: ", it->dump()));
    }
    if constexpr (std::is_same_v<T, bool>) {
      *out = it->is_boolean() ? it->template get<bool>() : it->template get<int64_t>() != 0;
    } else {
      *out = it->template get<T>();
    }
    return absl::OkStatus();
  };
  constexpr bool kOptional = false;
  ZF_RETURN_IF_ERROR(get("game", &c.game));
  ZF_RETURN_IF_ERROR(get("blocks", &c.blocks));
  ZF_RETURN_IF_ERROR(get("filters", &c.filters));
  ZF_RETURN_IF_ERROR(get("shards", &c.shards));
  ZF_RETURN_IF_ERROR(get("selfplay_sims", &c.selfplay_sims));
  ZF_RETURN_IF_ERROR(get("selfplay_fast_sims", &c.selfplay_fast_sims, kOptional));
  ZF_RETURN_IF_ERROR(get("forced_playout_k", &c.forced_playout_k, kOptional));
  ZF_RETURN_IF_ERROR(get("score_utility", &c.score_utility, kOptional));
  ZF_RETURN_IF_ERROR(get("gumbel_considered_actions", &c.gumbel_considered_actions, kOptional));
  // A run begun before these keys searched with the game's values.
  c.exploration = GameExploration(c.game);
  ZF_RETURN_IF_ERROR(get("temperature_moves", &c.exploration.temperature_moves, kOptional));
  ZF_RETURN_IF_ERROR(get("dirichlet_alpha", &c.exploration.dirichlet_alpha, kOptional));
  ZF_RETURN_IF_ERROR(get("c_puct", &c.exploration.c_puct, kOptional));
  ZF_RETURN_IF_ERROR(get("fpu_reduction", &c.exploration.fpu_reduction, kOptional));
  ZF_RETURN_IF_ERROR(
      get("rollout_opponent_share", &c.exploration.rollout_opponent_share, kOptional));
  ZF_RETURN_IF_ERROR(get("rollout_opponent_sims", &c.exploration.rollout_opponent_sims, kOptional));
  if (absl::Status exploration = c.exploration.Validate(); !exploration.ok()) {
    return absl::DataLossError(absl::StrCat(path, ": ", exploration.message()));
  }
  ZF_RETURN_IF_ERROR(get("aux_heads", &c.aux_heads, kOptional));
  ZF_RETURN_IF_ERROR(get("global_pooling", &c.global_pooling, kOptional));
  ZF_RETURN_IF_ERROR(get("games_per_worker", &c.games_per_worker));
  ZF_RETURN_IF_ERROR(get("requests_in_flight", &c.requests_in_flight, kOptional));
  ZF_RETURN_IF_ERROR(get("reanalysis_share", &c.reanalysis_share, kOptional));
  ZF_RETURN_IF_ERROR(get("max_batch", &c.max_batch));
  ZF_RETURN_IF_ERROR(get("batch_size", &c.batch_size));
  std::string optimizer = learner::OptimizerKindName(c.optimizer);
  ZF_RETURN_IF_ERROR(get("optimizer", &optimizer, kOptional));
  if (absl::StatusOr<learner::OptimizerKind> kind = learner::ParseOptimizerKind(optimizer);
      kind.ok()) {
    c.optimizer = *kind;
  } else {
    return absl::DataLossError(
        absl::StrCat(path, ": \"optimizer\" must be sgd or adamw, got \"", optimizer, "\""));
  }
  ZF_RETURN_IF_ERROR(get("lr", &c.lr));
  if (json.contains("lr_decay_fraction")) {
    ZF_RETURN_IF_ERROR(get("lr_decay_fraction", &c.lr_decay.decay_fraction));
    ZF_RETURN_IF_ERROR(get("lr_final_fraction", &c.lr_decay.final_fraction));
  }
  if (absl::Status decay = c.lr_decay.Validate(); !decay.ok()) {
    return absl::DataLossError(absl::StrCat(path, ": ", decay.message()));
  }
  ZF_RETURN_IF_ERROR(get("steps_per_checkpoint", &c.steps_per_checkpoint));
  ZF_RETURN_IF_ERROR(get("capacity", &c.capacity));
  ZF_RETURN_IF_ERROR(get("min_size_to_sample", &c.min_size_to_sample));
  ZF_RETURN_IF_ERROR(get("samples_per_insert", &c.samples_per_insert));
  ZF_RETURN_IF_ERROR(get("search_value_weight", &c.search_value_weight, kOptional));
  ZF_RETURN_IF_ERROR(get("position_averaging", &c.position_averaging, kOptional));
  ZF_RETURN_IF_ERROR(get("eval_games", &c.eval_games));
  ZF_RETURN_IF_ERROR(get("eval_sims", &c.eval_sims));
  ZF_RETURN_IF_ERROR(get("eval_vs", &c.eval_vs));
  ZF_RETURN_IF_ERROR(get("seed", &c.seed));
  return c;
}

absl::Status WriteFileAtomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    if (!out.flush()) return absl::InternalError(absl::StrCat("cannot write ", tmp));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return absl::InternalError(absl::StrCat("rename ", tmp, ": ", ec.message()));
  return absl::OkStatus();
}

int g_run_signal_pipe[2] = {-1, -1};
void OnRunSignal(int signal_number) {
  const char byte = static_cast<char>(signal_number);
  (void)!write(g_run_signal_pipe[1], &byte, 1);
}

// An evaluation in progress.jsonl: the version's matches (each opponent as a "baseline", as the
// learning-curve script reads them), its Elo and interval, and the best version.
std::string EvaluationJson(const char* event, double elapsed_s, const evaluator::VersionReport& r,
                           const evaluator::EvaluatorStatus& status) {
  std::vector<std::string> parts;
  for (const evaluator::MatchScore& m : r.matches) {
    const int n = m.wins + m.draws + m.losses;
    parts.push_back(absl::StrFormat(
        "{\"baseline\": %s, \"wins\": %d, \"draws\": %d, \"losses\": %d, \"score\": %.4f}",
        JsonString(m.opponent), m.wins, m.draws, m.losses,
        n == 0 ? 0.0 : (m.wins + 0.5 * m.draws) / n));
  }
  std::string elo;
  if (r.rating.has_value()) {
    elo = absl::StrFormat(", \"elo\": %.1f, \"elo_lower\": %.1f, \"elo_upper\": %.1f",
                          r.rating->elo, r.rating->lower, r.rating->upper);
  }
  return absl::StrFormat(
      "{\"event\": \"%s\", \"elapsed_s\": %.1f, \"version\": %d%s, \"best_version\": %d, "
      "\"results\": [%s]}",
      event, elapsed_s, r.version, elo, status.best_version, absl::StrJoin(parts, ", "));
}

// Connect Four: the accuracy against perfect play of `checkpoint` searched with `sims`
// simulations, over the standard position set (evaluator/accuracy.h): the learning curve on an
// absolute scale beside Elo. nullopt for other games, when stopped, or on error (logged).
std::optional<evaluator::AccuracyResult> CheckpointAccuracy(const std::string& game,
                                                            const std::string& checkpoint, int sims,
                                                            const std::atomic<bool>& stop) {
  if (game != "connect4") return std::nullopt;
  const games::ConnectFour start;
  absl::StatusOr<std::unique_ptr<players::Player<games::ConnectFour>>> player =
      players::MakePlayer<games::ConnectFour>(absl::StrCat("net:", checkpoint, ":", sims), start,
                                              /*seed=*/1);
  absl::StatusOr<evaluator::AccuracyResult> r =
      player.ok() ? evaluator::MeasureAccuracy(**player, start,
                                               evaluator::ConnectFourAccuracyPositions(), &stop)
                  : absl::StatusOr<evaluator::AccuracyResult>(player.status());
  if (!r.ok()) {
    if (!absl::IsCancelled(r.status())) ZF_LOG(WARNING) << "run: accuracy: " << r.status();
    return std::nullopt;
  }
  return *r;
}

std::string AccuracyJsonLine(const char* event, double elapsed_s, int64_t version,
                             const evaluator::AccuracyResult& r) {
  return evaluator::AccuracyJson(
      r, absl::StrFormat("\"event\": \"%s\", \"elapsed_s\": %.1f, \"version\": %d, ", event,
                         elapsed_s, version));
}

// The progress line's part: "Elo v12 412 [380, 444]".
std::string EloText(const evaluator::VersionReport& r) {
  if (!r.rating.has_value()) return absl::StrCat("v", r.version, " not rated yet");
  return absl::StrFormat("Elo v%d %.0f [%.0f, %.0f]", r.version, r.rating->elo, r.rating->lower,
                         r.rating->upper);
}

// 950, 9.5k, 12k, 1.2M: a rate in four characters or so.
std::string Compact(double x) {
  if (x < 1e3) return absl::StrFormat("%.0f", x);
  if (x < 1e4) return absl::StrFormat("%.1fk", x / 1e3);
  if (x < 1e6) return absl::StrFormat("%.0fk", x / 1e3);
  return absl::StrFormat("%.1fM", x / 1e6);
}

// The terminal's progress line from its parts (time, games, evaluations/s, batch, step, loss,
// versions, Elo; the rest is in DIR/progress.jsonl and --fleet_view), two spaces apart, within
// 100 columns: the loss, then the batch, are left out if they do not fit.
std::string ProgressLine(std::vector<std::string> parts) {
  constexpr size_t kColumns = 100;
  auto join = [&parts] {
    std::string line;
    for (const std::string& p : parts) {
      if (!p.empty()) absl::StrAppend(&line, line.empty() ? "" : "  ", p);
    }
    return line;
  };
  std::string line = join();
  for (const size_t drop : {5u, 3u}) {  // the loss, then the batch
    if (line.size() <= kColumns || drop >= parts.size()) break;
    parts[drop].clear();
    line = join();
  }
  return line.size() <= kColumns ? line : line.substr(0, kColumns);
}

// `text` in lines of at most `width` columns, broken at spaces but not inside [brackets] (an
// Elo interval stays on one line; a word longer than a line stays whole), each line after the
// first indented by `indent` spaces.
std::string FitColumns(const std::string& text, size_t width = 100, size_t indent = 9) {
  std::vector<std::string> words;
  std::string word;
  int depth = 0;
  for (const char c : text) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ' ' && depth <= 0) {
      words.push_back(std::move(word));
      word.clear();
    } else {
      word.push_back(c);
    }
  }
  words.push_back(std::move(word));
  std::string out, line;
  bool first = true;
  for (const std::string& w : words) {
    if (first) {
      line = w;  // the leading spaces of `text` are empty words: kept
      first = false;
    } else if (line.size() + 1 + w.size() <= width ||
               line.find_first_not_of(' ') == std::string::npos) {
      absl::StrAppend(&line, " ", w);
    } else {
      absl::StrAppend(&out, line, "\n");
      line = absl::StrCat(std::string(indent, ' '), w);
    }
  }
  return out + line;
}

using Sample = fleet::InProcessFleet::Sample;

absl::Status RunRun(const std::vector<std::string>& args) {
  if (!args.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("unexpected argument \"", args[0], "\""));
  }
  std::string dir = absl::GetFlag(FLAGS_dir);
  const bool resume = absl::GetFlag(FLAGS_resume);
  const double minutes = absl::GetFlag(FLAGS_minutes);
  if (minutes < 0 || minutes > 525600) {
    return absl::InvalidArgumentError(
        absl::StrCat("--minutes must be in 0..525600, got ", minutes));
  }
  if (const double share = absl::GetFlag(FLAGS_eval_cpu_share); !(share >= 0.05 && share <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--eval_cpu_share must be in 0.05..1 (of one core), got ", share));
  }
  const double progress_s = absl::GetFlag(FLAGS_progress_s);
  if (progress_s < 0.5 || progress_s > 3600) {
    return absl::InvalidArgumentError(
        absl::StrCat("--progress_s must be in 0.5..3600, got ", progress_s));
  }
  const int learner_threads = absl::GetFlag(FLAGS_learner_threads);
  ZF_RETURN_IF_ERROR(CheckFlagRange("learner_threads", learner_threads, 1, 64));

  RunConfig config;
  if (resume) {
    if (dir.empty()) return absl::InvalidArgumentError("--resume needs --dir");
    // The run's own settings come from DIR/run.json; one given again is refused rather than
    // silently ignored. What a resume takes: how long and how it reports, and the learning-rate
    // schedule (the one setting it may change, below). Any other flag, a new one included, is a
    // setting of the run.
    static constexpr absl::string_view kResumeTakes[] = {
        "dir",           "resume",     "minutes",        "lr_decay_fraction", "lr_final_fraction",
        "progress_s",    "fleet_view", "metrics_listen", "log_file",          "learner_threads",
        "eval_cpu_share"};
    for (const std::string& given : GivenFlagNames()) {
      if (std::find(std::begin(kResumeTakes), std::end(kResumeTakes), given) ==
          std::end(kResumeTakes)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--", given, " is fixed by the run (", dir,
            "/run.json) and a --resume cannot change it; a --resume takes --",
            // The list past "dir" and "resume", which every resume gives.
            absl::StrJoin(std::begin(kResumeTakes) + 2, std::end(kResumeTakes), ", --")));
      }
    }
    ZF_ASSIGN_OR_RETURN(config, ReadConfig(dir + "/run.json"));
  } else {
    ZF_ASSIGN_OR_RETURN(games::GameConfig game, games::ParseGameName(absl::GetFlag(FLAGS_game)));
    config = DefaultConfig(game);
    if (dir.empty()) {
      dir = absl::StrCat("runs/", absl::StrReplaceAll(game.name, {{":", "-"}}), "-",
                         absl::FormatTime("%Y%m%d-%H%M%S", absl::Now(), absl::LocalTimeZone()));
    }
    std::error_code ec;
    if (std::filesystem::exists(dir + "/run.json", ec)) {
      return absl::InvalidArgumentError(absl::StrCat(
          dir, " already holds a run: pass --resume to continue it, or choose another --dir"));
    }
    if (const std::string net = absl::GetFlag(FLAGS_net); !net.empty()) {
      std::vector<std::string> parts = absl::StrSplit(net, 'x');
      if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &config.blocks) ||
          !absl::SimpleAtoi(parts[1], &config.filters) || config.blocks < 1 || config.blocks > 40 ||
          config.filters < 1 || config.filters > 512) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--net must be BLOCKSxFILTERS with blocks 1..40 and filters 1..512, got \"", net,
            "\""));
      }
    }
    config.shards = absl::GetFlag(FLAGS_shards);
    if (config.shards < 1 || config.shards > 16) {
      return absl::InvalidArgumentError(
          absl::StrCat("--shards must be in 1..16, got ", config.shards));
    }
    if (int v = absl::GetFlag(FLAGS_selfplay_sims); v != 0) config.selfplay_sims = v;
    const bool fast_sims_given = absl::GetFlag(FLAGS_selfplay_fast_sims) != 0;
    if (fast_sims_given) config.selfplay_fast_sims = absl::GetFlag(FLAGS_selfplay_fast_sims);
    if (double v = absl::GetFlag(FLAGS_forced_playout_k); v != -1) config.forced_playout_k = v;
    if (int v = absl::GetFlag(FLAGS_gumbel_considered_actions); v != -1) {
      config.gumbel_considered_actions = v;
    } else if (config.forced_playout_k > 0) {
      config.gumbel_considered_actions = 0;  // Go's default root rule yields to forced playouts
    }
    const bool score_utility_given = absl::GetFlag(FLAGS_score_utility) != -1;
    if (score_utility_given) config.score_utility = absl::GetFlag(FLAGS_score_utility);
    // Only a flag given on the command line overrides the game's default (--noaux_heads turns
    // Go's heads off).
    if (FlagGiven("aux_heads")) {
      config.aux_heads = absl::GetFlag(FLAGS_aux_heads);
    }
    config.global_pooling = absl::GetFlag(FLAGS_global_pooling);
    // Checked here, before the run directory is made: a refused flag leaves nothing behind.
    ZF_RETURN_IF_ERROR(games::VisitGame(game, [&](const auto& g) {
      model::NetworkShape unused;
      return model::SetAuxHeads(g, config.aux_heads, &unused);
    }));
    ZF_RETURN_IF_ERROR(CheckRealFlagRange("forced_playout_k", config.forced_playout_k, 0, 100));
    ZF_RETURN_IF_ERROR(CheckGumbelFlag(config.gumbel_considered_actions, config.forced_playout_k));
    ZF_RETURN_IF_ERROR(CheckRealFlagRange("score_utility", config.score_utility, 0, 1));
    ZF_RETURN_IF_ERROR(SelfPlayExplorationFromFlags(&config.exploration));
    if (config.score_utility > 0 && !config.aux_heads) {
      if (score_utility_given) {
        return absl::InvalidArgumentError(
            "--score_utility needs a network with the score head (--aux_heads, Go only)");
      }
      config.score_utility = 0;  // Go's default utility goes with its heads (--noaux_heads)
    }
    if (FlagGiven("games_per_worker")) {
      config.games_per_worker = absl::GetFlag(FLAGS_games_per_worker);
      ZF_RETURN_IF_ERROR(CheckFlagRange("games_per_worker", config.games_per_worker, 1,
                                        actor::ActorOptions::kMaxGamesPerWorker));
    }
    if (FlagGiven("requests_in_flight")) {
      config.requests_in_flight = absl::GetFlag(FLAGS_requests_in_flight);
      ZF_RETURN_IF_ERROR(CheckFlagRange("requests_in_flight", config.requests_in_flight,
                                        actor::ActorOptions::kMinRequestsInFlight,
                                        actor::ActorOptions::kMaxRequestsInFlight));
    }
    if (FlagGiven("reanalysis_share")) {
      config.reanalysis_share = absl::GetFlag(FLAGS_reanalysis_share);
      ZF_RETURN_IF_ERROR(CheckRealFlagRange("reanalysis_share", config.reanalysis_share, 0,
                                            actor::ActorOptions::kMaxReanalysisShare));
    }
    if (int v = absl::GetFlag(FLAGS_eval_games); v >= 0) config.eval_games = v;
    if (int v = absl::GetFlag(FLAGS_eval_sims); v != 0) config.eval_sims = v;
    if (std::string v = absl::GetFlag(FLAGS_eval_vs); !v.empty()) config.eval_vs = v;
    if (config.selfplay_sims < 0 || config.selfplay_sims > 100000) {
      return absl::InvalidArgumentError("--selfplay_sims must be in 0..100000");
    }
    // Checked here, before anything starts; set on the fleet's actor in step 4. A game's own
    // default fast budget (Go's) is capped at a smaller --selfplay_sims, as ForGame's is; only a
    // given --selfplay_fast_sims above it is refused.
    search::SelfPlayOptions budgets = actor::ActorOptions::ForGame(config.game).self_play;
    if (!fast_sims_given && config.selfplay_fast_sims > 0) {
      budgets.fast_simulations = config.selfplay_fast_sims;
    }
    ZF_RETURN_IF_ERROR(SetSelfPlaySimulations(&budgets, config.selfplay_sims,
                                              fast_sims_given ? config.selfplay_fast_sims : 0,
                                              "selfplay_fast_sims"));
    if (config.selfplay_fast_sims > 0) config.selfplay_fast_sims = budgets.fast_simulations;
    if (absl::GetFlag(FLAGS_eval_games) < -1 || config.eval_games > 10000) {
      return absl::InvalidArgumentError("--eval_games must be in -1..10000");
    }
    if (config.eval_sims < 0 || config.eval_sims > 100000) {
      return absl::InvalidArgumentError("--eval_sims must be in 0..100000");
    }
    if (FlagGiven("samples_per_insert")) {
      config.samples_per_insert = absl::GetFlag(FLAGS_samples_per_insert);
      ZF_RETURN_IF_ERROR(
          CheckRealFlagRange("samples_per_insert", config.samples_per_insert, 0.1, 1000));
    }
    // Only a flag given on the command line overrides the game's default (Connect Four's is
    // on; --noposition_averaging turns it off).
    if (FlagGiven("position_averaging")) {
      config.position_averaging = absl::GetFlag(FLAGS_position_averaging);
    }
    if (FlagGiven("search_value_weight")) {
      config.search_value_weight = absl::GetFlag(FLAGS_search_value_weight);
      ZF_RETURN_IF_ERROR(
          CheckRealFlagRange("search_value_weight", config.search_value_weight, 0, 1));
    }
    // The learner's settings and the replay window (zf learner's and zf replay's flags; the
    // window is per shard): a given flag overrides the game's default.
    if (FlagGiven("optimizer")) {
      absl::StatusOr<learner::OptimizerKind> kind =
          learner::ParseOptimizerKind(absl::GetFlag(FLAGS_optimizer));
      if (!kind.ok())
        return absl::InvalidArgumentError(absl::StrCat("--", kind.status().message()));
      config.optimizer = *kind;
    }
    if (FlagGiven("lr")) {
      config.lr = absl::GetFlag(FLAGS_lr);
      ZF_RETURN_IF_ERROR(CheckRealFlagRange("lr", config.lr, 1e-6, 10));
    }
    if (FlagGiven("batch_size")) {
      config.batch_size = absl::GetFlag(FLAGS_batch_size);
      ZF_RETURN_IF_ERROR(CheckFlagRange("batch_size", config.batch_size, 1, 65536));
    }
    if (FlagGiven("capacity")) {
      config.capacity = absl::GetFlag(FLAGS_capacity);
      // The shards' own rule, checked before the run directory is made.
      ZF_RETURN_IF_ERROR(CheckFlagRange(
          "capacity", config.capacity,
          fleet::InProcessFleetOptions::MinCapacityPositions(config.min_size_to_sample),
          100'000'000));
    }
    if (uint64_t seed = absl::GetFlag(FLAGS_seed); seed != 0) config.seed = seed;
  }
  // The learning-rate schedule is the one setting a --resume may change (run.json then records
  // the new one): a run extended for M more minutes can decay over them.
  const bool decay_given = FlagGiven("lr_decay_fraction");
  const bool final_given = FlagGiven("lr_final_fraction");
  if (double v = absl::GetFlag(FLAGS_lr_decay_fraction); v != -1) {
    config.lr_decay.decay_fraction = v;
  }
  if (!resume || final_given) {
    config.lr_decay.final_fraction = absl::GetFlag(FLAGS_lr_final_fraction);
  }
  ZF_RETURN_IF_ERROR(CheckRealFlagRange("lr_decay_fraction", config.lr_decay.decay_fraction, 0, 1));
  if (!(config.lr_decay.final_fraction > 0 && config.lr_decay.final_fraction <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat("--lr_final_fraction must be in (0, 1], got ",
                                                   config.lr_decay.final_fraction));
  }
  if (decay_given && config.lr_decay.decay_fraction > 0 && minutes == 0) {
    return absl::InvalidArgumentError(
        "--lr_decay_fraction decays over the run's --minutes: give --minutes too");
  }
  // Without --minutes (until Ctrl-C) there is no end to decay towards: the rate stays constant.
  const bool lr_decays = config.lr_decay.decay_fraction > 0 && minutes > 0;
  ZF_ASSIGN_OR_RETURN(games::GameConfig game, games::ParseGameName(config.game));
  const std::vector<std::string> baselines =
      absl::StrSplit(config.eval_vs, ',', absl::SkipWhitespace());
  // Check the baselines now rather than minutes later in the first evaluation.
  ZF_RETURN_IF_ERROR(games::VisitGame(game, [&](const auto& start) -> absl::Status {
    using G = std::decay_t<decltype(start)>;
    for (const std::string& spec : baselines) {
      ZF_RETURN_IF_ERROR(players::MakePlayer<G>(spec, start, 1).status());
    }
    return absl::OkStatus();
  }));

  std::error_code ec;
  std::filesystem::create_directories(dir + "/replay", ec);
  if (ec)
    return absl::InvalidArgumentError(absl::StrCat("cannot create ", dir, ": ", ec.message()));
  if (!resume || decay_given || final_given) {
    ZF_RETURN_IF_ERROR(WriteFileAtomically(dir + "/run.json", config.ToJson()));
  }
  std::ofstream progress_log(dir + "/progress.jsonl", std::ios::app);

  if (pipe2(g_run_signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  struct sigaction action = {};
  action.sa_handler = OnRunSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);

  ZF_ASSIGN_OR_RETURN(const model::NetworkShape shape,
                      model::NetworkShapeForGame(game, config.blocks, config.filters,
                                                 config.global_pooling, config.aux_heads));
  // The components' informational lines go to DIR/zf.log; the terminal keeps progress, warnings
  // and errors. --log_file names another file ('-': everything on stderr, as before).
  std::string log_file = absl::GetFlag(FLAGS_log_file);
  if (log_file.empty()) {
    log_file = dir + "/zf.log";
    ZF_RETURN_IF_ERROR(logging::LogToFile(log_file));
  }
  // What the network and self-play have beyond the plain AlphaZero recipe (Go's defaults have
  // the heads), so that a user sees them without reading run.json.
  std::string extras;
  if (config.aux_heads) extras += " with ownership and score heads";
  if (config.global_pooling) extras += extras.empty() ? " with global pooling" : ", global pooling";
  if (config.forced_playout_k > 0) {
    absl::StrAppend(&extras, ", forced playouts k=", config.forced_playout_k);
  }
  if (config.score_utility > 0) absl::StrAppend(&extras, ", score utility ", config.score_utility);
  if (config.gumbel_considered_actions > 0) {
    absl::StrAppend(&extras, ", Gumbel root search over ", config.gumbel_considered_actions,
                    " actions");
  }
  if (config.selfplay_fast_sims > 0) {
    absl::StrAppend(&extras, ", fast searches of ", config.selfplay_fast_sims, " simulations");
  }
  const SelfPlayExploration& exploration = config.exploration;
  SelfPlayExploration own = GameExploration(config.game);
  own.rollout_opponent_share = exploration.rollout_opponent_share;  // named apart below
  own.rollout_opponent_sims = exploration.rollout_opponent_sims;
  if (exploration != own) {
    absl::StrAppend(&extras, ", self-play ", exploration.temperature_moves,
                    " plies sampled, root noise alpha ", exploration.dirichlet_alpha, ", c_puct ",
                    exploration.c_puct, ", fpu reduction ", exploration.fpu_reduction);
  }
  if (exploration.rollout_opponent_share > 0) {
    absl::StrAppend(&extras, ", rollout MCTS of ", exploration.rollout_opponent_sims,
                    " simulations as one side of ", exploration.rollout_opponent_share * 100,
                    "% of the games");
  }
  if (learner_threads > 1) absl::StrAppend(&extras, ", learner on ", learner_threads, " threads");
  if (config.optimizer != learner::OptimizerKind::kSgd) {
    absl::StrAppend(&extras, ", optimizer ", learner::OptimizerKindName(config.optimizer));
  }
  if (config.position_averaging) absl::StrAppend(&extras, ", position averaging");
  if (config.search_value_weight > 0) {
    absl::StrAppend(&extras, ", value target ", 1 - config.search_value_weight, " result + ",
                    config.search_value_weight, " search value");
  }
  std::string schedule;
  if (lr_decays) {
    schedule = absl::StrFormat(", learning rate %g falling to %g over the last %g minutes",
                               config.lr, config.lr * config.lr_decay.final_fraction,
                               config.lr_decay.decay_fraction * minutes);
  }
  std::cout << absl::StrFormat(
                   "zf run: %s, network %dx%d%s, %d replay shards at %g samples per insert%s, "
                   "run directory %s%s%s",
                   game.name, config.blocks, config.filters, extras, config.shards,
                   config.samples_per_insert, schedule, dir, resume ? " (resumed)" : "",
                   log_file == "-" ? "" : absl::StrCat(", log ", log_file))
            << std::endl;

  // The fleet (fleet/in_process_fleet.h): replay shards, the learner and its model service, an
  // inference server following it, and an actor, over real gRPC servers on this host.
  auto eval_registry = std::make_shared<prometheus::Registry>();
  fleet::InProcessFleetOptions fo;
  fo.dir = dir;
  fo.game = game.name;
  fo.shape = shape;
  fo.seed = config.seed;
  fo.shards = config.shards;
  fo.capacity_positions = config.capacity;
  fo.min_size_to_sample = config.min_size_to_sample;
  fo.samples_per_insert = config.samples_per_insert;
  fo.position_averaging = config.position_averaging;
  fo.batch_size = config.batch_size;
  fo.optimizer = config.optimizer;
  fo.lr = config.lr;
  fo.search_value_weight = config.search_value_weight;
  if (lr_decays) {
    // Over this invocation's --minutes, counted from here (the fleet's start-up is seconds).
    const absl::Time decay_start = absl::Now();
    const double budget_s = minutes * 60;
    fo.lr_scale = [decay = config.lr_decay, decay_start, budget_s] {
      return learner::TimeDecayFactor(decay,
                                      absl::ToDoubleSeconds(absl::Now() - decay_start) / budget_s);
    };
  }
  fo.learner_threads = learner_threads;
  fo.steps_per_checkpoint = config.steps_per_checkpoint;
  fo.max_batch = config.max_batch;
  actor::ActorOptions& ao = fo.actor;
  ao = actor::ActorOptions::ForGame(game.name);
  ao.workers = 1;
  ao.games_per_worker = config.games_per_worker;
  ao.requests_in_flight = config.requests_in_flight;
  ao.reanalysis_share = config.reanalysis_share;
  ZF_RETURN_IF_ERROR(SetSelfPlaySimulations(&ao.self_play, config.selfplay_sims,
                                            config.selfplay_fast_sims, "selfplay_fast_sims"));
  ao.self_play.mcts.forced_playout_k = static_cast<float>(config.forced_playout_k);
  ao.self_play.mcts.score_utility = static_cast<float>(config.score_utility);
  ao.self_play.mcts.gumbel_considered_actions = config.gumbel_considered_actions;
  config.exploration.ApplyTo(&ao.self_play);
  ao.seed = config.seed + static_cast<uint64_t>(absl::ToUnixSeconds(absl::Now()));
  fo.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  fo.extra_registries = {eval_registry};
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<fleet::InProcessFleet> run_fleet,
                      fleet::InProcessFleet::Create(std::move(fo)));
  if (run_fleet->metrics_port() > 0) {
    std::cout << "zf run: metrics on port " << run_fleet->metrics_port() << std::endl;
  }
  const std::string latest = dir + "/checkpoints/latest";

  // The evaluator: its games in DIR/evaluation/, its copies of the rated checkpoints in
  // DIR/evaluator/checkpoints/ (the learner prunes its own).
  const std::string eval_checkpoints = dir + "/evaluator/checkpoints";
  evaluator::EvaluatorOptions eval_options;
  std::unique_ptr<evaluator::ResultsLog> results_log;
  std::unique_ptr<evaluator::MatchRunner> match_runner;
  std::unique_ptr<evaluator::CpuShareRunner> shared_runner;
  std::unique_ptr<evaluator::Evaluator> rater;
  std::atomic<bool> stopping{false};
  if (config.eval_games > 0) {
    std::filesystem::create_directories(eval_checkpoints, ec);
    if (ec) {
      return absl::InternalError(
          absl::StrCat("cannot create ", eval_checkpoints, ": ", ec.message()));
    }
    eval_options.game = game.name;
    // Ratings are anchored at random = 0, so random is always an anchor.
    eval_options.anchors = baselines;
    if (evaluator::RatingAnchor(baselines) != "random") {
      eval_options.anchors.insert(eval_options.anchors.begin(), "random");
    }
    eval_options.rating_anchor = "random";
    eval_options.games_per_opponent = config.eval_games + config.eval_games % 2;  // even
    eval_options.opening_moves = players::DefaultOpeningMoves(game.name);
    eval_options.seed = config.seed;
    eval_options.registry = eval_registry.get();
    ZF_ASSIGN_OR_RETURN(results_log, evaluator::ResultsLog::Open(dir + "/evaluation"));
    match_runner =
        games::VisitGame(game, [&](const auto& start) -> std::unique_ptr<evaluator::MatchRunner> {
          using G = std::decay_t<decltype(start)>;
          return std::make_unique<evaluator::PlayersMatchRunner<G>>(
              start, eval_checkpoints, config.eval_sims, dir + "/evaluation-sgf");
        });
    shared_runner = std::make_unique<evaluator::CpuShareRunner>(
        match_runner.get(), absl::GetFlag(FLAGS_eval_cpu_share), &stopping);
    ZF_ASSIGN_OR_RETURN(
        rater, evaluator::Evaluator::Create(eval_options, results_log.get(), shared_runner.get()));
  }

  ZF_RETURN_IF_ERROR(run_fleet->Start());

  // 5. The evaluator (evaluator/evaluator.h) rates each new checkpoint against the baselines, the
  // previous version it rated and the best, in --eval_cpu_share of one core
  // (evaluator::CpuShareRunner); its games are kept in DIR/evaluation/ (so ratings span a resumed
  // run) and `zf ratings --dir DIR` prints them.
  const absl::Time start_time = absl::Now();
  absl::Mutex eval_mu;
  std::string last_eval = "no Elo yet";  // guarded by eval_mu
  // Connect Four: the newest version whose accuracy was measured, and the result (eval_mu).
  int64_t accuracy_version = 0;
  evaluator::AccuracyResult last_accuracy;
  std::thread eval_thread([&] {
    int64_t failed = -1;
    while (!stopping.load() && rater != nullptr) {
      const int64_t version = run_fleet->learner().stats().published_version;
      if (version <= rater->status().newest_version || version <= 1 || version == failed) {
        absl::SleepFor(absl::Milliseconds(500));
        continue;
      }
      // Keep a copy of `latest` as the evaluator's vN (the learner prunes its files).
      absl::StatusOr<int64_t> kept =
          evaluator::KeepCheckpoint(dir + "/checkpoints/latest", eval_checkpoints, game.name);
      if (!kept.ok()) {
        absl::SleepFor(absl::Milliseconds(500));  // pruned or being replaced: the next one
        continue;
      }
      if (*kept <= rater->status().newest_version) {  // `latest` is behind the stats: wait
        absl::SleepFor(absl::Milliseconds(500));
        continue;
      }
      absl::StatusOr<evaluator::VersionReport> report = rater->EvaluateVersion(*kept, stopping);
      if (absl::IsCancelled(report.status())) break;
      if (!report.ok()) {
        ZF_LOG(WARNING) << "run: evaluation of v" << *kept << ": " << report.status();
        failed = *kept;
        continue;
      }
      // Connect Four: accuracy against perfect play too, in the evaluator's CPU share (the
      // CpuShareRunner counts this thread's CPU time, so the next games wait it out).
      const std::optional<evaluator::AccuracyResult> accuracy =
          CheckpointAccuracy(game.name, absl::StrCat(eval_checkpoints, "/v", *kept, ".zfckpt"),
                             config.eval_sims, stopping);
      const double elapsed = absl::ToDoubleSeconds(absl::Now() - start_time);
      std::string line = evaluator::ReportLine(*report, rater->status());
      if (accuracy.has_value()) {
        absl::StrAppendFormat(&line, "; accuracy %.1f%% [%.1f, %.1f]", 100 * accuracy->accuracy,
                              100 * accuracy->interval.lower, 100 * accuracy->interval.upper);
      }
      std::cout << FitColumns(absl::StrFormat("[%5.0fs] evaluation %s", elapsed, line))
                << std::endl;
      evaluator::PruneCheckpoints(eval_checkpoints, rater->status());
      absl::MutexLock lock(&eval_mu);
      progress_log << EvaluationJson("evaluation", elapsed, *report, rater->status()) << std::endl;
      last_eval = EloText(*report);
      if (accuracy.has_value()) {
        accuracy_version = *kept;
        last_accuracy = *accuracy;
        progress_log << AccuracyJsonLine("accuracy", elapsed, *kept, *accuracy) << std::endl;
        absl::StrAppendFormat(&last_eval, " acc %.0f%%", 100 * accuracy->accuracy);
      }
    }
  });

  // 6. Progress lines until a signal, --minutes, or a component failing.
  const absl::Time end_time =
      minutes > 0 ? start_time + absl::Seconds(minutes * 60) : absl::InfiniteFuture();
  Sample previous = run_fleet->TakeSample();
  fleet::FleetScrape previous_scrape = run_fleet->Scrape();
  const bool full_view = absl::GetFlag(FLAGS_fleet_view);
  std::string last_bottleneck = "-";
  std::string stop_reason = "time is up";
  while (true) {
    const absl::Time next = std::min(absl::Now() + absl::Seconds(progress_s), end_time);
    pollfd pfd = {g_run_signal_pipe[0], POLLIN, 0};
    const int timeout_ms =
        static_cast<int>(std::max<int64_t>(0, absl::ToInt64Milliseconds(next - absl::Now())));
    char signal_number = 0;
    if (poll(&pfd, 1, timeout_ms) > 0 && read(g_run_signal_pipe[0], &signal_number, 1) == 1) {
      stop_reason = strsignal(signal_number);
      break;
    }
    const Sample now = run_fleet->TakeSample();
    const double dt = std::max(1e-9, absl::ToDoubleSeconds(now.at - previous.at));
    const learner::LearnerStats ls = run_fleet->learner().stats();
    const actor::ActorStats actor_stats = run_fleet->actor().stats();
    const double run_dt = now.learner_run_s - previous.learner_run_s;
    const double data_wait = run_dt > 0 ? (now.data_wait_s - previous.data_wait_s) / run_dt : 0.0;
    const int64_t batches = now.batches - previous.batches;
    const double mean_batch = batches > 0 ? double(now.rows - previous.rows) / batches : 0.0;
    const double elapsed = absl::ToDoubleSeconds(now.at - start_time);
    std::string eval_text;
    {
      absl::MutexLock lock(&eval_mu);
      eval_text = last_eval;
    }
    const int64_t serving = run_fleet->inference().model_version();
    std::cout
        << ProgressLine(
               {absl::StrFormat("[%5.0fs]", elapsed),
                absl::StrCat(absl::StrFormat("games %d (%.1f/s", now.games,
                                             (now.games - previous.games) / dt),
                             config.reanalysis_share > 0
                                 ? absl::StrFormat(", %d reanalysed)", actor_stats.reanalysis_games)
                                 : ")"),
                absl::StrCat("evals ",
                             Compact((now.leaf_evaluations - previous.leaf_evaluations) / dt),
                             "/s"),
                absl::StrFormat("batch %.0f", mean_batch), absl::StrFormat("step %d", ls.steps),
                absl::StrFormat("loss %.2f", ls.last.total_loss),
                serving == ls.published_version
                    ? absl::StrCat("v", serving)
                    : absl::StrCat("v", ls.published_version, " serving v", serving),
                eval_text})
        << std::endl;
    {
      absl::MutexLock lock(&eval_mu);
      progress_log
          << absl::StrFormat(
                 "{\"event\": \"progress\", \"elapsed_s\": %.1f, \"games\": %d, "
                 "\"games_per_sec\": %.3f, \"positions_per_sec\": %.1f, "
                 "\"evals_per_sec\": %.1f, \"mean_batch\": %.2f, \"replay_positions\": %d, "
                 "\"learner_steps\": %d, \"steps_per_sec\": %.3f, \"loss\": %.5f, "
                 "\"policy_loss\": %.5f, \"value_loss\": %.5f, \"ownership_loss\": %.5f, "
                 "\"score_loss\": %.5f, \"learning_rate\": %.6g, \"data_wait\": %.4f, "
                 "\"published_version\": %d, \"serving_version\": %d, "
                 "\"resignation_enabled\": %s, \"resign_samples\": %d, "
                 "\"resign_false_positives\": %d, \"reanalysis_games\": %d, "
                 "\"reanalysis_leaf_evaluations\": %d}",
                 elapsed, now.games, (now.games - previous.games) / dt,
                 (now.moves - previous.moves) / dt,
                 (now.leaf_evaluations - previous.leaf_evaluations) / dt, mean_batch,
                 now.positions_stored, ls.steps, (now.steps - previous.steps) / dt,
                 ls.last.total_loss, ls.last.policy_loss, ls.last.value_loss,
                 ls.last.ownership_loss, ls.last.score_loss, ls.last.learning_rate, data_wait,
                 ls.published_version, run_fleet->inference().model_version(),
                 actor_stats.resignation_enabled ? "true" : "false", actor_stats.resign_samples,
                 actor_stats.resign_false_positives, actor_stats.reanalysis_games,
                 actor_stats.reanalysis_leaf_evaluations)
          << std::endl;
    }
    // The `zf top` view of the same fleet: its bottleneck line, or all of it.
    fleet::FleetScrape scrape = run_fleet->Scrape();
    const fleet::FleetView view = fleet::ComputeFleetView(previous_scrape, scrape, dt);
    if (full_view) {
      std::cout << fleet::RenderFleetView(view) << std::flush;
    } else if (view.bottleneck.component != last_bottleneck) {
      // Printed when it moves (its figures change every line: --fleet_view and `zf top`).
      last_bottleneck = view.bottleneck.component;
      std::cout << FitColumns(absl::StrCat("         bottleneck: ", view.bottleneck.component, ": ",
                                           view.bottleneck.reason))
                << std::endl;
    }
    previous_scrape = std::move(scrape);
    previous = now;
    if (absl::Now() >= end_time) break;
    if (absl::Status actor_status = run_fleet->actor().Wait(absl::Now());
        !absl::IsDeadlineExceeded(actor_status)) {
      stop_reason = absl::StrCat("the actor stopped: ", actor_status.ToString());
      break;
    }
  }
  // A second Ctrl-C during the shutdown ends the process the usual way.
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);

  // 7. Stop in an order that loses nothing acknowledged: actor, flush its games, learner (final
  // checkpoint), then the servers.
  std::cout << "zf run: stopping (" << stop_reason << ")" << std::endl;
  stopping.store(true);
  const fleet::InProcessFleet::StopReport stopped = run_fleet->StopSelfPlayAndTraining();
  if (!stopped.flushed.ok()) {
    // Usually the replay rate limiter: it holds inserts until the learner has sampled enough.
    // Nothing is lost: the writer spooled them and `zf run --resume` sends them.
    std::cout << "zf run: " << stopped.unacked_games
              << " finished games not yet acknowledged by replay (" << stopped.flushed.message()
              << "); they wait in " << dir << "/actor.spool for --resume" << std::endl;
  }
  eval_thread.join();
  run_fleet->ShutdownServers();

  const learner::LearnerStats ls = run_fleet->learner().stats();
  const actor::ActorStats as = run_fleet->actor().stats();
  const double elapsed = absl::ToDoubleSeconds(absl::Now() - start_time);
  std::cout << absl::StrFormat(
                   "zf run: %.0f s, %d games, %d learner steps; peak resident memory %.0f MiB\n"
                   "zf run: newest checkpoint v%d: %s",
                   elapsed, as.games, ls.steps_this_run, PeakResidentBytes("self") / 1048576.0,
                   ls.published_version, latest)
            << std::endl;
  // The final evaluation: the newest checkpoint, if the evaluator has not rated it yet.
  if (rater != nullptr && ls.published_version > 1 &&
      ls.published_version > rater->status().newest_version) {
    const std::atomic<bool> never{false};
    absl::StatusOr<int64_t> kept = evaluator::KeepCheckpoint(latest, eval_checkpoints, game.name);
    absl::StatusOr<evaluator::VersionReport> final_eval =
        kept.ok() ? rater->EvaluateVersion(*kept, never)
                  : absl::StatusOr<evaluator::VersionReport>(kept.status());
    if (final_eval.ok()) {
      std::cout << FitColumns(absl::StrCat("zf run: final evaluation ",
                                           evaluator::ReportLine(*final_eval, rater->status()),
                                           " (", config.eval_sims, " simulations, ",
                                           eval_options.games_per_opponent, " games per opponent)"),
                              100, 8)
                << std::endl;
      absl::MutexLock lock(&eval_mu);
      progress_log << EvaluationJson("final_evaluation", elapsed, *final_eval, rater->status())
                   << std::endl;
    } else {
      ZF_LOG(WARNING) << "run: final evaluation: " << final_eval.status();
    }
  }
  // Connect Four: the newest checkpoint's accuracy against perfect play (the figure `make demo`
  // ends with, docs/benchmarks.md).
  if (ls.published_version > 1 && config.eval_games > 0) {
    const std::atomic<bool> never{false};
    std::optional<evaluator::AccuracyResult> accuracy;
    {
      absl::MutexLock lock(&eval_mu);  // measured already by the evaluation loop: not again
      if (accuracy_version == ls.published_version) accuracy = last_accuracy;
    }
    if (!accuracy.has_value()) {
      accuracy = CheckpointAccuracy(game.name, latest, config.eval_sims, never);
    }
    if (accuracy.has_value()) {
      std::cout << absl::StrFormat(
                       "zf run: accuracy against perfect play: v%d (%d simulations) keeps the "
                       "best outcome in %s",
                       ls.published_version, config.eval_sims, evaluator::AccuracyText(*accuracy))
                << std::endl;
      absl::MutexLock lock(&eval_mu);
      progress_log << AccuracyJsonLine("final_accuracy", elapsed, ls.published_version, *accuracy)
                   << std::endl;
    }
  }
  {
    absl::MutexLock lock(&eval_mu);
    progress_log << absl::StrFormat(
                        "{\"event\": \"end\", \"elapsed_s\": %.1f, \"games\": %d, "
                        "\"learner_steps\": %d, \"published_version\": %d, "
                        "\"peak_resident_bytes\": %d}",
                        elapsed, as.games, ls.steps_this_run, ls.published_version,
                        PeakResidentBytes("self"))
                 << std::endl;
  }
  return run_fleet->learner_status();
}

}  // namespace

std::vector<Command> RunCommands() {
  return {
      {"run",
       "the whole fleet in one process (replay shards, learner, inference server, actor) on "
       "loopback gRPC, with live progress and periodic evaluations",
       "zf run --game G [--dir DIR] [--minutes M] [--net BxF] [--shards N] [--selfplay_sims N] "
       "[--selfplay_fast_sims N] [--games_per_worker N] [--requests_in_flight N] "
       "[--reanalysis_share X] "
       "[--samples_per_insert X] [--[no]position_averaging] [--capacity N] [--optimizer sgd|adamw] "
       "[--lr X] [--batch_size N] "
       "[--search_value_weight W] [--forced_playout_k K] [--gumbel_considered_actions M] "
       "[--score_utility L] [--temperature_moves N] [--dirichlet_alpha A] [--c_puct C] "
       "[--fpu_reduction F] "
       "[--[no]aux_heads] [--global_pooling] "
       "[--lr_decay_fraction F] [--lr_final_fraction R] "
       "[--eval_vs SPEC,...] [--eval_games N] [--eval_sims N] [--eval_cpu_share X] [--progress_s "
       "S] "
       "[--fleet_view] "
       "[--learner_threads N] [--metrics_listen ADDR] [--seed S]\n"
       "  zf run --resume --dir DIR [--minutes M] [--lr_decay_fraction F] [--lr_final_fraction R] "
       "[--learner_threads N] [--eval_cpu_share X]",
       WithLogFileFlag(WithSelfPlayExplorationFlags({"game",
                                                     "dir",
                                                     "minutes",
                                                     "resume",
                                                     "net",
                                                     "shards",
                                                     "selfplay_sims",
                                                     "selfplay_fast_sims",
                                                     "games_per_worker",
                                                     "requests_in_flight",
                                                     "reanalysis_share",
                                                     "samples_per_insert",
                                                     "position_averaging",
                                                     "capacity",
                                                     "optimizer",
                                                     "lr",
                                                     "batch_size",
                                                     "search_value_weight",
                                                     "forced_playout_k",
                                                     "gumbel_considered_actions",
                                                     "score_utility",
                                                     "aux_heads",
                                                     "global_pooling",
                                                     "lr_decay_fraction",
                                                     "lr_final_fraction",
                                                     "eval_vs",
                                                     "eval_games",
                                                     "eval_sims",
                                                     "eval_cpu_share",
                                                     "progress_s",
                                                     "fleet_view",
                                                     "metrics_listen",
                                                     "learner_threads",
                                                     "seed"})),
       RunRun},
  };
}

}  // namespace zf::cli
