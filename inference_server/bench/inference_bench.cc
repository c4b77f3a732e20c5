// Inference serving benchmark: what central dynamic batching over gRPC buys on this machine.
//
//   build/inference_server/inference_bench [--json] [--game G] [--blocks B] [--filters F]
//       [--max_batch N] [--streams S] [--rows R] [--in_flight K] [--baseline_threads P]
//       [--seconds T] [--intra_op_threads N]
//
// (1) raw: InferenceSession::Run in process, batch 1, 2, 4, ... max_batch, two threads calling
//     at once (as the server's two workers do): positions/s.
// (2) served: an InferenceServer (TorchBackend, max_batch N, 2 workers) on loopback and S
//     RemoteEvaluatorClients, each keeping K requests of R positions in flight for T seconds:
//     evaluations/s, mean batch (rows per forward pass), p50/p99 request latency.
//     serving_efficiency = (2) / (1) at the batch size nearest the mean batch.
// (3) baseline: P threads, each with its own copy of the network, evaluating one position at a
//     time (intra-op threads 1), as home-grown loops do. batching_speedup = (2) / (3).
// Prints a table and, with --json, one JSON object.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <cstdint>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
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

struct Flags {
  bool json = false;
  std::string game = "connect4";
  int blocks = 4, filters = 64, max_batch = 16, streams = 8, rows = 2, in_flight = 2;
  int baseline_threads = 8;
  int intra_op_threads = 1;  // of the raw and served network (process-wide)
  double seconds = 3;
};

void Die(const std::string& message) {
  std::cerr << "inference_bench: " << message << "\n";
  std::exit(2);
}

template <typename T>
T Check(absl::StatusOr<T> v) {
  if (!v.ok()) Die(v.status().ToString());
  return *std::move(v);
}

Flags ParseFlags(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--json") {
      f.json = true;
      continue;
    }
    if (i + 1 >= argc) Die(absl::StrCat("missing value for ", a));
    std::string v = argv[++i];
    int* ints[] = {&f.blocks, &f.filters, &f.max_batch, &f.streams, &f.rows, &f.in_flight,
                   &f.baseline_threads, &f.intra_op_threads};
    const char* names[] = {"--blocks", "--filters", "--max_batch", "--streams", "--rows",
                           "--in_flight", "--baseline_threads", "--intra_op_threads"};
    bool done = false;
    for (int k = 0; k < 8; ++k) {
      if (a == names[k]) {
        if (!absl::SimpleAtoi(v, ints[k]) || *ints[k] < 1) Die(absl::StrCat("bad ", a));
        done = true;
      }
    }
    if (done) continue;
    if (a == "--game") {
      f.game = v;
    } else if (a == "--seconds") {
      if (!absl::SimpleAtod(v, &f.seconds) || f.seconds <= 0) Die("bad --seconds");
    } else {
      Die(absl::StrCat("unknown flag ", a));
    }
  }
  return f;
}

std::unique_ptr<model::InferenceSession> Session(const model::NetworkShape& shape, int threads) {
  model::InferenceSession::Options o;
  o.shape = shape;
  o.seed = 1;
  o.intra_op_threads = threads;
  return Check(model::InferenceSession::Create(o));
}

std::vector<uint8_t> Planes(int rows, int64_t plane_size, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> planes(static_cast<size_t>(rows * plane_size));
  for (uint8_t& b : planes) b = rng() % 4 == 0;
  return planes;
}

// Positions/s of `session` at `batch` for about `seconds`, with `callers` threads calling Run at
// once (the server runs its `num_workers` batches at once the same way).
double RawThroughput(const model::InferenceSession& session, int batch, double seconds,
                     int callers = 1) {
  const model::NetworkShape& s = session.shape();
  std::atomic<int64_t> runs{0};
  const absl::Time start = absl::Now();
  const absl::Time end = start + absl::Seconds(seconds);
  {
    std::vector<std::unique_ptr<Thread>> threads;
    for (int c = 0; c < callers; ++c) {
      threads.push_back(std::make_unique<Thread>("raw", [&, c] {
        std::vector<uint8_t> planes = Planes(batch, s.PlaneSize(), batch + c);
        std::vector<float> logits(static_cast<size_t>(batch) * s.num_actions), wdl(batch * 3);
        for (int i = 0; i < 5; ++i) (void)session.Run(planes, batch, logits, wdl);  // warm-up
        while (absl::Now() < end) {
          if (!session.Run(planes, batch, logits, wdl).ok()) Die("forward pass failed");
          runs.fetch_add(1);
        }
      }));
    }
  }
  return runs.load() * batch / absl::ToDoubleSeconds(absl::Now() - start);
}

int Main(int argc, char** argv) {
  const Flags f = ParseFlags(argc, argv);
  games::GameConfig config = Check(games::ParseGameName(f.game));
  const model::NetworkShape shape = games::VisitGame(config, [&](const auto& game) {
    return model::NetworkShapeForGame(game, f.blocks, f.filters);
  });
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));

  // (1) raw forward throughput by batch size.
  std::shared_ptr<model::InferenceSession> session = Session(shape, f.intra_op_threads);
  std::vector<std::pair<int, double>> raw;
  for (int b = 1; b <= f.max_batch; b *= 2) raw.push_back({b, RawThroughput(*session, b, std::max(1.0, f.seconds / 2), kWorkers)});

  // (2) the server under S streaming clients.
  InferenceServer::Options so;
  so.listen_address = "127.0.0.1:0";
  so.backend = Check(TorchBackend::Create({.session = session, .max_batch = f.max_batch}));
  so.game = config.name;
  so.batcher.max_batch = f.max_batch;
  so.batcher.max_delay = absl::Microseconds(500);
  so.batcher.num_workers = kWorkers;
  std::unique_ptr<InferenceServer> server = Check(InferenceServer::Create(std::move(so)));
  if (!server->Serve().ok()) Die("warm-up failed");
  std::vector<std::unique_ptr<RemoteEvaluatorClient>> clients;
  for (int s = 0; s < f.streams; ++s) {
    RemoteEvaluatorClient::Options co;
    co.target = absl::StrCat("127.0.0.1:", server->port());
    co.input_channels = shape.input_channels;
    co.board_height = shape.board_height;
    co.board_width = shape.board_width;
    clients.push_back(Check(RemoteEvaluatorClient::Create(co)));
  }
  absl::Mutex mu;
  std::vector<double> latencies_ms;
  std::atomic<int64_t> evaluated{0};
  std::atomic<bool> stop{false};
  std::atomic<int> outstanding{0};
  std::vector<uint8_t> planes = Planes(f.rows, shape.PlaneSize(), 7);
  // Each answer submits the next request on the same client, keeping K in flight per client.
  std::function<void(int)> submit = [&](int s) {
    const absl::Time t0 = absl::Now();
    outstanding.fetch_add(1);
    absl::Status st = clients[s]->Submit(
        planes, f.rows, [&, s, t0](absl::StatusOr<RemoteEvaluatorClient::Result> r) {
          if (r.ok() && !stop.load()) {
            evaluated.fetch_add(r->rows);
            {
              absl::MutexLock lock(&mu);
              latencies_ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - t0));
            }
            submit(s);
          }
          outstanding.fetch_sub(1);
        });
    if (!st.ok()) outstanding.fetch_sub(1);
  };
  const Batcher::Stats before = server->batcher().stats();
  const absl::Time start = absl::Now();
  for (int s = 0; s < f.streams; ++s) {
    for (int k = 0; k < f.in_flight; ++k) submit(s);
  }
  absl::SleepFor(absl::Seconds(f.seconds));  // the measuring window (a benchmark, not a test)
  const int64_t served_rows = evaluated.load();
  const double served_seconds = absl::ToDoubleSeconds(absl::Now() - start);
  stop.store(true);
  const Batcher::Stats after = server->batcher().stats();
  for (auto& c : clients) c->Close();
  server->Shutdown();
  const double served = served_rows / served_seconds;
  const double mean_batch =
      static_cast<double>(after.rows_evaluated - before.rows_evaluated) /
      std::max<int64_t>(1, after.batches_completed - before.batches_completed);
  std::sort(latencies_ms.begin(), latencies_ms.end());
  auto pct = [&](double p) {
    return latencies_ms.empty() ? 0.0 : latencies_ms[static_cast<size_t>(p * (latencies_ms.size() - 1))];
  };
  auto nearest = std::min_element(raw.begin(), raw.end(), [&](const auto& a, const auto& b) {
    return std::abs(a.first - mean_batch) < std::abs(b.first - mean_batch);
  });

  // (3) baseline: P threads, each its own model copy, batch 1, one intra-op thread.
  std::vector<std::shared_ptr<model::InferenceSession>> copies;
  for (int p = 0; p < f.baseline_threads; ++p) copies.push_back(Session(shape, 1));
  std::atomic<int64_t> baseline_rows{0};
  const absl::Time b0 = absl::Now();
  {
    std::vector<std::unique_ptr<Thread>> threads;
    for (int p = 0; p < f.baseline_threads; ++p) {
      threads.push_back(std::make_unique<Thread>("baseline", [&, p] {
        baseline_rows.fetch_add(static_cast<int64_t>(
            RawThroughput(*copies[p], 1, f.seconds) * f.seconds));
      }));
    }
  }
  const double baseline = baseline_rows.load() / absl::ToDoubleSeconds(absl::Now() - b0);

  const double efficiency = served / nearest->second;
  const double speedup = served / baseline;
  if (f.json) {
    std::string raw_json;
    for (const auto& [b, v] : raw) absl::StrAppend(&raw_json, raw_json.empty() ? "" : ", ", "{\"batch\": ", b, ", \"evals_per_sec\": ", absl::StrFormat("%.1f", v), "}");
    std::cout << absl::StrFormat(
        "{\"device\": \"cpu\", \"cores\": %d, \"intra_op_threads\": %d, \"game\": \"%s\", \"blocks\": %d, \"filters\": %d, "
        "\"raw\": [%s], \"streams\": %d, \"rows_per_request\": %d, \"in_flight\": %d, "
        "\"max_batch\": %d, \"evals_per_sec\": %.1f, \"mean_batch\": %.2f, \"p50_ms\": %.3f, "
        "\"p99_ms\": %.3f, \"serving_efficiency\": %.3f, \"efficiency_at_batch\": %d, "
        "\"baseline_threads\": %d, \"baseline_evals_per_sec\": %.1f, \"batching_speedup\": %.2f}\n",
        cores, f.intra_op_threads, config.name, f.blocks, f.filters, raw_json, f.streams, f.rows, f.in_flight,
        f.max_batch, served, mean_batch, pct(0.5), pct(0.99), efficiency, nearest->first,
        f.baseline_threads, baseline, speedup);
  } else {
    std::cout << absl::StrFormat("%s, %d blocks x %d filters, CPU, %d cores, %d intra-op threads\n",
                                 config.name, f.blocks, f.filters, cores, f.intra_op_threads);
    std::cout << "(1) raw forward pass\n  batch  evals/s\n";
    for (const auto& [b, v] : raw) std::cout << absl::StrFormat("  %5d  %8.1f\n", b, v);
    std::cout << absl::StrFormat(
        "(2) served: %d streams x %d in flight x %d rows: %.1f evals/s, mean batch %.2f, "
        "p50 %.2f ms, p99 %.2f ms, serving efficiency %.2f (vs batch %d)\n",
        f.streams, f.in_flight, f.rows, served, mean_batch, pct(0.5), pct(0.99), efficiency,
        nearest->first);
    std::cout << absl::StrFormat(
        "(3) baseline: %d threads, own model copy each, batch 1: %.1f evals/s; batching speedup "
        "%.2f\n",
        f.baseline_threads, baseline, speedup);
  }
  return 0;
}

}  // namespace
}  // namespace zf::inference

int main(int argc, char** argv) { return zf::inference::Main(argc, argv); }
