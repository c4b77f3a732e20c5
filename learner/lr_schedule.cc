#include "learner/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "absl/strings/str_cat.h"

namespace zf::learner {

absl::Status LrSchedule::Validate() const {
  if (!(lr > 0) || !std::isfinite(lr)) {
    return absl::InvalidArgumentError(absl::StrCat("lr must be > 0, got ", lr));
  }
  if (warmup_steps < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("warmup_steps must be >= 0, got ", warmup_steps));
  }
  if (kind == LrScheduleKind::kStep) {
    if (step_every < 1) {
      return absl::InvalidArgumentError(absl::StrCat("step_every must be >= 1, got ", step_every));
    }
    if (!(gamma > 0 && gamma <= 1)) {
      return absl::InvalidArgumentError(absl::StrCat("gamma must be in (0, 1], got ", gamma));
    }
  }
  if (kind == LrScheduleKind::kCosine) {
    if (total_steps <= warmup_steps) {
      return absl::InvalidArgumentError(absl::StrCat(
          "total_steps (", total_steps, ") must exceed warmup_steps (", warmup_steps, ")"));
    }
    if (!(min_fraction >= 0 && min_fraction <= 1)) {
      return absl::InvalidArgumentError(
          absl::StrCat("min_fraction must be in [0, 1], got ", min_fraction));
    }
  }
  return absl::OkStatus();
}

double LearningRateAt(const LrSchedule& s, int64_t step) {
  step = std::max<int64_t>(step, 0);
  if (step < s.warmup_steps) {
    return s.lr * static_cast<double>(step + 1) / static_cast<double>(s.warmup_steps);
  }
  const int64_t t = step - s.warmup_steps;
  switch (s.kind) {
    case LrScheduleKind::kConstant:
      return s.lr;
    case LrScheduleKind::kStep:
      return s.lr * std::pow(s.gamma, static_cast<double>(t / s.step_every));
    case LrScheduleKind::kCosine: {
      const double span = static_cast<double>(s.total_steps - s.warmup_steps);
      const double progress = std::min(1.0, static_cast<double>(t) / span);
      const double min_lr = s.lr * s.min_fraction;
      return min_lr + (s.lr - min_lr) * 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
    }
  }
  return s.lr;
}

absl::Status TimeDecay::Validate() const {
  if (!(decay_fraction >= 0 && decay_fraction <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("decay_fraction must be in [0, 1], got ", decay_fraction));
  }
  if (!(final_fraction > 0 && final_fraction <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("final_fraction must be in (0, 1], got ", final_fraction));
  }
  return absl::OkStatus();
}

double TimeDecayFactor(const TimeDecay& d, double progress) {
  if (!(progress > 0)) progress = 0;  // NaN too
  progress = std::min(progress, 1.0);
  const double start = 1.0 - d.decay_fraction;
  if (d.decay_fraction <= 0 || progress <= start) return 1.0;
  const double t = (progress - start) / d.decay_fraction;  // (0, 1]
  return 1.0 + (d.final_fraction - 1.0) * t;
}

}  // namespace zf::learner
