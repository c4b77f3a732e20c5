// ModelServer: serves a learner's checkpoint directory as zerofleet.v1.ModelService (see
// proto/zerofleet/v1/model.proto): the latest version, a stream of new versions, and the
// checkpoint files in chunks.
//
// An owned thread looks at DIR/latest every `poll_interval`, or at once after Notify() (the
// in-process learner calls it from LearnerOptions::on_publish). When `latest` names a newer
// version, it reads the manifest, hashes the whole file (SHA-256) and wakes every WatchVersions
// stream. FetchCheckpoint reads the requested file whole (published files never change) and
// sends it in chunks with that file's hash, so a fetcher can verify what it got.
//
// The service uses gRPC's synchronous API: a WatchVersions stream holds one server thread while
// it waits (waking every 200 ms to notice cancellation); watchers are a handful of inference
// servers, so that is cheap and keeps the code short.
//
// Thread-safety: thread-safe. Shutdown() (and the destructor) ends the streams with
// UNAVAILABLE, stops the server and joins the thread.
#pragma once

#include <cstdint>
#include <memory>
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

namespace zf::learner {

class ModelServer {
 public:
  struct Options {
    std::string checkpoint_dir;                    // DIR/checkpoints; need not exist yet
    std::string listen_address = "0.0.0.0:50061";  // port 0 picks a free one (see port())
    absl::Duration poll_interval = absl::Seconds(1);
    int chunk_bytes = 1 << 20;  // 1 KiB .. 16 MiB
    grpc_util::WireSettings wire;
    // Where the server's metrics go (calls denied by mutual TLS authorization); may be null.
    std::shared_ptr<prometheus::Registry> registry;
    // Returns: OK; InvalidArgument naming the bad field.
    absl::Status Validate() const;
  };

  // Starts listening (health SERVING) and the polling thread.
  // Returns: the server; InvalidArgument (options); Unavailable (cannot bind).
  static absl::StatusOr<std::unique_ptr<ModelServer>> Create(Options options);
  ~ModelServer();
  ModelServer(const ModelServer&) = delete;
  ModelServer& operator=(const ModelServer&) = delete;

  // Looks at `latest` now instead of at the next poll. Non-blocking.
  void Notify() ABSL_LOCKS_EXCLUDED(mu_);
  // Drains and stops. Blocks until the streams have ended. Idempotent.
  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_);

  int port() const { return port_; }
  // The newest version seen, or 0 before any.
  int64_t latest_version() const ABSL_LOCKS_EXCLUDED(mu_);

  class Service;

 private:
  explicit ModelServer(Options options);
  void PollLoop() ABSL_LOCKS_EXCLUDED(mu_);
  void Refresh() ABSL_LOCKS_EXCLUDED(mu_);

  friend class Service;
  const Options options_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;

  mutable absl::Mutex mu_;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  bool notified_ ABSL_GUARDED_BY(mu_) = false;
  // The latest published version; version 0 = none yet.
  zerofleet::v1::ModelVersion latest_ ABSL_GUARDED_BY(mu_);
  std::string latest_path_ ABSL_GUARDED_BY(mu_);
  std::string refused_path_;  // poller thread: the last file refused as damaged (warned once)

  std::unique_ptr<Thread> poller_;
};

}  // namespace zf::learner
