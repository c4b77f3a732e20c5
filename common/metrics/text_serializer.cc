#include "common/metrics/text_serializer.h"

#include <charconv>
#include <cmath>
#include <cstdint>

#include "absl/strings/str_cat.h"

namespace zf::metrics {
namespace {

void AppendValue(double value, std::string* out) {
  if (std::isnan(value)) {
    out->append("NaN");
  } else if (std::isinf(value)) {
    out->append(value > 0 ? "+Inf" : "-Inf");
  } else {
    // Shortest round-trip form, like Go's strconv.FormatFloat(v, 'g', -1, 64) which the Go
    // client uses; never locale-dependent.
    char buffer[64];
    auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
    out->append(buffer, end);
  }
}

void AppendEscaped(absl::string_view text, bool escape_quote, std::string* out) {
  for (char c : text) {
    switch (c) {
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '"':
        if (escape_quote) {
          out->append("\\\"");
        } else {
          out->push_back(c);
        }
        break;
      default:
        out->push_back(c);
    }
  }
}

// Writes `name{labels[,le="bound"]} value\n`.
void AppendSample(absl::string_view name, const std::vector<ClientMetric::Label>& labels,
                  const double* le, absl::string_view value, std::string* out) {
  out->append(name.data(), name.size());
  if (!labels.empty() || le != nullptr) {
    out->push_back('{');
    bool first = true;
    for (const ClientMetric::Label& label : labels) {
      if (!first) out->push_back(',');
      first = false;
      absl::StrAppend(out, label.name, "=\"");
      AppendEscaped(label.value, /*escape_quote=*/true, out);
      out->push_back('"');
    }
    if (le != nullptr) {
      if (!first) out->push_back(',');
      out->append("le=\"");
      AppendValue(*le, out);
      out->push_back('"');
    }
    out->push_back('}');
  }
  out->push_back(' ');
  out->append(value.data(), value.size());
  out->push_back('\n');
}

void AppendSample(absl::string_view name, const std::vector<ClientMetric::Label>& labels,
                  const double* le, double value, std::string* out) {
  std::string text;
  AppendValue(value, &text);
  AppendSample(name, labels, le, text, out);
}

void AppendCount(absl::string_view name, const std::vector<ClientMetric::Label>& labels,
                 const double* le, std::uint64_t count, std::string* out) {
  // Integers are written exactly, even above 2^53.
  AppendSample(name, labels, le, absl::StrCat(count), out);
}

}  // namespace

std::string FormatValue(double value) {
  std::string out;
  AppendValue(value, &out);
  return out;
}

std::string EscapeHelp(absl::string_view help) {
  std::string out;
  AppendEscaped(help, /*escape_quote=*/false, &out);
  return out;
}

std::string EscapeLabelValue(absl::string_view value) {
  std::string out;
  AppendEscaped(value, /*escape_quote=*/true, &out);
  return out;
}

std::string TextSerializer::Serialize(const std::vector<MetricFamily>& families) const {
  std::string out;
  SerializeTo(families, &out);
  return out;
}

void TextSerializer::SerializeTo(const std::vector<MetricFamily>& families,
                                 std::string* out) const {
  for (const MetricFamily& family : families) {
    if (!family.help.empty()) {
      absl::StrAppend(out, "# HELP ", family.name, " ");
      AppendEscaped(family.help, /*escape_quote=*/false, out);
      out->push_back('\n');
    }
    absl::StrAppend(out, "# TYPE ", family.name, " ", MetricTypeName(family.type), "\n");
    for (const ClientMetric& metric : family.metric) {
      switch (family.type) {
        case MetricType::kCounter:
          AppendSample(family.name, metric.label, nullptr, metric.counter.value, out);
          break;
        case MetricType::kGauge:
          AppendSample(family.name, metric.label, nullptr, metric.gauge.value, out);
          break;
        case MetricType::kUntyped:
          AppendSample(family.name, metric.label, nullptr, metric.untyped.value, out);
          break;
        case MetricType::kHistogram: {
          const std::string bucket_name = absl::StrCat(family.name, "_bucket");
          for (const ClientMetric::Bucket& bucket : metric.histogram.bucket) {
            AppendCount(bucket_name, metric.label, &bucket.upper_bound, bucket.cumulative_count,
                        out);
          }
          AppendSample(absl::StrCat(family.name, "_sum"), metric.label, nullptr,
                       metric.histogram.sample_sum, out);
          AppendCount(absl::StrCat(family.name, "_count"), metric.label, nullptr,
                      metric.histogram.sample_count, out);
          break;
        }
      }
    }
  }
}

}  // namespace zf::metrics
