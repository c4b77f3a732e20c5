// ModelWatcher: keeps an inference server on the newest published model.
//
// An owned thread holds a WatchVersions stream to a zerofleet.v1.ModelService (the learner's
// ModelServer). For each announced version newer than the one serving (and not already refused)
// it fetches the checkpoint in chunks into a hidden temporary file in `temp_dir`, checks the
// size and the SHA-256 the server announced, and calls `reload` (InferenceServer::Reload: loads
// and warms the model off the serving path and swaps it in between batches; it refuses a
// corrupt, mismatched or older checkpoint and the old model keeps serving). The temporary file
// is removed afterwards. A version that fails (bad hash, refused by `reload`) is not retried; a
// later version is. When the stream breaks (learner restarting, network) it reconnects after a
// jittered exponential backoff.
//
// Versions only go up: a version is fetched only if it is newer than `current_version()`.
//
// Thread-safety: thread-safe. Stop() / the destructor cancels the RPC in flight and joins.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/grpc/channel.h"
#include "common/thread.h"
#include "grpcpp/grpcpp.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "proto/zerofleet/v1/model.grpc.pb.h"

namespace zf::inference {

struct ModelWatcherOptions {
  std::string address;  // "host:port" of the model service
  // Where fetched checkpoints are written before loading; must exist. Default: /tmp.
  std::string temp_dir = "/tmp";
  // Loads the checkpoint at `path`; OK when the new model serves (InferenceServer::Reload).
  std::function<absl::Status(const std::string& path)> reload;
  // The version serving now (InferenceServer::model_version).
  std::function<int64_t()> current_version;
  absl::Duration fetch_timeout = absl::Seconds(60);
  absl::Duration initial_backoff = absl::Milliseconds(100);
  absl::Duration max_backoff = absl::Seconds(5);
  grpc_util::WireSettings wire;
  // Where the metrics go (zf_inference_model_reloads_total{result=ok|refused|fetch_failed});
  // null: none.
  std::shared_ptr<prometheus::Registry> registry;

  // Returns: OK; InvalidArgument naming the bad field.
  absl::Status Validate() const;
};

struct ModelWatcherStats {
  int64_t loaded = 0;        // versions reloaded successfully
  int64_t refused = 0;       // versions `reload` refused
  int64_t fetch_failed = 0;  // versions whose fetch or hash check failed
  int64_t reconnects = 0;    // WatchVersions streams opened after the first
  int64_t last_version_seen = 0;
  absl::Status last_error;
};

class ModelWatcher {
 public:
  // Starts watching. Returns: the watcher; InvalidArgument (options).
  static absl::StatusOr<std::unique_ptr<ModelWatcher>> Create(ModelWatcherOptions options);
  ~ModelWatcher();  // Stop()
  ModelWatcher(const ModelWatcher&) = delete;
  ModelWatcher& operator=(const ModelWatcher&) = delete;

  // Cancels the stream or fetch in flight and joins the thread. Idempotent.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  ModelWatcherStats stats() const ABSL_LOCKS_EXCLUDED(mu_);
  // Blocks until loaded + refused + fetch_failed >= `outcomes` or `deadline`.
  // Returns: true if reached.
  bool WaitForOutcomes(int64_t outcomes, absl::Time deadline) const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  explicit ModelWatcher(ModelWatcherOptions options);
  void Loop() ABSL_LOCKS_EXCLUDED(mu_);
  // One WatchVersions stream until it ends. Returns its final status.
  absl::Status WatchOnce() ABSL_LOCKS_EXCLUDED(mu_);
  void Handle(const zerofleet::v1::ModelVersion& version) ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::string> Fetch(const zerofleet::v1::ModelVersion& version)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Registers `context` as in flight; false if stopped (then do not start the call).
  bool Begin(grpc::ClientContext* context) ABSL_LOCKS_EXCLUDED(mu_);
  void End() ABSL_LOCKS_EXCLUDED(mu_);
  // Whether Stop() was called.
  bool Stopping() ABSL_LOCKS_EXCLUDED(mu_);
  void Record(absl::Status status, int64_t ModelWatcherStats::*counter) ABSL_LOCKS_EXCLUDED(mu_);

  const ModelWatcherOptions options_;
  std::unique_ptr<zerofleet::v1::ModelService::Stub> stub_;
  std::mt19937_64 rng_;        // the thread's only
  int64_t refused_above_ = 0;  // the thread's only: highest version that failed

  prometheus::Counter* reloads_ok_ = nullptr;
  prometheus::Counter* reloads_refused_ = nullptr;
  prometheus::Counter* reloads_fetch_failed_ = nullptr;

  mutable absl::Mutex mu_;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  grpc::ClientContext* in_flight_ ABSL_GUARDED_BY(mu_) = nullptr;
  ModelWatcherStats stats_ ABSL_GUARDED_BY(mu_);

  std::unique_ptr<Thread> thread_;
};

}  // namespace zf::inference
