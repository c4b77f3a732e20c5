// `zf bench selfplay`: P actor processes served by one inference server against P batch-1
// local actors (`zf actor --local`, each with its own network). Runs in zf-torch; the served
// actors are the `zf` binary without LibTorch next to it.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
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
#include "cli/command.h"
#include "cli/commands/bench_commands.h"
#include "cli/common_flags.h"
#include "common/host_info.h"
#include "common/json.h"
#include "common/status_macros.h"
#include "games/registry.h"
#include "model/game_network.h"
#include "model/inference_session.h"
#include "nlohmann/json.hpp"

extern char** environ;

ABSL_DECLARE_FLAG(int, max_batch);
ABSL_DECLARE_FLAG(double, seconds);
ABSL_DECLARE_FLAG(int, games_per_worker);

ABSL_FLAG(int, actors, 2, "bench selfplay: actor processes (1..64)");

namespace zf::cli {
namespace {

// A child `zf` process with stdout and stderr in files.
struct Child {
  pid_t pid = 0;
  std::string out_path;
  std::string err_path;
};

// Runs `binary` (a zf or zf-torch path) with `args`.
absl::StatusOr<Child> SpawnZf(const std::string& binary, const std::vector<std::string>& args,
                              const std::string& dir, const std::string& name) {
  Child child;
  child.out_path = absl::StrCat(dir, "/", name, ".stdout");
  child.err_path = absl::StrCat(dir, "/", name, ".stderr");
  std::vector<std::string> argv = {binary};
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
  const int rc = posix_spawn(&child.pid, binary.c_str(), &actions, &attr, cargv.data(), environ);
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

// The last line of `out` that is a JSON object `wanted` accepts (a child's --json report), read
// with nlohmann-json; nullopt if there is none.
std::optional<nlohmann::json> LastJsonLine(
    const std::string& out, const std::function<bool(const nlohmann::json&)>& wanted) {
  std::optional<nlohmann::json> found;
  for (absl::string_view line : absl::StrSplit(out, '\n')) {
    nlohmann::json json = nlohmann::json::parse(line.begin(), line.end(), /*cb=*/nullptr,
                                                /*allow_exceptions=*/false);
    if (!json.is_discarded() && json.is_object() && wanted(json)) found = std::move(json);
  }
  return found;
}

// The number `key` of a child's report.
// Returns: the number; Internal naming the child and the key when it is missing or not a number.
absl::StatusOr<double> ReportNumber(const nlohmann::json& report, const char* key,
                                    const std::string& who) {
  const auto it = report.find(key);
  if (it == report.end() || !it->is_number()) {
    return absl::InternalError(
        absl::StrCat(who, "'s report has no number \"", key, "\": ", report.dump()));
  }
  return it->get<double>();
}

struct SideResult {
  double games_per_sec = 0, moves_per_sec = 0, leaf_evals_per_sec = 0;
  int64_t games = 0;
  std::vector<int64_t> actor_peak_rss;
  int64_t server_peak_rss = 0;
};

// Runs `actors` actor processes of `binary` with `actor_args` (plus per-actor --out and --seed) for
// `seconds`, then SIGTERMs them and sums their reports.
absl::StatusOr<SideResult> RunActors(const std::string& binary, int actors,
                                     const std::vector<std::string>& actor_args, double seconds,
                                     const std::string& dir, const std::string& name) {
  std::vector<Child> children;
  for (int i = 0; i < actors; ++i) {
    std::vector<std::string> args = actor_args;
    args.push_back(absl::StrCat("--out=", dir, "/", name, "-games-", i));
    args.push_back(absl::StrCat("--seed=", i + 1));
    ZF_ASSIGN_OR_RETURN(Child child, SpawnZf(binary, args, dir, absl::StrCat(name, "-", i)));
    children.push_back(child);
  }
  absl::SleepFor(absl::Seconds(seconds));
  SideResult result;
  for (const Child& c : children)
    result.actor_peak_rss.push_back(PeakResidentBytes(std::to_string(c.pid)));
  for (const Child& c : children) kill(c.pid, SIGTERM);
  for (size_t i = 0; i < children.size(); ++i) {
    const int code = WaitChild(children[i]);
    const std::string who = absl::StrCat("actor ", name, "-", i);
    const std::optional<nlohmann::json> report =
        LastJsonLine(ReadText(children[i].out_path),
                     [](const nlohmann::json& j) { return j.contains("games"); });
    if (code != 0 || !report) {
      return absl::InternalError(
          absl::StrCat(who, " exited with ", code, ": ", ReadText(children[i].err_path)));
    }
    ZF_ASSIGN_OR_RETURN(const double seconds, ReportNumber(*report, "seconds", who));
    ZF_ASSIGN_OR_RETURN(const double games, ReportNumber(*report, "games", who));
    ZF_ASSIGN_OR_RETURN(const double moves, ReportNumber(*report, "moves", who));
    ZF_ASSIGN_OR_RETURN(const double leaf_evaluations,
                        ReportNumber(*report, "leaf_evaluations", who));
    const double s = std::max(1e-9, seconds);
    result.games += static_cast<int64_t>(games);
    result.games_per_sec += games / s;
    result.moves_per_sec += moves / s;
    result.leaf_evals_per_sec += leaf_evaluations / s;
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
  ZF_RETURN_IF_ERROR(CheckFlagRange("actors", actors, 1, 64));
  const int sims = absl::GetFlag(FLAGS_sims);
  ZF_RETURN_IF_ERROR(CheckFlagRange("sims", sims, 2, 100000));
  const double seconds = absl::GetFlag(FLAGS_seconds);
  if (!(seconds >= 1 && seconds <= 3600)) {
    return absl::InvalidArgumentError(absl::StrCat("--seconds must be in 1..3600, got ", seconds));
  }
  const int blocks = absl::GetFlag(FLAGS_blocks);
  const int filters = absl::GetFlag(FLAGS_filters);
  const bool global_pooling = absl::GetFlag(FLAGS_global_pooling);
  ZF_ASSIGN_OR_RETURN(const model::NetworkShape shape,
                      model::NetworkShapeForGame(config, blocks, filters, global_pooling));
  ZF_RETURN_IF_ERROR(shape.Validate());
  const int games_per_worker = absl::GetFlag(FLAGS_games_per_worker);

  const std::string dir = absl::StrCat(std::filesystem::temp_directory_path().string(),
                                       "/zf-bench-selfplay-", getpid());
  std::filesystem::create_directories(dir);
  const std::string net_flags[] = {
      absl::StrCat("--blocks=", blocks), absl::StrCat("--filters=", filters),
      absl::StrCat("--global_pooling=", global_pooling ? "true" : "false")};
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
      net_flags[2],
      "--seed=1",
      absl::StrCat("--max_batch=", absl::GetFlag(FLAGS_max_batch))};
  server_args.insert(server_args.end(), device_flags.begin(), device_flags.end());
  ZF_ASSIGN_OR_RETURN(Child server, SpawnZf("/proc/self/exe", server_args, dir, "server"));
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
  // The served actors run the binary without LibTorch, as a fleet's do (this one where there is
  // none next to it).
  std::string lean = BinaryNextToThisOne("zf");
  if (!std::filesystem::exists(lean)) lean = "/proc/self/exe";
  absl::StatusOr<SideResult> served = RunActors(
      lean, actors,
      {"actor", absl::StrCat("--game=", config.name), absl::StrCat("--inference=127.0.0.1:", port),
       "--workers=1", absl::StrCat("--games_per_worker=", games_per_worker),
       absl::StrCat("--sims=", sims), "--games=0", "--json"},
      seconds, dir, "served");
  const int64_t server_rss = PeakResidentBytes(std::to_string(server.pid));
  kill(server.pid, SIGTERM);
  WaitChild(server);
  if (!served.ok()) return served.status();
  served->server_peak_rss = server_rss;
  // The server's own account at exit (its "inference_stopped" line): mean batch, duty cycle.
  const std::optional<nlohmann::json> server_stats = LastJsonLine(
      ReadText(server.out_path),
      [](const nlohmann::json& j) { return j.value("event", "") == "inference_stopped"; });
  if (!server_stats) {
    return absl::InternalError(
        absl::StrCat("the inference server printed no inference_stopped "
                     "line: ",
                     ReadText(server.err_path)));
  }
  ZF_ASSIGN_OR_RETURN(const double mean_batch,
                      ReportNumber(*server_stats, "mean_batch", "the inference server"));
  ZF_ASSIGN_OR_RETURN(const double duty_cycle,
                      ReportNumber(*server_stats, "duty_cycle", "the inference server"));

  // 2. Baseline: the same number of processes, each with its own network, batch 1.
  std::vector<std::string> local_args = {"actor",       absl::StrCat("--game=", config.name),
                                         "--local",     net_flags[0],
                                         net_flags[1],  net_flags[2],
                                         "--workers=1", absl::StrCat("--sims=", sims),
                                         "--games=0",   "--json"};
  local_args.insert(local_args.end(), device_flags.begin(), device_flags.end());
  ZF_ASSIGN_OR_RETURN(SideResult local,
                      RunActors("/proc/self/exe", actors, local_args, seconds, dir, "local"));

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
  // The figures are out before the clean-up: a crash there (docs/gpu.md, std::filesystem in
  // PyTorch's pip wheel) must not lose a finished measurement.
  std::cout.flush();
  std::filesystem::remove_all(dir);
  return absl::OkStatus();
}

}  // namespace zf::cli
