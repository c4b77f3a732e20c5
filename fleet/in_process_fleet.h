// InProcessFleet: the whole training loop in one process, as `zf run` runs it. Replay shards,
// the learner with its model service, one inference server following it, and an actor,
// connected through real gRPC servers (loopback TCP; the actor reaches the inference server over
// a Unix domain socket): the same code paths as a cluster, without the command line.
//
//   ZF_ASSIGN_OR_RETURN(std::unique_ptr<InProcessFleet> fleet, InProcessFleet::Create(options));
//   ZF_RETURN_IF_ERROR(fleet->Start());          // self-play and training begin
//   ... fleet->TakeSample(), fleet->Scrape() ... // progress, the fleet view
//   InProcessFleet::StopReport report = fleet->StopSelfPlayAndTraining();
//   fleet->ShutdownServers();                    // or let the destructor do it
//
// Run directory (Options::dir): checkpoints/ (the learner's; checkpoints/latest names the
// newest complete one), replay/shard-K/ (each shard's durable log), actor.spool (games not yet
// acknowledged when every shard was down; normally absent).
//
// Start-up order: shards, learner and model service, inference server (from the learner's
// newest checkpoint, following the model service), actor. Stopping loses nothing acknowledged:
// StopSelfPlayAndTraining stops the actor (games in flight are dropped), flushes the games it
// finished to the shards (acknowledged = durable; what the shards do not take in 30 s is spooled
// for the next start), then stops the learner after its step and a final checkpoint;
// ShutdownServers then drains the servers in reverse start order.
//
// Thread-compatible: one owner drives it; the components are thread-safe and run their own
// threads (the learner runs on one this class owns and joins).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "actor/actor.h"
#include "actor/game_sink.h"
#include "common/metrics/metrics_server.h"
#include "fleet/fleet_view.h"
#include "inference_server/model_watcher.h"
#include "inference_server/service/inference_server.h"
#include "learner/learner.h"
#include "learner/service/model_server.h"
#include "model/network.h"
#include "prometheus/registry.h"
#include "replay/service/replay_server.h"

namespace zf::fleet {

struct InProcessFleetOptions {
  std::string dir;   // the run directory (above); must exist
  std::string game;  // full name, e.g. "go:9"
  model::NetworkShape shape;
  uint64_t seed = 0;  // the learner's and the replay writer's

  // Replay: `shards` shards of `capacity_positions` each; a shard refuses samples until it holds
  // `min_size_to_sample` positions, and keeps samples within an error buffer of
  // samples_per_insert x inserts; with position_averaging it samples distinct positions with
  // their mean targets (replay/table.h).
  int shards = 2;
  int64_t capacity_positions = 0;
  int64_t min_size_to_sample = 0;
  double samples_per_insert = 1;
  bool position_averaging = false;

  // Learner: positions per step, optimizer (with its default weight decay), learning rate
  // (scaled each step by lr_scale when set), its LibTorch threads, and the steps between
  // checkpoints.
  int batch_size = 256;
  learner::OptimizerKind optimizer = learner::OptimizerKind::kSgd;
  double lr = 0.01;
  std::function<double()> lr_scale;
  double search_value_weight = 0;  // LearnerOptions::search_value_weight
  int learner_threads = 1;
  int steps_per_checkpoint = 100;

  // Inference: the largest batch.
  int max_batch = 256;

  // The actor, with its self-play settings (workers, games per worker, requests in flight,
  // simulations, seed). Twice its games_per_worker may wait for the shards' rate limiter.
  actor::ActorOptions actor;

  // "HOST:PORT" to serve every component's metrics (and extra_registries) at one /metrics;
  // empty: none.
  std::string metrics_listen;
  std::vector<std::shared_ptr<prometheus::Registry>> extra_registries;

  // Returns: OK; InvalidArgument naming the field.
  absl::Status Validate() const;

  // The smallest capacity_positions a shard takes with `min_size_to_sample`: the minimum plus
  // one longest game (replay::ReplayServer's rule, so that evicting whole games never keeps the
  // window below the minimum).
  static int64_t MinCapacityPositions(int64_t min_size_to_sample);
};

class InProcessFleet {
 public:
  // Starts every server; self-play and training wait for Start().
  // Returns: the fleet; InvalidArgument for bad options; the components' errors (a shard's log
  //          that cannot be opened, a checkpoint that does not load, a port that cannot be bound).
  static absl::StatusOr<std::unique_ptr<InProcessFleet>> Create(InProcessFleetOptions options);

  // Stops what still runs (StopSelfPlayAndTraining, ShutdownServers) and joins its threads.
  ~InProcessFleet();

  InProcessFleet(const InProcessFleet&) = delete;
  InProcessFleet& operator=(const InProcessFleet&) = delete;

  // Starts the actor, and the learner on its own thread.
  // Returns: OK; the actor's error (FailedPrecondition if started twice).
  absl::Status Start();

  struct StopReport {
    absl::Status flushed;       // OK, or why not every finished game reached the shards in 30 s
    int64_t unacked_games = 0;  // finished games spooled to DIR/actor.spool for the next start
  };
  // Stops self-play and training (see the class comment); blocks until the learner's thread
  // has ended (a step, a checkpoint: seconds). Idempotent.
  StopReport StopSelfPlayAndTraining();

  // Stops the model watcher, then drains the inference server, the model service, the shards
  // and the metrics endpoint, in that order. Call after StopSelfPlayAndTraining. Idempotent.
  void ShutdownServers();

  // What the learner's Run returned (OK while it runs or when it stopped normally).
  const absl::Status& learner_status() const { return learner_status_; }

  actor::Actor& actor() { return *actor_; }
  inference::InferenceServer& inference() { return *inference_; }
  learner::Learner& learner() { return *learner_; }
  // The /metrics port (0 without Options::metrics_listen).
  int metrics_port() const { return metrics_server_ ? metrics_server_->port() : 0; }

  // Counters read together, to print rates over an interval.
  struct Sample {
    absl::Time at;
    int64_t games = 0, moves = 0, leaf_evaluations = 0, batches = 0, rows = 0, steps = 0;
    int64_t positions_stored = 0, sampled = 0;
    double data_wait_s = 0, learner_run_s = 0;
  };
  Sample TakeSample();

  // The components' registries as fleet-view targets (one per component: actor, inference,
  // learner, replay-K), for `zf top`'s view in-process.
  FleetScrape Scrape();

 private:
  InProcessFleet() = default;
  absl::Status Build(const InProcessFleetOptions& options);

  // The metrics registries first, so they are destroyed last: the replay writer inside sink_
  // holds the actor's by raw pointer until its Close() returns
  // (replay::ShardedReplayWriterOptions::metrics).
  std::shared_ptr<prometheus::Registry> actor_registry_ = std::make_shared<prometheus::Registry>();
  std::shared_ptr<prometheus::Registry> learner_registry_ =
      std::make_shared<prometheus::Registry>();
  // The components in start order; destroyed in reverse.
  std::vector<std::unique_ptr<replay::ReplayServer>> shards_;
  std::vector<std::string> shard_addresses_;
  std::unique_ptr<learner::Learner> learner_;
  std::unique_ptr<learner::ModelServer> model_server_;
  std::atomic<learner::ModelServer*> model_server_ptr_{nullptr};  // read by on_publish
  std::string inference_socket_;  // the Unix socket's file, removed by the destructor
  std::unique_ptr<inference::InferenceServer> inference_;
  std::unique_ptr<inference::ModelWatcher> watcher_;
  std::unique_ptr<actor::ReplayGameSink> sink_;
  std::unique_ptr<actor::Actor> actor_;
  std::unique_ptr<metrics::MetricsServer> metrics_server_;
  std::thread learner_thread_;
  absl::Status learner_status_;
  bool started_ = false;
  bool stopped_ = false;
  bool shut_down_ = false;
};

}  // namespace zf::fleet
