#include "replay/service/replay_server.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/logging.h"
#include "common/status_macros.h"

namespace zf::replay {

ShardOptions ReplayServerOptions::ShardOptionsFor() const {
  ShardOptions shard;
  shard.dir = dir;
  shard.table.capacity_positions = capacity_positions;
  shard.table.max_positions_per_game = max_positions_per_game;
  shard.table.position_averaging = position_averaging;
  shard.rate_limiter = SampleToInsertRatio(samples_per_insert, min_size_to_sample, error_buffer);
  shard.rate_limiter.max_insert_positions = max_positions_per_game;
  shard.rate_limiter.max_sample_positions = max_sample_positions;
  return shard;
}

absl::Status ReplayServerOptions::Validate() const {
  if (dir.empty()) return absl::InvalidArgumentError("dir must be set");
  if (samples_per_insert <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("samples_per_insert must be > 0, got ", samples_per_insert));
  }
  if (error_buffer <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("error_buffer must be > 0, got ", error_buffer));
  }
  if (drain_timeout < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("drain_timeout must not be negative");
  }
  ZF_RETURN_IF_ERROR(insert_workers.Validate());
  ZF_RETURN_IF_ERROR(sample_workers.Validate());
  return ShardOptionsFor().Validate();
}

ReplayServer::ReplayServer(ReplayServerOptions options)
    : options_(std::move(options)), registry_(std::make_shared<prometheus::Registry>()) {}

absl::StatusOr<std::unique_ptr<ReplayServer>> ReplayServer::Create(ReplayServerOptions options) {
  ZF_RETURN_IF_ERROR(options.Validate());
  std::unique_ptr<ReplayServer> server(new ReplayServer(std::move(options)));
  const ReplayServerOptions& o = server->options_;
  server->insert_pool_ = std::make_unique<WorkerPool>(o.insert_workers);
  server->sample_pool_ = std::make_unique<WorkerPool>(o.sample_workers);
  server->service_ = std::make_unique<ReplayService>(
      server->insert_pool_.get(), server->sample_pool_.get(), server->registry_.get());

  grpc::ServerBuilder builder;
  grpc_util::ApplyServerSettings(o.wire, &builder);
  builder.RegisterService(server->service_.get());
  ZF_ASSIGN_OR_RETURN(
      server->server_,
      grpc_util::StartServer(o.listen, o.wire, &builder, &server->port_, server->registry_.get()));
  if (!o.metrics_listen.empty()) {
    metrics::MetricsServer::Options metrics_options;
    metrics_options.listen_address = o.metrics_listen;
    ZF_ASSIGN_OR_RETURN(server->metrics_server_,
                        metrics::MetricsServer::Create(metrics_options, {server->registry_}));
  }
  if (o.on_listening) o.on_listening(server->port_);

  ShardOptions shard_options = o.ShardOptionsFor();
  shard_options.metrics = server->registry_.get();
  absl::Time start = absl::Now();
  ZF_ASSIGN_OR_RETURN(server->shard_, Shard::Create(shard_options));
  const RecoveryReport& report = server->shard_->recovery();
  ReplayService::ShardInfo info;
  info.recovered_games = server->shard_->stats().games;
  info.samples_per_insert = o.samples_per_insert;
  info.min_size_to_sample = o.min_size_to_sample;
  info.max_sample_positions = o.max_sample_positions;
  ZF_LOG(INFO) << "replay shard recovered " << info.recovered_games << " games ("
               << server->shard_->stats().positions << " positions) from " << report.records
               << " log records in " << absl::FormatDuration(absl::Now() - start);
  server->service_->SetShard(server->shard_.get(), info);
  server->server_->GetHealthCheckService()->SetServingStatus(true);
  return server;
}

ReplayServer::~ReplayServer() { Shutdown(); }

std::string ReplayServer::metrics_address() const {
  return metrics_server_ == nullptr ? "" : metrics_server_->address();
}

void ReplayServer::Shutdown() {
  absl::MutexLock lock(&mu_);
  if (shut_down_) return;
  shut_down_ = true;
  if (server_ != nullptr) server_->GetHealthCheckService()->SetServingStatus(false);
  if (service_ != nullptr) {
    service_->StartDraining();
    // Accepted inserts finish (they wait for fsync, or for the rate limiter up to drain_timeout);
    // then closing the shard wakes whatever still waits (samples held by the rate limiter).
    if (!service_->AwaitInsertsDone(absl::Now() + options_.drain_timeout)) {
      ZF_LOG(WARNING) << "replay drain: inserts still waiting after "
                      << absl::FormatDuration(options_.drain_timeout) << "; closing the shard";
    }
  }
  if (shard_ != nullptr) shard_->Close();
  // Every accepted call is answered after these.
  if (insert_pool_ != nullptr) insert_pool_->Close();
  if (sample_pool_ != nullptr) sample_pool_->Close();
  if (server_ != nullptr) {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
    server_->Wait();
  }
  metrics_server_.reset();
}

}  // namespace zf::replay
