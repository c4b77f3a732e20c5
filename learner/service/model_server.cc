#include "learner/service/model_server.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/grpc/status.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "learner/checkpoint_dir.h"
#include "model/checkpoint.h"

namespace zf::learner {
namespace {

using zerofleet::v1::CheckpointChunk;
using zerofleet::v1::FetchCheckpointRequest;
using zerofleet::v1::GetLatestRequest;
using zerofleet::v1::ModelVersion;
using zerofleet::v1::WatchVersionsRequest;

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::ostringstream out;
  out << in.rdbuf();
  if (in.bad()) return absl::DataLossError(absl::StrCat("cannot read ", path));
  return out.str();
}

ModelVersion Describe(const model::CheckpointManifest& m, const std::string& contents) {
  ModelVersion v;
  v.set_version(m.version);
  v.set_sha256(model::Sha256Hex(contents));
  v.set_size_bytes(static_cast<int64_t>(contents.size()));
  v.set_game(m.game);
  v.set_training_step(m.training_step);
  auto* s = v.mutable_shape();
  s->set_input_channels(m.shape.input_channels);
  s->set_board_height(m.shape.board_height);
  s->set_board_width(m.shape.board_width);
  s->set_num_actions(m.shape.num_actions);
  s->set_blocks(m.shape.blocks);
  s->set_filters(m.shape.filters);
  s->set_value_hidden(m.shape.value_hidden);
  s->set_aux_heads(m.shape.aux_heads);
  s->set_global_pooling(m.shape.global_pooling);
  return v;
}

}  // namespace

class ModelServer::Service final : public zerofleet::v1::ModelService::Service {
 public:
  explicit Service(ModelServer* server) : server_(server) {}

  grpc::Status GetLatest(grpc::ServerContext*, const GetLatestRequest*,
                         ModelVersion* response) override {
    absl::MutexLock lock(&server_->mu_);
    if (server_->shut_down_) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "draining");
    if (server_->latest_.version() == 0) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND, "no checkpoint published yet");
    }
    *response = server_->latest_;
    return grpc::Status::OK;
  }

  grpc::Status WatchVersions(grpc::ServerContext* context, const WatchVersionsRequest*,
                             grpc::ServerWriter<ModelVersion>* writer) override {
    int64_t sent = 0;  // version 0 means nothing is published yet
    while (true) {
      ModelVersion next;
      {
        absl::MutexLock lock(&server_->mu_);
        auto ready = [&]() ABSL_SHARED_LOCKS_REQUIRED(server_->mu_) {
          return server_->shut_down_ || server_->latest_.version() > sent;
        };
        server_->mu_.AwaitWithTimeout(absl::Condition(&ready), absl::Milliseconds(200));
        if (server_->shut_down_) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "draining");
        if (context->IsCancelled()) return grpc::Status::CANCELLED;
        if (server_->latest_.version() <= sent) continue;
        next = server_->latest_;
      }
      // No lock held across the write.
      if (!writer->Write(next)) return grpc::Status::CANCELLED;
      sent = next.version();
    }
  }

  grpc::Status FetchCheckpoint(grpc::ServerContext* context, const FetchCheckpointRequest* request,
                               grpc::ServerWriter<CheckpointChunk>* writer) override {
    if (request->version() < 0) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          absl::StrCat("version must be >= 0, got ", request->version()));
    }
    std::string path;
    {
      absl::MutexLock lock(&server_->mu_);
      if (server_->shut_down_) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "draining");
      path = request->version() == 0 || request->version() == server_->latest_.version()
                 ? server_->latest_path_
                 : (std::filesystem::path(server_->options_.checkpoint_dir) /
                    CheckpointFileName(request->version()))
                       .string();
      if (path.empty()) {
        return grpc::Status(grpc::StatusCode::NOT_FOUND, "no checkpoint published yet");
      }
    }
    absl::StatusOr<std::string> contents = ReadFile(path);
    if (!contents.ok()) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND,
                          absl::StrCat("version ", request->version(),
                                       " is not available (never published, or pruned)"));
    }
    absl::StatusOr<model::CheckpointManifest> manifest = model::ReadManifest(path);
    if (!manifest.ok()) return grpc_util::ToGrpcStatus(manifest.status());
    const size_t chunk = static_cast<size_t>(server_->options_.chunk_bytes);
    size_t offset = 0;
    do {
      CheckpointChunk message;
      if (offset == 0) *message.mutable_model() = Describe(*manifest, *contents);
      message.set_offset(static_cast<int64_t>(offset));
      const size_t n = std::min(chunk, contents->size() - offset);
      message.set_data(contents->substr(offset, n));
      offset += n;
      if (context->IsCancelled() || !writer->Write(message)) return grpc::Status::CANCELLED;
    } while (offset < contents->size());
    return grpc::Status::OK;
  }

 private:
  ModelServer* const server_;
};

absl::Status ModelServer::Options::Validate() const {
  if (checkpoint_dir.empty())
    return absl::InvalidArgumentError("model server: checkpoint_dir is empty");
  if (listen_address.empty())
    return absl::InvalidArgumentError("model server: listen_address is empty");
  if (poll_interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("model server: poll_interval must be positive");
  }
  if (chunk_bytes < 1024 || chunk_bytes > (16 << 20)) {
    return absl::InvalidArgumentError(
        absl::StrCat("model server: chunk_bytes must be in [1024, 16 MiB], got ", chunk_bytes));
  }
  return absl::OkStatus();
}

ModelServer::ModelServer(Options options) : options_(std::move(options)) {}

absl::StatusOr<std::unique_ptr<ModelServer>> ModelServer::Create(Options options) {
  ZF_RETURN_IF_ERROR(options.Validate());
  auto server = std::unique_ptr<ModelServer>(new ModelServer(std::move(options)));
  server->Refresh();
  server->service_ = std::make_unique<Service>(server.get());
  grpc::ServerBuilder builder;
  grpc_util::ApplyServerSettings(server->options_.wire, &builder);
  builder.RegisterService(server->service_.get());
  ZF_ASSIGN_OR_RETURN(
      server->server_,
      grpc_util::StartServer(server->options_.listen_address, server->options_.wire, &builder,
                             &server->port_, server->options_.registry.get()));
  server->server_->GetHealthCheckService()->SetServingStatus(true);
  ModelServer* self = server.get();
  server->poller_ = std::make_unique<Thread>("model-server-poll", [self] { self->PollLoop(); });
  return server;
}

ModelServer::~ModelServer() { Shutdown(); }

void ModelServer::Notify() {
  absl::MutexLock lock(&mu_);
  notified_ = true;
}

int64_t ModelServer::latest_version() const {
  absl::MutexLock lock(&mu_);
  return latest_.version();
}

void ModelServer::PollLoop() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      auto wake = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return shut_down_ || notified_; };
      mu_.AwaitWithTimeout(absl::Condition(&wake), options_.poll_interval);
      if (shut_down_) return;
      notified_ = false;
    }
    Refresh();
  }
}

void ModelServer::Refresh() {
  absl::StatusOr<std::string> path = LatestCheckpointPath(options_.checkpoint_dir);
  if (!path.ok()) return;
  absl::StatusOr<model::CheckpointManifest> manifest = model::ReadManifest(*path);
  if (!manifest.ok()) {
    ZF_LOG(WARNING) << "model server: " << manifest.status();
    return;
  }
  {
    absl::MutexLock lock(&mu_);
    if (manifest->version <= latest_.version()) return;
  }
  // Read, verify and hash outside the lock (I/O). Every section is verified before announcing:
  // a file damaged at rest has an intact manifest more often than not, and a version announced
  // is one servers will fetch.
  absl::StatusOr<std::string> contents = ReadFile(*path);
  if (!contents.ok()) return;
  if (absl::StatusOr<model::Checkpoint> whole = model::ParseCheckpoint(*contents, *path);
      !whole.ok()) {
    if (refused_path_ != *path) {
      ZF_LOG(WARNING) << "model server: not announcing version " << manifest->version << ": "
                      << whole.status();
      refused_path_ = *path;
    }
    return;
  }
  ModelVersion described = Describe(*manifest, *contents);
  absl::MutexLock lock(&mu_);
  if (described.version() <= latest_.version()) return;
  latest_ = std::move(described);
  latest_path_ = *path;
  ZF_LOG(INFO) << "model server: version " << latest_.version() << " (" << *path << ")";
}

void ModelServer::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_) return;
    shut_down_ = true;
  }
  if (server_ != nullptr) {
    server_->GetHealthCheckService()->SetServingStatus(false);
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  }
  if (poller_ != nullptr) poller_->Join();
}

}  // namespace zf::learner
