// Bucket boundaries for prometheus::Histogram, which (in prometheus-cpp 1.0.1) takes a plain
// vector of upper bounds and offers no helpers to make one.
//
//   prometheus::Histogram& latency =
//       prometheus::BuildHistogram().Name("zf_replay_insert_seconds").Help("...")
//           .Register(*registry).Add({}, zf::metrics::ExponentialBuckets(1e-4, 2, 20));
//
// The arguments are programmer constants: a bad one is a bug (ZF_CHECK fails, naming it).
// Thread-safe (pure functions).
#pragma once

#include "prometheus/histogram.h"

namespace zf::metrics {

// Returns {start, start*factor, start*factor^2, ...}, `count` bounds. Requires start > 0,
// factor > 1, count >= 1.
prometheus::Histogram::BucketBoundaries ExponentialBuckets(double start, double factor, int count);

// Returns {start, start+width, start+2*width, ...}, `count` bounds. Requires width > 0,
// count >= 1.
prometheus::Histogram::BucketBoundaries LinearBuckets(double start, double width, int count);

}  // namespace zf::metrics
