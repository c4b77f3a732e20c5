// Learning-rate schedules of the trainer. Torch-free.
//
// With base rate `lr`, warmup W and step s (0-based, the step about to be taken):
//   warmup    s < W:  lr * (s + 1) / W                     (any schedule; W = 0: none)
//   constant          lr
//   step              lr * gamma ^ floor((s - W) / step_every)
//   cosine            min_lr + (lr - min_lr) * (1 + cos(pi * min(1, (s - W) / (total - W)))) / 2
//                     with min_lr = lr * min_fraction; flat at min_lr after `total_steps`
//
// Thread-safety: a value type and a pure function; thread-safe.
#pragma once

#include <cstdint>

#include "absl/status/status.h"

namespace zf::learner {

enum class LrScheduleKind { kConstant, kStep, kCosine };

struct LrSchedule {
  LrScheduleKind kind = LrScheduleKind::kConstant;
  double lr = 0.02;                 // base rate, > 0
  int64_t warmup_steps = 0;         // >= 0
  int64_t step_every = 100'000;     // kStep: steps between decays, >= 1
  double gamma = 0.1;               // kStep: decay factor, in (0, 1]
  int64_t total_steps = 1'000'000;  // kCosine: length of the decay, > warmup_steps
  double min_fraction = 0.0;        // kCosine: final rate over lr, in [0, 1]

  // Returns: OK; InvalidArgument naming the bad field.
  absl::Status Validate() const;
};

// The learning rate for step `step` (>= 0).
double LearningRateAt(const LrSchedule& schedule, int64_t step);

// A decay over the last part of a fixed time budget (a factor on the schedule's rate; zf run's
// --lr_decay_fraction, the "warmup-stable-decay" shape): with `progress` the elapsed fraction
// of the budget, 1 while progress <= 1 - decay_fraction, then falling linearly to
// final_fraction at progress 1, and final_fraction after.
struct TimeDecay {
  double decay_fraction = 0;    // in [0, 1]; 0: no decay (the factor is always 1)
  double final_fraction = 0.1;  // in (0, 1]

  // Returns: OK; InvalidArgument naming the bad field.
  absl::Status Validate() const;
};

// The factor at `progress` (clamped to [0, 1]; NaN counts as 0).
double TimeDecayFactor(const TimeDecay& decay, double progress);

}  // namespace zf::learner
