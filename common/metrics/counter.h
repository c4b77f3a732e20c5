// Counter: a monotonically increasing value (requests served, positions written). Exposed as
// TYPE counter; by our conventions its name ends in `_total`.
//
//   auto& family = BuildCounter().Name("zf_replay_inserts_total").Help("...").Register(*registry);
//   Counter& inserts = family.Add({{"table", "main"}});
//   inserts.Increment();
//
// Thread-safe and lock-free: Increment() and Value() are single atomic operations, fit for hot
// loops. Counters are created and owned by their Family; a Counter& stays valid as long as the
// Registry that owns the family (unless Family::Remove is called on it).
#pragma once

#include <atomic>

#include "common/metrics/metric_family.h"

namespace zf::metrics {

class Counter {
 public:
  static constexpr MetricType kType = MetricType::kCounter;

  Counter() = default;
  Counter(const Counter&) = delete;
  Counter& operator=(const Counter&) = delete;

  // Adds 1.
  void Increment() { Increment(1.0); }

  // Adds `value`. A negative or NaN `value` is ignored (the counter does not change), as in
  // prometheus-cpp: a counter never goes down, and a hot loop is never aborted for it.
  void Increment(double value) {
    if (!(value >= 0.0)) return;  // also false for NaN
    value_.fetch_add(value, std::memory_order_relaxed);
  }

  // Returns the current value.
  double Value() const { return value_.load(std::memory_order_relaxed); }

  // Returns a snapshot (labels left empty; the Family fills them in).
  ClientMetric Collect() const;

 private:
  std::atomic<double> value_{0.0};
};

}  // namespace zf::metrics
