#include "replay/rate_limiter.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace zf::replay {

absl::Status RateLimiterOptions::Validate() const {
  if (!(samples_per_insert > 0) || !std::isfinite(samples_per_insert)) {
    return absl::InvalidArgumentError(
        absl::StrCat("samples_per_insert must be > 0 and finite, got ", samples_per_insert));
  }
  if (min_size_to_sample < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("min_size_to_sample must be >= 1, got ", min_size_to_sample));
  }
  if (max_insert_positions < 1 || max_sample_positions < 1) {
    return absl::InvalidArgumentError("max_insert_positions and max_sample_positions must be >= 1");
  }
  if (std::isnan(min_diff) || std::isnan(max_diff) || min_diff > max_diff) {
    return absl::InvalidArgumentError(
        absl::StrCat("need min_diff <= max_diff, got [", min_diff, ", ", max_diff, "]"));
  }
  if (clock == nullptr) return absl::InvalidArgumentError("clock must not be null");
  const double needed = static_cast<double>(max_insert_positions) * samples_per_insert +
                        static_cast<double>(max_sample_positions);
  if (max_diff - min_diff < needed) {
    return absl::InvalidArgumentError(absl::StrCat(
        "rate limiter could deadlock: the error band [min_diff, max_diff] = [", min_diff, ", ",
        max_diff, "] is ", max_diff - min_diff,
        " wide, but an insert of max_insert_positions (", max_insert_positions,
        ") moves the diff by ", max_insert_positions * samples_per_insert,
        " and a sample of max_sample_positions (", max_sample_positions, ") by ",
        max_sample_positions,
        "; with a narrower band there is a diff at which neither may proceed. Widen the band to "
        "at least ",
        needed));
  }
  return absl::OkStatus();
}

RateLimiterOptions SampleToInsertRatio(double samples_per_insert, int64_t min_size_to_sample,
                                       double error_buffer) {
  RateLimiterOptions options;
  options.samples_per_insert = samples_per_insert;
  options.min_size_to_sample = min_size_to_sample;
  const double offset = samples_per_insert * static_cast<double>(min_size_to_sample);
  options.min_diff = offset - error_buffer;
  options.max_diff = offset + error_buffer;
  return options;
}

absl::StatusOr<std::unique_ptr<RateLimiter>> RateLimiter::Create(
    const RateLimiterOptions& options) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  return std::unique_ptr<RateLimiter>(new RateLimiter(options));
}

bool RateLimiter::CanInsert(int64_t positions) const {
  if (inserted_ - deleted_ < options_.min_size_to_sample) return true;
  const double diff = static_cast<double>(inserted_ + positions) * options_.samples_per_insert -
                      diff_offset_ - static_cast<double>(sampled_);
  return diff <= options_.max_diff;
}

bool RateLimiter::CanSample(int64_t positions) const {
  if (inserted_ - reserved_ - deleted_ < options_.min_size_to_sample) return false;
  const double diff = static_cast<double>(inserted_) * options_.samples_per_insert -
                      diff_offset_ - static_cast<double>(sampled_ + positions);
  return diff >= options_.min_diff;
}

absl::Status RateLimiter::AwaitInsert(int64_t positions, absl::Time deadline) {
  if (positions < 1 || positions > options_.max_insert_positions) {
    return absl::InvalidArgumentError(absl::StrCat("insert of ", positions,
                                                   " positions; must be in [1, ",
                                                   options_.max_insert_positions, "]"));
  }
  absl::MutexLock lock(&mu_);
  if (!cancelled_ && !CanInsert(positions)) {
    ++inserts_blocked_;
    const absl::Time start = options_.clock->Now();
    auto ready = [this, positions]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return cancelled_ || CanInsert(positions);
    };
    const bool ok = options_.clock->AwaitWithDeadline(&mu_, absl::Condition(&ready), deadline);
    insert_wait_ += options_.clock->Now() - start;
    if (!ok) {
      return absl::DeadlineExceededError(
          "rate limiter: inserts are ahead of samples (samples_per_insert) until the deadline");
    }
  }
  if (cancelled_) return absl::CancelledError("rate limiter cancelled");
  inserted_ += positions;
  reserved_ += positions;
  return absl::OkStatus();
}

void RateLimiter::CommitInsert(int64_t positions) {
  absl::MutexLock lock(&mu_);
  reserved_ -= positions;
}

void RateLimiter::AbortInsert(int64_t positions) {
  absl::MutexLock lock(&mu_);
  reserved_ -= positions;
  inserted_ -= positions;
}

absl::Status RateLimiter::AwaitSample(int64_t positions, absl::Time deadline) {
  if (positions < 1 || positions > options_.max_sample_positions) {
    return absl::InvalidArgumentError(absl::StrCat("sample of ", positions,
                                                   " positions; must be in [1, ",
                                                   options_.max_sample_positions, "]"));
  }
  absl::MutexLock lock(&mu_);
  if (!cancelled_ && !CanSample(positions)) {
    ++samples_blocked_;
    const absl::Time start = options_.clock->Now();
    auto ready = [this, positions]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return cancelled_ || CanSample(positions);
    };
    const bool ok = options_.clock->AwaitWithDeadline(&mu_, absl::Condition(&ready), deadline);
    sample_wait_ += options_.clock->Now() - start;
    if (!ok) {
      return absl::DeadlineExceededError(
          "rate limiter: too few positions stored, or samples are ahead of inserts "
          "(samples_per_insert), until the deadline");
    }
  }
  if (cancelled_) return absl::CancelledError("rate limiter cancelled");
  sampled_ += positions;
  return absl::OkStatus();
}

void RateLimiter::Delete(int64_t positions) {
  absl::MutexLock lock(&mu_);
  deleted_ += positions;
}

void RateLimiter::Restore(int64_t positions) {
  absl::MutexLock lock(&mu_);
  inserted_ = positions;
  reserved_ = 0;
  deleted_ = 0;
  sampled_ = 0;
  const double centre = (options_.min_diff + options_.max_diff) / 2;
  const double natural = static_cast<double>(positions) * options_.samples_per_insert;
  // Never below the diff a fresh limiter would have (0 for an empty table).
  diff_offset_ = std::max(0.0, natural - std::max(centre, 0.0));
}

void RateLimiter::Cancel() {
  absl::MutexLock lock(&mu_);
  cancelled_ = true;
}

RateLimiterStats RateLimiter::stats() const {
  absl::MutexLock lock(&mu_);
  RateLimiterStats s;
  s.inserted = inserted_;
  s.reserved = reserved_;
  s.deleted = deleted_;
  s.sampled = sampled_;
  s.diff = static_cast<double>(inserted_) * options_.samples_per_insert - diff_offset_ -
           static_cast<double>(sampled_);
  s.inserts_blocked = inserts_blocked_;
  s.samples_blocked = samples_blocked_;
  s.insert_wait = insert_wait_;
  s.sample_wait = sample_wait_;
  return s;
}

}  // namespace zf::replay
