#include "inference_server/batch_tuner.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"

namespace zf::inference {

absl::Status BatchTunerOptions::Validate() const {
  if (latency_target <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat("latency_target must be positive, got ",
                                                   absl::FormatDuration(latency_target)));
  }
  if (!(tolerance >= 0 && tolerance < 1)) {
    return absl::InvalidArgumentError(absl::StrCat("tolerance must be in [0, 1), got ", tolerance));
  }
  if (profile_repeats < 1 || profile_repeats > 100) {
    return absl::InvalidArgumentError(
        absl::StrCat("profile_repeats must be in 1..100, got ", profile_repeats));
  }
  if (!(smoothing > 0 && smoothing <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat("smoothing must be in (0, 1], got ", smoothing));
  }
  if (retune_interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat("retune_interval must be positive, got ",
                                                   absl::FormatDuration(retune_interval)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<BatchCostPoint>> BatchTuner::Profile(Backend& backend, int ceiling,
                                                                const BatchTunerOptions& options,
                                                                Clock& clock) {
  ZF_RETURN_IF_ERROR(options.Validate());
  if (ceiling < 1 || ceiling > backend.max_batch()) {
    return absl::InvalidArgumentError(
        absl::StrCat("ceiling must be in [1, ", backend.max_batch(), "], got ", ceiling));
  }
  const ModelSpec& spec = backend.spec();
  std::vector<int> sizes;
  for (int b = 1; b < ceiling; b *= 2) sizes.push_back(b);
  sizes.push_back(ceiling);
  std::vector<BatchCostPoint> curve;
  std::vector<uint8_t> planes;
  std::vector<float> logits;
  std::vector<float> wdl;
  const double target = absl::ToDoubleSeconds(options.latency_target);
  for (int rows : sizes) {
    planes.assign(static_cast<size_t>(rows * spec.PlaneSize()), 0);
    logits.resize(static_cast<size_t>(rows) * spec.num_actions);
    wdl.resize(static_cast<size_t>(rows) * ModelSpec::kWdlSize);
    // The fastest of the repeats: what else runs on the machine (a restart's neighbours, a
    // stalled core) only ever adds time, and the slowdown factor follows the load later.
    double fastest = std::numeric_limits<double>::infinity();
    for (int i = 0; i <= options.profile_repeats; ++i) {
      const absl::Time start = clock.Now();
      ZF_RETURN_IF_ERROR(backend.Run(planes, rows, logits, wdl));
      if (i > 0) fastest = std::min(fastest, absl::ToDoubleSeconds(clock.Now() - start));
    }
    curve.push_back({rows, fastest});
    // Larger batches are slower still; a margin over the target so that one slow size (a
    // hiccup) does not end the curve.
    if (curve.back().seconds > 4 * target) break;
  }
  return curve;
}

absl::StatusOr<BatchTuner> BatchTuner::Create(int ceiling, const BatchTunerOptions& options,
                                              std::vector<BatchCostPoint> curve) {
  ZF_RETURN_IF_ERROR(options.Validate());
  if (curve.empty() || curve.front().rows != 1) {
    return absl::InvalidArgumentError("the cost curve must start at 1 row");
  }
  for (size_t i = 1; i < curve.size(); ++i) {
    if (curve[i].rows <= curve[i - 1].rows || curve[i].rows > ceiling) {
      return absl::InvalidArgumentError(
          absl::StrCat("the cost curve's sizes must increase and be at most ", ceiling, " rows"));
    }
  }
  return BatchTuner(options, std::move(curve));
}

void BatchTuner::Observe(int rows, double seconds) {
  if (rows < 1 || !(seconds >= 0)) return;
  // The largest profiled size at or below `rows`, if `rows` is within 25% above it.
  const BatchCostPoint* point = nullptr;
  for (const BatchCostPoint& p : profile_) {
    if (p.rows <= rows) point = &p;
  }
  if (point == nullptr || rows * 4 > point->rows * 5 || point->seconds <= 0) return;
  // One batch moves the factor at most 4x towards it: a forward pass that spanned a SIGSTOP or
  // a swap storm must not make every batch size look too slow at once.
  const double ratio =
      std::clamp(seconds * point->rows / rows / point->seconds / slowdown_, 0.25, 4.0) * slowdown_;
  slowdown_ += options_.smoothing * (ratio - slowdown_);
}

std::vector<BatchCostPoint> BatchTuner::curve() const {
  std::vector<BatchCostPoint> curve = profile_;
  for (BatchCostPoint& p : curve) p.seconds *= slowdown_;
  return curve;
}

BatchLimits BatchTuner::Choose(double arrival_rows_per_second, int cap) const {
  const std::vector<BatchCostPoint> now = curve();
  const double target = absl::ToDoubleSeconds(options_.latency_target);
  auto feasible = [&](const BatchCostPoint& p) {
    return p.rows == 1 || (p.seconds <= target && p.rows <= cap);
  };
  double best = std::numeric_limits<double>::infinity();
  for (const BatchCostPoint& p : now) {
    if (feasible(p)) best = std::min(best, p.seconds / p.rows);
  }
  BatchLimits limits;
  double batch_seconds = now.front().seconds;
  for (const BatchCostPoint& p : now) {
    if (feasible(p) && p.seconds / p.rows <= best * (1 + options_.tolerance)) {
      limits.max_batch = p.rows;
      batch_seconds = p.seconds;
      break;
    }
  }
  if (limits.max_batch == 1) return limits;  // nothing to wait for
  double delay = batch_seconds;
  if (arrival_rows_per_second > 0) {
    delay = std::min(delay, limits.max_batch / arrival_rows_per_second);
  }
  delay = std::min(delay, std::max(0.0, target - batch_seconds));
  limits.max_delay = absl::Seconds(delay);
  return limits;
}

double BatchTuner::Seconds(int rows) const {
  const BatchCostPoint* below = &profile_.front();
  for (const BatchCostPoint& p : profile_) {
    if (p.rows == rows) return p.seconds * slowdown_;
    if (p.rows > rows) {
      const double f = static_cast<double>(rows - below->rows) / (p.rows - below->rows);
      return (below->seconds + f * (p.seconds - below->seconds)) * slowdown_;
    }
    below = &p;
  }
  return below->seconds * rows / below->rows * slowdown_;
}

absl::Duration BatchTuner::WorthWaiting(int queued, int max_batch) const {
  if (queued < 1 || queued >= max_batch) return absl::ZeroDuration();
  const double wait = max_batch * Seconds(queued) / queued - Seconds(max_batch);
  return wait > 0 ? absl::Seconds(wait) : absl::ZeroDuration();
}

std::string BatchTuner::CurveString() const {
  std::string out;
  for (const BatchCostPoint& p : curve()) {
    absl::StrAppendFormat(&out, "%s%d:%.3gms", out.empty() ? "" : " ", p.rows, p.seconds * 1e3);
  }
  return out;
}

}  // namespace zf::inference
