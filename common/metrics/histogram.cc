#include "common/metrics/histogram.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "common/logging.h"

namespace zf::metrics {
namespace {

Histogram::BucketBoundaries WithoutTrailingInf(Histogram::BucketBoundaries boundaries) {
  if (!boundaries.empty() && boundaries.back() == std::numeric_limits<double>::infinity()) {
    boundaries.pop_back();
  }
  return boundaries;
}

}  // namespace

bool IsValidBucketBoundaries(const Histogram::BucketBoundaries& boundaries) {
  const Histogram::BucketBoundaries finite = WithoutTrailingInf(boundaries);
  for (size_t i = 0; i < finite.size(); ++i) {
    if (!std::isfinite(finite[i])) return false;
    if (i > 0 && !(finite[i - 1] < finite[i])) return false;
  }
  return true;
}

Histogram::Histogram(BucketBoundaries boundaries)
    : boundaries_(WithoutTrailingInf(std::move(boundaries))),
      bucket_counts_(new std::atomic<std::uint64_t>[boundaries_.size() + 1]) {
  ZF_CHECK(IsValidBucketBoundaries(boundaries_))
      << "histogram bucket boundaries must be finite and strictly increasing";
  for (size_t i = 0; i <= boundaries_.size(); ++i) {
    bucket_counts_[i].store(0, std::memory_order_relaxed);
  }
}

void Histogram::Observe(double value) {
  // First bound >= value; NaN compares false everywhere and so ends in the +Inf bucket.
  const size_t bucket = static_cast<size_t>(
      std::partition_point(boundaries_.begin(), boundaries_.end(),
                           [value](double bound) { return !(value <= bound); }) -
      boundaries_.begin());
  bucket_counts_[bucket].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(value, std::memory_order_relaxed);
}

void Histogram::ObserveMultiple(const std::vector<std::uint64_t>& bucket_increments,
                                double sum_of_values) {
  ZF_CHECK(bucket_increments.size() == boundaries_.size() + 1)
      << "ObserveMultiple needs " << boundaries_.size() + 1 << " bucket increments, got "
      << bucket_increments.size();
  for (size_t i = 0; i < bucket_increments.size(); ++i) {
    if (bucket_increments[i] != 0) {
      bucket_counts_[i].fetch_add(bucket_increments[i], std::memory_order_relaxed);
    }
  }
  sum_.fetch_add(sum_of_values, std::memory_order_relaxed);
}

ClientMetric Histogram::Collect() const {
  ClientMetric metric;
  metric.histogram.bucket.reserve(boundaries_.size() + 1);
  std::uint64_t cumulative = 0;
  for (size_t i = 0; i <= boundaries_.size(); ++i) {
    cumulative += bucket_counts_[i].load(std::memory_order_relaxed);
    ClientMetric::Bucket bucket;
    bucket.cumulative_count = cumulative;
    bucket.upper_bound =
        i < boundaries_.size() ? boundaries_[i] : std::numeric_limits<double>::infinity();
    metric.histogram.bucket.push_back(bucket);
  }
  metric.histogram.sample_count = cumulative;
  metric.histogram.sample_sum = sum_.load(std::memory_order_relaxed);
  return metric;
}

Histogram::BucketBoundaries ExponentialBuckets(double start, double factor, int count) {
  ZF_CHECK(start > 0.0 && factor > 1.0 && count >= 1)
      << "ExponentialBuckets(start=" << start << ", factor=" << factor << ", count=" << count
      << ") needs start > 0, factor > 1, count >= 1";
  Histogram::BucketBoundaries bounds;
  bounds.reserve(count);
  double bound = start;
  for (int i = 0; i < count; ++i) {
    bounds.push_back(bound);
    bound *= factor;
  }
  return bounds;
}

Histogram::BucketBoundaries LinearBuckets(double start, double width, int count) {
  ZF_CHECK(width > 0.0 && count >= 1 && std::isfinite(start))
      << "LinearBuckets(start=" << start << ", width=" << width << ", count=" << count
      << ") needs a finite start, width > 0, count >= 1";
  Histogram::BucketBoundaries bounds;
  bounds.reserve(count);
  for (int i = 0; i < count; ++i) {
    // start + i*width, not repeated addition, so that bounds do not drift (0.1 * 3 vs .1+.1+.1).
    bounds.push_back(start + i * width);
  }
  return bounds;
}

Histogram::BucketBoundaries DefaultBuckets() {
  return {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}

}  // namespace zf::metrics
