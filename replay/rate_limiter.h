// A sample/insert rate limiter with Reverb's semantics, counted in positions.
//
// Algorithm. The limiter counts positions inserted (I), positions deleted by eviction (D) and
// positions sampled (S), and keeps the "diff"  d = I * samples_per_insert - S  inside an error
// band [min_diff, max_diff]:
//
//   - An insert of k positions may proceed when the table holds fewer than min_size_to_sample
//     positions (I - D < min_size_to_sample: filling up is never limited), or when the diff after
//     it stays within the band:  (I + k) * samples_per_insert - S <= max_diff.
//   - A sample of b positions may proceed when the table holds at least min_size_to_sample
//     positions whose inserts have completed, and when  I * samples_per_insert - S - b >= min_diff.
//
// So a learner that samples faster than samples_per_insert times the insert rate blocks, and so do
// actors that insert faster than the learner consumes. Reverb's SampleToInsertRatio(spi,
// min_size, error_buffer) is min_diff = spi * min_size - error_buffer, max_diff = spi * min_size
// + error_buffer (see SampleToInsertRatio below).
//
// One deviation from Reverb: Reverb inserts one item at a time, so "free while below min size" is
// checked on the size after the insert; we insert whole games of up to max_insert_positions, so
// it is checked on the size before the insert (otherwise a game that crosses min_size_to_sample
// while samples are still refused could deadlock).
//
// Deadlock freedom (checked by Validate): when the table holds at least min_size_to_sample
// positions, an insert of k <= max_insert_positions is refused only if d > max_diff - k * spi and a
// sample of b <= max_sample_positions only if d < min_diff + b. Both at once are impossible iff
//   max_diff - min_diff >= max_insert_positions * samples_per_insert + max_sample_positions,
// and below min size inserts are free. A narrower band is refused with InvalidArgument.
//
// Two-phase inserts: AwaitInsert reserves k positions (they count in the diff at once, so
// concurrent inserters cannot overshoot max_diff); the caller then makes them durable and
// sampleable and calls CommitInsert(k), or AbortInsert(k) if that failed. Reserved positions do
// not count towards min_size_to_sample, so a sample never runs on a table that is still empty.
//
// Thread-safe. Waits use the injected Clock, so tests drive deadlines with FakeClock.
#pragma once

#include <cstdint>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"

namespace zf::replay {

struct RateLimiterOptions {
  // Average number of times each inserted position is sampled. > 0.
  double samples_per_insert = 4.0;
  // Samples are refused until the table holds this many positions. >= 1.
  int64_t min_size_to_sample = 1000;
  // The error band for d = inserts * samples_per_insert - samples. min_diff <= max_diff.
  double min_diff = -1e9;
  double max_diff = 1e9;
  // The largest insert (positions in one game) and sample (positions in one batch) a caller may
  // ask for; used for the deadlock check. >= 1.
  int64_t max_insert_positions = 512;
  int64_t max_sample_positions = 4096;
  // Times the waits. Not owned; must outlive the limiter.
  Clock* clock = RealClock();

  // Returns: OK; InvalidArgument naming the bad field, or explaining why the band could deadlock.
  absl::Status Validate() const;
};

// Reverb's SampleToInsertRatio: a band of +-error_buffer around spi * min_size_to_sample.
// `error_buffer` must exceed (max_insert_positions * spi + max_sample_positions) / 2 for the
// options to validate. Other fields of the result keep their defaults.
RateLimiterOptions SampleToInsertRatio(double samples_per_insert, int64_t min_size_to_sample,
                                       double error_buffer);

// Time spent blocked, by operation. Only calls that actually waited count as blocked.
struct RateLimiterStats {
  int64_t inserted = 0;   // I (including reserved)
  int64_t reserved = 0;   // reserved, not yet committed or aborted
  int64_t deleted = 0;    // D
  int64_t sampled = 0;    // S
  double diff = 0;        // I * spi - S
  int64_t inserts_blocked = 0;
  int64_t samples_blocked = 0;
  absl::Duration insert_wait = absl::ZeroDuration();
  absl::Duration sample_wait = absl::ZeroDuration();
};

class RateLimiter {
 public:
  // Returns: the limiter; InvalidArgument if options.Validate() fails.
  static absl::StatusOr<std::unique_ptr<RateLimiter>> Create(const RateLimiterOptions& options);

  RateLimiter(const RateLimiter&) = delete;
  RateLimiter& operator=(const RateLimiter&) = delete;

  // Blocks until an insert of `positions` may proceed (see the header comment), then reserves it.
  // Blocks until then, `deadline` (per the clock) or Cancel(), whichever comes first.
  // Returns: OK (reserved: call CommitInsert or AbortInsert); InvalidArgument (positions < 1 or
  // > max_insert_positions); DeadlineExceeded; Cancelled.
  absl::Status AwaitInsert(int64_t positions, absl::Time deadline) ABSL_LOCKS_EXCLUDED(mu_);
  // The reserved positions are now in the table. Never blocks.
  void CommitInsert(int64_t positions) ABSL_LOCKS_EXCLUDED(mu_);
  // The reserved positions were not stored: forget them. Never blocks.
  void AbortInsert(int64_t positions) ABSL_LOCKS_EXCLUDED(mu_);

  // Blocks until a sample of `positions` may proceed, then counts it as sampled.
  // Returns: OK; InvalidArgument (positions < 1 or > max_sample_positions); DeadlineExceeded;
  // Cancelled.
  absl::Status AwaitSample(int64_t positions, absl::Time deadline) ABSL_LOCKS_EXCLUDED(mu_);

  // `positions` were evicted from the table. Never blocks.
  void Delete(int64_t positions) ABSL_LOCKS_EXCLUDED(mu_);

  // Sets the state after a restart: the table holds `positions` recovered positions. The diff is
  // positions * spi, lowered to max(band centre, 0) if it would exceed that (as if the recovered
  // positions had been sampled at the target ratio), so a recovered full window neither blocks inserts until it
  // has been re-sampled many times nor allows a burst of samples on old data.
  void Restore(int64_t positions) ABSL_LOCKS_EXCLUDED(mu_);

  // Wakes every blocked caller with Cancelled; later waits fail at once. Idempotent.
  void Cancel() ABSL_LOCKS_EXCLUDED(mu_);

  RateLimiterStats stats() const ABSL_LOCKS_EXCLUDED(mu_);
  const RateLimiterOptions& options() const { return options_; }

 private:
  explicit RateLimiter(const RateLimiterOptions& options) : options_(options) {}

  bool CanInsert(int64_t positions) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool CanSample(int64_t positions) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const RateLimiterOptions options_;
  mutable absl::Mutex mu_;
  int64_t inserted_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t reserved_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t deleted_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t sampled_ ABSL_GUARDED_BY(mu_) = 0;
  // Subtracted from I * spi in the diff; set by Restore.
  double diff_offset_ ABSL_GUARDED_BY(mu_) = 0;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  int64_t inserts_blocked_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t samples_blocked_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Duration insert_wait_ ABSL_GUARDED_BY(mu_) = absl::ZeroDuration();
  absl::Duration sample_wait_ ABSL_GUARDED_BY(mu_) = absl::ZeroDuration();
};

}  // namespace zf::replay
