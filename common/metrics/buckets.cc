#include "common/metrics/buckets.h"

#include "common/logging.h"

namespace zf::metrics {

prometheus::Histogram::BucketBoundaries ExponentialBuckets(double start, double factor, int count) {
  ZF_CHECK(start > 0) << "ExponentialBuckets: start > 0 required, got " << start;
  ZF_CHECK(factor > 1) << "ExponentialBuckets: factor > 1 required, got " << factor;
  ZF_CHECK(count >= 1) << "ExponentialBuckets: count >= 1 required, got " << count;
  prometheus::Histogram::BucketBoundaries bounds;
  bounds.reserve(count);
  double bound = start;
  for (int i = 0; i < count; ++i, bound *= factor) bounds.push_back(bound);
  return bounds;
}

prometheus::Histogram::BucketBoundaries LinearBuckets(double start, double width, int count) {
  ZF_CHECK(width > 0) << "LinearBuckets: width > 0 required, got " << width;
  ZF_CHECK(count >= 1) << "LinearBuckets: count >= 1 required, got " << count;
  prometheus::Histogram::BucketBoundaries bounds;
  bounds.reserve(count);
  for (int i = 0; i < count; ++i) bounds.push_back(start + i * width);
  return bounds;
}

}  // namespace zf::metrics
