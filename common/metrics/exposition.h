// The text that /metrics serves, from the prometheus::Registry objects of one process.
//
// CollectAll: one exposition from several registries, as one process serves them: `zf run`
// hosts the whole fleet, each component with its own registry, and families of the same name
// (zf_build_info, one series per component) must appear once. prometheus-cpp's Exposer would
// write such a family once per registry, which is not a valid exposition.
//
// TextExposition: prometheus-cpp's TextSerializer (format 0.0.4), after escaping HELP texts, which
// prometheus-cpp 1.0.1 writes verbatim (a newline in a help text would end the line; the format
// wants it as \n and a backslash as \\). Label values it escapes itself.
//
// Thread-safe (prometheus::Registry::Collect is; the rest is pure).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "prometheus/metric_family.h"
#include "prometheus/registry.h"

namespace zf::metrics {

// Collects `registries` (null entries are skipped) into one list ordered by family name, each
// family's series ordered by label set. Families of the same name and type are merged (their
// series concatenated; a series whose label set was already seen is dropped); a family whose type
// differs from an earlier family of the same name is dropped; the first HELP text wins. Drops are
// programmer bugs but must not break a scrape: each is logged at ERROR.
std::vector<prometheus::MetricFamily> CollectAll(
    absl::Span<const std::shared_ptr<prometheus::Registry>> registries);

// The Content-Type of the text exposition format 0.0.4.
inline constexpr char kTextContentType[] = "text/plain; version=0.0.4; charset=utf-8";

// Escapes every family's HELP text for the text format (\ as \\, newline as \n): what
// prometheus-cpp 1.0.1's TextSerializer leaves out. Apply once, right before serializing.
void EscapeHelpTexts(std::vector<prometheus::MetricFamily>& families);

// Returns `families` in the text exposition format 0.0.4 (HELP escaped; see above).
std::string TextExposition(std::vector<prometheus::MetricFamily> families);

// The exposition of one registry, ordered as CollectAll orders it.
std::string TextExposition(const prometheus::Registry& registry);

// The exposition-format spelling of `type`: "counter", "gauge", "histogram", "summary",
// "untyped".
std::string MetricTypeName(prometheus::MetricType type);

}  // namespace zf::metrics
