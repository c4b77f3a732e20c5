// Inference serving benchmark: what central dynamic batching over gRPC buys on this machine.
// Run by `zf bench inference` (cli/commands/bench_commands.cc); speed is never asserted in tests.
//
// (1) raw: InferenceSession::Run in process, batch 1, 2, 4, ... max_batch, two threads calling
//     at once (as the server's two workers do): positions/s.
// (2) served: an InferenceServer (TorchBackend, max_batch N, 2 workers) on loopback TCP or a Unix
//     domain socket (`transport`) and S
//     RemoteEvaluatorClients, each keeping K requests of R positions in flight for T seconds:
//     evaluations/s, mean batch (rows per forward pass), p50/p99 request latency.
//     serving_efficiency = (2) / (1) at the batch size nearest the mean batch.
// (3) baseline: P threads, each with its own copy of the network, evaluating one position at a
//     time (intra-op threads 1), as home-grown loops do. batching_speedup = (2) / (3).
//
// RunInferenceBench blocks for about 2.5 x `seconds` plus setup. It sets LibTorch's process-wide
// intra-op thread count. Not thread-safe: run one at a time.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace zf::inference {

struct InferenceBenchOptions {
  std::string game = "connect4";  // a games/registry.h name
  int blocks = 4;                 // network shape
  int filters = 64;
  bool global_pooling = false;  // NetworkShape::global_pooling
  int max_batch = 16;           // server max batch and largest raw batch, 1..4096
  int streams = 8;              // S clients
  int rows = 2;                 // R positions per request
  int in_flight = 2;            // K requests in flight per client
  int baseline_threads = 8;     // P
  int intra_op_threads = 1;     // of the raw and served network (process-wide)
  double seconds = 3;           // measuring window of (2) and (3); (1) uses max(1, seconds/2)
  // The wire of (2): "tcp" (127.0.0.1) or "unix" (a socket file in /tmp, removed after).
  std::string transport = "tcp";
  // Where every network of the benchmark runs, and how (model::InferenceSession::Options).
  std::string device = "cpu";
  std::string precision = "auto";
  bool cuda_graphs = true;
  // The device's peak rate in the arithmetic used, TFLOP/s, for the "share of peak" column;
  // 0: looked up from the GPU's name for H100/H200/A100 (dense bf16), else not reported.
  double peak_tflops = 0;
  // The server's batcher (2): with batch_tuning it chooses max_batch (up to `max_batch`) and
  // max_delay itself (inference_server/batch_tuner.h), forward passes at most batch_latency_ms;
  // without, max_batch and max_delay_us are used as given.
  bool batch_tuning = true;
  double batch_latency_ms = 20;
  int max_delay_us = 500;

  // Returns: OK; InvalidArgument naming the field and value.
  absl::Status Validate() const;
};

struct InferenceBenchResult {
  InferenceBenchOptions options;
  std::string game;                // canonical game name
  std::string shape;               // NetworkShape::DebugString()
  std::string device;              // "cpu", or the GPU's name
  std::string precision;           // of the networks: fp32, bf16, fp16
  int64_t flops_per_position = 0;  // NetworkShape::ForwardFlops()
  double peak_tflops = 0;          // 0: unknown
  std::string cpu_model;           // /proc/cpuinfo "model name"
  int cores = 0;
  std::vector<std::pair<int, double>> raw;  // (batch, evals/s)
  double evals_per_sec = 0;                 // (2)
  double mean_batch = 0;
  double p50_ms = 0;
  double p99_ms = 0;
  double serving_efficiency = 0;
  int efficiency_at_batch = 0;
  // Requests of (2) answered with an error (e.g. the server's queue full); each one ends its
  // stream's submissions, so fewer streams than asked kept requests in flight.
  int64_t failed_requests = 0;
  // The batcher's limits at the end of (2): the tuner's choice, or the options'.
  int served_max_batch = 0;
  double served_max_delay_ms = 0;
  std::string tuning_curve;           // BatchTuner::CurveString(), "" without tuning
  double baseline_evals_per_sec = 0;  // (3)
  double batching_speedup = 0;
};

// Returns: the measurements; InvalidArgument for bad options (unknown game, bad shape);
//          the status of a failing forward pass, server start or client.
absl::StatusOr<InferenceBenchResult> RunInferenceBench(const InferenceBenchOptions& options);

// Human-readable table, several lines ending in '\n'.
std::string FormatInferenceBenchTable(const InferenceBenchResult& result);
// One JSON object and '\n'. Fields: device, precision, cuda_graphs, cpu, cores,
// intra_op_threads, game, shape, blocks, filters, flops_per_position, peak_tflops,
// raw[{batch, evals_per_sec, tflops, peak_share}] (peak_share null when the peak is unknown;
// evals_per_sec of raw_callers threads together), raw_callers (2),
// streams, rows_per_request, in_flight, max_batch, transport,
// evals_per_sec, mean_batch, p50_ms, p99_ms, serving_efficiency, efficiency_at_batch,
// failed_requests,
// baseline_threads, baseline_evals_per_sec, batching_speedup, seconds.
std::string FormatInferenceBenchJson(const InferenceBenchResult& result);

// `zf bench streams`: one `zf inference` process (the server alone in its process, so its memory
// and threads are its own) driven by N client streams from this process, for each N in
// `streams`: first idle (each client has opened its stream and sends nothing), then each keeping
// `in_flight` requests of `rows` rows in flight for `seconds`. Every client has its own
// connection (RemoteEvaluatorClient), as actors on different hosts would.
struct StreamsBenchOptions {
  std::string server_binary;  // run as `server_binary inference ...`: zf or zf-torch
  std::string game = "connect4";
  int blocks = 2;
  int filters = 32;
  bool global_pooling = false;                 // NetworkShape::global_pooling
  std::vector<int> streams = {10, 100, 1000};  // each 1..20000, increasing
  int rows = 2;                                // 1..4096
  int in_flight = 1;                           // 1..64
  double seconds = 3;

  // Returns: OK; InvalidArgument naming the field and value.
  absl::Status Validate() const;
};

struct StreamsBenchStep {
  int streams = 0;
  // The server before the clients connected, with them connected and idle, and at the end of
  // the load window: resident memory (VmRSS) and threads.
  int64_t rss_before_bytes = 0;
  int64_t rss_idle_bytes = 0;
  int64_t rss_load_bytes = 0;
  int threads_before = 0;
  int threads_idle = 0;
  int threads_load = 0;
  double idle_bytes_per_stream = 0;  // (rss_idle - rss_before) / streams
  double evals_per_sec = 0;
  double p50_ms = 0;
  double p99_ms = 0;
  int64_t failed_requests = 0;
  double connect_seconds = 0;  // until every client's stream was open
  // The server's CPU time (user + system) over the load window, in cores: how busy it was.
  double server_cpu_cores = 0;
};

struct StreamsBenchResult {
  StreamsBenchOptions options;
  std::string game;
  std::string cpu_model;
  int cores = 0;
  std::vector<StreamsBenchStep> steps;
};

// Returns: the measurements; InvalidArgument for bad options; Internal when the server does not
// start or dies, or a client cannot be created.
absl::StatusOr<StreamsBenchResult> RunStreamsBench(const StreamsBenchOptions& options);
std::string FormatStreamsBenchTable(const StreamsBenchResult& result);
std::string FormatStreamsBenchJson(const StreamsBenchResult& result);

// `zf bench serving`: the server's host path alone. One `zf inference --backend null` process
// (fixed answers at no cost: inference_server/null_backend.h; max_batch 1024, no batch tuning,
// 2 workers) driven from this process by `streams` clients, each keeping `in_flight` requests
// of R rows in flight for `seconds`, for each R in `rows` over each transport in `transports`
// (a server per transport). Measured from the server's own CPU time (/proc/PID/stat, user +
// system): CPU-microseconds per evaluation, split between its batcher threads ("zf-batcher-*":
// batch assembly, the backend, the answers' copies and encoding, and gRPC's write of them) and
// the rest (gRPC's threads: reading, parsing and validating requests). cores / (CPU-seconds per
// evaluation) is the most evaluations/s a server host can feed a GPU.
struct ServingBenchOptions {
  std::string server_binary;  // run as `server_binary inference ...`: zf or zf-torch
  std::string game = "connect4";
  std::vector<int> rows = {16, 64, 256, 1024};  // rows per request, each 1..1024
  std::vector<std::string> transports = {"tcp", "unix"};
  int streams = 4;    // 1..1024
  int in_flight = 2;  // 1..64
  double seconds = 3;

  // Returns: OK; InvalidArgument naming the field and value.
  absl::Status Validate() const;
};

struct ServingBenchStep {
  std::string transport;
  int rows = 0;
  double evals_per_sec = 0;
  double p50_ms = 0;
  double p99_ms = 0;
  int64_t failed_requests = 0;
  double server_cpu_cores = 0;         // the server's CPU time over the window, in cores
  double cpu_us_per_eval = 0;          // the server's CPU-microseconds per evaluation
  double batcher_cpu_us_per_eval = 0;  // of it, in the batcher's threads
  double other_cpu_us_per_eval = 0;    // of it, in every other thread (gRPC's)
};

struct ServingBenchResult {
  ServingBenchOptions options;
  std::string game;
  int64_t plane_bytes = 0;  // one position's input
  int num_actions = 0;
  std::string cpu_model;
  int cores = 0;
  std::vector<ServingBenchStep> steps;
};

// Returns: the measurements; InvalidArgument for bad options; Internal when a server does not
// start or dies, or a client cannot be created.
absl::StatusOr<ServingBenchResult> RunServingBench(const ServingBenchOptions& options);
std::string FormatServingBenchTable(const ServingBenchResult& result);
std::string FormatServingBenchJson(const ServingBenchResult& result);

}  // namespace zf::inference
