// Gauge: a value that goes up and down (queue depth, model version in use, batch fill).
// Exposed as TYPE gauge.
//
//   Gauge& depth = BuildGauge().Name("zf_batcher_queue_rows").Help("...").Register(*registry)
//                      .Add({});
//   depth.Set(17);
//
// Thread-safe and lock-free: every method is one atomic operation (Increment/Decrement a
// compare-and-swap loop). Gauges are owned by their Family; a Gauge& stays valid as long as the
// Registry that owns the family (unless Family::Remove is called on it).
#pragma once

#include <atomic>

#include "common/metrics/metric_family.h"

namespace zf::metrics {

class Gauge {
 public:
  static constexpr MetricType kType = MetricType::kGauge;

  Gauge() = default;
  Gauge(const Gauge&) = delete;
  Gauge& operator=(const Gauge&) = delete;

  // Adds `value` (may be negative).
  void Increment(double value = 1.0) { value_.fetch_add(value, std::memory_order_relaxed); }

  // Subtracts `value`.
  void Decrement(double value = 1.0) { value_.fetch_sub(value, std::memory_order_relaxed); }

  // Sets the value. Any double, including +Inf, -Inf and NaN, is exposed faithfully.
  void Set(double value) { value_.store(value, std::memory_order_relaxed); }

  // Sets the value to the current Unix time in seconds (absl::Now()).
  void SetToCurrentTime();

  // Returns the current value.
  double Value() const { return value_.load(std::memory_order_relaxed); }

  // Returns a snapshot (labels left empty; the Family fills them in).
  ClientMetric Collect() const;

 private:
  std::atomic<double> value_{0.0};
};

}  // namespace zf::metrics
