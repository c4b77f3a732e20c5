// ReplayServer: one replay shard served over gRPC (the process behind `zf replay`).
//
// Create() validates the options, starts listening with grpc.health.v1 reporting NOT_SERVING
// (and the Replay service answering UNAVAILABLE), starts the metrics endpoint if asked, recovers
// the shard from its log in `dir`, and only then reports SERVING. Shutdown() drains: health
// NOT_SERVING, new calls answer UNAVAILABLE, accepted inserts finish (up to drain_timeout), then
// the shard closes (waking calls still blocked in the rate limiter, which answer UNAVAILABLE), the
// workers are joined, the gRPC server stops and the log is closed.
//
// Thread-safe: Shutdown() may be called from any thread, once or more; the destructor calls it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/grpc/channel.h"
#include "common/metrics/metrics_server.h"
#include "grpcpp/grpcpp.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "replay/service/replay_service.h"
#include "replay/service/worker_pool.h"
#include "replay/shard.h"

namespace zf::replay {

struct ReplayServerOptions {
  std::string listen = "0.0.0.0:7400";  // HOST:PORT; port 0 picks a free one (see port())
  std::string dir;                      // the shard's log directory (required)
  int64_t capacity_positions = 1'000'000;
  // Rate limiter (Reverb's SampleToInsertRatio; see replay/rate_limiter.h).
  double samples_per_insert = 4.0;
  int64_t min_size_to_sample = 1000;
  // Sample distinct positions with their occurrences' mean targets (replay/table.h).
  bool position_averaging = false;
  // Half the width of the diff band; must exceed (max_positions_per_game * samples_per_insert +
  // max_sample_positions) / 2.
  double error_buffer = 1e9;
  int max_positions_per_game = 512;
  int64_t max_sample_positions = 4096;
  // "" for none; else HOST:PORT for the Prometheus /metrics endpoint.
  std::string metrics_listen;
  // Threads and queues for inserts and for samples (separate, so samples waiting for inserts
  // cannot starve them).
  WorkerPoolOptions insert_workers{.num_threads = 8, .queue_capacity = 256};
  WorkerPoolOptions sample_workers{.num_threads = 4, .queue_capacity = 64};
  grpc_util::WireSettings wire;
  // How long Shutdown() lets accepted inserts finish before closing the shard.
  absl::Duration drain_timeout = absl::Seconds(10);
  // Called once the server listens (health NOT_SERVING) and before recovery starts, with the bound
  // port. For tests and logs; may be empty.
  std::function<void(int port)> on_listening;

  // The shard's options (the registry is filled in by Create).
  ShardOptions ShardOptionsFor() const;
  // Returns: OK; InvalidArgument naming the bad option.
  absl::Status Validate() const;
};

class ReplayServer {
 public:
  // Starts the server and recovers the shard (blocks on disk I/O for the recovery).
  // Returns: the serving server; InvalidArgument (options); Unavailable (cannot listen on
  // `listen` or `metrics_listen`); Internal (the log cannot be read or written).
  static absl::StatusOr<std::unique_ptr<ReplayServer>> Create(ReplayServerOptions options);
  ~ReplayServer();  // Shutdown()

  ReplayServer(const ReplayServer&) = delete;
  ReplayServer& operator=(const ReplayServer&) = delete;

  // Drains and stops (see the class comment). Blocks until done. Idempotent.
  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_);

  int port() const { return port_; }
  // "" without a metrics endpoint.
  std::string metrics_address() const;
  const std::shared_ptr<prometheus::Registry>& registry() const { return registry_; }
  // For tests: the shard's core (its stats, table, recovery report).
  const Shard& shard() const { return *shard_; }

 private:
  explicit ReplayServer(ReplayServerOptions options);

  const ReplayServerOptions options_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<WorkerPool> insert_pool_;
  std::unique_ptr<WorkerPool> sample_pool_;
  std::unique_ptr<ReplayService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<metrics::MetricsServer> metrics_server_;
  std::unique_ptr<Shard> shard_;
  int port_ = 0;

  absl::Mutex mu_;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace zf::replay
