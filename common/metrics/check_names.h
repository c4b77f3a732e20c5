// Name rules of the Prometheus data model, checked when a metric family is registered.
//
//   metric name: [a-zA-Z_:][a-zA-Z0-9_:]*, not starting with "__" (reserved for Prometheus).
//   label name:  [a-zA-Z_][a-zA-Z0-9_]*,   not starting with "__" (reserved for Prometheus).
//
// Colons are legal in metric names but meant for recording rules: our own metrics never use them
// (promtool's linter flags them). Label values may be any UTF-8 text.
//
// Thread-safe (pure functions).
#pragma once

#include "absl/strings/string_view.h"

namespace zf::metrics {

// Returns true if `name` is a valid metric (family) name.
bool IsValidMetricName(absl::string_view name);

// Returns true if `name` is a valid label name.
bool IsValidLabelName(absl::string_view name);

}  // namespace zf::metrics
