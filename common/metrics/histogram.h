// Histogram: counts observations (latencies, batch sizes) into buckets with fixed upper bounds.
// Exposed as TYPE histogram: cumulative `<name>_bucket{le="<bound>"}` series ending with
// le="+Inf", then `<name>_sum` and `<name>_count`.
//
//   auto& family = BuildHistogram().Name("zf_inference_batch_seconds").Help("...")
//                      .Register(*registry);
//   Histogram& latency = family.Add({}, ExponentialBuckets(0.0005, 2, 12));
//   latency.Observe(0.0031);
//
// An observation v lands in the first bucket whose upper bound b satisfies v <= b (Prometheus
// `le` semantics), or in the implicit +Inf bucket. NaN lands in the +Inf bucket and makes the
// sum NaN (as in the Go client: the observation is counted, not hidden).
//
// Thread-safe and lock-free: Observe() is a binary search plus two atomic adds. Counts are kept
// per bucket and made cumulative when collected, and `_count` is computed from the buckets, so a
// snapshot always has `_count` equal to the +Inf bucket; `_sum` may trail the buckets by
// observations in flight during the snapshot. Histograms are owned by their Family; a Histogram&
// stays valid as long as the Registry that owns the family (unless Family::Remove is called).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/metrics/metric_family.h"

namespace zf::metrics {

class Histogram {
 public:
  using BucketBoundaries = std::vector<double>;
  static constexpr MetricType kType = MetricType::kHistogram;

  // `boundaries` are the finite upper bounds, strictly increasing, no NaN; a trailing +Inf is
  // accepted and dropped (the +Inf bucket is always implicit); an empty list leaves only +Inf.
  // Invalid boundaries are a programmer bug: ZF_CHECK fails (see IsValidBucketBoundaries).
  explicit Histogram(BucketBoundaries boundaries);
  Histogram(const Histogram&) = delete;
  Histogram& operator=(const Histogram&) = delete;

  // Records one observation.
  void Observe(double value);

  // Records many observations at once, already bucketed by the caller: `bucket_increments[i]` is
  // the number of new observations in bucket i (non-cumulative; size boundaries().size() + 1, the
  // last entry for +Inf), `sum_of_values` their sum. A wrong size is a programmer bug (ZF_CHECK).
  void ObserveMultiple(const std::vector<std::uint64_t>& bucket_increments, double sum_of_values);

  // The finite upper bounds, without +Inf.
  const BucketBoundaries& boundaries() const { return boundaries_; }

  // Returns a snapshot (labels left empty; the Family fills them in).
  ClientMetric Collect() const;

 private:
  const BucketBoundaries boundaries_;
  // boundaries_.size() + 1 counters, non-cumulative; the last one is the +Inf bucket.
  std::unique_ptr<std::atomic<std::uint64_t>[]> bucket_counts_;
  std::atomic<double> sum_{0.0};
};

// Returns true if `boundaries` are acceptable to Histogram's constructor.
bool IsValidBucketBoundaries(const Histogram::BucketBoundaries& boundaries);

// Returns {start, start*factor, start*factor^2, ...}, `count` bounds. Requires start > 0,
// factor > 1, count >= 1 (ZF_CHECK: arguments are programmer constants).
Histogram::BucketBoundaries ExponentialBuckets(double start, double factor, int count);

// Returns {start, start+width, start+2*width, ...}, `count` bounds. Requires width > 0,
// count >= 1 (ZF_CHECK).
Histogram::BucketBoundaries LinearBuckets(double start, double width, int count);

// The Go client's default latency buckets in seconds: .005 .01 .025 .05 .1 .25 .5 1 2.5 5 10.
Histogram::BucketBoundaries DefaultBuckets();

}  // namespace zf::metrics
