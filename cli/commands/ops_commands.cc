// `zf health` and `zf top`.
#include "cli/commands/ops_commands.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cli/common_flags.h"
#include "common/grpc/channel.h"
#include "common/status_macros.h"
#include "fleet/fleet_view.h"
#include "fleet/scrape.h"
#include "proto/grpc/health/v1/health.grpc.pb.h"

ABSL_FLAG(std::string, target, "", "health: HOST:PORT of the gRPC server to ask");
ABSL_FLAG(std::string, service, "",
          "health: the service name to ask about (empty: the server as a whole)");
ABSL_FLAG(int, timeout_ms, 2000, "health: how long to wait for the answer, in milliseconds");
ABSL_FLAG(std::string, targets, "",
          "top: comma-separated /metrics addresses, HOST:PORT[/PATH] (path default /metrics)");
ABSL_FLAG(double, interval_s, 2.0, "top: seconds between scrapes (rates span one interval)");
ABSL_FLAG(bool, once, false, "top: take two scrapes --interval_s apart, print once and exit");

namespace zf::cli {
namespace {

// One line: gRPC messages may hold newlines.
std::string OneLine(std::string text) {
  return absl::StrReplaceAll(text, {{"\r", " "}, {"\n", " "}});
}

absl::Status RunHealth(const std::vector<std::string>& args) {
  if (!args.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("unexpected argument \"", args[0], "\""));
  }
  const std::string target = absl::GetFlag(FLAGS_target);
  if (target.empty()) return absl::InvalidArgumentError("--target HOST:PORT is required");
  const size_t colon = target.rfind(':');
  int port = 0;
  if (colon == std::string::npos || colon == 0 ||
      !absl::SimpleAtoi(target.substr(colon + 1), &port) || port < 1 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("--target \"", target, "\" is not HOST:PORT with a port in 1..65535"));
  }
  const int timeout_ms = absl::GetFlag(FLAGS_timeout_ms);
  if (timeout_ms < 1) {
    return absl::InvalidArgumentError(absl::StrCat("--timeout_ms must be >= 1, got ", timeout_ms));
  }
  const std::string service = absl::GetFlag(FLAGS_service);
  const std::string what =
      service.empty() ? target : absl::StrCat(target, " service \"", service, "\"");

  ZF_ASSIGN_OR_RETURN(grpc_util::WireSettings wire, WireSettingsFromFlags());
  auto stub = grpc::health::v1::Health::NewStub(grpc_util::CreateChannel(target, wire));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms));
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  grpc::health::v1::HealthCheckResponse response;
  const grpc::Status status = stub->Check(&context, request, &response);
  if (!status.ok()) {
    switch (status.error_code()) {
      case grpc::StatusCode::NOT_FOUND:
        return absl::NotFoundError(absl::StrCat(what, ": service unknown to the server"));
      case grpc::StatusCode::UNIMPLEMENTED:
        return absl::UnimplementedError(absl::StrCat(target, ": no grpc.health.v1 service"));
      case grpc::StatusCode::DEADLINE_EXCEEDED:
        return absl::DeadlineExceededError(
            absl::StrCat(what, ": no answer within ", timeout_ms, " ms"));
      case grpc::StatusCode::PERMISSION_DENIED:
        return absl::PermissionDeniedError(
            absl::StrCat(what, ": ", OneLine(status.error_message())));
      default:
        return absl::UnavailableError(absl::StrCat(
            what, ": unreachable (", OneLine(status.error_message()), ")",
            wire.tls.client_tls()
                ? "; with TLS: is the server's certificate from --tls_ca and for this host name, "
                  "and does it accept this client's certificate?"
                : "; if the server speaks TLS, pass --tls_ca (and --tls_cert/--tls_key for "
                  "mutual TLS)"));
    }
  }
  using Response = grpc::health::v1::HealthCheckResponse;
  if (response.status() == Response::SERVING) {
    std::cout << "SERVING" << std::endl;
    return absl::OkStatus();
  }
  const std::string name = Response::ServingStatus_Name(response.status());
  return absl::UnavailableError(absl::StrCat(what, " is ", name.empty() ? "UNKNOWN" : name));
}

// SIGINT/SIGTERM during `zf top` write a byte here; the refresh loop polls it.
int g_top_signal_pipe[2] = {-1, -1};

void OnTopSignal(int signal_number) {
  const int saved_errno = errno;
  const char byte = static_cast<char>(signal_number);
  (void)!write(g_top_signal_pipe[1], &byte, 1);
  errno = saved_errno;
}

// Waits `duration` or until a signal arrives; returns true if one did.
bool WaitOrSignal(absl::Duration duration) {
  const absl::Time deadline = absl::Now() + duration;
  while (true) {
    const int64_t ms = absl::ToInt64Milliseconds(deadline - absl::Now());
    if (ms <= 0) return false;
    pollfd fd = {g_top_signal_pipe[0], POLLIN, 0};
    const int ready = poll(&fd, 1, static_cast<int>(ms));
    if (ready > 0) return true;
    if (ready < 0 && errno != EINTR) return false;
  }
}

struct Target {
  std::string name;
  fleet::ScrapeAddress address;
};

fleet::FleetScrape ScrapeAll(const std::vector<Target>& targets, absl::Duration timeout) {
  fleet::FleetScrape round(targets.size());
  // One thread per target: a slow target costs one timeout, not one per target.
  std::vector<std::thread> threads;
  for (size_t i = 0; i < targets.size(); ++i) {
    threads.emplace_back(
        [&, i] { round[i] = fleet::ScrapeTarget(targets[i].name, targets[i].address, timeout); });
  }
  for (std::thread& t : threads) t.join();
  return round;
}

absl::Status RunTop(const std::vector<std::string>& args) {
  if (!args.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("unexpected argument \"", args[0], "\""));
  }
  std::vector<Target> targets;
  for (absl::string_view text :
       absl::StrSplit(absl::GetFlag(FLAGS_targets), ',', absl::SkipWhitespace())) {
    Target target;
    target.name = std::string(absl::StripAsciiWhitespace(text));
    absl::StatusOr<fleet::ScrapeAddress> address = fleet::ParseScrapeAddress(target.name);
    if (!address.ok()) return absl::InvalidArgumentError(address.status().message());
    target.address = *address;
    targets.push_back(std::move(target));
  }
  if (targets.empty()) {
    return absl::InvalidArgumentError("--targets HOST:PORT[,HOST:PORT...] is required");
  }
  const double interval_s = absl::GetFlag(FLAGS_interval_s);
  if (!(interval_s > 0) || interval_s > 3600) {
    return absl::InvalidArgumentError(
        absl::StrCat("--interval_s must be in (0, 3600], got ", interval_s));
  }
  const absl::Duration interval = absl::Seconds(interval_s);
  // A scrape may take up to the interval, at least 1 s and at most 10 s.
  const absl::Duration timeout = std::min(absl::Seconds(10), std::max(absl::Seconds(1), interval));
  const bool json = absl::GetFlag(FLAGS_json);

  if (absl::GetFlag(FLAGS_once)) {
    fleet::FleetScrape before = ScrapeAll(targets, timeout);
    absl::Time t0 = absl::Now();
    absl::SleepFor(interval);
    fleet::FleetScrape after = ScrapeAll(targets, timeout);
    const double elapsed = absl::ToDoubleSeconds(absl::Now() - t0);
    const fleet::FleetView view = fleet::ComputeFleetView(before, after, elapsed);
    std::cout << (json ? fleet::FleetViewJson(view) + "\n" : fleet::RenderFleetView(view));
    std::cout.flush();
    for (const fleet::TargetStatus& t : view.targets) {
      if (t.up) return absl::OkStatus();
    }
    return absl::UnavailableError(absl::StrCat("no target answered (", view.targets[0].target, ": ",
                                               OneLine(view.targets[0].error), ")"));
  }

  if (pipe2(g_top_signal_pipe, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  struct sigaction action = {};
  action.sa_handler = OnTopSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  fleet::FleetScrape before = ScrapeAll(targets, timeout);
  absl::Time t0 = absl::Now();
  if (!json)
    std::cout << "zf top: first scrape taken; the view appears in " << interval_s << " s\n";
  std::cout.flush();
  while (!WaitOrSignal(interval - (absl::Now() - t0))) {
    fleet::FleetScrape after = ScrapeAll(targets, timeout);
    const absl::Time t1 = absl::Now();
    const fleet::FleetView view =
        fleet::ComputeFleetView(before, after, absl::ToDoubleSeconds(t1 - t0));
    if (json) {
      std::cout << fleet::FleetViewJson(view) << "\n";
    } else {
      // Clear the screen and home the cursor, then draw.
      std::cout << "\033[H\033[2J" << fleet::RenderFleetView(view)
                << absl::StrFormat("(every %.1f s; Ctrl-C quits)\n", interval_s);
    }
    std::cout.flush();
    before = std::move(after);
    t0 = t1;
  }
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  return absl::OkStatus();
}

}  // namespace

std::vector<Command> OpsCommands() {
  return {
      {"health", "ask a gRPC server's grpc.health.v1 Check: exit 0 when SERVING, 1 otherwise",
       "zf health --target HOST:PORT [--service NAME] [--timeout_ms N] [--tls_ca FILE "
       "[--tls_cert FILE --tls_key FILE]]",
       WithTlsFlags({"target", "service", "timeout_ms"}), RunHealth},
      {"top",
       "live view of the fleet from its /metrics: rates, batching, staleness, the bottleneck",
       "zf top --targets ADDR[,ADDR...] [--interval_s S] [--once] [--json]",
       {"targets", "interval_s", "once", "json"},
       RunTop},
  };
}

}  // namespace zf::cli
