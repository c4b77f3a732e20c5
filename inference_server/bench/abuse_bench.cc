#include "inference_server/bench/abuse_bench.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <thread>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/grpc/channel.h"
#include "common/host_info.h"
#include "common/metrics/text_parser.h"
#include "common/status_macros.h"
#include "common/testing/background_process.h"
#include "common/testing/http_get.h"
#include "proto/zerofleet/v1/inference.grpc.pb.h"

namespace zf::inference {
namespace {

using zerofleet::v1::EvaluateRequest;
using zerofleet::v1::EvaluateResponse;
using zerofleet::v1::Inference;

struct ProcessSample {
  double rss_mib = 0;
  int threads = 0;
};

ProcessSample ReadProcess(pid_t pid) {
  ProcessSample s;
  s.rss_mib = ProcStatusField(std::to_string(pid), "VmRSS") / 1024.0;
  s.threads = static_cast<int>(ProcStatusField(std::to_string(pid), "Threads"));
  return s;
}

// The number after `marker` in `text` ("on port N"), 0 if absent.
int NumberAfter(const std::string& text, const std::string& marker) {
  size_t at = text.find(marker);
  if (at == std::string::npos) return 0;
  at += marker.size();
  size_t end = at;
  while (end < text.size() && isdigit(static_cast<unsigned char>(text[end]))) ++end;
  int n = 0;
  return absl::SimpleAtoi(text.substr(at, end - at), &n) ? n : 0;
}

// A channel of its own (a channel argument no other channel has: its own connection).
std::shared_ptr<grpc::Channel> OwnChannel(int port, int id, int max_message_bytes) {
  grpc_util::WireSettings wire;
  wire.max_message_bytes = max_message_bytes;
  grpc::ChannelArguments args = grpc_util::ClientChannelArguments(wire);
  args.SetInt("zf.abuse.connection", id);
  return grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", port),
                                   grpc::InsecureChannelCredentials(), args);
}

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * v.size()))];
}

struct Answer {
  absl::Time at;
  double latency_ms;
  bool ok;
};

}  // namespace

absl::Status AbuseBenchOptions::Validate() const {
  auto range = [](const char* name, double v, double lo, double hi) -> absl::Status {
    if (v < lo || v > hi) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, " is ", v, ", expected ", lo, "..", hi));
    }
    return absl::OkStatus();
  };
  if (zf.empty()) return absl::InvalidArgumentError("the zf binary is not known");
  ZF_RETURN_IF_ERROR(range("streams", streams, 0, 100000));
  ZF_RETURN_IF_ERROR(range("seconds", seconds, 1, 3600));
  ZF_RETURN_IF_ERROR(range("well_behaved", well_behaved, 1, 256));
  ZF_RETURN_IF_ERROR(range("rows", rows, 1, 4096));
  ZF_RETURN_IF_ERROR(range("slow_sockets", slow_sockets, 0, 10000));
  ZF_RETURN_IF_ERROR(range("abandoned", abandoned, 0, 1000000));
  return range("max_rss_mib", max_rss_mib, 64, 1 << 20);
}

absl::StatusOr<AbuseBenchResult> RunAbuseBench(const AbuseBenchOptions& o) {
  ZF_RETURN_IF_ERROR(o.Validate());
  AbuseBenchResult r;
  r.options = o;
  r.cores = static_cast<int>(std::thread::hardware_concurrency());
  r.cpu = CpuModelName();
  const std::string prefix = absl::StrCat("/tmp/zf_bench_abuse_", getpid());
  // The server's output files go with the bench (a failed start's error quotes them first).
  absl::Cleanup remove_server_output = [&prefix] {
    std::remove((prefix + ".stdout").c_str());
    std::remove((prefix + ".stderr").c_str());
  };
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<testing::BackgroundProcess> server,
                      testing::BackgroundProcess::Start(
                          {o.zf, "inference", "--listen=127.0.0.1:0",
                           "--metrics_listen=127.0.0.1:0", absl::StrCat("--game=", o.game),
                           "--blocks=1", "--filters=8", "--max_batch=64", "--workers=1"},
                          prefix));
  int port = 0, metrics_port = 0;
  for (absl::Time deadline = absl::Now() + absl::Seconds(60); absl::Now() < deadline;) {
    const std::string out = server->Stdout();
    port = NumberAfter(out, " on port ");
    metrics_port = NumberAfter(out, "metrics on port ");
    if (port > 0 && metrics_port > 0) break;
    if (!server->Running()) break;
    absl::SleepFor(absl::Milliseconds(50));
  }
  if (port == 0 || metrics_port == 0) {
    return absl::UnavailableError(absl::StrCat("zf inference did not start: ", server->Stderr()));
  }
  const pid_t pid = server->pid();
  auto open_streams = [&]() -> double {
    auto response = testing::HttpGet("127.0.0.1", metrics_port, "/metrics", absl::Seconds(2));
    if (!response.ok() || response->status_code != 200) return -1;
    auto families = metrics::ParseText(response->body);
    if (!families.ok()) return -1;
    for (const auto& f : *families) {
      if (f.name == "zf_inference_open_streams" && !f.metric.empty()) {
        return f.metric[0].gauge.value;
      }
    }
    return -1;
  };

  // The model's plane shape, for well-formed requests.
  auto info_channel = OwnChannel(port, 0, 64 << 20);
  zerofleet::v1::ModelInfo info;
  {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    context.set_wait_for_ready(true);
    grpc::Status s = Inference::NewStub(info_channel)
                         ->GetModelInfo(&context, zerofleet::v1::GetModelInfoRequest(), &info);
    if (!s.ok()) return absl::UnavailableError(absl::StrCat("GetModelInfo: ", s.error_message()));
  }
  const int64_t plane_bytes =
      int64_t{info.input_channels()} * info.board_height() * info.board_width();
  auto make_request = [&](uint64_t id, int rows) {
    EvaluateRequest request;
    request.set_request_id(id);
    auto* planes = request.mutable_planes();
    planes->set_dtype(zerofleet::v1::DTYPE_UINT8);
    for (int64_t d : {int64_t{rows}, int64_t{info.input_channels()}, int64_t{info.board_height()},
                      int64_t{info.board_width()}}) {
      planes->add_shape(d);
    }
    planes->set_data(std::string(rows * plane_bytes, '\0'));
    return request;
  };

  // Resource sampling, every 200 ms, for the whole run.
  std::atomic<bool> done{false};
  absl::Mutex mu;
  ProcessSample peak;
  std::thread sampler([&] {
    while (!done) {
      ProcessSample s = ReadProcess(pid);
      {
        absl::MutexLock lock(&mu);
        peak.rss_mib = std::max(peak.rss_mib, s.rss_mib);
        peak.threads = std::max(peak.threads, s.threads);
      }
      absl::SleepFor(absl::Milliseconds(200));
    }
  });

  // Well-behaved clients: one request in flight each, from now until the end of "during".
  std::vector<std::vector<Answer>> answers(o.well_behaved);
  std::atomic<bool> stop_clients{false};
  std::vector<std::thread> clients;
  for (int c = 0; c < o.well_behaved; ++c) {
    clients.emplace_back([&, c] {
      auto stub = Inference::NewStub(OwnChannel(port, 1 + c, 64 << 20));
      grpc::ClientContext context;
      auto stream = stub->Evaluate(&context);
      EvaluateResponse response;
      for (uint64_t id = 1; !stop_clients; ++id) {
        const absl::Time start = absl::Now();
        bool ok = stream->Write(make_request(id, o.rows)) && stream->Read(&response) &&
                  response.error_code() == 0 && response.request_id() == id;
        answers[c].push_back({absl::Now(), absl::ToDoubleMilliseconds(absl::Now() - start), ok});
        if (!ok) {  // counted as a failure; this client stops
          context.TryCancel();
          stream->Finish();
          return;
        }
      }
      stream->WritesDone();
      while (stream->Read(&response)) {
      }
      stream->Finish();
    });
  }
  const absl::Duration phase = absl::Seconds(o.seconds);
  absl::SleepFor(absl::Seconds(1));  // warm-up
  const absl::Time before_start = absl::Now();
  absl::SleepFor(phase);
  const absl::Time before_end = absl::Now();
  const ProcessSample at_before = ReadProcess(pid);

  // Idle streams, then the other abusers at once.
  const int per_connection = 100;
  std::vector<std::shared_ptr<grpc::Channel>> idle_channels;
  std::vector<std::unique_ptr<grpc::ClientContext>> idle_contexts;
  std::vector<std::unique_ptr<grpc::ClientReaderWriter<EvaluateRequest, EvaluateResponse>>> idle;
  std::vector<std::unique_ptr<Inference::Stub>> idle_stubs;
  for (int i = 0; i < o.streams; ++i) {
    if (i % per_connection == 0) {
      idle_channels.push_back(OwnChannel(port, 1000 + i / per_connection, 64 << 20));
      idle_stubs.push_back(Inference::NewStub(idle_channels.back()));
    }
    idle_contexts.push_back(std::make_unique<grpc::ClientContext>());
    idle.push_back(idle_stubs.back()->Evaluate(idle_contexts.back().get()));
  }
  r.idle_streams_opened = o.streams;
  absl::SleepFor(absl::Seconds(1));
  const ProcessSample with_idle = ReadProcess(pid);
  r.kib_per_idle_stream =
      o.streams > 0 ? (with_idle.rss_mib - at_before.rss_mib) * 1024 / o.streams : 0;
  r.open_streams_peak = open_streams();

  // Slow sockets: half an HTTP/2 preface, then nothing.
  struct Slow {
    int fd;
    absl::Time opened;
    absl::Time closed = absl::InfiniteFuture();
  };
  std::vector<Slow> slow;
  for (int i = 0; i < o.slow_sockets; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      if (fd >= 0) close(fd);
      continue;
    }
    const char half[] = "PRI * HTTP/2.0\r\n";
    (void)!write(fd, half, sizeof(half) - 1);
    slow.push_back({fd, absl::Now()});
  }
  r.slow_sockets_opened = static_cast<int>(slow.size());

  std::atomic<bool> stop_abuse{false};
  std::atomic<int64_t> oversized_sent{0}, oversized_refused{0}, abandoned_done{0};
  std::thread oversized([&] {
    auto stub = Inference::NewStub(OwnChannel(port, 900, 256 << 20));
    const int64_t rows = (int64_t{64} << 20) / plane_bytes + 1;  // just over the limit
    const EvaluateRequest big = make_request(1, static_cast<int>(std::min<int64_t>(rows, 1 << 30)));
    while (!stop_abuse) {
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
      auto stream = stub->Evaluate(&context);
      stream->Write(big);
      EvaluateResponse response;
      while (stream->Read(&response)) {
      }
      grpc::Status s = stream->Finish();
      ++oversized_sent;
      if (s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) ++oversized_refused;
      absl::SleepFor(absl::Seconds(1));
    }
  });
  std::thread abandoner([&] {
    std::vector<std::unique_ptr<Inference::Stub>> stubs;
    for (int c = 0; c < 4; ++c)
      stubs.push_back(Inference::NewStub(OwnChannel(port, 950 + c, 64 << 20)));
    for (int i = 0; i < o.abandoned && !stop_abuse; ++i) {
      grpc::ClientContext context;
      auto stream = stubs[i % stubs.size()]->Evaluate(&context);
      stream->Write(make_request(i + 1, o.rows));
      context.TryCancel();
      stream->Finish();
      ++abandoned_done;
    }
  });

  const absl::Time during_start = absl::Now();
  absl::SleepFor(phase);
  const absl::Time during_end = absl::Now();
  stop_clients = true;
  stop_abuse = true;
  for (auto& t : clients) t.join();
  oversized.join();
  abandoner.join();
  r.oversized_sent = oversized_sent;
  r.oversized_refused = oversized_refused;
  r.abandoned_done = abandoned_done;

  auto phase_stats = [&](absl::Time from, absl::Time to) {
    AbuseBenchResult::Phase p;
    std::vector<double> latencies;
    for (const auto& client : answers) {
      for (const Answer& a : client) {
        if (a.at < from || a.at > to) continue;
        if (a.ok) {
          latencies.push_back(a.latency_ms);
        } else {
          ++p.failed;
        }
      }
    }
    p.answers_per_sec = latencies.size() / absl::ToDoubleSeconds(to - from);
    p.p50_ms = Percentile(latencies, 0.5);
    p.p99_ms = Percentile(latencies, 0.99);
    return p;
  };
  r.before = phase_stats(before_start, before_end);
  r.during = phase_stats(during_start, during_end);
  int64_t failed_anywhere = 0;
  for (const auto& client : answers) {
    for (const Answer& a : client) failed_anywhere += a.ok ? 0 : 1;
  }

  // The abusers leave: idle streams cancelled. Then the server's streams must come back to
  // the well-behaved clients' (which have ended too: 0), and the slow sockets must be closed.
  for (auto& c : idle_contexts) c->TryCancel();
  for (auto& s : idle) s->Finish();
  idle.clear();
  idle_contexts.clear();
  idle_stubs.clear();
  idle_channels.clear();
  const absl::Time left = absl::Now();
  while (absl::Now() - left < absl::Seconds(60)) {
    bool all_closed = true;
    for (Slow& s : slow) {
      if (s.closed != absl::InfiniteFuture()) continue;
      pollfd p{s.fd, POLLIN, 0};
      char buffer[256];
      if (poll(&p, 1, 0) > 0 && read(s.fd, buffer, sizeof(buffer)) <= 0) {
        s.closed = absl::Now();
      } else {
        all_closed = false;
      }
    }
    if (r.streams_freed_s < 0 && open_streams() == 0) {
      r.streams_freed_s = absl::ToDoubleSeconds(absl::Now() - left);
    }
    if (r.streams_freed_s >= 0 && all_closed) break;
    absl::SleepFor(absl::Milliseconds(200));
  }
  std::vector<double> close_s;
  for (Slow& s : slow) {
    if (s.closed != absl::InfiniteFuture()) {
      ++r.slow_sockets_closed_by_server;
      close_s.push_back(absl::ToDoubleSeconds(s.closed - s.opened));
    }
    close(s.fd);
  }
  r.slow_socket_close_s = Percentile(close_s, 0.5);
  const ProcessSample after = ReadProcess(pid);
  const bool server_alive = server->Running();
  done = true;
  sampler.join();
  r.rss_before_mib = at_before.rss_mib;
  r.threads_before = at_before.threads;
  r.rss_after_mib = after.rss_mib;
  r.threads_after = after.threads;
  r.rss_peak_mib = peak.rss_mib;
  r.threads_peak = peak.threads;
  server->Signal(SIGTERM);
  (void)server->Wait(absl::Seconds(30));

  std::vector<std::string> broken;
  if (!server_alive) broken.push_back("the server died");
  if (failed_anywhere > 0) {
    broken.push_back(absl::StrCat(failed_anywhere, " well-behaved requests failed"));
  }
  if (r.oversized_refused != r.oversized_sent) {
    broken.push_back(absl::StrCat(r.oversized_sent - r.oversized_refused, " of ", r.oversized_sent,
                                  " oversized requests not RESOURCE_EXHAUSTED"));
  }
  if (r.rss_peak_mib > o.max_rss_mib) {
    broken.push_back(absl::StrFormat("server memory peaked at %.0f MiB > %d MiB", r.rss_peak_mib,
                                     o.max_rss_mib));
  }
  if (r.streams_freed_s < 0) broken.push_back("the abusers' streams were not freed within 60 s");
  if (r.slow_sockets_closed_by_server < r.slow_sockets_opened) {
    broken.push_back(absl::StrCat(r.slow_sockets_opened - r.slow_sockets_closed_by_server,
                                  " stalled connections still open after 60 s"));
  }
  if (!broken.empty()) {
    std::string why;
    for (const auto& b : broken) absl::StrAppend(&why, why.empty() ? "" : "; ", b);
    return absl::InternalError(
        absl::StrCat("zf bench abuse: ", why, "\n", FormatAbuseBenchTable(r)));
  }
  return r;
}

std::string FormatAbuseBenchTable(const AbuseBenchResult& r) {
  const auto& o = r.options;
  std::string s = absl::StrFormat(
      "zf bench abuse: one `zf inference` (%s, 1x8) on loopback, %s, %d cores\n"
      "well-behaved: %d streams, 1 request of %d rows in flight each, %.0f s per phase\n"
      "%-8s %12s %9s %9s %7s\n",
      o.game, r.cpu, r.cores, o.well_behaved, o.rows, o.seconds, "phase", "answers/s", "p50 ms",
      "p99 ms", "failed");
  for (const auto& [name, p] : {std::pair{"before", r.before}, std::pair{"during", r.during}}) {
    absl::StrAppendFormat(&s, "%-8s %12.0f %9.2f %9.2f %7d\n", name, p.answers_per_sec, p.p50_ms,
                          p.p99_ms, p.failed);
  }
  absl::StrAppendFormat(
      &s,
      "abuse: %d idle streams (%.0f open at the server), %d/%d oversized requests refused, "
      "%d/%d stalled connections closed by the server (median %.1f s), %d streams abandoned\n"
      "server: RSS %.0f MiB before, %.0f peak, %.0f after (%.1f KiB per idle stream); threads "
      "%d, %d, %d; streams freed %.1f s after the abusers left\n",
      r.idle_streams_opened, r.open_streams_peak, r.oversized_refused, r.oversized_sent,
      r.slow_sockets_closed_by_server, r.slow_sockets_opened, r.slow_socket_close_s,
      r.abandoned_done, r.rss_before_mib, r.rss_peak_mib, r.rss_after_mib, r.kib_per_idle_stream,
      r.threads_before, r.threads_peak, r.threads_after, r.streams_freed_s);
  return s;
}

std::string FormatAbuseBenchJson(const AbuseBenchResult& r) {
  const auto& o = r.options;
  auto phase = [](const AbuseBenchResult::Phase& p) {
    return absl::StrFormat(
        "{\"answers_per_sec\": %.1f, \"p50_ms\": %.3f, \"p99_ms\": %.3f, \"failed\": %d}",
        p.answers_per_sec, p.p50_ms, p.p99_ms, p.failed);
  };
  return absl::StrFormat(
      "{\"bench\": \"abuse\", \"cpu\": \"%s\", \"cores\": %d, \"game\": \"%s\", "
      "\"well_behaved\": %d, \"rows\": %d, \"seconds\": %.1f, \"before\": %s, \"during\": %s, "
      "\"idle_streams\": %d, \"open_streams_peak\": %.0f, \"oversized_sent\": %d, "
      "\"oversized_refused\": %d, \"slow_sockets\": %d, \"slow_sockets_closed\": %d, "
      "\"slow_socket_close_s\": %.2f, \"abandoned\": %d, \"rss_before_mib\": %.1f, "
      "\"rss_peak_mib\": %.1f, \"rss_after_mib\": %.1f, \"kib_per_idle_stream\": %.2f, "
      "\"threads_before\": %d, \"threads_peak\": %d, \"threads_after\": %d, "
      "\"streams_freed_s\": %.1f}\n",
      r.cpu, r.cores, o.game, o.well_behaved, o.rows, o.seconds, phase(r.before), phase(r.during),
      r.idle_streams_opened, r.open_streams_peak, r.oversized_sent, r.oversized_refused,
      r.slow_sockets_opened, r.slow_sockets_closed_by_server, r.slow_socket_close_s,
      r.abandoned_done, r.rss_before_mib, r.rss_peak_mib, r.rss_after_mib, r.kib_per_idle_stream,
      r.threads_before, r.threads_peak, r.threads_after, r.streams_freed_s);
}

}  // namespace zf::inference
