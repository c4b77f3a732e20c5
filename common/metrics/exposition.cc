#include "common/metrics/exposition.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_replace.h"
#include "common/logging.h"
#include "prometheus/text_serializer.h"

namespace zf::metrics {

std::string MetricTypeName(prometheus::MetricType type) {
  switch (type) {
    case prometheus::MetricType::Counter:
      return "counter";
    case prometheus::MetricType::Gauge:
      return "gauge";
    case prometheus::MetricType::Histogram:
      return "histogram";
    case prometheus::MetricType::Summary:
      return "summary";
    case prometheus::MetricType::Untyped:
      return "untyped";
  }
  return "untyped";
}

namespace {

// prometheus-cpp keeps a family's series in a hash map: order them for stable output.
void OrderSeries(std::vector<prometheus::MetricFamily>& families) {
  for (prometheus::MetricFamily& family : families) {
    std::stable_sort(family.metric.begin(), family.metric.end(),
                     [](const prometheus::ClientMetric& a, const prometheus::ClientMetric& b) {
                       return a.label < b.label;
                     });
  }
}

}  // namespace

std::vector<prometheus::MetricFamily> CollectAll(
    absl::Span<const std::shared_ptr<prometheus::Registry>> registries) {
  using prometheus::ClientMetric;
  std::map<std::string, prometheus::MetricFamily> merged;
  std::map<std::string, std::set<std::vector<ClientMetric::Label>>> seen_series;
  for (const std::shared_ptr<prometheus::Registry>& registry : registries) {
    if (registry == nullptr) continue;
    for (prometheus::MetricFamily& family : registry->Collect()) {
      auto [it, inserted] = merged.try_emplace(family.name);
      prometheus::MetricFamily& target = it->second;
      std::set<std::vector<ClientMetric::Label>>& seen = seen_series[family.name];
      if (inserted) {
        target.name = family.name;
        target.help = std::move(family.help);
        target.type = family.type;
      } else if (target.type != family.type) {
        ZF_LOG(ERROR) << "metrics: dropping family " << family.name << " of type "
                      << MetricTypeName(family.type) << ": another registry exposes it as "
                      << MetricTypeName(target.type);
        continue;
      }
      for (ClientMetric& metric : family.metric) {
        // prometheus-cpp lists a family's constant labels, then the series' own, each set
        // sorted by name: equal label sets give equal vectors within one family.
        if (!seen.insert(metric.label).second) {
          ZF_LOG(ERROR) << "metrics: dropping a duplicate series of " << family.name
                        << " exposed by more than one registry";
          continue;
        }
        target.metric.push_back(std::move(metric));
      }
    }
  }
  std::vector<prometheus::MetricFamily> out;
  out.reserve(merged.size());
  for (auto& [name, family] : merged) out.push_back(std::move(family));
  OrderSeries(out);
  return out;
}

void EscapeHelpTexts(std::vector<prometheus::MetricFamily>& families) {
  for (prometheus::MetricFamily& family : families) {
    family.help = absl::StrReplaceAll(family.help, {{"\\", "\\\\"}, {"\n", "\\n"}});
  }
}

std::string TextExposition(std::vector<prometheus::MetricFamily> families) {
  EscapeHelpTexts(families);
  return prometheus::TextSerializer().Serialize(families);
}

std::string TextExposition(const prometheus::Registry& registry) {
  std::vector<prometheus::MetricFamily> families = registry.Collect();
  std::stable_sort(families.begin(), families.end(),
                   [](const prometheus::MetricFamily& a, const prometheus::MetricFamily& b) {
                     return a.name < b.name;
                   });
  OrderSeries(families);
  return TextExposition(std::move(families));
}

}  // namespace zf::metrics
