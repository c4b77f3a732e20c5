// `zf actor` and `zf games dump`.
//
// zf actor runs actor::Actor until --games games are in the sink (0: until SIGINT/SIGTERM) and
// prints a summary (one JSON object with --json). The hidden --local mode evaluates in process
// with a batch-1 network instead of --inference: the baseline of `zf bench selfplay`; it runs in
// zf-torch (Command::runs_network).
#include "cli/commands/actor_commands.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "actor/actor.h"
#include "actor/game_sink.h"
#include "cli/common_flags.h"
#include "cli/network_runtime.h"
#include "cli/sgf_files.h"
#include "common/host_info.h"
#include "common/json.h"
#include "common/logging.h"
#include "common/metrics/build_info.h"
#include "common/metrics/metrics_server.h"
#include "common/status_macros.h"
#include "games/registry.h"
#include "replay/client/sharded_writer.h"
#include "replay/log.h"
#include "sgf/record_sgf.h"

ABSL_DECLARE_FLAG(int, games);

ABSL_FLAG(std::string, inference, "",
          "actor: the inference servers, comma-separated HOST:PORT or unix:PATH; a HOST name is "
          "resolved to every address it has (one server each) and again every 5 s; requests go "
          "to the server with the fewest rows outstanding and leave one that dies or stalls");
ABSL_FLAG(int, games_per_worker, 32, "actor: games each worker thread plays at once (1..4096)");
ABSL_FLAG(int, requests_in_flight, 2,
          "actor: inference requests each worker keeps in flight, 2..64 (capped at "
          "--games_per_worker; the games are split into that many groups, one request each)");
ABSL_FLAG(int, fast_sims, 0,
          "actor: simulations per fast search, 2..--sims (playout cap randomization: a quarter "
          "of the moves get a full search of --sims, whose visits are the policy targets, the "
          "others a fast one; 0: 32, or --sims when that is smaller)");
ABSL_FLAG(double, reanalysis_share, 0,
          "actor, run: the share of leaf evaluations, 0..0.9, spent searching recent self-play "
          "games again with the newest network (reanalysis; 0 off): their records go to replay "
          "beside the self-play games, with a fresh policy target for every position");
ABSL_FLAG(bool, local, false,
          "actor: evaluate in process, one position at a time, with --checkpoint or a fresh "
          "--blocks x --filters network (the baseline of zf bench selfplay)");
ABSL_FLAG(std::string, acked_log, "",
          "actor: append the id of every game replay acknowledged to this file, one per line, "
          "as the acknowledgement arrives (the chaos tests compare it with what replay holds)");

namespace zf::cli {
namespace {

// Set by the SIGINT/SIGTERM handler of `zf actor` (see RunActor).
volatile sig_atomic_t g_stop_signal = 0;

// A callback that appends acknowledged game ids to `path`, one per line, with one write(2) per
// acknowledgement (O_APPEND: whole lines even with several sender threads; the bytes are in the
// kernel when the callback returns, so they survive a kill -9 of this process).
absl::StatusOr<std::function<void(const std::vector<std::string>&)>> AckedLogWriter(
    const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--acked_log ", path, ": ", std::strerror(errno)));
  }
  // The descriptor lives as long as the process (the writer may call back until it closes).
  return [fd](const std::vector<std::string>& ids) {
    std::string lines;
    for (const std::string& id : ids) absl::StrAppend(&lines, id, "\n");
    const char* data = lines.data();
    size_t left = lines.size();
    while (left > 0) {
      const ssize_t n = ::write(fd, data, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        ZF_LOG(ERROR) << "--acked_log: write failed: " << std::strerror(errno);
        return;
      }
      data += n;
      left -= static_cast<size_t>(n);
    }
  };
}

absl::Status RunActor(const std::vector<std::string>& args) {
  if (!args.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("zf actor takes no positional arguments, got \"", args[0], "\""));
  }
  ZF_ASSIGN_OR_RETURN(games::GameConfig config, games::ParseGameName(absl::GetFlag(FLAGS_game)));
  const std::string inference = absl::GetFlag(FLAGS_inference);
  const bool local = absl::GetFlag(FLAGS_local);
  if (inference.empty() == !local) {
    return absl::InvalidArgumentError("zf actor needs exactly one of --inference ADDR or --local");
  }
  const std::string out = absl::GetFlag(FLAGS_out);
  const std::string replay = absl::GetFlag(FLAGS_replay);
  if (out.empty() == replay.empty()) {
    return absl::InvalidArgumentError("zf actor needs exactly one of --out DIR or --replay ADDRS");
  }
  ZF_RETURN_IF_ERROR(CheckFlagRange("workers", absl::GetFlag(FLAGS_workers), 1, 256));
  ZF_RETURN_IF_ERROR(CheckFlagRange("games_per_worker", absl::GetFlag(FLAGS_games_per_worker), 1,
                                    actor::ActorOptions::kMaxGamesPerWorker));
  ZF_RETURN_IF_ERROR(CheckFlagRange("requests_in_flight", absl::GetFlag(FLAGS_requests_in_flight),
                                    actor::ActorOptions::kMinRequestsInFlight,
                                    actor::ActorOptions::kMaxRequestsInFlight));
  ZF_RETURN_IF_ERROR(CheckFlagRange("sims", absl::GetFlag(FLAGS_sims), 2, 100000));
  ZF_RETURN_IF_ERROR(CheckFlagRange("games", absl::GetFlag(FLAGS_games), 0, 1000000000));

  actor::ActorOptions options = actor::ActorOptions::ForGame(config.name);
  options.workers = absl::GetFlag(FLAGS_workers);
  options.games_per_worker = absl::GetFlag(FLAGS_games_per_worker);
  options.requests_in_flight = absl::GetFlag(FLAGS_requests_in_flight);
  ZF_RETURN_IF_ERROR(SetSelfPlaySimulations(&options.self_play, absl::GetFlag(FLAGS_sims),
                                            absl::GetFlag(FLAGS_fast_sims), "fast_sims"));
  if (const double k = absl::GetFlag(FLAGS_forced_playout_k); k != -1) {
    ZF_RETURN_IF_ERROR(CheckRealFlagRange("forced_playout_k", k, 0, 100));
    options.self_play.mcts.forced_playout_k = static_cast<float>(k);
  }
  if (const int m = absl::GetFlag(FLAGS_gumbel_considered_actions); m != -1) {
    ZF_RETURN_IF_ERROR(CheckGumbelFlag(m, options.self_play.mcts.forced_playout_k));
    options.self_play.mcts.gumbel_considered_actions = m;
  }
  // With a served model that has no score head the answers carry no scores, and the utility
  // stays 0 (search/mcts.h).
  if (const double lambda = absl::GetFlag(FLAGS_score_utility); lambda != -1) {
    ZF_RETURN_IF_ERROR(CheckRealFlagRange("score_utility", lambda, 0, 1));
    options.self_play.mcts.score_utility = static_cast<float>(lambda);
  }
  SelfPlayExploration exploration = SelfPlayExploration::Of(options.self_play);
  ZF_RETURN_IF_ERROR(SelfPlayExplorationFromFlags(&exploration));
  exploration.ApplyTo(&options.self_play);
  options.max_games = absl::GetFlag(FLAGS_games);
  options.seed = absl::GetFlag(FLAGS_seed);
  options.reanalysis_share = absl::GetFlag(FLAGS_reanalysis_share);
  ZF_RETURN_IF_ERROR(CheckRealFlagRange("reanalysis_share", options.reanalysis_share, 0,
                                        actor::ActorOptions::kMaxReanalysisShare));
  if (local) {
    // One game, one leaf at a time: the home-grown loop the served actor is compared with.
    options.games_per_worker = 1;
    options.leaves_per_game = 1;
  }
  ZF_RETURN_IF_ERROR(options.Validate());
  ZF_ASSIGN_OR_RETURN(grpc_util::WireSettings wire, WireSettingsFromFlags());

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  if (int rc = pthread_sigmask(SIG_BLOCK, &signals, nullptr); rc != 0) {
    return absl::InternalError(absl::StrCat("pthread_sigmask: ", std::strerror(rc)));
  }
  struct sigaction action = {};
  action.sa_handler = [](int signal_number) { g_stop_signal = signal_number; };
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);

  auto registry = std::make_shared<prometheus::Registry>();
  metrics::RegisterBuildInfo(*registry, "actor");
  std::shared_ptr<actor::AsyncEvaluator> evaluator;
  if (local) {
    const LocalActorEvaluatorFactory& make_local = LocalActorEvaluatorHook();
    if (!make_local) return NoNetworkRuntime("zf actor --local");
    ZF_ASSIGN_OR_RETURN(evaluator,
                        make_local({.game = config.name,
                                    .checkpoint = absl::GetFlag(FLAGS_checkpoint),
                                    .blocks = absl::GetFlag(FLAGS_blocks),
                                    .filters = absl::GetFlag(FLAGS_filters),
                                    .global_pooling = absl::GetFlag(FLAGS_global_pooling),
                                    .device = absl::GetFlag(FLAGS_device),
                                    .precision = absl::GetFlag(FLAGS_precision),
                                    .cuda_graphs = absl::GetFlag(FLAGS_cuda_graphs)}));
  } else {
    ZF_ASSIGN_OR_RETURN(evaluator,
                        actor::ConnectInference(inference, config.name,
                                                /*seed=*/options.seed + 1, wire, registry.get()));
  }

  options.actor_id = actor::RandomActorId();
  std::unique_ptr<actor::GameSink> sink;
  if (!out.empty()) {
    ZF_ASSIGN_OR_RETURN(sink,
                        actor::FileGameSink::Create({.dir = out, .actor_id = options.actor_id}));
  } else {
    replay::ShardedReplayWriterOptions writer_options;
    for (absl::string_view shard : absl::StrSplit(replay, ',', absl::SkipEmpty())) {
      writer_options.shards.emplace_back(shard);
    }
    writer_options.seed = options.seed;
    writer_options.metrics = registry.get();
    writer_options.wire = wire;
    if (const std::string acked_log = absl::GetFlag(FLAGS_acked_log); !acked_log.empty()) {
      ZF_ASSIGN_OR_RETURN(writer_options.on_acked, AckedLogWriter(acked_log));
    }
    ZF_ASSIGN_OR_RETURN(std::unique_ptr<replay::ShardedReplayWriter> writer,
                        replay::ShardedReplayWriter::Create(std::move(writer_options)));
    sink = std::make_unique<actor::ReplayGameSink>(std::move(writer));
  }

  std::unique_ptr<metrics::MetricsServer> metrics_server;
  if (const std::string listen = absl::GetFlag(FLAGS_metrics_listen); !listen.empty()) {
    metrics::MetricsServer::Options metrics_options;
    metrics_options.listen_address = listen;
    ZF_ASSIGN_OR_RETURN(metrics_server,
                        metrics::MetricsServer::Create(metrics_options, {registry}));
  }
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<actor::Actor> actor,
                      actor::Actor::Create(options, evaluator, sink.get(), registry));
  const absl::Time start = absl::Now();
  ZF_RETURN_IF_ERROR(actor->Start());
  ZF_LOG(INFO) << "actor " << actor->actor_id() << ": playing " << config.name << " with "
               << options.workers << " workers x " << options.games_per_worker << " games"
               << (local ? " (local batch-1 network)" : absl::StrCat(" against ", inference));

  // The main thread waits for the signals; a thread started before they were blocked (LibTorch
  // starts one at load time) may get them instead, and the handler turns that into a flag.
  absl::Status status;
  bool interrupted = false;
  while (true) {
    const timespec poll = {0, 100'000'000};
    const int signal_number = sigtimedwait(&signals, nullptr, &poll);
    if (signal_number > 0 || g_stop_signal != 0) {
      ZF_LOG(INFO) << "actor: " << strsignal(signal_number > 0 ? signal_number : g_stop_signal)
                   << "; stopping";
      interrupted = true;
      break;
    }
    status = actor->Wait(absl::Now());
    if (status.code() != absl::StatusCode::kDeadlineExceeded) break;
  }
  actor->Stop();
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  if (interrupted) status = absl::OkStatus();
  absl::Status flushed = sink->Flush(absl::Now() + absl::Seconds(30));
  sink->Close();
  ZF_RETURN_IF_ERROR(status);
  if (!flushed.ok()) return flushed;

  const actor::ActorStats stats = actor->stats();
  const int64_t peak_rss = PeakResidentBytes("self");
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << "{\"actor_id\": " << JsonString(actor->actor_id())
              << ", \"game\": " << JsonString(config.name) << ", \"games\": " << stats.games
              << ", \"moves\": " << stats.moves << ", \"simulations\": " << stats.simulations
              << ", \"leaf_evaluations\": " << stats.leaf_evaluations
              << ", \"resignations\": " << stats.resignations
              << ", \"requests\": " << stats.requests << ", \"evaluation_wait_seconds\": "
              << absl::StrFormat("%.3f", stats.evaluation_wait_seconds)
              << ", \"model_version\": " << stats.model_version
              << ", \"seconds\": " << absl::StrFormat("%.3f", seconds)
              << ", \"peak_rss_bytes\": " << peak_rss << "}" << std::endl;
  } else {
    std::cout << absl::StrFormat(
                     "zf actor %s: %d games, %d moves, %d leaf evaluations in %.1f s "
                     "(%.2f games/s, %.1f moves/s); waited %.1f s for evaluations; peak RSS "
                     "%.1f MiB",
                     actor->actor_id(), stats.games, stats.moves, stats.leaf_evaluations, seconds,
                     stats.games / seconds, stats.moves / seconds, stats.evaluation_wait_seconds,
                     peak_rss / 1048576.0)
              << std::endl;
  }
  return absl::OkStatus();
}

// Top `k` actions of a policy row, most probable first.
std::vector<std::pair<int, float>> TopMoves(const float* row, int actions, int k) {
  std::vector<std::pair<int, float>> moves;
  for (int a = 0; a < actions; ++a) {
    if (row[a] > 0) moves.emplace_back(a, row[a]);
  }
  std::sort(moves.begin(), moves.end(),
            [](const auto& x, const auto& y) { return x.second > y.second; });
  if (static_cast<int>(moves.size()) > k) moves.resize(k);
  return moves;
}

// Hands every game record under `path` to `visit`: a .zfgames file, or a directory searched
// (recursively) for .zfgames files and replay logs (directories of segment-*.zlog files, as
// zf run and zf replay keep them). Records of a log that do not parse are counted in *unreadable.
absl::Status ForEachStoredGame(
    const std::string& path,
    const std::function<absl::Status(const zerofleet::v1::GameRecord&)>& visit,
    int64_t* unreadable) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (!fs::exists(path, error))
    return absl::NotFoundError(absl::StrCat(path, ": no such file or directory"));
  if (!fs::is_directory(path, error)) {
    ZF_ASSIGN_OR_RETURN(actor::GameFile file, actor::ReadGameFile(path));
    for (const zerofleet::v1::GameRecord& game : file.games) ZF_RETURN_IF_ERROR(visit(game));
    return absl::OkStatus();
  }
  std::vector<std::string> files, logs;
  for (fs::recursive_directory_iterator it(path, error), end; !error && it != end;
       it.increment(error)) {
    const fs::path& p = it->path();
    if (it->is_regular_file() && p.extension() == ".zfgames") files.push_back(p.string());
    if (it->is_regular_file() && p.extension() == ".zlog" &&
        absl::StartsWith(p.filename().string(), "segment-")) {
      const std::string dir = p.parent_path().string();
      if (std::find(logs.begin(), logs.end(), dir) == logs.end()) logs.push_back(dir);
    }
  }
  if (error) return absl::InternalError(absl::StrCat(path, ": ", error.message()));
  std::sort(files.begin(), files.end());
  std::sort(logs.begin(), logs.end());
  for (const std::string& file : files)
    ZF_RETURN_IF_ERROR(ForEachStoredGame(file, visit, unreadable));
  for (const std::string& dir : logs) {
    ZF_RETURN_IF_ERROR(
        replay::Log::Read(dir, replay::LogOptions().max_record_bytes,
                          [&](replay::SegmentId, absl::string_view payload) {
                            zerofleet::v1::GameRecord record;
                            if (!record.ParseFromArray(payload.data(),
                                                       static_cast<int>(payload.size()))) {
                              ++*unreadable;
                              return absl::OkStatus();
                            }
                            return visit(record);
                          })
            .status());
  }
  return absl::OkStatus();
}

// `zf games export --sgf DIR PATH...`.
absl::Status ExportGames(const std::vector<std::string>& paths) {
  const std::string dir = absl::GetFlag(FLAGS_sgf);
  if (dir.empty() || paths.empty()) {
    return absl::InvalidArgumentError(
        "usage: zf games export --sgf DIR PATH... (PATH: a .zfgames "
        "file or a directory of them or of replay logs)");
  }
  ZF_RETURN_IF_ERROR(MakeSgfDir(dir));
  int64_t exported = 0, not_go = 0, no_moves = 0, bad = 0, unreadable = 0;
  absl::flat_hash_set<std::string> names;
  std::string first_problem;
  for (const std::string& path : paths) {
    ZF_RETURN_IF_ERROR(ForEachStoredGame(
        path,
        [&](const zerofleet::v1::GameRecord& record) -> absl::Status {
          absl::StatusOr<sgf::GoGameRecord> game = sgf::GoGameFromRecord(record);
          if (!game.ok()) {
            const bool is_go = absl::StartsWith(record.game(), "go");
            ++(game.status().code() != absl::StatusCode::kFailedPrecondition ? bad
               : is_go                                                       ? no_moves
                                                                             : not_go);
            if (first_problem.empty()) first_problem = std::string(game.status().message());
            return absl::OkStatus();
          }
          // A name not issued before ("g", "g-1", "g-2", ...): ids may repeat (a game in
          // two logs) or map to one name ("a:1" and "a_1").
          const std::string base = sgf::FileNameOf(record.game_id());
          std::string name = base;
          for (int k = 1; names.contains(name); ++k) name = absl::StrCat(base, "-", k);
          names.insert(name);
          ZF_RETURN_IF_ERROR(
              sgf::WriteGoGameFile((std::filesystem::path(dir) / (name + ".sgf")).string(), *game));
          ++exported;
          return absl::OkStatus();
        },
        &unreadable));
  }
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << "{\"exported\": " << exported << ", \"dir\": " << JsonString(dir)
              << ", \"not_go\": " << not_go << ", \"without_moves\": " << no_moves
              << ", \"not_replayable\": " << bad << ", \"unreadable\": " << unreadable << "}\n";
  } else {
    std::cout << absl::StrFormat(
        "exported %d Go games to %s as SGF; left out: %d not Go, %d without moves (written "
        "before 2026-12-06), %d whose moves do not replay, %d unreadable log records\n",
        exported, dir, not_go, no_moves, bad, unreadable);
  }
  if (exported == 0 && !first_problem.empty()) {
    return absl::FailedPreconditionError(absl::StrCat("no game exported: ", first_problem));
  }
  return absl::OkStatus();
}

absl::Status RunGames(const std::vector<std::string>& args) {
  if (!args.empty() && args[0] == "export") {
    return ExportGames(std::vector<std::string>(args.begin() + 1, args.end()));
  }
  if (args.size() != 2 || args[0] != "dump") {
    return absl::InvalidArgumentError(
        "usage: zf games dump FILE [--json] | zf games export --sgf DIR PATH... [--json]");
  }
  ZF_ASSIGN_OR_RETURN(actor::GameFile file, actor::ReadGameFile(args[1]));
  const bool json = absl::GetFlag(FLAGS_json);
  for (const zerofleet::v1::GameRecord& game : file.games) {
    const int n = game.num_positions();
    const int actions = game.num_actions();
    std::vector<float> policy(static_cast<size_t>(n) * actions);
    if (game.policy().size() == policy.size() * 4) {
      std::memcpy(policy.data(), game.policy().data(), game.policy().size());
    }
    std::string versions;
    for (int i = 0; i < game.model_versions_size(); ++i) {
      absl::StrAppend(&versions, i > 0 ? (json ? ", " : ",") : "", game.model_versions(i));
    }
    const float r0 = game.returns_size() == 2 ? game.returns(0) : 0.0f;
    const float r1 = game.returns_size() == 2 ? game.returns(1) : 0.0f;
    if (json) {
      std::cout << "{\"game_id\": " << JsonString(game.game_id())
                << ", \"game\": " << JsonString(game.game()) << ", \"length\": " << n
                << ", \"returns\": [" << r0 << ", " << r1 << "]"
                << ", \"resigned\": " << (game.resigned() ? "true" : "false")
                << ", \"truncated\": " << (game.truncated() ? "true" : "false")
                << ", \"reanalysis\": " << (game.reanalysis() ? "true" : "false")
                << ", \"model_versions\": [" << versions << "], \"positions\": [";
      for (int i = 0; i < n; ++i) {
        std::cout << (i > 0 ? ", " : "") << "{\"to_play\": " << static_cast<int>(game.to_play()[i])
                  << ", \"full_search\": " << static_cast<int>(game.full_search()[i])
                  << ", \"top\": [";
        const auto top = TopMoves(policy.data() + static_cast<size_t>(i) * actions, actions, 3);
        for (size_t t = 0; t < top.size(); ++t) {
          std::cout << (t > 0 ? ", " : "") << "[" << top[t].first << ", "
                    << absl::StrFormat("%.4f", top[t].second) << "]";
        }
        std::cout << "]}";
      }
      std::cout << "]}\n";
    } else {
      std::cout << absl::StrFormat(
          "game %s  %s  %d moves  result %+g/%+g%s%s%s  model versions [%s]\n", game.game_id(),
          game.game(), n, r0, r1, game.resigned() ? "  resigned" : "",
          game.truncated() ? "  truncated" : "", game.reanalysis() ? "  reanalysis" : "", versions);
      for (int i = 0; i < n; ++i) {
        std::cout << absl::StrFormat("  %3d  player %d  %s  top:", i,
                                     static_cast<int>(game.to_play()[i]),
                                     game.full_search()[i] ? "full" : "fast");
        for (const auto& [a, p] :
             TopMoves(policy.data() + static_cast<size_t>(i) * actions, actions, 3)) {
          std::cout << absl::StrFormat(" %d:%.3f", a, p);
        }
        std::cout << "\n";
      }
    }
  }
  std::cout.flush();
  if (!file.torn_tail.empty()) {
    std::cerr << "zf games dump: " << args[1] << ": " << file.torn_tail << std::endl;
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<Command> ActorCommands() {
  return {
      {"actor",
       "self-play against an inference server, games into a run directory or replay shards",
       "zf actor --game G --inference ADDR (--out DIR | --replay ADDR1,ADDR2,...) [--workers N] "
       "[--games_per_worker N] [--requests_in_flight N] [--sims N] [--fast_sims N] "
       "[--forced_playout_k K] [--gumbel_considered_actions M] "
       "[--score_utility L] [--temperature_moves N] [--dirichlet_alpha A] [--c_puct C] "
       "[--fpu_reduction F] [--reanalysis_share X] [--games N (0 = until SIGINT/SIGTERM)] "
       "[--metrics_listen ADDR] [--acked_log FILE] [--seed S] [--json]",
       WithLogFileFlag(WithTlsFlags(WithSelfPlayExplorationFlags({"game",
                                                                  "inference",
                                                                  "out",
                                                                  "replay",
                                                                  "workers",
                                                                  "games_per_worker",
                                                                  "sims",
                                                                  "fast_sims",
                                                                  "forced_playout_k",
                                                                  "score_utility",
                                                                  "reanalysis_share",
                                                                  "games",
                                                                  "metrics_listen",
                                                                  "gumbel_considered_actions",
                                                                  "acked_log",
                                                                  "seed",
                                                                  "json",
                                                                  "local",
                                                                  "checkpoint",
                                                                  "blocks",
                                                                  "filters",
                                                                  "global_pooling",
                                                                  "device",
                                                                  "precision",
                                                                  "cuda_graphs",
                                                                  "requests_in_flight"}))),
       RunActor, [](const std::vector<std::string>&) { return absl::GetFlag(FLAGS_local); }},
      {"games",
       "'dump FILE': print every game record of a .zfgames file; 'export --sgf DIR PATH...': "
       "write the Go games in .zfgames files and replay logs under PATH as SGF files",
       "zf games dump FILE [--json] | zf games export --sgf DIR PATH... [--json]",
       {"json", "sgf"},
       RunGames},
  };
}

}  // namespace zf::cli
