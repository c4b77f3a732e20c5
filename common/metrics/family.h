// Family<T>: all series of one metric name, told apart by their labels; T is Counter, Gauge or
// Histogram. Created by the builders in registry.h and owned by a Registry:
//
//   Family<Counter>& requests = BuildCounter().Name("zf_replay_requests_total")
//                                   .Help("Replay RPCs served.").Register(*registry);
//   Counter& sample_ok = requests.Add({{"method", "sample"}, {"code", "ok"}});
//
// Add() returns a reference that stays valid as long as the Registry: call it once, outside hot
// loops, and keep the reference. Never use a label whose values grow without bound (game id, model
// version): each label set is a series that lives until the process exits.
//
// Programmer bugs (ZF_CHECK-fail, with the family and label named): an invalid label name (see
// check_names.h), a label that repeats a constant label of the family, the label "le" on a
// histogram, and adding an existing histogram series with different bucket boundaries.
//
// Thread-safe: Add/Remove/Has/Collect take the family's mutex; the returned metrics are
// themselves thread-safe and lock-free.
#pragma once

#include <limits>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/logging.h"
#include "common/metrics/check_names.h"
#include "common/metrics/counter.h"
#include "common/metrics/gauge.h"
#include "common/metrics/histogram.h"
#include "common/metrics/metric_family.h"

namespace zf::metrics {

// Anything a Registry can collect from. Implementations are thread-safe.
class Collectable {
 public:
  virtual ~Collectable() = default;
  // Returns a snapshot of the families this object holds (may be empty).
  virtual std::vector<MetricFamily> Collect() const = 0;
};

template <typename T>
class Family final : public Collectable {
  static_assert(std::is_same_v<T, Counter> || std::is_same_v<T, Gauge> ||
                    std::is_same_v<T, Histogram>,
                "Family<T> holds Counter, Gauge or Histogram");

 public:
  // Use the builders in registry.h; `name`, `help` and `constant_labels` are validated there.
  Family(std::string name, std::string help, Labels constant_labels)
      : name_(std::move(name)),
        help_(std::move(help)),
        constant_labels_(std::move(constant_labels)) {}
  Family(const Family&) = delete;
  Family& operator=(const Family&) = delete;

  // Returns the series with `labels`, creating it on first use; the same labels always return the
  // same object.
  T& Add(const Labels& labels) requires(!std::is_same_v<T, Histogram>) {
    absl::MutexLock lock(&mu_);
    auto it = metrics_.find(labels);
    if (it != metrics_.end()) return *it->second.metric;
    CheckLabels(labels);
    return Insert(labels, std::make_unique<T>());
  }

  // Histogram form: returns the series with `labels`, creating it with `boundaries` on first use.
  // Asking again for the same labels with different boundaries is a programmer bug (ZF_CHECK).
  T& Add(const Labels& labels,
         Histogram::BucketBoundaries boundaries) requires(std::is_same_v<T, Histogram>) {
    absl::MutexLock lock(&mu_);
    auto it = metrics_.find(labels);
    if (it != metrics_.end()) {
      Histogram::BucketBoundaries requested = boundaries;
      if (!requested.empty() && requested.back() == std::numeric_limits<double>::infinity()) {
        requested.pop_back();
      }
      ZF_CHECK(it->second.metric->boundaries() == requested)
          << "histogram " << name_ << " series added again with different bucket boundaries";
      return *it->second.metric;
    }
    CheckLabels(labels);
    ZF_CHECK(IsValidBucketBoundaries(boundaries))
        << "histogram " << name_ << ": bucket boundaries must be finite and strictly increasing";
    return Insert(labels, std::make_unique<T>(std::move(boundaries)));
  }

  // Removes the series `metric` (from Add). Every reference to it becomes dangling: only for
  // owners that know no one else holds it. Unknown pointers are ignored.
  void Remove(T* metric) {
    absl::MutexLock lock(&mu_);
    for (auto it = metrics_.begin(); it != metrics_.end(); ++it) {
      if (it->second.metric.get() == metric) {
        metrics_.erase(it);
        return;
      }
    }
  }

  // Returns true if a series with exactly `labels` exists.
  bool Has(const Labels& labels) const {
    absl::MutexLock lock(&mu_);
    return metrics_.count(labels) > 0;
  }

  const std::string& GetName() const { return name_; }
  const std::string& GetHelp() const { return help_; }
  const Labels& GetConstantLabels() const { return constant_labels_; }

  // Returns one MetricFamily with every series, ordered by label set; nothing if the family has no
  // series yet (an empty family is not exposed).
  std::vector<MetricFamily> Collect() const override {
    MetricFamily family;
    family.name = name_;
    family.help = help_;
    family.type = T::kType;
    {
      absl::MutexLock lock(&mu_);
      if (metrics_.empty()) return {};
      family.metric.reserve(metrics_.size());
      for (const auto& [labels, entry] : metrics_) {
        ClientMetric metric = entry.metric->Collect();
        metric.label = entry.all_labels;
        family.metric.push_back(std::move(metric));
      }
    }
    std::vector<MetricFamily> out;
    out.push_back(std::move(family));
    return out;
  }

 private:
  struct Entry {
    std::unique_ptr<T> metric;
    std::vector<ClientMetric::Label> all_labels;  // constant + own, sorted by name
  };

  void CheckLabels(const Labels& labels) const {
    for (const auto& [label_name, value] : labels) {
      ZF_CHECK(IsValidLabelName(label_name))
          << "metric " << name_ << ": invalid label name \"" << label_name << "\"";
      ZF_CHECK(constant_labels_.count(label_name) == 0)
          << "metric " << name_ << ": label \"" << label_name << "\" is also a constant label";
      if constexpr (std::is_same_v<T, Histogram>) {
        ZF_CHECK(label_name != "le") << "histogram " << name_ << ": the label \"le\" is reserved";
      }
    }
  }

  T& Insert(const Labels& labels, std::unique_ptr<T> metric) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    Labels merged = constant_labels_;
    merged.insert(labels.begin(), labels.end());
    Entry entry;
    entry.metric = std::move(metric);
    entry.all_labels.reserve(merged.size());
    for (auto& [label_name, value] : merged) entry.all_labels.push_back({label_name, value});
    T& result = *entry.metric;
    metrics_.emplace(labels, std::move(entry));
    return result;
  }

  const std::string name_;
  const std::string help_;
  const Labels constant_labels_;
  mutable absl::Mutex mu_;
  std::map<Labels, Entry> metrics_ ABSL_GUARDED_BY(mu_);
};

}  // namespace zf::metrics
