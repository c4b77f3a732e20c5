#include "fleet/in_process_fleet.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/metrics/build_info.h"
#include "common/status_macros.h"
#include "inference_server/serving_model.h"
#include "replay/client/sharded_writer.h"

namespace zf::fleet {
namespace {

// A registry the fleet does not own (the inference server's), shared without taking ownership.
std::shared_ptr<prometheus::Registry> Unowned(prometheus::Registry& registry) {
  return std::shared_ptr<prometheus::Registry>(&registry, [](prometheus::Registry*) {});
}

}  // namespace

absl::Status InProcessFleetOptions::Validate() const {
  if (dir.empty()) return absl::InvalidArgumentError("dir is empty");
  if (game.empty()) return absl::InvalidArgumentError("game is empty");
  if (shards < 1 || shards > 16) {
    return absl::InvalidArgumentError(absl::StrCat("shards is ", shards, "; it must be 1..16"));
  }
  if (learner_threads < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("learner_threads is ", learner_threads, "; it must be >= 1"));
  }
  if (max_batch < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_batch is ", max_batch, "; it must be >= 1"));
  }
  return absl::OkStatus();
}

int64_t InProcessFleetOptions::MinCapacityPositions(int64_t min_size_to_sample) {
  return min_size_to_sample + replay::ReplayServerOptions{}.max_positions_per_game;
}

absl::StatusOr<std::unique_ptr<InProcessFleet>> InProcessFleet::Create(
    InProcessFleetOptions options) {
  ZF_RETURN_IF_ERROR(options.Validate());
  std::unique_ptr<InProcessFleet> fleet(new InProcessFleet());
  ZF_RETURN_IF_ERROR(fleet->Build(options));
  return fleet;
}

absl::Status InProcessFleet::Build(const InProcessFleetOptions& o) {
  const std::string& dir = o.dir;
  // 1. Replay shards. A shard refuses samples until it holds min_size_to_sample positions, and
  // keeps samples within error_buffer of samples_per_insert x inserts.
  for (int k = 0; k < o.shards; ++k) {
    replay::ReplayServerOptions options;
    options.listen = "127.0.0.1:0";
    options.dir = absl::StrCat(dir, "/replay/shard-", k);
    options.capacity_positions = o.capacity_positions;
    options.min_size_to_sample = o.min_size_to_sample;
    options.samples_per_insert = o.samples_per_insert;
    options.position_averaging = o.position_averaging;
    options.error_buffer = std::max<double>(
        20 * o.batch_size * o.samples_per_insert,
        (options.max_positions_per_game * o.samples_per_insert + options.max_sample_positions) / 2 +
            1);
    ZF_ASSIGN_OR_RETURN(std::unique_ptr<replay::ReplayServer> shard,
                        replay::ReplayServer::Create(options));
    metrics::RegisterBuildInfo(*shard->registry(), "replay");
    shard_addresses_.push_back(absl::StrCat("127.0.0.1:", shard->port()));
    shards_.push_back(std::move(shard));
  }

  // 2. The learner (a fresh directory gets version 1, the initial weights) and its model service.
  learner::LearnerOptions lo;
  lo.trainer.game = o.game;
  lo.trainer.shape = o.shape;
  lo.trainer.seed = o.seed;
  lo.trainer.lr.lr = o.lr;
  lo.lr_scale = o.lr_scale;
  lo.search_value_weight = o.search_value_weight;
  lo.trainer.optimizer = o.optimizer;
  lo.trainer.weight_decay = learner::DefaultWeightDecay(o.optimizer);
  // On the training thread only (Trainer's contract): the inference server below sets the
  // process-wide count to its own 1.
  lo.trainer.intra_op_threads = o.learner_threads;
  lo.trainer.device = "auto";  // the GPU where there is one (docs/gpu.md), else the CPU
  lo.sampler.shards = shard_addresses_;
  lo.sampler.seed = o.seed;
  lo.batch_size = o.batch_size;
  lo.dir = dir;
  lo.steps_per_checkpoint = o.steps_per_checkpoint;
  lo.keep_checkpoints = 5;
  lo.registry = learner_registry_;
  lo.on_publish = [this](const model::CheckpointManifest&) {
    if (learner::ModelServer* server = model_server_ptr_.load()) server->Notify();
  };
  metrics::RegisterBuildInfo(*learner_registry_, "learner");
  ZF_ASSIGN_OR_RETURN(learner_, learner::Learner::Create(std::move(lo)));
  learner::ModelServer::Options mo;
  mo.checkpoint_dir = dir + "/checkpoints";
  mo.listen_address = "127.0.0.1:0";
  ZF_ASSIGN_OR_RETURN(model_server_, learner::ModelServer::Create(mo));
  model_server_ptr_.store(model_server_.get());

  // 3. The inference server, from the learner's newest checkpoint, following the model service.
  const inference::ServingModelOptions serving{.checkpoint = dir + "/checkpoints/latest",
                                               .game = o.game,
                                               .shape = o.shape,
                                               .max_batch = o.max_batch,
                                               .intra_op_threads = 1,
                                               .concurrency = 2};
  ZF_ASSIGN_OR_RETURN(inference::ServingModel first, inference::LoadServingModel(serving));
  inference::InferenceServer::Options io;
  // Self-play reaches the server over a Unix domain socket: on this 2-core VM `zf bench inference`
  // served 28% more evaluations per second over it than over loopback TCP with 8-row requests
  // (docs/benchmarks.md, "Inference serving"; zf run's 61-row requests showed no end-to-end gain
  // yet: docs/experiments.md). The file is under /tmp (a socket path holds at most 107 bytes; DIR
  // may be longer) and removed by the destructor.
  inference_socket_ = absl::StrCat("/tmp/zf-run-", getpid(), "-inference.sock");
  std::remove(inference_socket_.c_str());
  io.listen_address = "unix:" + inference_socket_;
  io.backend = first.backend;
  io.game = o.game;
  io.loader =
      [serving](const std::string& path) -> absl::StatusOr<std::shared_ptr<inference::Backend>> {
    inference::ServingModelOptions options = serving;
    options.checkpoint = path;
    ZF_ASSIGN_OR_RETURN(inference::ServingModel model, inference::LoadServingModel(options));
    return model.backend;
  };
  io.batcher.max_batch = o.max_batch;
  io.batcher.max_delay = absl::Milliseconds(2);
  io.batcher.num_workers = serving.concurrency;  // one CUDA slot per batcher worker
  io.batcher.max_request_rows = 4096;
  io.batcher.max_queued_rows = 8 * 4096;
  ZF_ASSIGN_OR_RETURN(inference_, inference::InferenceServer::Create(std::move(io)));
  metrics::RegisterBuildInfo(inference_->registry(), "inference");
  ZF_RETURN_IF_ERROR(inference_->Serve());
  inference::ModelWatcherOptions wo;
  wo.address = absl::StrCat("127.0.0.1:", model_server_->port());
  wo.temp_dir = dir + "/checkpoints";
  wo.reload = [this](const std::string& path) { return inference_->Reload(path); };
  wo.current_version = [this] { return inference_->model_version(); };
  wo.registry = Unowned(inference_->registry());
  ZF_ASSIGN_OR_RETURN(watcher_, inference::ModelWatcher::Create(std::move(wo)));

  // 4. The actor: self-play through the inference server into the replay shards.
  replay::ShardedReplayWriterOptions writer_options;
  writer_options.shards = shard_addresses_;
  writer_options.spool_path = dir + "/actor.spool";
  // Twice the games the actor plays at once may wait for the shards' rate limiter; past that
  // the actor waits too, so what the learner samples is at most that far behind self-play. (The
  // writer's own default of 1,024 held ~7 minutes of Go's games back on the 2-core VM when the
  // learner set the pace: issue 19, docs/experiments.md "Eight samples per insert".)
  writer_options.max_unacked_games = 2 * int64_t{o.actor.games_per_worker};
  writer_options.seed = o.seed;
  writer_options.metrics = actor_registry_.get();
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<replay::ShardedReplayWriter> writer,
                      replay::ShardedReplayWriter::Create(std::move(writer_options)));
  sink_ = std::make_unique<actor::ReplayGameSink>(std::move(writer));
  ZF_ASSIGN_OR_RETURN(std::shared_ptr<actor::AsyncEvaluator> evaluator,
                      actor::ConnectInference("unix:" + inference_socket_, o.game));
  metrics::RegisterBuildInfo(*actor_registry_, "actor");
  ZF_ASSIGN_OR_RETURN(actor_,
                      actor::Actor::Create(o.actor, evaluator, sink_.get(), actor_registry_));

  // One /metrics endpoint for the whole fleet, if asked for.
  if (!o.metrics_listen.empty()) {
    std::vector<std::shared_ptr<prometheus::Registry>> registries = {actor_registry_,
                                                                     learner_registry_};
    registries.insert(registries.end(), o.extra_registries.begin(), o.extra_registries.end());
    registries.push_back(Unowned(inference_->registry()));
    for (const auto& shard : shards_) registries.push_back(shard->registry());
    metrics::MetricsServer::Options options;
    options.listen_address = o.metrics_listen;
    ZF_ASSIGN_OR_RETURN(metrics_server_,
                        metrics::MetricsServer::Create(options, std::move(registries)));
  }
  return absl::OkStatus();
}

InProcessFleet::~InProcessFleet() {
  if (started_) StopSelfPlayAndTraining();
  ShutdownServers();
  if (!inference_socket_.empty()) std::remove(inference_socket_.c_str());
}

absl::Status InProcessFleet::Start() {
  if (started_) return absl::FailedPreconditionError("the fleet has already started");
  ZF_RETURN_IF_ERROR(actor_->Start());
  started_ = true;
  learner_thread_ = std::thread([this] { learner_status_ = learner_->Run(); });
  return absl::OkStatus();
}

InProcessFleet::StopReport InProcessFleet::StopSelfPlayAndTraining() {
  StopReport report;
  if (stopped_ || actor_ == nullptr) return report;
  stopped_ = true;
  actor_->Stop();
  report.flushed = sink_->Flush(absl::Now() + absl::Seconds(30));
  // Usually the replay rate limiter: it holds inserts until the learner has sampled enough.
  // Nothing is lost: Close() spools them and the next start sends them.
  if (!report.flushed.ok()) report.unacked_games = sink_->writer().stats().unacked;
  sink_->Close();
  learner_->Stop();
  if (learner_thread_.joinable()) learner_thread_.join();
  return report;
}

void InProcessFleet::ShutdownServers() {
  if (shut_down_) return;
  shut_down_ = true;
  if (watcher_ != nullptr) watcher_->Stop();
  if (inference_ != nullptr) inference_->Shutdown();
  if (model_server_ != nullptr) model_server_->Shutdown();
  for (auto& shard : shards_) shard->Shutdown();
  metrics_server_.reset();
}

InProcessFleet::Sample InProcessFleet::TakeSample() {
  Sample s;
  s.at = absl::Now();
  const actor::ActorStats a = actor_->stats();
  s.games = a.games;
  s.moves = a.moves;
  s.leaf_evaluations = a.leaf_evaluations;
  const inference::Batcher::Stats b = inference_->batcher().stats();
  s.batches = b.batches_completed;
  s.rows = b.rows_evaluated;
  const learner::LearnerStats l = learner_->stats();
  s.steps = l.steps;
  s.data_wait_s = absl::ToDoubleSeconds(l.data_wait);
  s.learner_run_s = absl::ToDoubleSeconds(l.run_time);
  for (const auto& shard : shards_) {
    const replay::ShardStats stats = shard->shard().stats();
    s.positions_stored += stats.positions;
    s.sampled += stats.sampled_positions;
  }
  return s;
}

FleetScrape InProcessFleet::Scrape() {
  FleetScrape scrape;
  scrape.push_back(TargetFromRegistry("actor", *actor_registry_));
  scrape.push_back(TargetFromRegistry("inference", inference_->registry()));
  scrape.push_back(TargetFromRegistry("learner", *learner_registry_));
  for (size_t k = 0; k < shards_.size(); ++k) {
    scrape.push_back(TargetFromRegistry(absl::StrCat("replay-", k), *shards_[k]->registry()));
  }
  return scrape;
}

}  // namespace zf::fleet
