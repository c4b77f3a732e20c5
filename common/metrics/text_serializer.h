// Writes metric snapshots in the Prometheus text exposition format, version 0.0.4, exactly:
//
//   # HELP <name> <help, with \ as \\ and newline as \n>        (omitted when help is empty)
//   # TYPE <name> counter|gauge|histogram|untyped
//   <name>{<label>="<value, with \ as \\, " as \" and newline as \n>",...} <value>
//
// Counters are written under their own name (by our conventions it ends in _total). A histogram
// is written as <name>_bucket{...,le="<bound>"} lines (cumulative, ascending, the last with
// le="+Inf"), then <name>_sum and <name>_count. Labels appear in the order the snapshot holds them
// (sorted by name; "le" last). No timestamps. Numbers use the shortest text that reads back as the
// same double ("0.1", "3", "1e+06", "1.5e-07"), and +Inf, -Inf, NaN spelled that way, which
// Prometheus and promtool parse. Families are written in the order given (Registry::Collect sorts
// them by name), each once, every line ending in "\n".
//
// Thread-safe (stateless).
#pragma once

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "common/metrics/metric_family.h"

namespace zf::metrics {

// The Content-Type of the text exposition format 0.0.4.
inline constexpr char kTextContentType[] = "text/plain; version=0.0.4; charset=utf-8";

class TextSerializer {
 public:
  // Returns the exposition of `families`.
  std::string Serialize(const std::vector<MetricFamily>& families) const;
  // Appends the exposition of `families` to `*out`.
  void SerializeTo(const std::vector<MetricFamily>& families, std::string* out) const;
};

// Formatting pieces, exposed for tests.
std::string FormatValue(double value);                  // "1", "0.25", "+Inf", "-Inf", "NaN"
std::string EscapeHelp(absl::string_view help);         // \ -> \\, newline -> \n
std::string EscapeLabelValue(absl::string_view value);  // \ -> \\, " -> \", newline -> \n

}  // namespace zf::metrics
