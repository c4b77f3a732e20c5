// `zf replay`: runs a ReplayServer until SIGINT or SIGTERM, then drains it and exits 0.
// `zf replay ls --dir DIR`: lists the game ids a shard's log holds, without opening it for
// writing (safe beside a running shard): what the chaos tests compare with the actors' acks.
// `zf replay verify --dir DIR`: the same read, judged: damaged regions and the games they held.
#include "cli/commands/replay_commands.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "cli/common_flags.h"
#include "common/json.h"
#include "common/logging.h"
#include "common/metrics/build_info.h"
#include "common/status_macros.h"
#include "proto/zerofleet/v1/replay.pb.h"
#include "replay/log.h"
#include "replay/service/replay_server.h"
#include "replay/validate.h"

ABSL_FLAG(int64_t, capacity, 1'000'000,
          "replay: window size in positions; run: of each shard, from the shards' minimum size "
          "to sample + 512 up to 100000000 (when not given: the game's default, e.g. Connect Four "
          "150000, Go 200000)");
ABSL_FLAG(int64_t, min_size_to_sample, 1000, "replay: positions stored before sampling starts");
ABSL_FLAG(double, samples_per_insert, 4.0,
          "replay and run: the samples per inserted position the shards' rate limiter keeps to "
          "(zf run: 0.1..1000; a --resume keeps the run's own)");
ABSL_FLAG(bool, position_averaging, false,
          "replay and run: position averaging: sample each distinct position (identical planes) "
          "uniformly, however many stored games reached it, with the mean of its occurrences' "
          "value and policy targets (zf run: the game's default when not given, on for Connect "
          "Four, off for the others; --noposition_averaging turns it off; a --resume keeps the "
          "run's own)");
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

// What a shard's log holds, read without changing it: every game id in log order, and every
// damaged region with the game id its record still shows, if any.
struct LogContents {
  replay::RecoveryReport report;
  std::vector<std::string> ids;
  absl::flat_hash_map<std::string, int> copies;
  int64_t unreadable = 0;
  std::vector<std::pair<replay::DamagedRegion, std::optional<std::string>>> damage;
};

absl::StatusOr<LogContents> ReadLogContents(const std::string& dir, absl::string_view command) {
  if (dir.empty()) return absl::InvalidArgumentError(absl::StrCat(command, " needs --dir DIR"));
  if (!std::filesystem::is_directory(dir)) {
    return absl::NotFoundError(absl::StrCat(command, ": ", dir, " is not a directory"));
  }
  LogContents contents;
  ZF_ASSIGN_OR_RETURN(
      contents.report,
      replay::Log::Read(
          dir, /*max_record_bytes=*/replay::LogOptions().max_record_bytes,
          [&](replay::SegmentId, absl::string_view payload) {
            zerofleet::v1::GameRecord record;
            if (!record.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
              ++contents.unreadable;
              return absl::OkStatus();
            }
            if (contents.copies[record.game_id()]++ == 0) contents.ids.push_back(record.game_id());
            return absl::OkStatus();
          },
          [&](const replay::DamagedRegion& region, absl::string_view bytes) {
            contents.damage.emplace_back(region, replay::LostGameId(region, bytes));
          }));
  return contents;
}

std::string DamageJson(const LogContents& contents) {
  std::string out = "[";
  for (size_t i = 0; i < contents.damage.size(); ++i) {
    const auto& [region, id] = contents.damage[i];
    absl::StrAppend(&out, i > 0 ? ", " : "", "{\"segment\": ", region.segment,
                    ", \"offset\": ", region.offset, ", \"bytes\": ", region.bytes,
                    ", \"kind\": \"", region.torn_tail ? "torn_tail" : "corrupt",
                    "\", \"problem\": ", JsonString(region.problem),
                    ", \"game_id\": ", id.has_value() ? JsonString(*id) : "null", "}");
  }
  return out + "]";
}

// Every record of the log in --dir: one game id per line (text), or one JSON object with the ids,
// the record count, the ids stored more than once and the damaged regions. Unreadable records and
// damage are counted, not fatal (`zf replay verify` judges them).
absl::Status ListReplay() {
  const std::string dir = absl::GetFlag(FLAGS_dir);
  ZF_ASSIGN_OR_RETURN(LogContents contents, ReadLogContents(dir, "zf replay ls"));
  const replay::RecoveryReport& report = contents.report;
  const std::vector<std::string>& ids = contents.ids;
  std::vector<std::string> duplicated;
  for (const std::string& id : ids) {
    if (contents.copies[id] > 1) duplicated.push_back(id);
  }
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << "{\"dir\": " << JsonString(dir) << ", \"segments\": " << report.segments
              << ", \"records\": " << report.records << ", \"games\": " << ids.size()
              << ", \"unreadable\": " << contents.unreadable
              << ", \"torn_bytes\": " << report.torn_bytes
              << ", \"corrupt_bytes\": " << report.corrupt_bytes
              << ", \"damaged\": " << DamageJson(contents) << ", \"duplicated_ids\": [";
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
              << duplicated.size() << " stored more than once, " << contents.unreadable
              << " unreadable) in " << report.segments << " segments" << std::endl;
  }
  for (const std::string& warning : report.warnings) {
    std::cerr << "zf replay ls: " << warning << std::endl;
  }
  return absl::OkStatus();
}

// Checks a shard's log without changing it: every damaged region (with the game it lost, where
// the id can be read) and what DIR/damaged/ holds from earlier recoveries. A torn tail alone is
// what a crash leaves (and what a running shard's newest record looks like mid-write): OK.
// Returns: OK; DataLoss when corrupt regions or quarantined corrupt bytes exist.
absl::Status VerifyReplay() {
  const std::string dir = absl::GetFlag(FLAGS_dir);
  ZF_ASSIGN_OR_RETURN(LogContents contents, ReadLogContents(dir, "zf replay verify"));
  const replay::RecoveryReport& report = contents.report;
  int64_t corrupt_regions = 0;
  for (const auto& [region, id] : contents.damage) corrupt_regions += region.torn_tail ? 0 : 1;
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << "{\"dir\": " << JsonString(dir) << ", \"segments\": " << report.segments
              << ", \"records\": " << report.records << ", \"games\": " << contents.ids.size()
              << ", \"unreadable\": " << contents.unreadable
              << ", \"torn_bytes\": " << report.torn_bytes
              << ", \"corrupt_bytes\": " << report.corrupt_bytes
              << ", \"damaged\": " << DamageJson(contents)
              << ", \"quarantined_torn_bytes\": " << report.quarantined_torn_bytes
              << ", \"quarantined_corrupt_bytes\": " << report.quarantined_corrupt_bytes << "}"
              << std::endl;
  } else {
    std::cout << dir << ": " << report.records << " intact records (" << contents.ids.size()
              << " games, " << contents.unreadable << " unreadable) in " << report.segments
              << " segments\n";
    for (const auto& [region, id] : contents.damage) {
      std::cout << "  " << (region.torn_tail ? "torn tail" : "CORRUPT") << ": segment "
                << region.segment << " offset " << region.offset << ", " << region.bytes
                << " bytes (" << region.problem << "): "
                << (id.has_value() ? absl::StrCat("game ", absl::CHexEscape(*id))
                                   : std::string("no game id readable"))
                << "\n";
    }
    if (report.quarantined_torn_bytes + report.quarantined_corrupt_bytes > 0) {
      std::cout << "  " << dir << "/damaged holds " << report.quarantined_corrupt_bytes
                << " corrupt and " << report.quarantined_torn_bytes
                << " torn-tail bytes from earlier recoveries\n";
    }
    std::cout.flush();
  }
  if (corrupt_regions > 0 || report.quarantined_corrupt_bytes > 0) {
    return absl::DataLossError(absl::StrCat(
        dir, ": ", corrupt_regions, " corrupt regions (", report.corrupt_bytes,
        " bytes) in the log, ", report.quarantined_corrupt_bytes, " corrupt bytes kept in ", dir,
        "/damaged (inspect, then remove them to clear the alert)"));
  }
  return absl::OkStatus();
}

absl::Status RunReplay(const std::vector<std::string>& args) {
  if (args.size() == 1 && args[0] == "ls") return ListReplay();
  if (args.size() == 1 && args[0] == "verify") return VerifyReplay();
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
  options.position_averaging = absl::GetFlag(FLAGS_position_averaging);
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
       "[--samples_per_insert X] [--position_averaging] [--error_buffer X] "
       "[--metrics_listen ADDR]\n"
       "       zf replay ls --dir DIR [--json]   (the game ids the shard's log holds)\n"
       "       zf replay verify --dir DIR [--json]   (damaged records and the games they held; "
       "exit 1 on corruption)",
       WithLogFileFlag(
           WithTlsFlags({"listen", "dir", "capacity", "min_size_to_sample", "samples_per_insert",
                         "position_averaging", "error_buffer", "metrics_listen", "json"})),
       RunReplay},
  };
}

}  // namespace zf::cli
