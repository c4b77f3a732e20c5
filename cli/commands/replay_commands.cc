// `zf replay`: runs a ReplayServer until SIGINT or SIGTERM, then drains it and exits 0.
// `zf replay ls --dir DIR`: lists the game ids a shard's log holds, without opening it for
// writing (safe beside a running shard): what the chaos tests compare with the actors' acks.
#include "cli/commands/replay_commands.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "cli/common_flags.h"
#include "cli/json.h"
#include "common/logging.h"
#include "common/metrics/build_info.h"
#include "common/status_macros.h"
#include "proto/zerofleet/v1/replay.pb.h"
#include "replay/log.h"
#include "replay/service/replay_server.h"

ABSL_FLAG(int64_t, capacity, 1'000'000, "replay: window size in positions");
ABSL_FLAG(int64_t, min_size_to_sample, 1000, "replay: positions stored before sampling starts");
ABSL_FLAG(double, samples_per_insert, 4.0,
          "replay and run: the samples per inserted position the shards' rate limiter keeps to "
          "(zf run: 0.1..1000; a --resume keeps the run's own)");
ABSL_FLAG(double, error_buffer, 100'000,
          "replay: the rate limiter's band half-width, in sampled positions");

namespace zf::cli {
namespace {

int g_signal_pipe[2] = {-1, -1};

void OnSignal(int signal_number) {
  int saved_errno = errno;
  char byte = static_cast<char>(signal_number);
  (void)!write(g_signal_pipe[1], &byte, 1);
  errno = saved_errno;
}

// Every record of the log in --dir: one game id per line (text), or one JSON object with the ids,
// the record count and the ids stored more than once. Unreadable records are counted, not fatal.
absl::Status ListReplay() {
  const std::string dir = absl::GetFlag(FLAGS_dir);
  if (dir.empty()) return absl::InvalidArgumentError("zf replay ls needs --dir DIR");
  if (!std::filesystem::is_directory(dir)) {
    return absl::NotFoundError(absl::StrCat("ls: ", dir, " is not a directory"));
  }
  std::vector<std::string> ids;
  absl::flat_hash_map<std::string, int> copies;
  int64_t unreadable = 0;
  ZF_ASSIGN_OR_RETURN(
      replay::RecoveryReport report,
      replay::Log::Read(dir, /*max_record_bytes=*/replay::LogOptions().max_record_bytes,
                        [&](replay::SegmentId, absl::string_view payload) {
                          zerofleet::v1::GameRecord record;
                          if (!record.ParseFromArray(payload.data(),
                                                     static_cast<int>(payload.size()))) {
                            ++unreadable;
                            return absl::OkStatus();
                          }
                          if (copies[record.game_id()]++ == 0) ids.push_back(record.game_id());
                          return absl::OkStatus();
                        }));
  std::vector<std::string> duplicated;
  for (const std::string& id : ids) {
    if (copies[id] > 1) duplicated.push_back(id);
  }
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << "{\"dir\": " << JsonString(dir) << ", \"segments\": " << report.segments
              << ", \"records\": " << report.records << ", \"games\": " << ids.size()
              << ", \"unreadable\": " << unreadable
              << ", \"torn_bytes\": " << report.discarded_bytes << ", \"duplicated_ids\": [";
    for (size_t i = 0; i < duplicated.size(); ++i) {
      std::cout << (i > 0 ? ", " : "") << JsonString(duplicated[i]);
    }
    std::cout << "], \"game_ids\": [";
    for (size_t i = 0; i < ids.size(); ++i) {
      std::cout << (i > 0 ? ", " : "") << JsonString(ids[i]);
    }
    std::cout << "]}" << std::endl;
  } else {
    for (const std::string& id : ids) std::cout << id << "\n";
    std::cout.flush();
    std::cerr << "zf replay ls: " << ids.size() << " games in " << report.records << " records ("
              << duplicated.size() << " stored more than once, " << unreadable << " unreadable) in "
              << report.segments << " segments" << std::endl;
  }
  for (const std::string& warning : report.warnings) {
    std::cerr << "zf replay ls: " << warning << std::endl;
  }
  return absl::OkStatus();
}

absl::Status RunReplay(const std::vector<std::string>& args) {
  if (args.size() == 1 && args[0] == "ls") return ListReplay();
  if (!args.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("unexpected argument \"", args[0], "\""));
  }
  replay::ReplayServerOptions options;
  options.listen = absl::GetFlag(FLAGS_listen);
  options.dir = absl::GetFlag(FLAGS_dir);
  if (options.dir.empty()) return absl::InvalidArgumentError("--dir is required");
  options.capacity_positions = absl::GetFlag(FLAGS_capacity);
  options.min_size_to_sample = absl::GetFlag(FLAGS_min_size_to_sample);
  options.samples_per_insert = absl::GetFlag(FLAGS_samples_per_insert);
  options.error_buffer = absl::GetFlag(FLAGS_error_buffer);
  options.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  ZF_ASSIGN_OR_RETURN(options.wire, WireSettingsFromFlags());
  if (absl::Status valid = options.Validate(); !valid.ok()) {
    return absl::InvalidArgumentError(valid.message());
  }

  // SIGINT and SIGTERM write one byte to a pipe (write is async-signal-safe); this thread waits
  // on the pipe. (Blocking the signals and using sigwait instead would leave every thread started
  // here with them blocked, and the metrics server's threads would inherit that mask.)
  if (pipe2(g_signal_pipe, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  struct sigaction action = {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  options.on_listening = [](int port) {
    ZF_LOG(INFO) << "replay: listening on port " << port << " (NOT_SERVING until recovered)";
  };
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<replay::ReplayServer> server,
                      replay::ReplayServer::Create(options));
  metrics::RegisterBuildInfo(*server->registry(), "replay");
  if (!server->metrics_address().empty()) {
    ZF_LOG(INFO) << "replay: metrics on " << server->metrics_address();
  }
  // One line on stdout for scripts and tests: the bound port (useful with port 0).
  std::cout << "zf replay: serving " << options.dir << " on port " << server->port();
  if (!server->metrics_address().empty()) std::cout << ", metrics on " << server->metrics_address();
  std::cout << std::endl;

  char signal_number = 0;
  while (read(g_signal_pipe[0], &signal_number, 1) < 0 && errno == EINTR) {
  }
  // A second Ctrl-C during the drain ends the process the usual way.
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  ZF_LOG(INFO) << "replay: " << strsignal(signal_number) << "; draining";
  server->Shutdown();
  ZF_LOG(INFO) << "replay: stopped";
  return absl::OkStatus();
}

}  // namespace

std::vector<Command> ReplayCommands() {
  return {
      {"replay", "serve one durable, rate-limited replay shard over gRPC until SIGINT/SIGTERM",
       "zf replay --listen ADDR --dir DIR --capacity N [--min_size_to_sample N] "
       "[--samples_per_insert X] [--error_buffer X] [--metrics_listen ADDR]\n"
       "       zf replay ls --dir DIR [--json]   (the game ids the shard's log holds)",
       WithLogFileFlag(
           WithTlsFlags({"listen", "dir", "capacity", "min_size_to_sample", "samples_per_insert",
                         "error_buffer", "metrics_listen", "json"})),
       RunReplay},
  };
}

}  // namespace zf::cli
