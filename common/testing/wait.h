// Test helpers for proving that a thread is blocked, without sleeping for a guessed time.
#pragma once

#include <functional>
#include <thread>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace zf::testing {

// Spins (yielding) until `pred` is true or `timeout` of real time passes; returns `pred`'s last
// value. The timeout only bounds a broken test; a passing test never waits for it.
inline bool WaitFor(const std::function<bool()>& pred, absl::Duration timeout = absl::Seconds(30)) {
  absl::Time deadline = absl::Now() + timeout;
  while (!pred()) {
    if (absl::Now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

}  // namespace zf::testing
