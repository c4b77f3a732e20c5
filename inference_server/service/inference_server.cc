#include "inference_server/service/inference_server.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/grpc/status.h"

namespace zf::inference {

absl::StatusOr<std::unique_ptr<InferenceServer>> InferenceServer::Create(Options options) {
  if (options.backend == nullptr) {
    return absl::InvalidArgumentError("InferenceServer: a backend is required");
  }
  std::unique_ptr<InferenceServer> server(new InferenceServer(std::move(options)));
  Options& o = server->options_;
  server->registry_ = o.registry != nullptr ? o.registry : std::make_shared<prometheus::Registry>();

  Batcher::Options batcher = o.batcher;
  batcher.backend = o.backend;
  batcher.registry = server->registry_.get();
  absl::StatusOr<std::unique_ptr<Batcher>> created = Batcher::Create(std::move(batcher));
  if (!created.ok()) return created.status();
  server->batcher_ = *std::move(created);

  InferenceService::Options service;
  service.batcher = server->batcher_.get();
  service.game = o.game;
  service.max_request_rows = o.batcher.max_request_rows;
  service.max_in_flight_per_stream = o.max_in_flight_per_stream;
  service.registry = server->registry_.get();
  absl::StatusOr<std::unique_ptr<InferenceService>> svc = InferenceService::Create(service);
  if (!svc.ok()) return svc.status();
  server->service_ = *std::move(svc);

  if (!o.metrics_listen.empty()) {
    metrics::MetricsServer::Options metrics_options;
    metrics_options.listen_address = o.metrics_listen;
    absl::StatusOr<std::unique_ptr<metrics::MetricsServer>> metrics_server =
        metrics::MetricsServer::Create(metrics_options, {server->registry_});
    if (!metrics_server.ok()) return metrics_server.status();
    server->metrics_server_ = *std::move(metrics_server);
  }

  grpc::ServerBuilder builder;
  grpc_util::ApplyServerSettings(o.wire, &builder);
  builder.RegisterService(server->service_.get());
  absl::StatusOr<std::unique_ptr<grpc::Server>> grpc_server = grpc_util::StartServer(
      o.listen_address, o.wire, &builder, &server->port_, server->registry_.get());
  if (!grpc_server.ok()) return grpc_server.status();
  server->server_ = *std::move(grpc_server);
  return server;
}

InferenceServer::~InferenceServer() { Shutdown(); }

int InferenceServer::metrics_port() const {
  return metrics_server_ != nullptr ? metrics_server_->port() : 0;
}

bool InferenceServer::serving() const {
  absl::MutexLock lock(&mu_);
  return serving_;
}

absl::Status InferenceServer::WarmUp(Backend& backend) const {
  const int rows = std::min(options_.batcher.max_batch, backend.max_batch());
  const ModelSpec& spec = backend.spec();
  std::vector<uint8_t> planes(static_cast<size_t>(rows * spec.PlaneSize()), 0);
  std::vector<float> logits(static_cast<size_t>(rows) * spec.num_actions);
  std::vector<float> wdl(static_cast<size_t>(rows) * ModelSpec::kWdlSize);
  absl::Status status = backend.Run(planes, rows, logits, wdl);
  if (!status.ok()) {
    return absl::Status(status.code(), absl::StrCat("warm-up batch failed: ", status.message()));
  }
  return absl::OkStatus();
}

absl::Status InferenceServer::Serve() {
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_) return absl::FailedPreconditionError("InferenceServer: shut down");
    if (serving_) return absl::OkStatus();
  }
  std::shared_ptr<Backend> backend = options_.backend;
  absl::Status warm = WarmUp(*backend);
  if (!warm.ok()) return warm;
  absl::MutexLock lock(&mu_);
  if (shut_down_) return absl::FailedPreconditionError("InferenceServer: shut down");
  serving_ = true;
  server_->GetHealthCheckService()->SetServingStatus(true);
  return absl::OkStatus();
}

absl::Status InferenceServer::Reload(const std::string& checkpoint_path) {
  if (!options_.loader) {
    return absl::FailedPreconditionError("InferenceServer: no loader, cannot reload");
  }
  absl::MutexLock reload_lock(&reload_mu_);
  absl::StatusOr<std::shared_ptr<Backend>> backend = options_.loader(checkpoint_path);
  if (!backend.ok()) {
    return absl::Status(
        backend.status().code(),
        absl::StrCat("reload of ", checkpoint_path, " refused, the model of version ",
                     batcher_->model_version(), " keeps serving: ", backend.status().message()));
  }
  return SwapBackendLocked(*std::move(backend));
}

absl::Status InferenceServer::SwapBackend(std::shared_ptr<Backend> backend) {
  absl::MutexLock reload_lock(&reload_mu_);
  return SwapBackendLocked(std::move(backend));
}

absl::Status InferenceServer::SwapBackendLocked(std::shared_ptr<Backend> backend) {
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_) return absl::FailedPreconditionError("InferenceServer: shut down");
  }
  if (backend == nullptr) return absl::InvalidArgumentError("InferenceServer: null backend");
  // The score head may come or go (a server started from flags without it takes a learner's
  // --aux_heads checkpoints): the batcher asks each model for what it has.
  if (!backend->spec().SameInputsAndActions(batcher_->spec())) {
    return absl::InvalidArgumentError(absl::StrCat("new model has shape ",
                                                   backend->spec().DebugString(), ", serving ",
                                                   batcher_->spec().DebugString()));
  }
  // Answers on a stream never go back to an older model (proto: model_version).
  if (backend->version() < batcher_->model_version()) {
    return absl::FailedPreconditionError(absl::StrCat("new model has version ", backend->version(),
                                                      ", older than the serving ",
                                                      batcher_->model_version()));
  }
  absl::Status warm = WarmUp(*backend);
  if (!warm.ok()) return warm;
  return batcher_->SwapBackend(std::move(backend));
}

void InferenceServer::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_) return;
    shut_down_ = true;
    serving_ = false;
  }
  // Under reload_mu_: no swap races with the batcher's Close.
  absl::MutexLock reload_lock(&reload_mu_);
  if (server_ != nullptr) server_->GetHealthCheckService()->SetServingStatus(false);
  if (service_ != nullptr) service_->Drain();
  // In-flight batches finish (their answers are written), queued rows are answered CANCELLED;
  // every batcher callback has run when Close returns, so streams can end.
  if (batcher_ != nullptr) batcher_->Close();
  // Every stream ends once its client has closed its side, as the drain notice asks; one that
  // has not within the grace ends anyway (its unread answers may then be lost to the reset).
  if (service_ != nullptr && !service_->AwaitStreamsEnded(options_.drain_grace))
    service_->EndDrainGrace();
  // The deadline only bounds clients that stop reading their answers.
  if (server_ != nullptr)
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  if (server_ != nullptr) server_->Wait();
  metrics_server_.reset();
}

}  // namespace zf::inference
