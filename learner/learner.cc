#include "learner/learner.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/logging.h"
#include "common/metrics/buckets.h"
#include "common/status_macros.h"

namespace zf::learner {

absl::Status BlendSearchValue(double weight, zerofleet::v1::SampleBatch* batch) {
  if (!(weight >= 0 && weight <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("search value weight must be in [0, 1], got ", weight));
  }
  if (weight == 0) return absl::OkStatus();
  const size_t b = static_cast<size_t>(std::max(batch->batch_size(), 0));
  if (batch->value().size() != 4 * b) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch value has ", batch->value().size(), " bytes, expected ", 4 * b));
  }
  if (batch->search_value().size() != 4 * b) {
    return absl::InvalidArgumentError(absl::StrCat(
        "batch search_value has ", batch->search_value().size(), " bytes, expected ", 4 * b,
        " (a replay shard older than search values cannot serve --search_value_weight)"));
  }
  const float w = static_cast<float>(weight);
  char* value = batch->mutable_value()->data();
  const char* search = batch->search_value().data();
  for (size_t i = 0; i < b; ++i) {
    float z, q;
    std::memcpy(&z, value + 4 * i, 4);
    std::memcpy(&q, search + 4 * i, 4);
    if (!(q >= -1 && q <= 1)) {
      return absl::InvalidArgumentError(absl::StrCat("batch search_value ", i, " is ", q));
    }
    const float blended = (1 - w) * z + w * q;
    std::memcpy(value + 4 * i, &blended, 4);
  }
  return absl::OkStatus();
}

absl::Status LearnerOptions::Validate() const {
  ZF_RETURN_IF_ERROR(trainer.Validate());
  if (batch_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("learner: batch_size must be >= 1, got ", batch_size));
  }
  if (dir.empty()) return absl::InvalidArgumentError("learner: dir is empty");
  if (steps_per_checkpoint < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("learner: steps_per_checkpoint must be >= 1, got ", steps_per_checkpoint));
  }
  if (keep_checkpoints < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("learner: keep_checkpoints must be >= 1, got ", keep_checkpoints));
  }
  if (max_steps < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("learner: max_steps must be >= 0, got ", max_steps));
  }
  if (!(search_value_weight >= 0 && search_value_weight <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("learner: search_value_weight must be in [0, 1], got ", search_value_weight));
  }
  if (!batch_source) {
    replay::ReplaySamplerOptions s = sampler;
    s.batch_size = batch_size;
    if (absl::Status status = s.Validate(); !status.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("learner: replay: ", status.message()));
    }
  }
  return absl::OkStatus();
}

Learner::Learner(LearnerOptions options) : options_(std::move(options)) {}

Learner::~Learner() {
  Stop();
  if (sampler_ != nullptr) sampler_->Close();
}

absl::StatusOr<std::unique_ptr<Learner>> Learner::Create(LearnerOptions options) {
  ZF_RETURN_IF_ERROR(options.Validate());
  auto learner = std::unique_ptr<Learner>(new Learner(std::move(options)));
  Learner& l = *learner;
  l.registry_ =
      l.options_.registry ? l.options_.registry : std::make_shared<prometheus::Registry>();
  prometheus::Registry& r = *l.registry_;
  l.steps_total_ = &prometheus::BuildCounter()
                        .Name("zf_learner_steps_total")
                        .Help("Optimizer steps taken by this process.")
                        .Register(r)
                        .Add({});
  l.samples_total_ = &prometheus::BuildCounter()
                          .Name("zf_learner_samples_total")
                          .Help("Training positions consumed by this process.")
                          .Register(r)
                          .Add({});
  auto& loss = prometheus::BuildGauge()
                   .Name("zf_learner_loss")
                   .Help(
                       "Loss of the last training batch, by head (policy, value, total; "
                       "ownership and score with aux heads).")
                   .Register(r);
  l.loss_policy_ = &loss.Add({{"head", "policy"}});
  l.loss_value_ = &loss.Add({{"head", "value"}});
  l.loss_total_ = &loss.Add({{"head", "total"}});
  if (l.options_.trainer.shape.aux_heads) {
    l.loss_ownership_ = &loss.Add({{"head", "ownership"}});
    l.loss_score_ = &loss.Add({{"head", "score"}});
  }
  l.learning_rate_ = &prometheus::BuildGauge()
                          .Name("zf_learner_learning_rate")
                          .Help("Learning rate of the last step.")
                          .Register(r)
                          .Add({});
  l.published_version_ = &prometheus::BuildGauge()
                              .Name("zf_learner_published_version")
                              .Help("Model version of the newest published checkpoint.")
                              .Register(r)
                              .Add({});
  l.data_wait_seconds_ = &prometheus::BuildCounter()
                              .Name("zf_learner_data_wait_seconds_total")
                              .Help("Wall time spent waiting for a training batch.")
                              .Register(r)
                              .Add({});
  l.step_seconds_ = &prometheus::BuildHistogram()
                         .Name("zf_learner_step_seconds")
                         .Help("Wall time of one optimizer step (forward, backward, update).")
                         .Register(r)
                         .Add({}, metrics::ExponentialBuckets(0.001, 2, 16));

  ZF_ASSIGN_OR_RETURN(l.trainer_, Trainer::Create(l.options_.trainer));
  const std::string checkpoint_dir =
      (std::filesystem::path(l.options_.dir) / "checkpoints").string();
  ZF_ASSIGN_OR_RETURN(
      l.checkpoints_,
      CheckpointDirectory::Create({.dir = checkpoint_dir, .keep = l.options_.keep_checkpoints}));
  absl::StatusOr<NewestCheckpoint> newest = ReadNewestCheckpoint(checkpoint_dir);
  if (newest.ok()) {
    if (!l.options_.resume) {
      return absl::InvalidArgumentError(
          absl::StrCat(checkpoint_dir, " already has checkpoints and resume is off"));
    }
    ZF_RETURN_IF_ERROR(l.trainer_->Restore(newest->checkpoint));
    // Damaged newer files are moved out of every reader's way; their version numbers are not
    // reused (one may have been served), so the resumed weights are published again at once
    // above them, and `latest` names an intact checkpoint newer than anything a server saw.
    ZF_RETURN_IF_ERROR(l.checkpoints_->SetAside(newest->damaged));
    bool republish = false;
    {
      absl::MutexLock lock(&l.mu_);
      l.stats_.steps = l.trainer_->step();
      l.stats_.published_version = newest->checkpoint.manifest.version;
      l.published_step_ = l.trainer_->step();
      ZF_LOG(INFO) << "learner: resumed from " << newest->path << " (version "
                   << l.stats_.published_version << ", step " << l.stats_.steps << ")"
                   << (newest->damaged.empty()
                           ? ""
                           : absl::StrCat("; ", newest->damaged.size(),
                                          " newer checkpoint files were damaged and set aside"));
      if (l.checkpoints_->last_version() > l.stats_.published_version) {
        l.stats_.published_version = l.checkpoints_->last_version();
        republish = true;
      }
    }
    if (republish) ZF_RETURN_IF_ERROR(l.Publish());
  } else if (absl::IsNotFound(newest.status())) {
    ZF_RETURN_IF_ERROR(l.Publish());
  } else {
    return newest.status();
  }
  {
    absl::MutexLock lock(&l.mu_);
    l.published_version_->Set(static_cast<double>(l.stats_.published_version));
  }

  if (l.options_.batch_source) {
    l.source_ = l.options_.batch_source;
  } else {
    replay::ReplaySamplerOptions sampler = l.options_.sampler;
    sampler.batch_size = l.options_.batch_size;
    ZF_ASSIGN_OR_RETURN(l.sampler_, replay::ReplaySampler::Create(std::move(sampler)));
    l.source_ = [sampler = l.sampler_.get()](absl::Time deadline) {
      return sampler->Next(deadline);
    };
  }
  return learner;
}

absl::Status Learner::Publish() {
  int64_t version;
  {
    absl::MutexLock lock(&mu_);
    version = stats_.published_version + 1;
  }
  ZF_ASSIGN_OR_RETURN(model::Checkpoint checkpoint, trainer_->MakeCheckpoint(version));
  ZF_ASSIGN_OR_RETURN(model::CheckpointManifest written, checkpoints_->Publish(checkpoint));
  published_step_ = trainer_->step();
  {
    absl::MutexLock lock(&mu_);
    stats_.published_version = version;
  }
  published_version_->Set(static_cast<double>(version));
  ZF_LOG(INFO) << "learner: published version " << version << " at step " << written.training_step;
  if (options_.on_publish) options_.on_publish(written);
  return absl::OkStatus();
}

void Learner::Stop() { stop_.store(true, std::memory_order_release); }

LearnerStats Learner::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

absl::Status Learner::Run() {
  const absl::Time start = absl::Now();
  absl::Status result = absl::OkStatus();
  auto reached_max = [&] {
    return options_.max_steps > 0 && trainer_->step() >= options_.max_steps;
  };
  while (!stop_.load(std::memory_order_acquire) && !reached_max()) {
    // Wait in short slices so Stop() is seen promptly; every slice counts as data wait.
    const absl::Time wait_start = absl::Now();
    absl::StatusOr<zerofleet::v1::SampleBatch> batch =
        source_(wait_start + absl::Milliseconds(200));
    const absl::Duration waited = absl::Now() - wait_start;
    data_wait_seconds_->Increment(absl::ToDoubleSeconds(waited));
    {
      absl::MutexLock lock(&mu_);
      stats_.data_wait += waited;
    }
    if (absl::IsDeadlineExceeded(batch.status())) continue;
    if (absl::IsCancelled(batch.status())) break;
    if (!batch.ok()) {
      result = batch.status();
      break;
    }
    if (options_.lr_scale) {
      const double scale = options_.lr_scale();
      if (!(scale > 0 && scale <= 1)) {  // NaN fails too
        result = absl::InvalidArgumentError(
            absl::StrCat("LearnerOptions::lr_scale returned ", scale, ", not in (0, 1]"));
        break;
      }
      trainer_->set_lr_scale(scale);
    }
    if (absl::Status blended = BlendSearchValue(options_.search_value_weight, &*batch);
        !blended.ok()) {
      result = blended;
      break;
    }
    const absl::Time step_start = absl::Now();
    absl::StatusOr<StepResult> step = trainer_->Step(*batch);
    if (!step.ok()) {
      result = step.status();
      break;
    }
    step_seconds_->Observe(absl::ToDoubleSeconds(absl::Now() - step_start));
    steps_total_->Increment();
    samples_total_->Increment(step->batch_size);
    loss_policy_->Set(step->policy_loss);
    loss_value_->Set(step->value_loss);
    if (loss_ownership_ != nullptr) {
      loss_ownership_->Set(step->ownership_loss);
      loss_score_->Set(step->score_loss);
    }
    loss_total_->Set(step->total_loss);
    learning_rate_->Set(step->learning_rate);
    {
      absl::MutexLock lock(&mu_);
      stats_.steps = step->step;
      ++stats_.steps_this_run;
      stats_.samples_this_run += step->batch_size;
      stats_.last = *step;
      stats_.run_time = absl::Now() - start;
    }
    if (step->step % options_.steps_per_checkpoint == 0) {
      if (absl::Status published = Publish(); !published.ok()) {
        result = published;
        break;
      }
    }
  }
  // Whatever ended the loop, keep the steps taken (unless the checkpoint itself failed).
  if (trainer_->step() != published_step_) {
    if (absl::Status published = Publish(); !published.ok() && result.ok()) result = published;
  }
  absl::MutexLock lock(&mu_);
  stats_.run_time = absl::Now() - start;
  return result;
}

}  // namespace zf::learner
