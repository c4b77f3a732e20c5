#include "inference_server/bench/inference_bench.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/host_info.h"
#include "common/status_macros.h"
#include "common/testing/background_process.h"
#include "common/thread.h"
#include "games/registry.h"
#include "inference_server/client/remote_evaluator_client.h"
#include "inference_server/service/inference_server.h"
#include "inference_server/torch_backend.h"
#include "model/game_network.h"
#include "model/inference_session.h"

namespace zf::inference {
namespace {

constexpr int kWorkers = 2;  // server workers, and concurrent callers of the raw measurement

std::string Json(absl::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += absl::StrFormat("\\u%04x", static_cast<int>(c));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// A network on the benchmark's device; `max_batch` and `callers` size its CUDA slots.
absl::StatusOr<std::shared_ptr<model::InferenceSession>> Session(const model::NetworkShape& shape,
                                                                 const InferenceBenchOptions& f,
                                                                 int threads, int max_batch,
                                                                 int callers) {
  model::InferenceSession::Options o;
  o.shape = shape;
  o.seed = 1;
  o.intra_op_threads = threads;
  o.device = f.device;
  o.precision = f.precision;
  o.cuda_graphs = f.cuda_graphs;
  o.max_batch = max_batch;
  o.concurrency = callers;
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<model::InferenceSession> session,
                      model::InferenceSession::Create(o));
  return std::shared_ptr<model::InferenceSession>(std::move(session));
}

// Dense peak of the GPUs we measure on, from NVIDIA's data sheets (TFLOP/s, without
// sparsity): bf16/fp16 tensor cores, and TF32 for fp32 precision. 0: unknown.
double PeakTflops(const std::string& gpu, const std::string& precision) {
  const bool half = precision == "bf16" || precision == "fp16";
  if (absl::StrContains(gpu, "H100") && absl::StrContains(gpu, "PCIe")) return half ? 756 : 378;
  if (absl::StrContains(gpu, "H100") || absl::StrContains(gpu, "H200")) return half ? 989 : 494;
  if (absl::StrContains(gpu, "A100")) return half ? 312 : 156;
  return 0;
}

std::vector<uint8_t> Planes(int rows, int64_t plane_size, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> planes(static_cast<size_t>(rows * plane_size));
  for (uint8_t& b : planes) b = rng() % 4 == 0;
  return planes;
}

// Positions/s of `session` at `batch` for about `seconds`, with `callers` threads calling Run at
// once (the server runs its `num_workers` batches at once the same way). The callers warm up
// first (five passes each, not timed), and each times at least one pass: a pass slower than
// the window (a 20x256 go:19 net on a CPU) used to leave the window empty and the rate 0.
absl::StatusOr<double> RawThroughput(const model::InferenceSession& session, int batch,
                                     double seconds, int callers = 1) {
  const model::NetworkShape& s = session.shape();
  std::atomic<int64_t> runs{0};
  std::atomic<bool> failed{false};
  std::vector<std::vector<uint8_t>> planes;
  for (int c = 0; c < callers; ++c) planes.push_back(Planes(batch, s.PlaneSize(), batch + c));
  // Runs `body(c, logits, wdl)` on `callers` threads at once and joins them.
  auto on_callers = [&](const auto& body) {
    std::vector<std::unique_ptr<Thread>> threads;
    for (int c = 0; c < callers; ++c) {
      threads.push_back(std::make_unique<Thread>("raw", [&, c] {
        std::vector<float> logits(static_cast<size_t>(batch) * s.num_actions), wdl(batch * 3);
        body(c, logits, wdl);
      }));
    }
  };
  on_callers([&](int c, std::vector<float>& logits, std::vector<float>& wdl) {
    for (int i = 0; i < 5; ++i) (void)session.Run(planes[c], batch, logits, wdl);
  });
  const absl::Time start = absl::Now();
  const absl::Time end = start + absl::Seconds(seconds);
  on_callers([&](int c, std::vector<float>& logits, std::vector<float>& wdl) {
    do {
      if (!session.Run(planes[c], batch, logits, wdl).ok()) failed.store(true);
      runs.fetch_add(1);
    } while (absl::Now() < end && !failed.load());
  });
  if (failed.load()) return absl::InternalError("forward pass failed");
  return runs.load() * batch / absl::ToDoubleSeconds(absl::Now() - start);
}

// `n` clients of `target`, each with its own connection.
absl::StatusOr<std::vector<std::unique_ptr<RemoteEvaluatorClient>>> ConnectClients(
    const std::string& target, const model::NetworkShape& shape, int n) {
  std::vector<std::unique_ptr<RemoteEvaluatorClient>> clients;
  for (int s = 0; s < n; ++s) {
    RemoteEvaluatorClient::Options co;
    co.target = target;
    co.input_channels = shape.input_channels;
    co.board_height = shape.board_height;
    co.board_width = shape.board_width;
    ZF_ASSIGN_OR_RETURN(std::unique_ptr<RemoteEvaluatorClient> client,
                        RemoteEvaluatorClient::Create(co));
    clients.push_back(std::move(client));
  }
  return clients;
}

struct LoadResult {
  int64_t rows = 0;    // evaluated within the window
  int64_t failed = 0;  // requests answered with an error (each ends its client's submissions)
  double seconds = 0;
  double p50_ms = 0;
  double p99_ms = 0;
};

// Each client keeps `in_flight` requests of `rows` rows in flight (an answer submits the next)
// for `seconds`; `at_end` runs at the end of the window, before the clients are closed. Closes
// the clients (their unanswered requests complete as Cancelled) before returning.
LoadResult DriveClients(std::vector<std::unique_ptr<RemoteEvaluatorClient>>& clients,
                        const std::vector<uint8_t>& planes, int rows, int in_flight, double seconds,
                        const std::function<void()>& at_end) {
  absl::Mutex mu;
  std::vector<double> latencies_ms;
  std::atomic<int64_t> evaluated{0};
  std::atomic<int64_t> failed{0};
  std::atomic<bool> stop{false};
  std::function<void(size_t)> submit = [&](size_t s) {
    const absl::Time t0 = absl::Now();
    (void)clients[s]->Submit(
        planes, rows, [&, s, t0](absl::StatusOr<RemoteEvaluatorClient::Result> r) {
          if (r.ok() && !stop.load()) {
            evaluated.fetch_add(r->rows);
            {
              absl::MutexLock lock(&mu);
              latencies_ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - t0));
            }
            submit(s);
          } else if (!r.ok() && !stop.load()) {
            failed.fetch_add(1);
          }
        });
  };
  const absl::Time start = absl::Now();
  for (size_t s = 0; s < clients.size(); ++s) {
    for (int k = 0; k < in_flight; ++k) submit(s);
  }
  absl::SleepFor(absl::Seconds(seconds));  // the measuring window (a benchmark, not a test)
  LoadResult result;
  result.rows = evaluated.load();
  result.failed = failed.load();
  result.seconds = absl::ToDoubleSeconds(absl::Now() - start);
  at_end();
  stop.store(true);
  for (auto& c : clients) c->Close();
  absl::MutexLock lock(&mu);
  std::sort(latencies_ms.begin(), latencies_ms.end());
  auto pct = [&](double p) {
    return latencies_ms.empty() ? 0.0
                                : latencies_ms[static_cast<size_t>(p * (latencies_ms.size() - 1))];
  };
  result.p50_ms = pct(0.5);
  result.p99_ms = pct(0.99);
  return result;
}

}  // namespace

absl::Status InferenceBenchOptions::Validate() const {
  auto range = [](const char* name, int v, int lo, int hi) -> absl::Status {
    if (v < lo || v > hi) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, " must be in ", lo, "..", hi, ", got ", v));
    }
    return absl::OkStatus();
  };
  ZF_RETURN_IF_ERROR(range("blocks", blocks, 1, 64));
  ZF_RETURN_IF_ERROR(range("filters", filters, 1, 1024));
  ZF_RETURN_IF_ERROR(range("max_batch", max_batch, 1, 4096));
  ZF_RETURN_IF_ERROR(range("streams", streams, 1, 1024));
  ZF_RETURN_IF_ERROR(range("rows", rows, 1, 4096));
  ZF_RETURN_IF_ERROR(range("in_flight", in_flight, 1, 64));
  ZF_RETURN_IF_ERROR(range("baseline_threads", baseline_threads, 1, 256));
  ZF_RETURN_IF_ERROR(range("intra_op_threads", intra_op_threads, 1, 256));
  if (!(batch_latency_ms > 0 && batch_latency_ms <= 10000)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--batch_latency_ms must be in (0, 10000], got ", batch_latency_ms));
  }
  ZF_RETURN_IF_ERROR(range("max_delay_us", max_delay_us, 0, 1000000));
  if (transport != "tcp" && transport != "unix") {
    return absl::InvalidArgumentError(
        absl::StrCat("--transport must be tcp or unix, got \"", transport, "\""));
  }
  if (!(seconds >= 0.1 && seconds <= 600)) {
    return absl::InvalidArgumentError(absl::StrCat("--seconds must be in 0.1..600, got ", seconds));
  }
  return absl::OkStatus();
}

absl::StatusOr<InferenceBenchResult> RunInferenceBench(const InferenceBenchOptions& f) {
  ZF_RETURN_IF_ERROR(f.Validate());
  ZF_ASSIGN_OR_RETURN(games::GameConfig config, games::ParseGameName(f.game));
  ZF_ASSIGN_OR_RETURN(const model::NetworkShape shape,
                      model::NetworkShapeForGame(config, f.blocks, f.filters, f.global_pooling));
  ZF_RETURN_IF_ERROR(shape.Validate());
  InferenceBenchResult result;
  result.options = f;
  result.game = config.name;
  result.shape = shape.DebugString();
  result.cpu_model = CpuModelName();
  result.flops_per_position = shape.ForwardFlops();
  result.cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));

  // (1) raw forward throughput by batch size.
  ZF_ASSIGN_OR_RETURN(std::shared_ptr<model::InferenceSession> session,
                      Session(shape, f, f.intra_op_threads, f.max_batch, kWorkers));
  const std::string gpu = session->device() == "cpu" ? "" : model::CudaDeviceName(0);
  result.device = gpu.empty() ? session->device() : gpu;
  result.precision = session->precision();
  result.peak_tflops = f.peak_tflops > 0 ? f.peak_tflops : PeakTflops(gpu, result.precision);
  for (int b = 1; b <= f.max_batch; b *= 2) {
    ZF_ASSIGN_OR_RETURN(double v,
                        RawThroughput(*session, b, std::max(1.0, f.seconds / 2), kWorkers));
    result.raw.push_back({b, v});
  }

  // (2) the server under S streaming clients.
  InferenceServer::Options so;
  const std::string socket_path = absl::StrCat("/tmp/zf-bench-inference-", getpid(), ".sock");
  so.listen_address = f.transport == "unix" ? "unix:" + socket_path : "127.0.0.1:0";
  std::remove(socket_path.c_str());  // a file left by a killed run with the same pid
  absl::Cleanup remove_socket = [&] { std::remove(socket_path.c_str()); };
  ZF_ASSIGN_OR_RETURN(so.backend,
                      TorchBackend::Create({.session = session, .max_batch = f.max_batch}));
  so.game = config.name;
  so.batcher.max_batch = f.max_batch;
  so.batcher.max_delay = absl::Microseconds(f.max_delay_us);
  if (f.batch_tuning) {
    so.batcher.tuning =
        BatchTunerOptions{.latency_target = absl::Microseconds(f.batch_latency_ms * 1000)};
  }
  so.batcher.num_workers = kWorkers;
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<InferenceServer> server,
                      InferenceServer::Create(std::move(so)));
  ZF_RETURN_IF_ERROR(server->Serve());
  ZF_ASSIGN_OR_RETURN(
      std::vector<std::unique_ptr<RemoteEvaluatorClient>> clients,
      ConnectClients(f.transport == "unix" ? "unix:" + socket_path
                                           : absl::StrCat("127.0.0.1:", server->port()),
                     shape, f.streams));
  const Batcher::Stats before = server->batcher().stats();
  Batcher::Stats after;
  const LoadResult load =
      DriveClients(clients, Planes(f.rows, shape.PlaneSize(), 7), f.rows, f.in_flight, f.seconds,
                   [&] { after = server->batcher().stats(); });
  result.failed_requests = load.failed;
  result.served_max_batch = after.max_batch;
  result.served_max_delay_ms = absl::ToDoubleMilliseconds(after.max_delay);
  result.tuning_curve = server->batcher().tuning_curve();
  server->Shutdown();
  result.evals_per_sec = load.rows / load.seconds;
  result.mean_batch = static_cast<double>(after.rows_evaluated - before.rows_evaluated) /
                      std::max<int64_t>(1, after.batches_completed - before.batches_completed);
  result.p50_ms = load.p50_ms;
  result.p99_ms = load.p99_ms;
  auto nearest =
      std::min_element(result.raw.begin(), result.raw.end(), [&](const auto& a, const auto& b) {
        return std::abs(a.first - result.mean_batch) < std::abs(b.first - result.mean_batch);
      });

  // (3) baseline: P threads, each its own model copy, batch 1, one intra-op thread.
  std::vector<std::shared_ptr<model::InferenceSession>> copies;
  for (int p = 0; p < f.baseline_threads; ++p) {
    ZF_ASSIGN_OR_RETURN(std::shared_ptr<model::InferenceSession> copy,
                        Session(shape, f, /*threads=*/1, /*max_batch=*/1, /*callers=*/1));
    copies.push_back(std::move(copy));
  }
  // The sum of the threads' rates, measured at once (each warms up first, untimed).
  std::atomic<bool> baseline_failed{false};
  std::vector<double> baseline_rates(f.baseline_threads, 0.0);
  {
    std::vector<std::unique_ptr<Thread>> threads;
    for (int p = 0; p < f.baseline_threads; ++p) {
      threads.push_back(std::make_unique<Thread>("baseline", [&, p] {
        absl::StatusOr<double> v = RawThroughput(*copies[p], 1, f.seconds);
        if (!v.ok()) {
          baseline_failed.store(true);
          return;
        }
        baseline_rates[p] = *v;
      }));
    }
  }
  if (baseline_failed.load()) return absl::InternalError("baseline forward pass failed");
  result.baseline_evals_per_sec =
      std::accumulate(baseline_rates.begin(), baseline_rates.end(), 0.0);
  result.serving_efficiency = result.evals_per_sec / nearest->second;
  result.efficiency_at_batch = nearest->first;
  result.batching_speedup = result.evals_per_sec / result.baseline_evals_per_sec;
  return result;
}

std::string FormatInferenceBenchJson(const InferenceBenchResult& r) {
  const InferenceBenchOptions& f = r.options;
  std::string raw_json;
  for (const auto& [b, v] : r.raw) {
    const double tflops = v * static_cast<double>(r.flops_per_position) * 1e-12;
    absl::StrAppend(&raw_json, raw_json.empty() ? "" : ", ", "{\"batch\": ", b,
                    ", \"evals_per_sec\": ", absl::StrFormat("%.1f", v),
                    ", \"tflops\": ", absl::StrFormat("%.4f", tflops), ", \"peak_share\": ",
                    r.peak_tflops > 0 ? absl::StrFormat("%.5f", tflops / r.peak_tflops) : "null",
                    "}");
  }
  return absl::StrFormat(
      "{\"device\": %s, \"precision\": %s, \"cuda_graphs\": %s, \"flops_per_position\": %d, "
      "\"peak_tflops\": %.1f, \"cpu\": %s, \"cores\": %d, \"intra_op_threads\": %d, \"game\": %s, "
      "\"shape\": %s, \"blocks\": %d, \"filters\": %d, \"raw\": [%s], \"raw_callers\": %d, "
      "\"streams\": %d, "
      "\"rows_per_request\": %d, \"in_flight\": %d, \"max_batch\": %d, \"transport\": %s, "
      "\"seconds\": %.3f, "
      "\"evals_per_sec\": %.1f, \"mean_batch\": %.2f, \"p50_ms\": %.3f, \"p99_ms\": %.3f, "
      "\"serving_efficiency\": %.3f, \"efficiency_at_batch\": %d, \"failed_requests\": %d, "
      "\"batch_tuning\": %s, \"batch_latency_ms\": %.3f, \"max_delay_us\": %d, "
      "\"served_max_batch\": %d, \"served_max_delay_ms\": %.3f, \"tuning_curve\": %s, "
      "\"baseline_threads\": %d, "
      "\"baseline_evals_per_sec\": %.1f, \"batching_speedup\": %.2f}\n",
      Json(r.device), Json(r.precision), f.cuda_graphs ? "true" : "false", r.flops_per_position,
      r.peak_tflops, Json(r.cpu_model), r.cores, f.intra_op_threads, Json(r.game), Json(r.shape),
      f.blocks, f.filters, raw_json, kWorkers, f.streams, f.rows, f.in_flight, f.max_batch,
      Json(f.transport), f.seconds, r.evals_per_sec, r.mean_batch, r.p50_ms, r.p99_ms,
      r.serving_efficiency, r.efficiency_at_batch, r.failed_requests,
      f.batch_tuning ? "true" : "false", f.batch_latency_ms, f.max_delay_us, r.served_max_batch,
      r.served_max_delay_ms, Json(r.tuning_curve), f.baseline_threads, r.baseline_evals_per_sec,
      r.batching_speedup);
}

std::string FormatInferenceBenchTable(const InferenceBenchResult& r) {
  const InferenceBenchOptions& f = r.options;
  std::string out = absl::StrFormat("%s, %s\n%s (%s), %d cores, %d intra-op threads\n", r.game,
                                    r.shape, r.device, r.cpu_model, r.cores, f.intra_op_threads);
  absl::StrAppend(&out, absl::StrFormat("(1) raw forward pass, %s, %.2f MFLOP/position\n"
                                        "  batch  evals/s      TFLOP/s  share of peak\n",
                                        r.precision, r.flops_per_position * 1e-6));
  for (const auto& [b, v] : r.raw) {
    const double tflops = v * static_cast<double>(r.flops_per_position) * 1e-12;
    absl::StrAppend(
        &out,
        absl::StrFormat("  %5d  %11.1f  %7.3f  %s\n", b, v, tflops,
                        r.peak_tflops > 0 ? absl::StrFormat("%.2f%%", 100 * tflops / r.peak_tflops)
                                          : std::string("-")));
  }
  absl::StrAppend(
      &out, absl::StrFormat(
                "(2) served over %s: %d streams x %d in flight x %d rows: %.1f "
                "evals/s, mean batch %.2f, p50 %.2f ms, p99 %.2f ms, serving "
                "efficiency %.2f (vs batch %d)%s\n",
                f.transport, f.streams, f.in_flight, f.rows, r.evals_per_sec, r.mean_batch,
                r.p50_ms, r.p99_ms, r.serving_efficiency, r.efficiency_at_batch,
                r.failed_requests == 0 ? ""
                                       : absl::StrCat("; ", r.failed_requests,
                                                      " requests failed and ended their streams")));
  absl::StrAppend(
      &out, f.batch_tuning
                ? absl::StrFormat("    batcher tuned itself: max_batch %d, max_delay %.2f ms "
                                  "(ceiling %d, latency target %.1f ms); cost by batch size %s\n",
                                  r.served_max_batch, r.served_max_delay_ms, f.max_batch,
                                  f.batch_latency_ms, r.tuning_curve)
                : absl::StrFormat("    batcher as set: max_batch %d, max_delay %.2f ms\n",
                                  r.served_max_batch, r.served_max_delay_ms));
  absl::StrAppend(
      &out, absl::StrFormat("(3) baseline: %d threads, own model copy each, batch 1: "
                            "%.1f evals/s; batching speedup %.2f\n",
                            f.baseline_threads, r.baseline_evals_per_sec, r.batching_speedup));
  return out;
}

namespace {

// The port from `zf inference`'s "... on port N" line, or 0.
int ServedPort(const std::string& out) {
  const size_t at = out.find(" on port ");
  if (at == std::string::npos) return 0;
  size_t end = at + 9;
  while (end < out.size() && absl::ascii_isdigit(static_cast<unsigned char>(out[end]))) ++end;
  int port = 0;
  return absl::SimpleAtoi(out.substr(at + 9, end - at - 9), &port) ? port : 0;
}

}  // namespace

absl::Status StreamsBenchOptions::Validate() const {
  if (server_binary.empty()) return absl::InvalidArgumentError("server_binary is required");
  if (streams.empty()) return absl::InvalidArgumentError("--streams: at least one count");
  for (size_t i = 0; i < streams.size(); ++i) {
    if (streams[i] < 1 || streams[i] > 20000 || (i > 0 && streams[i] <= streams[i - 1])) {
      return absl::InvalidArgumentError(
          absl::StrCat("--streams: increasing counts in 1..20000, got ", streams[i]));
    }
  }
  if (rows < 1 || rows > 4096) {
    return absl::InvalidArgumentError(absl::StrCat("--rows must be in 1..4096, got ", rows));
  }
  if (in_flight < 1 || in_flight > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("--in_flight must be in 1..64, got ", in_flight));
  }
  if (!(seconds >= 0.1 && seconds <= 600)) {
    return absl::InvalidArgumentError(absl::StrCat("--seconds must be in 0.1..600, got ", seconds));
  }
  return absl::OkStatus();
}

absl::StatusOr<StreamsBenchResult> RunStreamsBench(const StreamsBenchOptions& f) {
  ZF_RETURN_IF_ERROR(f.Validate());
  ZF_ASSIGN_OR_RETURN(games::GameConfig config, games::ParseGameName(f.game));
  ZF_ASSIGN_OR_RETURN(const model::NetworkShape shape,
                      model::NetworkShapeForGame(config, f.blocks, f.filters, f.global_pooling));
  ZF_RETURN_IF_ERROR(shape.Validate());
  StreamsBenchResult result;
  result.options = f;
  result.game = config.name;
  result.cpu_model = CpuModelName();
  result.cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));

  const std::string dir = absl::StrCat("/tmp/zf-bench-streams-", getpid());
  std::filesystem::create_directories(dir);
  absl::Cleanup remove_dir = [&] { std::filesystem::remove_all(dir); };
  ZF_ASSIGN_OR_RETURN(
      std::unique_ptr<testing::BackgroundProcess> server,
      testing::BackgroundProcess::Start(
          {f.server_binary, "inference", "--listen=127.0.0.1:0", "--game=" + config.name,
           absl::StrCat("--blocks=", f.blocks), absl::StrCat("--filters=", f.filters),
           absl::StrCat("--global_pooling=", f.global_pooling ? "true" : "false"), "--seed=1",
           "--log_file=" + dir + "/server.log"},
          dir + "/server"));
  int port = 0;
  const absl::Time give_up = absl::Now() + absl::Seconds(120);
  while ((port = ServedPort(server->Stdout())) == 0) {
    if (!server->Running() || absl::Now() > give_up) {
      return absl::InternalError(absl::StrCat("zf inference did not start: ", server->Stderr()));
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  const std::string pid = std::to_string(server->pid());
  const std::vector<uint8_t> planes = Planes(f.rows, shape.PlaneSize(), 7);
  for (int n : f.streams) {
    StreamsBenchStep step;
    step.streams = n;
    absl::SleepFor(absl::Seconds(1));  // the previous step's streams are gone
    step.rss_before_bytes = ProcStatusField(pid, "VmRSS") * 1024;
    step.threads_before = static_cast<int>(ProcStatusField(pid, "Threads"));
    const absl::Time c0 = absl::Now();
    ZF_ASSIGN_OR_RETURN(std::vector<std::unique_ptr<RemoteEvaluatorClient>> clients,
                        ConnectClients(absl::StrCat("127.0.0.1:", port), shape, n));
    // Idle: every stream open, nothing sent.
    const absl::Time open_by = absl::Now() + absl::Seconds(120);
    for (const auto& c : clients) {
      while (c->streams_opened() < 1 && absl::Now() < open_by) {
        absl::SleepFor(absl::Milliseconds(5));
      }
    }
    step.connect_seconds = absl::ToDoubleSeconds(absl::Now() - c0);
    absl::SleepFor(absl::Seconds(1));
    step.rss_idle_bytes = ProcStatusField(pid, "VmRSS") * 1024;
    step.threads_idle = static_cast<int>(ProcStatusField(pid, "Threads"));
    step.idle_bytes_per_stream =
        static_cast<double>(step.rss_idle_bytes - step.rss_before_bytes) / n;
    const double cpu0 = ProcessCpuSeconds(pid);
    const absl::Time t0 = absl::Now();
    const LoadResult load = DriveClients(clients, planes, f.rows, f.in_flight, f.seconds, [&] {
      step.rss_load_bytes = ProcStatusField(pid, "VmRSS") * 1024;
      step.threads_load = static_cast<int>(ProcStatusField(pid, "Threads"));
      step.server_cpu_cores =
          (ProcessCpuSeconds(pid) - cpu0) / absl::ToDoubleSeconds(absl::Now() - t0);
    });
    clients.clear();
    step.evals_per_sec = load.rows / load.seconds;
    step.p50_ms = load.p50_ms;
    step.p99_ms = load.p99_ms;
    step.failed_requests = load.failed;
    result.steps.push_back(step);
    if (!server->Running()) {
      return absl::InternalError(absl::StrCat("zf inference died: ", server->Stderr()));
    }
  }
  server->Signal(SIGTERM);
  (void)server->Wait(absl::Seconds(60));
  return result;
}

std::string FormatStreamsBenchTable(const StreamsBenchResult& r) {
  const StreamsBenchOptions& f = r.options;
  std::string out = absl::StrFormat(
      "One zf inference process (%s, %d x %d), N client streams from another process, each its "
      "own connection; %s (%d cores); load: %d in flight x %d rows per stream, %.1f s\n"
      "%8s %10s %10s %12s %12s %10s %8s %8s %9s %12s %7s\n",
      r.game, f.blocks, f.filters, r.cpu_model, r.cores, f.in_flight, f.rows, f.seconds, "streams",
      "connect s", "RSS MiB", "idle KiB/st", "idle threads", "evals/s", "p50 ms", "p99 ms",
      "load RSS", "server cores", "failed");
  for (const StreamsBenchStep& s : r.steps) {
    absl::StrAppendFormat(
        &out, "%8d %10.2f %10.1f %12.1f %12d %10.1f %8.2f %8.2f %9.1f %12.2f %7d\n", s.streams,
        s.connect_seconds, s.rss_idle_bytes / 1048576.0, s.idle_bytes_per_stream / 1024.0,
        s.threads_idle, s.evals_per_sec, s.p50_ms, s.p99_ms, s.rss_load_bytes / 1048576.0,
        s.server_cpu_cores, s.failed_requests);
  }
  return out;
}

std::string FormatStreamsBenchJson(const StreamsBenchResult& r) {
  const StreamsBenchOptions& f = r.options;
  std::string steps;
  for (const StreamsBenchStep& s : r.steps) {
    absl::StrAppendFormat(
        &steps,
        "%s{\"streams\": %d, \"connect_seconds\": %.3f, \"rss_before_bytes\": %d, "
        "\"rss_idle_bytes\": %d, \"rss_load_bytes\": %d, \"threads_before\": %d, "
        "\"threads_idle\": %d, \"threads_load\": %d, \"idle_bytes_per_stream\": %.0f, "
        "\"evals_per_sec\": %.1f, \"p50_ms\": %.3f, \"p99_ms\": %.3f, \"server_cpu_cores\": %.3f, "
        "\"failed_requests\": %d}",
        steps.empty() ? "" : ", ", s.streams, s.connect_seconds, s.rss_before_bytes,
        s.rss_idle_bytes, s.rss_load_bytes, s.threads_before, s.threads_idle, s.threads_load,
        s.idle_bytes_per_stream, s.evals_per_sec, s.p50_ms, s.p99_ms, s.server_cpu_cores,
        s.failed_requests);
  }
  return absl::StrFormat(
      "{\"benchmark\": \"streams\", \"game\": %s, \"blocks\": %d, \"filters\": %d, "
      "\"rows_per_request\": %d, \"in_flight\": %d, \"seconds\": %.3f, \"cpu\": %s, "
      "\"cores\": %d, \"steps\": [%s]}\n",
      Json(r.game), f.blocks, f.filters, f.rows, f.in_flight, f.seconds, Json(r.cpu_model), r.cores,
      steps);
}

absl::Status ServingBenchOptions::Validate() const {
  if (server_binary.empty()) return absl::InvalidArgumentError("server_binary is required");
  if (rows.empty()) return absl::InvalidArgumentError("--row_counts: at least one count");
  for (int r : rows) {
    if (r < 1 || r > 1024) {
      return absl::InvalidArgumentError(
          absl::StrCat("--row_counts: rows per request in 1..1024, got ", r));
    }
  }
  if (transports.empty()) return absl::InvalidArgumentError("--transports: at least one");
  for (const std::string& t : transports) {
    if (t != "tcp" && t != "unix") {
      return absl::InvalidArgumentError(absl::StrCat("--transports: tcp or unix, got \"", t, "\""));
    }
  }
  if (streams < 1 || streams > 1024) {
    return absl::InvalidArgumentError(absl::StrCat("--streams must be in 1..1024, got ", streams));
  }
  if (in_flight < 1 || in_flight > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("--in_flight must be in 1..64, got ", in_flight));
  }
  if (!(seconds >= 0.1 && seconds <= 600)) {
    return absl::InvalidArgumentError(absl::StrCat("--seconds must be in 0.1..600, got ", seconds));
  }
  return absl::OkStatus();
}

absl::StatusOr<ServingBenchResult> RunServingBench(const ServingBenchOptions& f) {
  ZF_RETURN_IF_ERROR(f.Validate());
  ZF_ASSIGN_OR_RETURN(games::GameConfig config, games::ParseGameName(f.game));
  ZF_ASSIGN_OR_RETURN(const model::NetworkShape shape,
                      model::NetworkShapeForGame(config, 1, 1, false));
  ServingBenchResult result;
  result.options = f;
  result.game = config.name;
  result.plane_bytes = shape.PlaneSize();
  result.num_actions = shape.num_actions;
  result.cpu_model = CpuModelName();
  result.cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const std::string dir = absl::StrCat("/tmp/zf-bench-serving-", getpid());
  std::filesystem::create_directories(dir);
  absl::Cleanup remove_dir = [&] { std::filesystem::remove_all(dir); };
  for (const std::string& transport : f.transports) {
    const std::string listen =
        transport == "unix" ? absl::StrCat("unix:", dir, "/socket") : "127.0.0.1:0";
    ZF_ASSIGN_OR_RETURN(
        std::unique_ptr<testing::BackgroundProcess> server,
        testing::BackgroundProcess::Start(
            {f.server_binary, "inference", "--backend=null", "--listen=" + listen,
             "--game=" + config.name, "--max_batch=1024", "--batch_tuning=off",
             "--max_delay_us=500", "--workers=2", "--log_file=" + dir + "/server.log"},
            absl::StrCat(dir, "/server-", transport)));
    const absl::Time give_up = absl::Now() + absl::Seconds(120);
    while (server->Stdout().find("zf inference: serving") == std::string::npos) {
      if (!server->Running() || absl::Now() > give_up) {
        return absl::InternalError(absl::StrCat("zf inference did not start: ", server->Stderr()));
      }
      absl::SleepFor(absl::Milliseconds(50));
    }
    const std::string target =
        transport == "unix" ? listen : absl::StrCat("127.0.0.1:", ServedPort(server->Stdout()));
    const std::string pid = std::to_string(server->pid());
    for (int rows : f.rows) {
      ZF_ASSIGN_OR_RETURN(std::vector<std::unique_ptr<RemoteEvaluatorClient>> clients,
                          ConnectClients(target, shape, f.streams));
      const std::vector<uint8_t> planes = Planes(rows, shape.PlaneSize(), 7);
      // A short warm-up (connections, the server's buffers), then the window.
      (void)DriveClients(clients, planes, rows, f.in_flight, std::min(0.5, f.seconds), [] {});
      ZF_ASSIGN_OR_RETURN(clients, ConnectClients(target, shape, f.streams));
      ServingBenchStep step;
      step.transport = transport;
      step.rows = rows;
      const double cpu0 = ProcessCpuSeconds(pid);
      const double batcher0 = ThreadsCpuSeconds(pid, "zf-batcher");
      const absl::Time t0 = absl::Now();
      double cpu = 0, batcher = 0, window = 0;
      const LoadResult load = DriveClients(clients, planes, rows, f.in_flight, f.seconds, [&] {
        cpu = ProcessCpuSeconds(pid) - cpu0;
        batcher = ThreadsCpuSeconds(pid, "zf-batcher") - batcher0;
        window = absl::ToDoubleSeconds(absl::Now() - t0);
      });
      clients.clear();
      step.evals_per_sec = load.rows / load.seconds;
      step.p50_ms = load.p50_ms;
      step.p99_ms = load.p99_ms;
      step.failed_requests = load.failed;
      step.server_cpu_cores = window > 0 ? cpu / window : 0;
      if (load.rows > 0) {
        step.cpu_us_per_eval = 1e6 * cpu / load.rows;
        step.batcher_cpu_us_per_eval = 1e6 * batcher / load.rows;
        step.other_cpu_us_per_eval = 1e6 * (cpu - batcher) / load.rows;
      }
      result.steps.push_back(step);
      if (!server->Running()) {
        return absl::InternalError(absl::StrCat("zf inference died: ", server->Stderr()));
      }
    }
    server->Signal(SIGTERM);
    (void)server->Wait(absl::Seconds(60));
  }
  return result;
}

std::string FormatServingBenchTable(const ServingBenchResult& r) {
  const ServingBenchOptions& f = r.options;
  std::string out = absl::StrFormat(
      "The server's host path: one zf inference --backend null process (%s: %d input bytes, %d "
      "actions per position), %d client streams x %d in flight from another process, %.1f s; %s "
      "(%d cores)\n"
      "%9s %6s %11s %8s %8s %8s %13s %11s %11s %7s\n",
      r.game, r.plane_bytes, r.num_actions, f.streams, f.in_flight, f.seconds, r.cpu_model, r.cores,
      "transport", "rows", "evals/s", "p50 ms", "p99 ms", "cores", "CPU us/eval", "batcher us",
      "other us", "failed");
  for (const ServingBenchStep& s : r.steps) {
    absl::StrAppendFormat(&out, "%9s %6d %11.0f %8.2f %8.2f %8.2f %13.3f %11.3f %11.3f %7d\n",
                          s.transport, s.rows, s.evals_per_sec, s.p50_ms, s.p99_ms,
                          s.server_cpu_cores, s.cpu_us_per_eval, s.batcher_cpu_us_per_eval,
                          s.other_cpu_us_per_eval, s.failed_requests);
  }
  return out;
}

std::string FormatServingBenchJson(const ServingBenchResult& r) {
  const ServingBenchOptions& f = r.options;
  std::string steps;
  for (const ServingBenchStep& s : r.steps) {
    absl::StrAppendFormat(
        &steps,
        "%s{\"transport\": %s, \"rows_per_request\": %d, \"evals_per_sec\": %.1f, "
        "\"p50_ms\": %.3f, \"p99_ms\": %.3f, \"server_cpu_cores\": %.3f, "
        "\"cpu_us_per_eval\": %.4f, \"batcher_cpu_us_per_eval\": %.4f, "
        "\"other_cpu_us_per_eval\": %.4f, \"failed_requests\": %d}",
        steps.empty() ? "" : ", ", Json(s.transport), s.rows, s.evals_per_sec, s.p50_ms, s.p99_ms,
        s.server_cpu_cores, s.cpu_us_per_eval, s.batcher_cpu_us_per_eval, s.other_cpu_us_per_eval,
        s.failed_requests);
  }
  return absl::StrFormat(
      "{\"benchmark\": \"serving\", \"backend\": \"null\", \"game\": %s, \"plane_bytes\": %d, "
      "\"num_actions\": %d, \"streams\": %d, \"in_flight\": %d, \"seconds\": %.3f, "
      "\"cpu\": %s, \"cores\": %d, \"steps\": [%s]}\n",
      Json(r.game), r.plane_bytes, r.num_actions, f.streams, f.in_flight, f.seconds,
      Json(r.cpu_model), r.cores, steps);
}

}  // namespace zf::inference
