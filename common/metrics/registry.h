// A Prometheus metrics registry: the families one component (or one process) exposes, and the
// builders that register them. Modelled on prometheus-cpp, so that library can replace it:
//
//   auto registry = std::make_shared<zf::metrics::Registry>();
//   auto& games = zf::metrics::BuildCounter()
//                     .Name("zf_actor_games_total")
//                     .Help("Self-play games finished.")
//                     .Labels({{"game", "connect4"}})      // constant labels, optional
//                     .Register(*registry);
//   zf::metrics::Counter& won = games.Add({{"result", "win"}});
//   won.Increment();
//   std::string text = registry->Serialize();                // Prometheus text format 0.0.4
//
// There is no process-wide default registry: components receive a std::shared_ptr<Registry> (or
// Registry*) in their Options, and the process hands its registries to a MetricsServer.
//
// Registering is idempotent: registering a name that exists with the same type, help and constant
// labels returns the existing family (so two components may share one). Programmer bugs, which
// ZF_CHECK-fail with the name in the message: an invalid metric or constant-label name (see
// check_names.h), the same name registered with a different type, help or constant labels, and a
// name that collides with a histogram's series (histogram "x" owns x_bucket, x_sum and x_count).
// By our conventions names are zf_<component>_<what>_<unit>, counters end in _total, and help is
// never empty (promtool's linter flags its absence).
//
// Thread-safe. Families are never removed, so a Family& (and the metrics it hands out) lives as
// long as the Registry. Lock order: Registry::mu_, then a family's mutex.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "common/metrics/counter.h"
#include "common/metrics/family.h"
#include "common/metrics/gauge.h"
#include "common/metrics/histogram.h"
#include "common/metrics/metric_family.h"

namespace zf::metrics {

namespace detail {
template <typename T>
class Builder;
}  // namespace detail

class Registry {
 public:
  Registry() = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Returns a snapshot of every family that has at least one series, ordered by name.
  // Takes the registry's and each family's mutex briefly; never blocks on I/O.
  std::vector<MetricFamily> Collect() const ABSL_LOCKS_EXCLUDED(mu_);

  // Returns Collect() in the Prometheus text exposition format 0.0.4 (see text_serializer.h).
  std::string Serialize() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  template <typename T>
  friend class detail::Builder;

  // Registers (or finds) the family; see the class comment for what ZF_CHECK-fails.
  template <typename T>
  Family<T>& Add(const std::string& name, const std::string& help, const Labels& constant_labels)
      ABSL_LOCKS_EXCLUDED(mu_);

  struct Entry {
    MetricType type;
    std::unique_ptr<Collectable> family;  // a Family<T> with T::kType == type
    std::string help;
    Labels constant_labels;
  };

  // Returns the name of an existing family whose series names collide with a new family `name`
  // of type `type`, or "" if there is none.
  std::string CollidingFamily(const std::string& name, MetricType type) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::map<std::string, Entry> families_ ABSL_GUARDED_BY(mu_);  // by name
};

// Collects several registries into one exposition: families of the same name and type are merged
// (their series concatenated; a series whose label set was already seen is dropped), a family whose
// type differs from an earlier family of the same name is dropped, and the first HELP text wins.
// Drops are programmer bugs but must not break a scrape: each is logged at ERROR. Ordered by name.
// Thread-safe.
std::vector<MetricFamily> CollectAll(absl::Span<const std::shared_ptr<Registry>> registries);

namespace detail {

// Fluent builder returned by BuildCounter()/BuildGauge()/BuildHistogram(). Thread-compatible
// (build on one thread); Register is thread-safe with respect to the registry.
template <typename T>
class Builder {
 public:
  Builder& Name(const std::string& name) {
    name_ = name;
    return *this;
  }
  Builder& Help(const std::string& help) {
    help_ = help;
    return *this;
  }
  // Constant labels, attached to every series of the family.
  Builder& Labels(const ::zf::metrics::Labels& labels) {
    labels_ = labels;
    return *this;
  }
  // Registers the family in `registry` (or returns the existing identical one).
  Family<T>& Register(Registry& registry) { return registry.Add<T>(name_, help_, labels_); }

 private:
  std::string name_;
  std::string help_;
  ::zf::metrics::Labels labels_;
};

}  // namespace detail

detail::Builder<Counter> BuildCounter();
detail::Builder<Gauge> BuildGauge();
detail::Builder<Histogram> BuildHistogram();

}  // namespace zf::metrics
