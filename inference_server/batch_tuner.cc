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
  if (probe_every < 1 || probe_every > 1000000) {
    return absl::InvalidArgumentError(
        absl::StrCat("probe_every must be in 1..1000000, got ", probe_every));
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
  std::vector<int> sizes;
  for (int b = 1; b < ceiling; b *= 2) sizes.push_back(b);
  sizes.push_back(ceiling);
  for (const BatchCostPoint& p : curve) sizes.push_back(p.rows);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  std::vector<Size> grid;
  for (int rows : sizes) {
    Size size{.rows = rows};
    for (const BatchCostPoint& p : curve) {
      if (p.rows == rows) size.profiled = std::max(p.seconds, 1e-9);
    }
    grid.push_back(size);
  }
  return BatchTuner(options, std::move(grid));
}

BatchTuner::BatchTuner(BatchTunerOptions options, std::vector<Size> grid)
    : options_(options), grid_(std::move(grid)), estimate_(grid_.size()) {
  UpdateEstimates();
}

void BatchTuner::UpdateEstimates() {
  for (size_t i = 0; i < grid_.size(); ++i) {
    const Size& size = grid_[i];
    if (size.served > 0) {
      estimate_[i] = size.served;
    } else if (size.profiled > 0) {
      estimate_[i] = size.profiled * slowdown_;
    } else {
      // Never cheaper per row than the size below: an unmeasured size is probed, not chosen.
      estimate_[i] = estimate_[i - 1] * size.rows / grid_[i - 1].rows;
    }
  }
}

void BatchTuner::Observe(int rows, double seconds) {
  if (rows < 1 || !(seconds >= 0)) return;
  // The largest grid size at or below `rows`, if `rows` is within 25% above it.
  int i = -1;
  for (size_t k = 0; k < grid_.size(); ++k) {
    if (grid_[k].rows <= rows) i = static_cast<int>(k);
  }
  if (i < 0 || rows * 4 > grid_[i].rows * 5) return;
  Size& size = grid_[i];
  const double scaled = std::max(seconds * size.rows / rows, 1e-9);
  // One batch moves an estimate at most 4x: a forward pass that spanned a SIGSTOP or a swap
  // storm must not make a size (or every size) look too slow at once.
  if (size.profiled > 0) {
    const double ratio = std::clamp(scaled / size.profiled / slowdown_, 0.25, 4.0) * slowdown_;
    slowdown_ += options_.smoothing * (ratio - slowdown_);
  }
  const double current = estimate_[i];
  const double sample = std::clamp(scaled, current / 4, current * 4);
  // A running mean for the first batches (the estimate before them was only a guess), then
  // the moving average.
  ++size.served_batches;
  const double weight =
      std::max(options_.smoothing, 1.0 / static_cast<double>(size.served_batches));
  size.served = current + weight * (sample - current);
  size.served_round = round_;
  if (i == probe_index_) ++probe_batches_;
  UpdateEstimates();
}

std::vector<BatchCostPoint> BatchTuner::curve() const {
  std::vector<BatchCostPoint> curve;
  for (size_t i = 0; i < grid_.size(); ++i) {
    if (grid_[i].profiled > 0 || grid_[i].served > 0)
      curve.push_back({grid_[i].rows, estimate_[i]});
  }
  return curve;
}

BatchLimits BatchTuner::LimitsFor(size_t i, double arrival_rows_per_second) const {
  BatchLimits limits;
  limits.max_batch = grid_[i].rows;
  if (limits.max_batch == 1) return limits;  // nothing to wait for
  const double batch_seconds = estimate_[i];
  double delay = batch_seconds;
  if (arrival_rows_per_second > 0) {
    delay = std::min(delay, limits.max_batch / arrival_rows_per_second);
  }
  const double target = absl::ToDoubleSeconds(options_.latency_target);
  delay = std::min(delay, std::max(0.0, target - batch_seconds));
  limits.max_delay = absl::Seconds(delay);
  return limits;
}

BatchLimits BatchTuner::Choose(double arrival_rows_per_second, int cap) const {
  const double target = absl::ToDoubleSeconds(options_.latency_target);
  auto feasible = [&](size_t i) {
    return grid_[i].rows == 1 || (estimate_[i] <= target && grid_[i].rows <= cap);
  };
  double best = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < grid_.size(); ++i) {
    if (feasible(i)) best = std::min(best, estimate_[i] / grid_[i].rows);
  }
  for (size_t i = 0; i < grid_.size(); ++i) {
    if (feasible(i) && estimate_[i] / grid_[i].rows <= best * (1 + options_.tolerance)) {
      return LimitsFor(i, arrival_rows_per_second);
    }
  }
  return LimitsFor(0, arrival_rows_per_second);
}

BatchLimits BatchTuner::Next(double arrival_rows_per_second, int cap) {
  ++round_;
  probe_index_ = -1;
  probe_batches_ = 0;
  const BatchLimits chosen = Choose(arrival_rows_per_second, cap);
  size_t up = 0;
  while (up < grid_.size() && grid_[up].rows <= chosen.max_batch) ++up;
  // No test against the latency target: an estimate above it may be a profile taken under load
  // or a served average from a slower time, and a size never probed again would stay so.
  // A probe that did not fill (too few rows arrived) counts as a try too, or every round would
  // probe again.
  if (up == grid_.size() || grid_[up].rows > cap) return chosen;
  const int64_t last = std::max(grid_[up].served_round, grid_[up].probed_round);
  if (last >= 0 && round_ - last < options_.probe_every) return chosen;
  grid_[up].probed_round = round_;
  probe_index_ = static_cast<int>(up);
  BatchLimits probe = LimitsFor(up, arrival_rows_per_second);
  probe.probe = true;
  return probe;
}

double BatchTuner::Seconds(int rows) const {
  size_t below = 0;
  for (size_t i = 0; i < grid_.size(); ++i) {
    if (grid_[i].rows == rows) return estimate_[i];
    if (grid_[i].rows > rows) {
      const double f =
          static_cast<double>(rows - grid_[below].rows) / (grid_[i].rows - grid_[below].rows);
      return estimate_[below] + f * (estimate_[i] - estimate_[below]);
    }
    below = i;
  }
  return estimate_[below] * rows / grid_[below].rows;
}

absl::Duration BatchTuner::WorthWaiting(int queued, int max_batch) const {
  if (queued < 1 || queued >= max_batch) return absl::ZeroDuration();
  const double wait = max_batch * Seconds(queued) / queued - Seconds(max_batch);
  return wait > 0 ? absl::Seconds(wait) : absl::ZeroDuration();
}

std::string BatchTuner::CurveString() const {
  std::string out;
  for (size_t i = 0; i < grid_.size(); ++i) {
    if (grid_[i].profiled <= 0 && grid_[i].served <= 0) continue;
    absl::StrAppendFormat(&out, "%s%d%s:%.3gms", out.empty() ? "" : " ", grid_[i].rows,
                          grid_[i].served > 0 ? "*" : "", estimate_[i] * 1e3);
  }
  return out;
}

}  // namespace zf::inference
