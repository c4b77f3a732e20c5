#include "common/clock.h"

#include "absl/time/clock.h"

namespace zf {
namespace {

class RealClockImpl : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
  bool AwaitWithDeadline(absl::Mutex* mu, const absl::Condition& cond,
                         absl::Time deadline) const override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return mu->AwaitWithDeadline(cond, deadline);
  }
  void SleepUntil(absl::Time deadline) const override {
    absl::Duration left = deadline - absl::Now();
    if (left > absl::ZeroDuration()) absl::SleepFor(left);
  }
};

}  // namespace

Clock* RealClock() {
  static Clock* clock = new RealClockImpl();
  return clock;
}

FakeClock::FakeClock(absl::Time start) : now_(start) {}

absl::Time FakeClock::Now() const {
  absl::MutexLock lock(&mu_);
  return now_;
}

bool FakeClock::AwaitWithDeadline(absl::Mutex* mu, const absl::Condition& cond,
                                  absl::Time deadline) const {
  {
    absl::MutexLock lock(&mu_);
    ++num_waiters_;
  }
  // The caller's condition is re-evaluated whenever `mu` is released by another thread; fake
  // time moves under our own mutex, which does not wake `mu`'s waiters, so we also re-check the
  // fake deadline every millisecond of real time. A test clock can afford the polling.
  bool satisfied = false;
  while (true) {
    if (mu->AwaitWithTimeout(cond, absl::Milliseconds(1))) {
      satisfied = true;
      break;
    }
    if (Now() >= deadline) break;
  }
  absl::MutexLock lock(&mu_);
  --num_waiters_;
  return satisfied;
}

void FakeClock::SleepUntil(absl::Time deadline) const {
  absl::MutexLock lock(&mu_);
  ++num_waiters_;
  auto reached = [this, deadline]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return now_ >= deadline; };
  mu_.Await(absl::Condition(&reached));
  --num_waiters_;
}

void FakeClock::AdvanceTime(absl::Duration d) {
  if (d < absl::ZeroDuration()) return;
  absl::MutexLock lock(&mu_);
  now_ += d;
}

void FakeClock::SetTime(absl::Time t) {
  absl::MutexLock lock(&mu_);
  if (t > now_) now_ = t;
}

int FakeClock::NumWaiters() const {
  absl::MutexLock lock(&mu_);
  return num_waiters_;
}

}  // namespace zf
