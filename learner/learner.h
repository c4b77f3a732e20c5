// Learner: trains the network from replay batches and publishes checkpoints.
//
// Loop (Run): take the next ready batch (from the replay sampler's prefetch queue, or from
// Options::batch_source), one Trainer::Step, and every `steps_per_checkpoint` steps publish a
// checkpoint of the next version into DIR/checkpoints/ (CheckpointDirectory: atomic file, then
// the `latest` link, keeping the last `keep_checkpoints`). The time spent waiting for a batch is
// the data wait (design.md target: under 5% of wall time), exported as a counter.
//
// Versions: strictly increasing over the run's life, restarts included. A fresh directory gets
// version 1 at step 0 (the initial weights, so inference servers can start from the same
// network the learner trains); each later publication is the previous version + 1.
// Resume: Create() restores weights, optimizer state, step and version from the newest
// complete checkpoint in DIR/checkpoints/ (ReadNewestCheckpoint).
//
// In-process use (`zf run`): Create, run Run() on a thread, call Stop() from another; Run
// finishes the step in progress, publishes a final checkpoint if any step was taken since the
// last one, and returns. The metrics go to Options::registry.
//
// Metrics: zf_learner_steps_total, zf_learner_samples_total, zf_learner_loss{head=policy|value|
// total} (gauge, last step), zf_learner_learning_rate (gauge), zf_learner_published_version
// (gauge), zf_learner_data_wait_seconds_total (counter), zf_learner_step_seconds (histogram).
//
// Thread-safety: Run() on one thread at a time; Stop(), stats() and the accessors are
// thread-safe. The destructor stops the replay sampler (Run must have returned).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "learner/checkpoint_dir.h"
#include "learner/trainer.h"
#include "model/checkpoint.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "proto/zerofleet/v1/replay.pb.h"
#include "replay/client/replay_sampler.h"

namespace zf::learner {

// Where batches come from when not from replay shards (tests, in-process pipelines). Must
// block until a batch is ready or `deadline`; Returns: the batch, DeadlineExceeded, or
// Cancelled (no more data: Run returns).
using BatchSource = std::function<absl::StatusOr<zerofleet::v1::SampleBatch>(absl::Time deadline)>;

struct LearnerOptions {
  TrainerOptions trainer;
  // Data: `batch_source` if set, else a ReplaySampler over `sampler.shards` (its batch_size is
  // set from `batch_size`).
  BatchSource batch_source;
  replay::ReplaySamplerOptions sampler;
  int batch_size = 256;  // >= 1
  // Run directory: checkpoints go to DIR/checkpoints/.
  std::string dir;
  int64_t steps_per_checkpoint = 1000;  // >= 1
  int keep_checkpoints = 5;             // >= 1
  int64_t max_steps = 0;                // Run returns once step() reaches it; 0: until Stop()
  bool resume = true;                   // false: refuse a directory that has checkpoints
  // Called before each step (on Run's thread); its value, finite and in (0, 1], multiplies the
  // trainer's schedule for that step (Trainer::set_lr_scale), e.g. zf run's decay over the last
  // part of a timed run. null: 1. Another value ends Run with InvalidArgument.
  std::function<double()> lr_scale;
  // The value head's target: (1 - w) x the game's result + w x the search's value at the
  // position (SampleBatch.search_value; the "z and q averaged" target of AlphaZero
  // reimplementations), w in [0, 1]. 0: the result alone, as AlphaZero.
  double search_value_weight = 0;
  // Called after each publication (on Run's thread), e.g. to wake a ModelServer.
  std::function<void(const model::CheckpointManifest&)> on_publish;
  // Where the metrics go; null: a registry of the learner's own.
  std::shared_ptr<prometheus::Registry> registry;

  // Returns: OK; InvalidArgument naming the bad field.
  absl::Status Validate() const;
};

// Replaces each row of batch->value with (1 - weight) x value + weight x search_value.
// Returns: OK (weight 0 changes nothing); InvalidArgument when weight is outside [0, 1], or when
//          weight > 0 and search_value is missing (a shard older than the field), has the wrong
//          size, or holds a value outside [-1, 1].
absl::Status BlendSearchValue(double weight, zerofleet::v1::SampleBatch* batch);

struct LearnerStats {
  int64_t steps = 0;  // trainer steps (restored step included)
  int64_t steps_this_run = 0;
  int64_t samples_this_run = 0;
  int64_t published_version = 0;                    // newest published version; 0 before any
  absl::Duration data_wait = absl::ZeroDuration();  // this run
  absl::Duration run_time = absl::ZeroDuration();   // in Run, this run
  StepResult last;
};

class Learner {
 public:
  // Builds the trainer, resumes from DIR/checkpoints/ (or publishes version 1 there), and
  // starts the replay sampler's prefetching.
  // Returns: the learner; InvalidArgument (options; a checkpoint of another game or shape;
  // resume = false with checkpoints present); the checkpoint directory's I/O errors.
  static absl::StatusOr<std::unique_ptr<Learner>> Create(LearnerOptions options);
  ~Learner();
  Learner(const Learner&) = delete;
  Learner& operator=(const Learner&) = delete;

  // Trains until Stop() or max_steps, then publishes a final checkpoint (if a step was taken
  // since the last one). Blocks.
  // Returns: OK (stopped or max_steps reached, or the batch source ended with Cancelled);
  // InvalidArgument if a batch is refused (wrong game or shape: a misconfigured fleet); the
  // trainer's or the checkpoint directory's errors otherwise.
  absl::Status Run();

  // Asks Run to return after the step in progress. Thread-safe, idempotent, non-blocking.
  void Stop();

  LearnerStats stats() const ABSL_LOCKS_EXCLUDED(mu_);
  std::string checkpoint_dir() const { return checkpoints_->dir(); }
  prometheus::Registry& registry() { return *registry_; }

 private:
  explicit Learner(LearnerOptions options);
  absl::Status Publish() ABSL_LOCKS_EXCLUDED(mu_);

  LearnerOptions options_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<Trainer> trainer_;
  std::unique_ptr<CheckpointDirectory> checkpoints_;
  std::unique_ptr<replay::ReplaySampler> sampler_;
  BatchSource source_;
  std::atomic<bool> stop_{false};
  int64_t published_step_ = -1;  // Run's thread only

  prometheus::Counter* steps_total_;
  prometheus::Counter* samples_total_;
  prometheus::Gauge* loss_policy_;
  prometheus::Gauge* loss_value_;
  prometheus::Gauge* loss_ownership_ = nullptr;  // aux heads only
  prometheus::Gauge* loss_score_ = nullptr;      // aux heads only
  prometheus::Gauge* loss_total_;
  prometheus::Gauge* learning_rate_;
  prometheus::Gauge* published_version_;
  prometheus::Counter* data_wait_seconds_;
  prometheus::Histogram* step_seconds_;

  mutable absl::Mutex mu_;
  LearnerStats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace zf::learner
