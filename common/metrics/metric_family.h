// Snapshot data model of collected metrics, shaped like prometheus-cpp's ClientMetric and
// MetricFamily so that the serializer (and any code reading snapshots) could move to that library.
//
// A MetricFamily is a plain value: it is produced by Registry::Collect() and consumed by
// TextSerializer; it never refers back to the live metrics. Thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace zf::metrics {

// Label name -> label value. A std::map, so label sets are ordered by name and comparable.
using Labels = std::map<std::string, std::string>;

enum class MetricType { kCounter, kGauge, kHistogram, kUntyped };

// Returns the exposition-format spelling: "counter", "gauge", "histogram", "untyped".
absl::string_view MetricTypeName(MetricType type);

// One time series (one label set) of a family. Only the member matching the family's type is used.
struct ClientMetric {
  struct Label {
    std::string name;
    std::string value;
    friend bool operator==(const Label&, const Label&) = default;
    friend auto operator<=>(const Label&, const Label&) = default;
  };
  // Constant and per-series labels together, sorted by name.
  std::vector<Label> label;

  struct Counter {
    double value = 0.0;
  };
  Counter counter;

  struct Gauge {
    double value = 0.0;
  };
  Gauge gauge;

  struct Bucket {
    std::uint64_t cumulative_count = 0;  // observations <= upper_bound
    double upper_bound = 0.0;            // the last bucket's bound is +Inf
  };
  struct Histogram {
    std::uint64_t sample_count = 0;  // equals the +Inf bucket's cumulative_count
    double sample_sum = 0.0;
    std::vector<Bucket> bucket;  // ascending upper_bound, ending with +Inf
  };
  Histogram histogram;

  struct Untyped {
    double value = 0.0;
  };
  Untyped untyped;
};

// All series sharing one metric name, HELP text and type.
struct MetricFamily {
  std::string name;
  std::string help;
  MetricType type = MetricType::kUntyped;
  std::vector<ClientMetric> metric;
};

}  // namespace zf::metrics
