#include "inference_server/model_watcher.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/grpc/status.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "model/checkpoint.h"

namespace zf::inference {

using zerofleet::v1::CheckpointChunk;
using zerofleet::v1::FetchCheckpointRequest;
using zerofleet::v1::ModelVersion;
using zerofleet::v1::WatchVersionsRequest;

absl::Status ModelWatcherOptions::Validate() const {
  if (address.empty()) return absl::InvalidArgumentError("model watcher: address is empty");
  if (temp_dir.empty()) return absl::InvalidArgumentError("model watcher: temp_dir is empty");
  if (!reload) return absl::InvalidArgumentError("model watcher: reload is not set");
  if (!current_version) {
    return absl::InvalidArgumentError("model watcher: current_version is not set");
  }
  if (fetch_timeout <= absl::ZeroDuration() || initial_backoff <= absl::ZeroDuration() ||
      max_backoff < initial_backoff) {
    return absl::InvalidArgumentError(
        "model watcher: timeouts must be positive and max_backoff >= initial_backoff");
  }
  return absl::OkStatus();
}

ModelWatcher::ModelWatcher(ModelWatcherOptions options)
    : options_(std::move(options)), rng_(std::random_device{}()) {}

absl::StatusOr<std::unique_ptr<ModelWatcher>> ModelWatcher::Create(ModelWatcherOptions options) {
  ZF_RETURN_IF_ERROR(options.Validate());
  auto watcher = std::unique_ptr<ModelWatcher>(new ModelWatcher(std::move(options)));
  watcher->stub_ = zerofleet::v1::ModelService::NewStub(
      grpc_util::CreateChannel(watcher->options_.address, watcher->options_.wire));
  if (watcher->options_.registry != nullptr) {
    auto& family = prometheus::BuildCounter()
                       .Name("zf_inference_model_reloads_total")
                       .Help("Published model versions handled by the model watcher, by result.")
                       .Register(*watcher->options_.registry);
    watcher->reloads_ok_ = &family.Add({{"result", "ok"}});
    watcher->reloads_refused_ = &family.Add({{"result", "refused"}});
    watcher->reloads_fetch_failed_ = &family.Add({{"result", "fetch_failed"}});
  }
  ModelWatcher* self = watcher.get();
  watcher->thread_ = std::make_unique<Thread>("model-watcher", [self] { self->Loop(); });
  return watcher;
}

ModelWatcher::~ModelWatcher() { Stop(); }

void ModelWatcher::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopped_ = true;
    if (in_flight_ != nullptr) in_flight_->TryCancel();
  }
  if (thread_ != nullptr) thread_->Join();
}

ModelWatcherStats ModelWatcher::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

bool ModelWatcher::WaitForOutcomes(int64_t outcomes, absl::Time deadline) const {
  absl::MutexLock lock(&mu_);
  auto reached = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return stats_.loaded + stats_.refused + stats_.fetch_failed >= outcomes;
  };
  return mu_.AwaitWithDeadline(absl::Condition(&reached), deadline);
}

bool ModelWatcher::Begin(grpc::ClientContext* context) {
  absl::MutexLock lock(&mu_);
  if (stopped_) return false;
  in_flight_ = context;
  return true;
}

void ModelWatcher::End() {
  absl::MutexLock lock(&mu_);
  in_flight_ = nullptr;
}

void ModelWatcher::Record(absl::Status status, int64_t ModelWatcherStats::*counter) {
  absl::MutexLock lock(&mu_);
  ++(stats_.*counter);
  if (!status.ok()) stats_.last_error = std::move(status);
}

bool ModelWatcher::Stopping() {
  absl::MutexLock lock(&mu_);
  return stopped_;
}

void ModelWatcher::Loop() {
  int failures = 0;
  bool first = true;
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (stopped_) return;
      if (!first) ++stats_.reconnects;
    }
    first = false;
    const absl::Time opened = absl::Now();
    absl::Status status = WatchOnce();
    {
      absl::MutexLock lock(&mu_);
      if (stopped_) return;
    }
    // A stream that lived a while was healthy: start the backoff over.
    if (absl::Now() - opened > options_.max_backoff) failures = 0;
    ++failures;
    ZF_LOG(WARNING) << "model watcher: stream to " << options_.address << " ended: " << status
                    << "; reconnecting";
    absl::Duration backoff = options_.initial_backoff;
    for (int i = 1; i < failures && backoff < options_.max_backoff; ++i) backoff *= 2;
    backoff = std::min(backoff, options_.max_backoff);
    std::uniform_real_distribution<double> jitter(0.5, 1.0);
    backoff *= jitter(rng_);
    absl::MutexLock lock(&mu_);
    auto stopped = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stopped_; };
    mu_.AwaitWithTimeout(absl::Condition(&stopped), backoff);
  }
}

absl::Status ModelWatcher::WatchOnce() {
  grpc::ClientContext context;
  if (!Begin(&context)) return absl::CancelledError("stopped");
  WatchVersionsRequest request;
  std::unique_ptr<grpc::ClientReader<ModelVersion>> reader =
      stub_->WatchVersions(&context, request);
  ModelVersion version;
  while (reader->Read(&version)) {
    {
      absl::MutexLock lock(&mu_);
      stats_.last_version_seen = std::max(stats_.last_version_seen, version.version());
    }
    End();  // the fetch has its own context
    Handle(version);
    if (!Begin(&context)) {
      context.TryCancel();
      break;
    }
  }
  End();
  return grpc_util::FromGrpcStatus(reader->Finish());
}

void ModelWatcher::Handle(const ModelVersion& version) {
  if (version.version() <= options_.current_version() || version.version() <= refused_above_) {
    return;
  }
  absl::StatusOr<std::string> path = Fetch(version);
  if (!path.ok() && Stopping()) {  // Stop() cancelled the fetch: a normal shutdown, no error
    ZF_LOG(INFO) << "model watcher: stopped while fetching version " << version.version();
    return;
  }
  if (!path.ok()) {
    ZF_LOG(ERROR) << "model watcher: fetching version " << version.version() << ": "
                  << path.status();
    refused_above_ = version.version();
    if (reloads_fetch_failed_ != nullptr) reloads_fetch_failed_->Increment();
    Record(path.status(), &ModelWatcherStats::fetch_failed);
    return;
  }
  absl::Status reloaded = options_.reload(*path);
  std::remove(path->c_str());
  if (reloaded.ok()) {
    ZF_LOG(INFO) << "model watcher: loaded version " << version.version();
    if (reloads_ok_ != nullptr) reloads_ok_->Increment();
    Record(absl::OkStatus(), &ModelWatcherStats::loaded);
  } else {
    ZF_LOG(ERROR) << "model watcher: version " << version.version()
                  << " refused, the old model keeps serving: " << reloaded;
    refused_above_ = version.version();
    if (reloads_refused_ != nullptr) reloads_refused_->Increment();
    Record(reloaded, &ModelWatcherStats::refused);
  }
}

absl::StatusOr<std::string> ModelWatcher::Fetch(const ModelVersion& announced) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + options_.fetch_timeout));
  if (!Begin(&context)) return absl::CancelledError("stopped");
  FetchCheckpointRequest request;
  request.set_version(announced.version());
  std::unique_ptr<grpc::ClientReader<CheckpointChunk>> reader =
      stub_->FetchCheckpoint(&context, request);
  CheckpointChunk chunk;
  ModelVersion model;
  std::string data;
  bool first = true;
  absl::Status bad;
  while (reader->Read(&chunk)) {
    if (first) {
      if (!chunk.has_model() || chunk.model().version() != announced.version()) {
        bad = absl::DataLossError("the first chunk does not describe the requested version");
        context.TryCancel();
        break;
      }
      model = chunk.model();
      if (model.size_bytes() < 0 || model.size_bytes() > (int64_t{4} << 30)) {
        bad = absl::DataLossError(absl::StrCat("implausible size ", model.size_bytes()));
        context.TryCancel();
        break;
      }
      data.reserve(static_cast<size_t>(model.size_bytes()));
      first = false;
    }
    if (chunk.offset() != static_cast<int64_t>(data.size()) ||
        static_cast<int64_t>(data.size() + chunk.data().size()) > model.size_bytes()) {
      bad = absl::DataLossError(absl::StrCat("chunk at offset ", chunk.offset(),
                                             " does not continue the ", data.size(),
                                             " bytes received"));
      context.TryCancel();
      break;
    }
    data += chunk.data();
  }
  absl::Status finished = grpc_util::FromGrpcStatus(reader->Finish());
  End();
  ZF_RETURN_IF_ERROR(bad);
  ZF_RETURN_IF_ERROR(finished);
  if (first) return absl::DataLossError("empty checkpoint stream");
  if (static_cast<int64_t>(data.size()) != model.size_bytes()) {
    return absl::DataLossError(
        absl::StrCat("received ", data.size(), " bytes, announced ", model.size_bytes()));
  }
  const std::string sha = model::Sha256Hex(data);
  if (sha != model.sha256()) {
    return absl::DataLossError(
        absl::StrCat("SHA-256 mismatch: received ", sha, ", announced ", model.sha256()));
  }
  const std::string path = (std::filesystem::path(options_.temp_dir) /
                            absl::StrCat(".zf-model-", ::getpid(), "-", announced.version(),
                                         model::kCheckpointExtension))
                               .string();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  out.close();
  if (!out) {
    std::remove(path.c_str());
    return absl::InternalError(absl::StrCat("cannot write ", path));
  }
  return path;
}

}  // namespace zf::inference
