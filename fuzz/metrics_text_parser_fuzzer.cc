// libFuzzer target: the Prometheus text parser (`zf top` and the tests read other processes'
// /metrics with it). Whatever it accepts must serialize (TextExposition: prometheus-cpp's
// serializer) and parse back to the same families: the same names, types, label sets and
// counts, and the same values up to the 16 significant digits prometheus-cpp 1.0.1 writes.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "common/logging.h"
#include "common/metrics/exposition.h"
#include "common/metrics/text_parser.h"

namespace {

bool SameValue(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (a == b) return true;
  return std::fabs(a - b) <= 1e-15 * std::fmax(std::fabs(a), std::fabs(b));
}

void CheckSame(const std::vector<prometheus::MetricFamily>& a,
               const std::vector<prometheus::MetricFamily>& b, const std::string& text) {
  ZF_CHECK(a.size() == b.size()) << "family count changed:\n" << text;
  for (size_t f = 0; f < a.size(); ++f) {
    ZF_CHECK(a[f].name == b[f].name && a[f].type == b[f].type && a[f].help == b[f].help &&
             a[f].metric.size() == b[f].metric.size())
        << "family " << a[f].name << " changed:\n"
        << text;
    for (size_t m = 0; m < a[f].metric.size(); ++m) {
      const prometheus::ClientMetric& x = a[f].metric[m];
      const prometheus::ClientMetric& y = b[f].metric[m];
      ZF_CHECK(x.label == y.label) << "labels of " << a[f].name << " changed:\n" << text;
      ZF_CHECK(SameValue(x.counter.value, y.counter.value) &&
               SameValue(x.gauge.value, y.gauge.value) &&
               SameValue(x.untyped.value, y.untyped.value) &&
               SameValue(x.histogram.sample_sum, y.histogram.sample_sum) &&
               x.histogram.sample_count == y.histogram.sample_count &&
               x.histogram.bucket.size() == y.histogram.bucket.size())
          << "values of " << a[f].name << " changed:\n"
          << text;
      for (size_t i = 0; i < x.histogram.bucket.size(); ++i) {
        ZF_CHECK(x.histogram.bucket[i].cumulative_count == y.histogram.bucket[i].cumulative_count &&
                 SameValue(x.histogram.bucket[i].upper_bound, y.histogram.bucket[i].upper_bound))
            << "buckets of " << a[f].name << " changed:\n"
            << text;
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view text(reinterpret_cast<const char*>(data), size);
  auto families = zf::metrics::ParseText(text);
  if (!families.ok()) return 0;
  const std::string again = zf::metrics::TextExposition(*families);
  auto reparsed = zf::metrics::ParseText(again);
  ZF_CHECK(reparsed.ok()) << "the parser refused what the serializer wrote from its output: "
                          << reparsed.status() << "\n"
                          << again;
  auto third = zf::metrics::ParseText(zf::metrics::TextExposition(*reparsed));
  ZF_CHECK(third.ok()) << third.status();
  CheckSame(*reparsed, *third, again);
  return 0;
}
