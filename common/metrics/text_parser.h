// Reads the Prometheus text exposition format 0.0.4 back into MetricFamily snapshots: the inverse
// of prometheus-cpp's TextSerializer (exposition.h), for tools that scrape /metrics (`zf top`).
//
// Accepted, as Prometheus accepts it:
//   # HELP <name> <help, \\ and \n unescaped>
//   # TYPE <name> counter|gauge|histogram|summary|untyped
//   # any other comment (ignored)
//   <name>[{<label>="<value, \\ \" \n unescaped>",...[,]}] <value> [<timestamp ms, ignored>]
//   blank lines (ignored)
// Values are decimal or exponent floats, +Inf, -Inf, NaN (any case). Whitespace between tokens may
// be spaces or tabs.
//
// How samples become families:
//   - A family declared `histogram` collects <name>_bucket{...,le="b"}, <name>_sum and
//     <name>_count; its series are keyed by their labels without "le", buckets sorted by bound.
//     sample_count is <name>_count's value (or, when absent, the +Inf bucket's).
//   - A family declared `counter` or `gauge` takes samples of exactly its name.
//   - `summary` families and samples of no declared family become `untyped` families, one per
//     sample name (a summary's <name>_sum and <name>_count are families of their own).
// Families are returned in the order they first appear; labels of each series are sorted by name.
//
// Thread-safe (stateless).
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "prometheus/metric_family.h"

namespace zf::metrics {

// Parses a whole exposition.
// Returns: the families; InvalidArgument naming the line number and what is wrong there
//          (a malformed sample, label set, value or TYPE line, an unknown type, a histogram
//          bucket without an "le" label or with an unparsable one, a TYPE after that family's
//          samples, a sample name that breaks the metric-name rules).
absl::StatusOr<std::vector<prometheus::MetricFamily>> ParseText(absl::string_view text);

}  // namespace zf::metrics
