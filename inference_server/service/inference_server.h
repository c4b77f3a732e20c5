// InferenceServer: one process's inference service: a Batcher over a Backend, the gRPC
// InferenceService on a listening port (with grpc.health.v1 and reflection), and optionally a
// Prometheus /metrics endpoint.
//
// Lifecycle:
//   Create   builds the batcher and starts listening; health is NOT_SERVING (requests that
//            arrive are queued and answered once workers run them).
//   Serve    warms the model up with one full batch (the first forward pass of a network is slow:
//            allocation, kernel selection), then sets health SERVING. Blocks for that pass.
//   Reload   loads a new model through Options::loader off the serving path, warms it up and
//            swaps it in between batches (Batcher::SwapBackend): no request fails. A checkpoint
//            that does not load, has another shape, or an older version than the one serving
//            is refused and the old model keeps serving.
//   Shutdown drains: health NOT_SERVING, later requests are answered CANCELLED, in-flight
//            batches finish and their answers are written, queued rows are answered CANCELLED,
//            streams end with UNAVAILABLE once their clients have closed their side (as the
//            drain notice asks; at most Options::drain_grace), then the gRPC server stops.
//
//   ZF_ASSIGN_OR_RETURN(auto server, InferenceServer::Create(options));
//   ZF_RETURN_IF_ERROR(server->Serve());
//   ...  server->Reload(path) on SIGHUP ...
//   server->Shutdown();
//
// Thread-safety: thread-safe. Reload calls are serialized. Lifetime: the destructor shuts down.
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
#include "inference_server/backend.h"
#include "inference_server/batcher.h"
#include "inference_server/service/inference_service.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace zf::inference {

class InferenceServer {
 public:
  // Loads the model in `checkpoint_path` (e.g. a TorchBackend). Called by Reload, off the
  // serving path. Returns the backend or the load error (NotFound, DataLoss, InvalidArgument).
  using BackendLoader =
      std::function<absl::StatusOr<std::shared_ptr<Backend>>(const std::string& checkpoint_path)>;

  struct Options {
    // gRPC "HOST:PORT"; port 0 picks a free one (see port()).
    std::string listen_address = "0.0.0.0:50051";
    // The first model. Required.
    std::shared_ptr<Backend> backend;
    // How Reload loads a checkpoint; empty: Reload answers FailedPrecondition.
    BackendLoader loader;
    // Canonical game name, reported by GetModelInfo.
    std::string game;
    // Batching: every field but `backend` and `registry` (set by the server) is used.
    Batcher::Options batcher;
    // See InferenceService::Options.
    int max_in_flight_per_stream = 256;
    // Shutdown: how long, once the in-flight batches are done, streams may wait for their
    // clients to close their side (as the drain notice asks) before they are ended anyway.
    absl::Duration drain_grace = absl::Seconds(1);
    // "HOST:PORT" for Prometheus /metrics; empty for none.
    std::string metrics_listen;
    // Where metrics go; default (null): a registry of the server's own.
    std::shared_ptr<prometheus::Registry> registry;
    grpc_util::WireSettings wire;
  };

  // Validates the options, builds the batcher and the service, starts listening (health
  // NOT_SERVING) and the metrics endpoint.
  // Returns the server, or: InvalidArgument for bad options (batcher options included);
  // Unavailable when an address cannot be bound.
  static absl::StatusOr<std::unique_ptr<InferenceServer>> Create(Options options);

  ~InferenceServer();
  InferenceServer(const InferenceServer&) = delete;
  InferenceServer& operator=(const InferenceServer&) = delete;

  // Runs one warm-up batch (max_batch rows of zeros) on the model, then sets health SERVING.
  // Blocks for that forward pass.
  // Returns: OK; the backend's error (health stays NOT_SERVING); FailedPrecondition after
  // Shutdown.
  absl::Status Serve() ABSL_LOCKS_EXCLUDED(mu_, reload_mu_);

  // Loads `checkpoint_path` with the loader, warms it up and swaps it in. Blocks for the load
  // and one forward pass; serving goes on meanwhile.
  // Returns: OK (the new model answers every batch taken from now on); FailedPrecondition
  // without a loader, after Shutdown, or for a version older than the one serving; the
  // loader's error; InvalidArgument for a different model shape. On error the old model keeps
  // serving.
  absl::Status Reload(const std::string& checkpoint_path) ABSL_LOCKS_EXCLUDED(reload_mu_);
  // As Reload, with a backend already loaded.
  absl::Status SwapBackend(std::shared_ptr<Backend> backend) ABSL_LOCKS_EXCLUDED(reload_mu_);

  // Drains and stops (see the class comment). Blocks until in-flight batches finish and every
  // stream has ended. Idempotent.
  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_);

  // The bound gRPC port.
  int port() const { return port_; }
  // The bound metrics port, or 0 without a metrics endpoint.
  int metrics_port() const;
  int64_t model_version() const { return batcher_->model_version(); }
  bool serving() const ABSL_LOCKS_EXCLUDED(mu_);
  Batcher& batcher() { return *batcher_; }
  InferenceService& service() { return *service_; }
  prometheus::Registry& registry() { return *registry_; }

 private:
  explicit InferenceServer(Options options) : options_(std::move(options)) {}

  // One batch of zeros through `backend`, directly (not through the batcher).
  absl::Status WarmUp(Backend& backend) const;
  absl::Status SwapBackendLocked(std::shared_ptr<Backend> backend)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(reload_mu_);

  Options options_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<Batcher> batcher_;
  std::unique_ptr<InferenceService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<metrics::MetricsServer> metrics_server_;
  int port_ = 0;

  absl::Mutex reload_mu_;  // serializes Reload/SwapBackend

  mutable absl::Mutex mu_;
  bool serving_ ABSL_GUARDED_BY(mu_) = false;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace zf::inference
