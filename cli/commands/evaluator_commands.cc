// `zf evaluator`: the evaluator role. Follows a model service's versions (the learner's), keeps
// each fetched checkpoint in RUN_DIR/evaluator/checkpoints/, and rates the newest one it has not
// evaluated (evaluator/evaluator.h) by MCTS games over its own CPU inference session (one
// LibTorch thread, run at a lower CPU priority than self-play); versions published while it is
// busy are skipped, the newest is taken next. With --gate and --gate_listen it serves, as a model
// service of its own, only the versions the SPRT accepted: point the inference servers'
// --model_service at it and actors only ever play accepted versions.
// `zf ratings` is in ratings_commands.cc (it runs no network: in `zf` too).
#include "cli/commands/evaluator_commands.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "cli/common_flags.h"
#include "common/json.h"
#include "common/logging.h"
#include "common/metrics/build_info.h"
#include "common/metrics/metrics_server.h"
#include "common/status_macros.h"
#include "evaluator/evaluation_runner.h"
#include "evaluator/evaluator.h"
#include "evaluator/ratings.h"
#include "evaluator/results_log.h"
#include "games/registry.h"
#include "inference_server/model_watcher.h"
#include "learner/checkpoint_dir.h"
#include "learner/service/model_server.h"
#include "model/checkpoint.h"
#include "players/player_spec.h"

ABSL_FLAG(std::string, anchors, "",
          "evaluator: comma-separated fixed opponents (player specs); default per game: "
          "tictactoe random,perfect; connect4 random,mcts:200; go random,gnugo:1; others random");
ABSL_FLAG(int, eval_sims_per_move, 64,
          "evaluator: MCTS simulations per move of a network (1..100000)");
ABSL_FLAG(int, games_per_opponent, 20, "evaluator: games per match, colours alternating (even)");
ABSL_FLAG(bool, gate, false,
          "evaluator: serve (on --gate_listen) only versions an SPRT against the best accepts");
ABSL_FLAG(double, sprt_elo0, 0.0, "evaluator --gate: H0, the new version is at most this stronger");
ABSL_FLAG(double, sprt_elo1, 30.0,
          "evaluator --gate: H1, the new version is at least this stronger");
ABSL_FLAG(double, sprt_alpha, 0.05, "evaluator --gate: false acceptance rate");
ABSL_FLAG(double, sprt_beta, 0.05, "evaluator --gate: false rejection rate");
ABSL_FLAG(int, max_gate_games, 400, "evaluator --gate: an SPRT undecided after this many rejects");
ABSL_FLAG(std::string, gate_listen, "",
          "evaluator --gate: HOST:PORT to serve the accepted versions on, as a model service "
          "(the inference servers' --model_service)");

namespace zf::cli {
namespace {

std::atomic<bool> g_evaluator_stop{false};
static_assert(std::atomic<bool>::is_always_lock_free, "set from a signal handler");

absl::Status RunEvaluator(const std::vector<std::string>& args) {
  if (!args.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("unexpected argument \"", args[0], "\""));
  }
  const std::string dir = absl::GetFlag(FLAGS_dir);
  if (dir.empty()) return absl::InvalidArgumentError("--dir RUN_DIR is required");
  const std::string model_service = absl::GetFlag(FLAGS_model_service);
  if (model_service.empty()) {
    return absl::InvalidArgumentError("--model_service HOST:PORT (the learner's) is required");
  }
  ZF_ASSIGN_OR_RETURN(games::GameConfig config, games::ParseGameName(absl::GetFlag(FLAGS_game)));
  const int sims = absl::GetFlag(FLAGS_eval_sims_per_move);
  if (sims < 1 || sims > 100000) {
    return absl::InvalidArgumentError(
        absl::StrCat("--eval_sims_per_move is ", sims, ", expected 1..100000"));
  }
  ZF_ASSIGN_OR_RETURN(grpc_util::WireSettings wire, WireSettingsFromFlags());

  evaluator::EvaluatorOptions options;
  options.game = config.name;
  std::string anchors = absl::GetFlag(FLAGS_anchors);
  if (anchors.empty()) anchors = evaluator::DefaultAnchors(config.name);
  options.anchors = absl::StrSplit(anchors, ',', absl::SkipEmpty());
  options.rating_anchor = evaluator::RatingAnchor(options.anchors);
  options.games_per_opponent = absl::GetFlag(FLAGS_games_per_opponent);
  ZF_ASSIGN_OR_RETURN(options.opening_moves,
                      OpeningMovesFromFlag(players::DefaultOpeningMoves(config.name)));
  options.seed = absl::GetFlag(FLAGS_seed);
  if (options.seed == 0) options.seed = static_cast<uint64_t>(absl::ToUnixNanos(absl::Now()));
  options.gate = absl::GetFlag(FLAGS_gate);
  options.sprt.elo0 = absl::GetFlag(FLAGS_sprt_elo0);
  options.sprt.elo1 = absl::GetFlag(FLAGS_sprt_elo1);
  options.sprt.alpha = absl::GetFlag(FLAGS_sprt_alpha);
  options.sprt.beta = absl::GetFlag(FLAGS_sprt_beta);
  options.max_gate_games = absl::GetFlag(FLAGS_max_gate_games);
  auto registry = std::make_shared<prometheus::Registry>();
  metrics::RegisterBuildInfo(*registry, "evaluator");
  options.registry = registry.get();
  ZF_RETURN_IF_ERROR(options.Validate());
  // Every anchor must be a player of this game (a typo fails now, not after the first fetch).
  ZF_RETURN_IF_ERROR(games::VisitGame(config, [&](const auto& start) -> absl::Status {
    using G = std::decay_t<decltype(start)>;
    for (const std::string& a : options.anchors) {
      ZF_RETURN_IF_ERROR(players::MakePlayer<G>(a, start, 1).status());
    }
    return absl::OkStatus();
  }));
  const std::string gate_listen = absl::GetFlag(FLAGS_gate_listen);
  if (options.gate != !gate_listen.empty()) {
    return absl::InvalidArgumentError(
        "--gate serves the accepted versions on --gate_listen HOST:PORT: give both or neither");
  }

  const std::string checkpoints = absl::StrCat(dir, "/evaluator/checkpoints");
  std::error_code error;
  std::filesystem::create_directories(checkpoints, error);
  if (error) {
    return absl::InternalError(absl::StrCat("cannot create ", checkpoints, ": ", error.message()));
  }
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<evaluator::ResultsLog> log,
                      evaluator::ResultsLog::Open(absl::StrCat(dir, "/evaluation")));
  std::unique_ptr<evaluator::MatchRunner> runner =
      games::VisitGame(config, [&](const auto& start) -> std::unique_ptr<evaluator::MatchRunner> {
        using G = std::decay_t<decltype(start)>;
        return std::make_unique<evaluator::PlayersMatchRunner<G>>(
            start, checkpoints, sims, absl::StrCat(dir, "/evaluation-sgf"));
      });
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<evaluator::Evaluator> rater,
                      evaluator::Evaluator::Create(options, log.get(), runner.get()));

  // With --gate: the accepted versions, served as a model service.
  std::unique_ptr<learner::CheckpointDirectory> served;
  std::unique_ptr<learner::ModelServer> gate_server;
  auto serve = [&](int64_t version) -> absl::Status {
    ZF_ASSIGN_OR_RETURN(model::Checkpoint c,
                        model::ReadCheckpoint(absl::StrCat(checkpoints, "/v", version, ".zfckpt")));
    absl::StatusOr<model::CheckpointManifest> published = served->Publish(c);
    if (!published.ok() && published.status().code() != absl::StatusCode::kInvalidArgument) {
      return published.status();  // InvalidArgument: already published (a restart)
    }
    gate_server->Notify();
    return absl::OkStatus();
  };
  if (options.gate) {
    ZF_ASSIGN_OR_RETURN(served, learner::CheckpointDirectory::Create(
                                    {.dir = absl::StrCat(dir, "/evaluator/served"), .keep = 3}));
    learner::ModelServer::Options server_options;
    server_options.checkpoint_dir = served->dir();
    server_options.listen_address = gate_listen;
    server_options.wire = wire;
    server_options.registry = registry;
    ZF_ASSIGN_OR_RETURN(gate_server, learner::ModelServer::Create(std::move(server_options)));
    if (const int64_t best = rater->status().best_version; best > 0)
      ZF_RETURN_IF_ERROR(serve(best));
    std::cout << "zf evaluator: serving accepted versions on port " << gate_server->port()
              << std::endl;
  }

  std::unique_ptr<metrics::MetricsServer> metrics_server;
  if (const std::string listen = absl::GetFlag(FLAGS_metrics_listen); !listen.empty()) {
    metrics::MetricsServer::Options metrics_options;
    metrics_options.listen_address = listen;
    ZF_ASSIGN_OR_RETURN(metrics_server,
                        metrics::MetricsServer::Create(metrics_options, {registry}));
    std::cout << "zf evaluator: metrics on port " << metrics_server->port() << std::endl;
  }

  // Fetched versions: kept as checkpoints/vN.zfckpt, the newest announced to the loop.
  std::atomic<int64_t> newest_fetched{rater->status().newest_version};
  inference::ModelWatcherOptions w;
  w.address = model_service;
  w.wire = wire;
  w.temp_dir = checkpoints;
  w.reload = [&](const std::string& path) -> absl::Status {
    ZF_ASSIGN_OR_RETURN(const int64_t version,
                        evaluator::KeepCheckpoint(path, checkpoints, config.name));
    newest_fetched.store(std::max(newest_fetched.load(), version));
    return absl::OkStatus();
  };
  w.current_version = [&] { return newest_fetched.load(); };
  w.registry = registry;
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<inference::ModelWatcher> watcher,
                      inference::ModelWatcher::Create(std::move(w)));

  struct sigaction action = {};
  action.sa_handler = [](int) { g_evaluator_stop.store(true); };
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  // Evaluation runs on this thread at a lower priority than self-play and training on the host.
  setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 10);
  std::cout << "zf evaluator: " << config.name << ", anchors "
            << absl::StrJoin(options.anchors, ",") << ", " << options.games_per_opponent
            << " games per opponent, following " << model_service
            << (options.gate ? ", gating" : "") << "; " << rater->status().games
            << " games in the log" << std::endl;

  int64_t failed_version = 0;
  int failures = 0;
  while (!g_evaluator_stop.load()) {
    const int64_t target = newest_fetched.load();
    const evaluator::EvaluatorStatus before = rater->status();
    if (target <= before.newest_version || (target == failed_version && failures >= 3)) {
      absl::SleepFor(absl::Milliseconds(200));
      continue;
    }
    absl::StatusOr<evaluator::VersionReport> report =
        rater->EvaluateVersion(target, g_evaluator_stop);
    if (report.status().code() == absl::StatusCode::kCancelled) break;
    if (!report.ok()) {
      failures = target == failed_version ? failures + 1 : 1;
      failed_version = target;
      ZF_LOG(ERROR) << "evaluator: v" << target << ": " << report.status()
                    << (failures >= 3 ? "; skipping it until a newer version" : "; retrying");
      absl::SleepFor(absl::Seconds(2));
      continue;
    }
    const evaluator::EvaluatorStatus after = rater->status();
    std::cout << "zf evaluator: " << evaluator::ReportLine(*report, after) << std::endl;
    if (options.gate && after.best_version == target) ZF_RETURN_IF_ERROR(serve(target));
    // Only the newest and the best are opponents later: drop the other files (versions skipped
    // while this one was evaluated, and those no longer best).
    evaluator::PruneCheckpoints(checkpoints, after);
  }
  watcher->Stop();
  if (gate_server != nullptr) gate_server->Shutdown();
  ZF_LOG(INFO) << "evaluator: stopped; " << rater->status().games << " games in the log";
  return absl::OkStatus();
}

}  // namespace

std::vector<Command> EvaluatorCommands() {
  return {
      {"evaluator",
       "the evaluator role: rates each new version by games against anchors, the previous and "
       "the best version; --gate serves only SPRT-accepted versions",
       "zf evaluator --game G --model_service HOST:PORT --dir RUN_DIR [--anchors A,B] "
       "[--gate --gate_listen HOST:PORT] [--metrics_listen HOST:PORT]",
       WithLogFileFlag(WithTlsFlags(
           {"game", "model_service", "dir", "anchors", "eval_sims_per_move", "games_per_opponent",
            "opening_moves", "seed", "gate", "sprt_elo0", "sprt_elo1", "sprt_alpha", "sprt_beta",
            "max_gate_games", "gate_listen", "metrics_listen"})),
       RunEvaluator},
  };
}

}  // namespace zf::cli
