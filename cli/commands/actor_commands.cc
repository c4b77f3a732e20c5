// `zf actor`, `zf games dump` and `zf bench selfplay`.
//
// zf actor runs actor::Actor until --games games are in the sink (0: until SIGINT/SIGTERM) and
// prints a summary (one JSON object with --json). The hidden --local mode evaluates in process
// with a batch-1 network instead of --inference: the baseline of `zf bench selfplay`.
#include "cli/commands/actor_commands.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "actor/actor.h"
#include "actor/game_sink.h"
#include "cli/common_flags.h"
#include "cli/json.h"
#include "common/host_info.h"
#include "common/logging.h"
#include "common/metrics/build_info.h"
#include "common/metrics/metrics_server.h"
#include "common/status_macros.h"
#include "games/registry.h"
#include "model/game_network.h"
#include "model/inference_session.h"
#include "replay/client/sharded_writer.h"

extern char** environ;

ABSL_DECLARE_FLAG(int, workers);
ABSL_DECLARE_FLAG(int, max_batch);
ABSL_DECLARE_FLAG(int, games);
ABSL_DECLARE_FLAG(int, sims);
ABSL_DECLARE_FLAG(std::string, out);
ABSL_DECLARE_FLAG(std::string, checkpoint);
ABSL_DECLARE_FLAG(double, seconds);

ABSL_FLAG(std::string, inference, "", "actor: the inference server, HOST:PORT");
ABSL_FLAG(int, games_per_worker, 32, "actor: games each worker thread plays at once (1..4096)");
ABSL_FLAG(bool, local, false,
          "actor: evaluate in process, one position at a time, with --checkpoint or a fresh "
          "--blocks x --filters network (the baseline of zf bench selfplay)");
ABSL_FLAG(int, actors, 2, "bench selfplay: actor processes (1..64)");
ABSL_FLAG(std::string, acked_log, "",
          "actor: append the id of every game replay acknowledged to this file, one per line, "
          "as the acknowledgement arrives (the chaos tests compare it with what replay holds)");

namespace zf::cli {
namespace {

// Set by the SIGINT/SIGTERM handler of `zf actor` (see RunActor).
volatile sig_atomic_t g_stop_signal = 0;

absl::Status CheckRange(const char* flag, int64_t value, int64_t lo, int64_t hi) {
  if (value < lo || value > hi) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, " is ", value, ", expected ", lo, "..", hi));
  }
  return absl::OkStatus();
}

// Peak resident memory of process `pid` ("self" for this one), in bytes, from VmHWM; 0 if
// unknown.
int64_t PeakRssBytes(const std::string& pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) {
      int64_t kb = 0;
      std::istringstream fields(line.substr(6));
      fields >> kb;
      return kb * 1024;
    }
  }
  return 0;
}

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

// The batch-1 baseline: each position of a request is its own forward pass, answered inside
// Submit (as a home-grown self-play loop with its own model copy would do).
class LocalBatch1Evaluator final : public actor::AsyncEvaluator {
 public:
  explicit LocalBatch1Evaluator(std::shared_ptr<const model::InferenceSession> session)
      : session_(std::move(session)) {}
  absl::Status Submit(std::span<const uint8_t> planes, int rows, Callback done) override {
    const int64_t plane_size = session_->shape().PlaneSize();
    const int actions = session_->shape().num_actions;
    if (rows < 1 || static_cast<int64_t>(planes.size()) != rows * plane_size) {
      return absl::InvalidArgumentError("bad batch");
    }
    Result result;
    result.rows = rows;
    result.model_version = session_->version();
    result.policy_logits.resize(static_cast<size_t>(rows) * actions);
    result.wdl.resize(static_cast<size_t>(rows) * 3);
    for (int i = 0; i < rows; ++i) {
      absl::Status status =
          session_->Run(planes.subspan(i * plane_size, plane_size), 1,
                        std::span<float>(result.policy_logits).subspan(i * actions, actions),
                        std::span<float>(result.wdl).subspan(i * 3, 3));
      if (!status.ok()) {
        done(status);
        return absl::OkStatus();
      }
    }
    done(std::move(result));
    return absl::OkStatus();
  }

 private:
  std::shared_ptr<const model::InferenceSession> session_;
};

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
  ZF_RETURN_IF_ERROR(CheckRange("workers", absl::GetFlag(FLAGS_workers), 1, 256));
  ZF_RETURN_IF_ERROR(
      CheckRange("games_per_worker", absl::GetFlag(FLAGS_games_per_worker), 1, 4096));
  ZF_RETURN_IF_ERROR(CheckRange("sims", absl::GetFlag(FLAGS_sims), 2, 100000));
  ZF_RETURN_IF_ERROR(CheckRange("games", absl::GetFlag(FLAGS_games), 0, 1000000000));

  actor::ActorOptions options = actor::ActorOptions::ForGame(config.name);
  options.workers = absl::GetFlag(FLAGS_workers);
  options.games_per_worker = absl::GetFlag(FLAGS_games_per_worker);
  options.self_play.mcts.num_simulations = absl::GetFlag(FLAGS_sims);
  options.self_play.fast_simulations = std::max(
      2, std::min(options.self_play.fast_simulations, options.self_play.mcts.num_simulations));
  options.max_games = absl::GetFlag(FLAGS_games);
  options.seed = absl::GetFlag(FLAGS_seed);
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

  std::shared_ptr<actor::AsyncEvaluator> evaluator;
  if (local) {
    model::InferenceSession::Options session_options;
    session_options.checkpoint_path = absl::GetFlag(FLAGS_checkpoint);
    session_options.game = config.name;
    if (session_options.checkpoint_path.empty()) {
      session_options.shape = games::VisitGame(config, [&](const auto& game) {
        return model::NetworkShapeForGame(game, absl::GetFlag(FLAGS_blocks),
                                          absl::GetFlag(FLAGS_filters));
      });
      ZF_RETURN_IF_ERROR(session_options.shape->Validate());
      session_options.seed = 1;
    }
    session_options.intra_op_threads = 1;
    // Batch 1, one caller: on CUDA one slot with one (batch-1) graph.
    session_options.device = absl::GetFlag(FLAGS_device);
    session_options.precision = absl::GetFlag(FLAGS_precision);
    session_options.cuda_graphs = absl::GetFlag(FLAGS_cuda_graphs);
    session_options.max_batch = 1;
    session_options.concurrency = 1;
    ZF_ASSIGN_OR_RETURN(std::unique_ptr<model::InferenceSession> session,
                        model::InferenceSession::Create(session_options));
    evaluator = std::make_shared<LocalBatch1Evaluator>(std::move(session));
  } else {
    ZF_ASSIGN_OR_RETURN(evaluator, actor::ConnectInference(inference, config.name,
                                                           /*seed=*/options.seed + 1, wire));
  }

  options.actor_id = actor::RandomActorId();
  auto registry = std::make_shared<metrics::Registry>();
  metrics::RegisterBuildInfo(*registry, "actor");
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
  const int64_t peak_rss = PeakRssBytes("self");
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

absl::Status RunGames(const std::vector<std::string>& args) {
  if (args.size() != 2 || args[0] != "dump") {
    return absl::InvalidArgumentError("usage: zf games dump FILE [--json]");
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
          "game %s  %s  %d moves  result %+g/%+g%s%s  model versions [%s]\n", game.game_id(),
          game.game(), n, r0, r1, game.resigned() ? "  resigned" : "",
          game.truncated() ? "  truncated" : "", versions);
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

// ---- zf bench selfplay ----

// A child `zf` process with stdout and stderr in files.
struct Child {
  pid_t pid = 0;
  std::string out_path;
  std::string err_path;
};

absl::StatusOr<Child> SpawnZf(const std::vector<std::string>& args, const std::string& dir,
                              const std::string& name) {
  Child child;
  child.out_path = absl::StrCat(dir, "/", name, ".stdout");
  child.err_path = absl::StrCat(dir, "/", name, ".stderr");
  std::vector<std::string> argv = {"/proc/self/exe"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (std::string& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, child.out_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, child.err_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  // The children must not inherit a blocked SIGTERM.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  const int rc = posix_spawn(&child.pid, "/proc/self/exe", &actions, &attr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return absl::InternalError(absl::StrCat("posix_spawn: ", std::strerror(rc)));
  return child;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Waits for `child` to exit; returns its exit code (128 + signal when killed).
int WaitChild(const Child& child) {
  int status = 0;
  while (waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

double JsonNumber(const std::string& json, const std::string& key) {
  const std::string needle = absl::StrCat("\"", key, "\": ");
  const size_t at = json.find(needle);
  if (at == std::string::npos) return 0;
  size_t end = at + needle.size();
  while (end < json.size() && json[end] != ',' && json[end] != '}') ++end;
  double value = 0;
  (void)absl::SimpleAtod(json.substr(at + needle.size(), end - at - needle.size()), &value);
  return value;
}

struct SideResult {
  double games_per_sec = 0, moves_per_sec = 0, leaf_evals_per_sec = 0;
  int64_t games = 0;
  std::vector<int64_t> actor_peak_rss;
  int64_t server_peak_rss = 0;
};

// Runs `actors` actor processes with `actor_args` (plus per-actor --out and --seed) for
// `seconds`, then SIGTERMs them and sums their reports.
absl::StatusOr<SideResult> RunActors(int actors, const std::vector<std::string>& actor_args,
                                     double seconds, const std::string& dir,
                                     const std::string& name) {
  std::vector<Child> children;
  for (int i = 0; i < actors; ++i) {
    std::vector<std::string> args = actor_args;
    args.push_back(absl::StrCat("--out=", dir, "/", name, "-games-", i));
    args.push_back(absl::StrCat("--seed=", i + 1));
    ZF_ASSIGN_OR_RETURN(Child child, SpawnZf(args, dir, absl::StrCat(name, "-", i)));
    children.push_back(child);
  }
  absl::SleepFor(absl::Seconds(seconds));
  SideResult result;
  for (const Child& c : children)
    result.actor_peak_rss.push_back(PeakRssBytes(std::to_string(c.pid)));
  for (const Child& c : children) kill(c.pid, SIGTERM);
  for (size_t i = 0; i < children.size(); ++i) {
    const int code = WaitChild(children[i]);
    const std::string out = ReadText(children[i].out_path);
    if (code != 0 || out.find("\"games\"") == std::string::npos) {
      return absl::InternalError(absl::StrCat("actor ", name, "-", i, " exited with ", code, ": ",
                                              ReadText(children[i].err_path)));
    }
    const double s = std::max(1e-9, JsonNumber(out, "seconds"));
    result.games += static_cast<int64_t>(JsonNumber(out, "games"));
    result.games_per_sec += JsonNumber(out, "games") / s;
    result.moves_per_sec += JsonNumber(out, "moves") / s;
    result.leaf_evals_per_sec += JsonNumber(out, "leaf_evaluations") / s;
  }
  return result;
}

std::string RssList(const std::vector<int64_t>& rss, bool json) {
  std::string out;
  for (size_t i = 0; i < rss.size(); ++i) {
    if (json) {
      absl::StrAppend(&out, i > 0 ? ", " : "", rss[i]);
    } else {
      absl::StrAppend(&out, i > 0 ? " " : "", absl::StrFormat("%.0f", rss[i] / 1048576.0));
    }
  }
  return out;
}

}  // namespace

absl::Status RunBenchSelfplay(const std::vector<std::string>& args) {
  if (!args.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("unexpected argument \"", args[0], "\""));
  }
  ZF_ASSIGN_OR_RETURN(games::GameConfig config, games::ParseGameName(absl::GetFlag(FLAGS_game)));
  const int actors = absl::GetFlag(FLAGS_actors);
  ZF_RETURN_IF_ERROR(CheckRange("actors", actors, 1, 64));
  const int sims = absl::GetFlag(FLAGS_sims);
  ZF_RETURN_IF_ERROR(CheckRange("sims", sims, 2, 100000));
  const double seconds = absl::GetFlag(FLAGS_seconds);
  if (!(seconds >= 1 && seconds <= 3600)) {
    return absl::InvalidArgumentError(absl::StrCat("--seconds must be in 1..3600, got ", seconds));
  }
  const int blocks = absl::GetFlag(FLAGS_blocks);
  const int filters = absl::GetFlag(FLAGS_filters);
  const model::NetworkShape shape = games::VisitGame(
      config, [&](const auto& game) { return model::NetworkShapeForGame(game, blocks, filters); });
  ZF_RETURN_IF_ERROR(shape.Validate());
  const int games_per_worker = absl::GetFlag(FLAGS_games_per_worker);

  const std::string dir = absl::StrCat(std::filesystem::temp_directory_path().string(),
                                       "/zf-bench-selfplay-", getpid());
  std::filesystem::create_directories(dir);
  const std::string net_flags[] = {absl::StrCat("--blocks=", blocks),
                                   absl::StrCat("--filters=", filters)};
  // Where the networks run: the server's and every baseline process's (same device, dtype and
  // graphs on both sides).
  const std::string device = absl::GetFlag(FLAGS_device);
  const std::vector<std::string> device_flags = {
      absl::StrCat("--device=", device),
      absl::StrCat("--precision=", absl::GetFlag(FLAGS_precision)),
      absl::StrCat("--cuda_graphs=", absl::GetFlag(FLAGS_cuda_graphs) ? "true" : "false")};

  // 1. Served: one inference server process, `actors` actor processes streaming leaves to it.
  std::vector<std::string> server_args = {
      "inference",
      "--listen=127.0.0.1:0",
      absl::StrCat("--game=", config.name),
      net_flags[0],
      net_flags[1],
      "--seed=1",
      absl::StrCat("--max_batch=", absl::GetFlag(FLAGS_max_batch))};
  server_args.insert(server_args.end(), device_flags.begin(), device_flags.end());
  ZF_ASSIGN_OR_RETURN(Child server, SpawnZf(server_args, dir, "server"));
  int port = 0;
  const absl::Time give_up = absl::Now() + absl::Seconds(300);
  while (port == 0 && absl::Now() < give_up) {
    const std::string out = ReadText(server.out_path);
    const size_t at = out.find(" on port ");
    if (at != std::string::npos) {
      size_t end = at + 9;
      while (end < out.size() && std::isdigit(static_cast<unsigned char>(out[end]))) ++end;
      (void)absl::SimpleAtoi(out.substr(at + 9, end - at - 9), &port);
    } else if (waitpid(server.pid, nullptr, WNOHANG) == server.pid) {
      return absl::InternalError(absl::StrCat("zf inference exited: ", ReadText(server.err_path)));
    } else {
      absl::SleepFor(absl::Milliseconds(50));
    }
  }
  if (port == 0) {
    kill(server.pid, SIGKILL);
    WaitChild(server);
    return absl::DeadlineExceededError("zf inference did not start within 300 s");
  }
  absl::StatusOr<SideResult> served = RunActors(
      actors,
      {"actor", absl::StrCat("--game=", config.name), absl::StrCat("--inference=127.0.0.1:", port),
       "--workers=1", absl::StrCat("--games_per_worker=", games_per_worker),
       absl::StrCat("--sims=", sims), "--games=0", "--json"},
      seconds, dir, "served");
  const int64_t server_rss = PeakRssBytes(std::to_string(server.pid));
  kill(server.pid, SIGTERM);
  WaitChild(server);
  if (!served.ok()) return served.status();
  served->server_peak_rss = server_rss;
  // The server's own account at exit (its "inference_stopped" line): mean batch, duty cycle.
  const std::string server_out = ReadText(server.out_path);
  const size_t stopped = server_out.find("\"inference_stopped\"");
  const std::string server_stats =
      stopped == std::string::npos ? "" : server_out.substr(server_out.rfind('{', stopped));
  const double mean_batch = JsonNumber(server_stats, "mean_batch");
  const double duty_cycle = JsonNumber(server_stats, "duty_cycle");

  // 2. Baseline: the same number of processes, each with its own network, batch 1.
  std::vector<std::string> local_args = {
      "actor",       absl::StrCat("--game=", config.name), "--local",   net_flags[0], net_flags[1],
      "--workers=1", absl::StrCat("--sims=", sims),        "--games=0", "--json"};
  local_args.insert(local_args.end(), device_flags.begin(), device_flags.end());
  ZF_ASSIGN_OR_RETURN(SideResult local, RunActors(actors, local_args, seconds, dir, "local"));
  std::filesystem::remove_all(dir);

  auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
  const std::string cpu = CpuModelName();
  const unsigned cores = std::thread::hardware_concurrency();
  const std::string gpu = device == "cpu" ? "" : model::CudaDeviceName(0);
  const std::string device_text = gpu.empty() ? "cpu" : gpu;
  if (absl::GetFlag(FLAGS_json)) {
    auto side = [&](const SideResult& r, bool with_server) {
      std::string s = absl::StrFormat(
          "{\"games\": %d, \"games_per_sec\": %.3f, \"moves_per_sec\": %.1f, "
          "\"leaf_evals_per_sec\": %.1f, \"actor_peak_rss_bytes\": [%s]",
          r.games, r.games_per_sec, r.moves_per_sec, r.leaf_evals_per_sec,
          RssList(r.actor_peak_rss, true));
      if (with_server) {
        absl::StrAppend(&s, ", \"server_peak_rss_bytes\": ", r.server_peak_rss,
                        absl::StrFormat(", \"mean_batch\": %.2f, \"duty_cycle\": %.4f", mean_batch,
                                        duty_cycle));
      }
      return s + "}";
    };
    std::cout << "{\"benchmark\": \"selfplay\", \"game\": " << JsonString(config.name)
              << ", \"network\": " << JsonString(shape.DebugString()) << ", \"blocks\": " << blocks
              << ", \"filters\": " << filters << ", \"actors\": " << actors
              << ", \"sims\": " << sims << ", \"games_per_worker\": " << games_per_worker
              << ", \"seconds\": " << seconds << ", \"device\": " << JsonString(device_text)
              << ", \"cpu\": " << JsonString(cpu) << ", \"cores\": " << cores
              << ", \"served\": " << side(*served, true) << ", \"baseline\": " << side(local, false)
              << absl::StrFormat(
                     ", \"ratio\": {\"games\": %.2f, \"moves\": %.2f, \"leaf_evals\": %.2f}}",
                     ratio(served->games_per_sec, local.games_per_sec),
                     ratio(served->moves_per_sec, local.moves_per_sec),
                     ratio(served->leaf_evals_per_sec, local.leaf_evals_per_sec))
              << std::endl;
  } else {
    std::cout << absl::StrFormat(
        "Self-play, %s, network %s, %d actor processes, %d sims (full search), %.0f s each, "
        "CPU: %s (%u cores), networks on %s; served: mean batch %.1f, duty cycle %.0f%%\n"
        "%-34s %10s %10s %14s  %s\n"
        "%-34s %10.3f %10.1f %14.1f  actors %s; server %.0f\n"
        "%-34s %10.3f %10.1f %14.1f  actors %s\n"
        "%-34s %10.2f %10.2f %14.2f\n",
        config.name, shape.DebugString(), actors, sims, seconds, cpu, cores, device_text,
        mean_batch, 100 * duty_cycle, "", "games/s", "moves/s", "leaf evals/s", "peak RSS (MiB)",
        absl::StrCat("served (1 server, ", games_per_worker, " games/actor)"),
        served->games_per_sec, served->moves_per_sec, served->leaf_evals_per_sec,
        RssList(served->actor_peak_rss, false), served->server_peak_rss / 1048576.0,
        "baseline (own network, batch 1)", local.games_per_sec, local.moves_per_sec,
        local.leaf_evals_per_sec, RssList(local.actor_peak_rss, false), "ratio served/baseline",
        ratio(served->games_per_sec, local.games_per_sec),
        ratio(served->moves_per_sec, local.moves_per_sec),
        ratio(served->leaf_evals_per_sec, local.leaf_evals_per_sec));
  }
  return absl::OkStatus();
}

namespace {}  // namespace

std::vector<Command> ActorCommands() {
  return {
      {"actor",
       "self-play against an inference server, games into a run directory or replay shards",
       "zf actor --game G --inference ADDR (--out DIR | --replay ADDR1,ADDR2,...) [--workers N] "
       "[--games_per_worker N] [--sims N] [--games N (0 = until SIGINT/SIGTERM)] "
       "[--metrics_listen ADDR] [--acked_log FILE] [--seed S] [--json]",
       WithLogFileFlag(
           WithTlsFlags({"game", "inference", "out", "replay", "workers", "games_per_worker",
                         "sims", "games", "metrics_listen", "acked_log", "seed", "json", "local",
                         "checkpoint", "blocks", "filters", "device", "precision", "cuda_graphs"})),
       RunActor},
      {"games",
       "'dump FILE': print every game record of a .zfgames file",
       "zf games dump FILE [--json]",
       {"json"},
       RunGames},
  };
}

}  // namespace zf::cli
