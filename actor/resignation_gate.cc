#include "actor/resignation_gate.h"

#include "absl/strings/str_cat.h"
#include "common/logging.h"

namespace zf::actor {

absl::Status ResignationGate::Options::Validate() const {
  if (min_samples < 0 || min_samples > 100000) {
    return absl::InvalidArgumentError(
        absl::StrCat("resignation gate: min_samples must be in 0..100000, got ", min_samples));
  }
  if (window < 1 || window < min_samples) {
    return absl::InvalidArgumentError(
        absl::StrCat("resignation gate: window must be >= 1 and >= min_samples (", min_samples,
                     "), got ", window));
  }
  if (!(max_false_positive_rate >= 0 && max_false_positive_rate <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("resignation gate: max_false_positive_rate must be in [0, 1], got ",
                     max_false_positive_rate));
  }
  return absl::OkStatus();
}

ResignationGate::ResignationGate(Options options) : options_(options) {
  const absl::Status valid = options_.Validate();
  ZF_CHECK(valid.ok()) << valid;
}

bool ResignationGate::OpenLocked() const {
  if (options_.min_samples == 0) return true;
  const auto n = static_cast<int64_t>(window_.size());
  if (n < options_.min_samples) return false;
  return static_cast<double>(false_positives_) <=
         options_.max_false_positive_rate * static_cast<double>(n);
}

bool ResignationGate::open() const {
  absl::MutexLock lock(&mu_);
  return OpenLocked();
}

ResignationGate::Stats ResignationGate::Record(bool false_positive) {
  absl::MutexLock lock(&mu_);
  window_.push_back(false_positive);
  false_positives_ += false_positive ? 1 : 0;
  ++total_;
  if (static_cast<int>(window_.size()) > options_.window) {
    false_positives_ -= window_.front() ? 1 : 0;
    window_.pop_front();
  }
  return StatsLocked();
}

ResignationGate::Stats ResignationGate::stats() const {
  absl::MutexLock lock(&mu_);
  return StatsLocked();
}

ResignationGate::Stats ResignationGate::StatsLocked() const {
  return {.open = OpenLocked(),
          .samples = static_cast<int64_t>(window_.size()),
          .false_positives = false_positives_,
          .total_samples = total_};
}

}  // namespace zf::actor
