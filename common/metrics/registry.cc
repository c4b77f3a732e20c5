#include "common/metrics/registry.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/metrics/check_names.h"
#include "common/metrics/text_serializer.h"

namespace zf::metrics {
namespace {

constexpr const char* kHistogramSuffixes[] = {"_bucket", "_sum", "_count"};

}  // namespace

std::string Registry::CollidingFamily(const std::string& name, MetricType type) const {
  // An existing histogram owns <its name>_bucket/_sum/_count.
  for (const char* suffix : kHistogramSuffixes) {
    if (!absl::EndsWith(name, suffix)) continue;
    const std::string base = name.substr(0, name.size() - std::char_traits<char>::length(suffix));
    auto it = families_.find(base);
    if (it != families_.end() && it->second.type == MetricType::kHistogram) return base;
  }
  // A new histogram would own those names.
  if (type == MetricType::kHistogram) {
    for (const char* suffix : kHistogramSuffixes) {
      const std::string series = absl::StrCat(name, suffix);
      if (families_.count(series) > 0) return series;
    }
  }
  return "";
}

template <typename T>
Family<T>& Registry::Add(const std::string& name, const std::string& help,
                         const Labels& constant_labels) {
  ZF_CHECK(IsValidMetricName(name)) << "invalid metric name \"" << name << "\"";
  for (const auto& [label_name, value] : constant_labels) {
    ZF_CHECK(IsValidLabelName(label_name))
        << "metric " << name << ": invalid constant label name \"" << label_name << "\"";
    if constexpr (std::is_same_v<T, Histogram>) {
      ZF_CHECK(label_name != "le") << "histogram " << name << ": the label \"le\" is reserved";
    }
  }

  absl::MutexLock lock(&mu_);
  auto it = families_.find(name);
  if (it != families_.end()) {
    const Entry& entry = it->second;
    ZF_CHECK(entry.type == T::kType)
        << "metric " << name << " registered as " << MetricTypeName(entry.type) << " and again as "
        << MetricTypeName(T::kType);
    ZF_CHECK(entry.help == help) << "metric " << name << " registered twice with different help";
    ZF_CHECK(entry.constant_labels == constant_labels)
        << "metric " << name << " registered twice with different constant labels";
    return static_cast<Family<T>&>(*entry.family);
  }
  const std::string collision = CollidingFamily(name, T::kType);
  ZF_CHECK(collision.empty()) << "metric " << name << " collides with the series of " << collision;

  auto family = std::make_unique<Family<T>>(name, help, constant_labels);
  Family<T>& result = *family;
  families_.emplace(name, Entry{T::kType, std::move(family), help, constant_labels});
  return result;
}

template Family<Counter>& Registry::Add<Counter>(const std::string&, const std::string&,
                                                 const Labels&);
template Family<Gauge>& Registry::Add<Gauge>(const std::string&, const std::string&, const Labels&);
template Family<Histogram>& Registry::Add<Histogram>(const std::string&, const std::string&,
                                                     const Labels&);

std::vector<MetricFamily> Registry::Collect() const {
  std::vector<MetricFamily> out;
  absl::MutexLock lock(&mu_);
  out.reserve(families_.size());
  for (const auto& [name, entry] : families_) {
    for (MetricFamily& family : entry.family->Collect()) out.push_back(std::move(family));
  }
  return out;
}

std::string Registry::Serialize() const { return TextSerializer().Serialize(Collect()); }

std::vector<MetricFamily> CollectAll(absl::Span<const std::shared_ptr<Registry>> registries) {
  std::map<std::string, MetricFamily> merged;
  std::map<std::string, std::set<std::vector<ClientMetric::Label>>> seen_series;
  for (const std::shared_ptr<Registry>& registry : registries) {
    if (registry == nullptr) continue;
    for (MetricFamily& family : registry->Collect()) {
      auto [it, inserted] = merged.try_emplace(family.name);
      MetricFamily& target = it->second;
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
        if (!seen.insert(metric.label).second) {
          ZF_LOG(ERROR) << "metrics: dropping a duplicate series of " << family.name
                        << " exposed by more than one registry";
          continue;
        }
        target.metric.push_back(std::move(metric));
      }
    }
  }
  std::vector<MetricFamily> out;
  out.reserve(merged.size());
  for (auto& [name, family] : merged) {
    // One registry's series are already ordered; merged ones are put in the same order.
    std::stable_sort(
        family.metric.begin(), family.metric.end(),
        [](const ClientMetric& a, const ClientMetric& b) { return a.label < b.label; });
    out.push_back(std::move(family));
  }
  return out;
}

detail::Builder<Counter> BuildCounter() { return {}; }
detail::Builder<Gauge> BuildGauge() { return {}; }
detail::Builder<Histogram> BuildHistogram() { return {}; }

}  // namespace zf::metrics
