// An injectable clock, so time-dependent logic (batch deadlines, rate limits, progress rates)
// can be tested without sleeping.
//
// Production code takes a `Clock*` in its Options (default: RealClock()) and asks it for the
// time and for timed waits. Tests use FakeClock and move time forward explicitly; a thread
// blocked in FakeClock::WaitUntil wakes when AdvanceTime reaches its deadline or its condition
// turns true.
//
// Thread-safe: every method of every Clock may be called from any thread.
#pragma once

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace zf {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time Now() const = 0;

  // Blocks until `cond` holds (evaluated with `mu` held) or the clock reaches `deadline`.
  // `mu` must be held by the caller, and is held again on return.
  // Returns: true if `cond` holds on return, false if the deadline passed first.
  virtual bool AwaitWithDeadline(absl::Mutex* mu, const absl::Condition& cond,
                                 absl::Time deadline) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) = 0;

  // Blocks the calling thread until the clock reaches `deadline`.
  virtual void SleepUntil(absl::Time deadline) const = 0;
};

// The wall clock (absl::Now). A process-wide singleton; never destroyed.
Clock* RealClock();

// A clock that moves only when told. Starts at the Unix epoch plus one day unless given a time.
// Waiters block on the real mutex and are woken by AdvanceTime/SetTime.
class FakeClock : public Clock {
 public:
  explicit FakeClock(absl::Time start = absl::UnixEpoch() + absl::Hours(24));

  absl::Time Now() const override;
  bool AwaitWithDeadline(absl::Mutex* mu, const absl::Condition& cond,
                         absl::Time deadline) const override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  void SleepUntil(absl::Time deadline) const override;

  // Moves time forward (negative durations are ignored) and wakes waiters whose deadline passed.
  void AdvanceTime(absl::Duration d);
  // Sets the time; it never goes backwards (an earlier time is ignored).
  void SetTime(absl::Time t);
  // The number of threads currently blocked in AwaitWithDeadline or SleepUntil: lets tests
  // wait until a thread under test is parked, without sleeping.
  int NumWaiters() const;

 private:
  mutable absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_);
  mutable int num_waiters_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace zf
