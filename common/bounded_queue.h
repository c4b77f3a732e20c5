// A bounded, closable multi-producer multi-consumer FIFO queue with deadlines.
//
// Back-pressure, not unbounded memory: Push blocks while the queue holds `capacity` items (or
// fails at once with TryPush). Close() starts shutdown: no more pushes are accepted, blocked
// producers and consumers wake, and consumers drain what is left before Pop reports the close.
//
// Thread-safe. No method holds the lock while running user code other than T's move.
//
// Status codes:
//   OK                  the item was pushed / popped
//   ResourceExhausted   TryPush on a full queue
//   DeadlineExceeded    Push/Pop reached `deadline` (per the queue's Clock) without progress
//   Cancelled           the queue is closed (Push), or closed and empty (Pop)
#pragma once

#include <cstddef>
#include <deque>
#include <optional>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/logging.h"

namespace zf {

template <typename T>
class BoundedQueue {
 public:
  // `capacity` must be at least 1. `clock` (not owned, must outlive the queue) times the waits.
  explicit BoundedQueue(size_t capacity, Clock* clock = RealClock())
      : capacity_(capacity), clock_(clock) {
    ZF_CHECK(capacity_ >= 1) << "BoundedQueue capacity must be >= 1";
  }

  BoundedQueue(const BoundedQueue&) = delete;
  BoundedQueue& operator=(const BoundedQueue&) = delete;

  // Appends `item`, blocking while the queue is full, until `deadline`.
  // On failure `item` is left unmoved so the caller can retry or route it elsewhere.
  // Returns: OK, DeadlineExceeded, Cancelled.
  absl::Status Push(T& item, absl::Time deadline = absl::InfiniteFuture()) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    auto can_push = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return closed_ || items_.size() < capacity_;
    };
    if (!clock_->AwaitWithDeadline(&mu_, absl::Condition(&can_push), deadline)) {
      return absl::DeadlineExceededError("queue full until deadline");
    }
    if (closed_) return absl::CancelledError("queue closed");
    items_.push_back(std::move(item));
    return absl::OkStatus();
  }
  absl::Status Push(T&& item, absl::Time deadline = absl::InfiniteFuture())
      ABSL_LOCKS_EXCLUDED(mu_) {
    return Push(item, deadline);
  }

  // Appends `item` if there is room now; never blocks.
  // Returns: OK, ResourceExhausted (full), Cancelled (closed).
  absl::Status TryPush(T& item) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (closed_) return absl::CancelledError("queue closed");
    if (items_.size() >= capacity_) return absl::ResourceExhaustedError("queue full");
    items_.push_back(std::move(item));
    return absl::OkStatus();
  }
  absl::Status TryPush(T&& item) ABSL_LOCKS_EXCLUDED(mu_) { return TryPush(item); }

  // Removes and returns the oldest item, blocking while the queue is empty, until `deadline`.
  // After Close() it keeps returning the remaining items, then Cancelled.
  // Returns: OK (with the item), DeadlineExceeded, Cancelled.
  absl::StatusOr<T> Pop(absl::Time deadline = absl::InfiniteFuture()) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    auto can_pop = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return closed_ || !items_.empty();
    };
    if (!clock_->AwaitWithDeadline(&mu_, absl::Condition(&can_pop), deadline)) {
      return absl::DeadlineExceededError("queue empty until deadline");
    }
    if (items_.empty()) return absl::CancelledError("queue closed");
    T item = std::move(items_.front());
    items_.pop_front();
    return item;
  }

  // Pops without blocking: the oldest item, or nullopt if the queue is empty now.
  std::optional<T> TryPop() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (items_.empty()) return std::nullopt;
    T item = std::move(items_.front());
    items_.pop_front();
    return item;
  }

  // Rejects further pushes and wakes every blocked caller. Idempotent.
  void Close() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    closed_ = true;
  }

  bool closed() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return closed_;
  }
  size_t size() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return items_.size();
  }
  size_t capacity() const { return capacity_; }

 private:
  const size_t capacity_;
  Clock* const clock_;
  mutable absl::Mutex mu_;
  std::deque<T> items_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace zf
