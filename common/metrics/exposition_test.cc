// What the project adds to prometheus-cpp (exposition.h, buckets.h), and the behaviours of
// prometheus-cpp 1.0.1 that the project relies on, pinned so an upgrade that changes one fails
// here rather than in a dashboard.
#include "common/metrics/exposition.h"

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "common/metrics/buckets.h"
#include "common/thread.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace zf::metrics {
namespace {

using ::prometheus::BuildCounter;
using ::prometheus::BuildGauge;
using ::prometheus::BuildHistogram;
using ::prometheus::ClientMetric;
using ::prometheus::Registry;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<std::uint64_t> CumulativeCounts(const ClientMetric& metric) {
  std::vector<std::uint64_t> counts;
  for (const ClientMetric::Bucket& bucket : metric.histogram.bucket) {
    counts.push_back(bucket.cumulative_count);
  }
  return counts;
}

TEST(BucketsTest, ExponentialAndLinear) {
  EXPECT_THAT(ExponentialBuckets(0.5, 2, 4), ElementsAre(0.5, 1, 2, 4));
  EXPECT_THAT(LinearBuckets(1, 0.5, 3), ElementsAre(1, 1.5, 2));
  EXPECT_DEATH(ExponentialBuckets(0, 2, 3), "start > 0");
  EXPECT_DEATH(ExponentialBuckets(1, 1, 3), "factor > 1");
  EXPECT_DEATH(LinearBuckets(0, 0, 3), "width > 0");
  EXPECT_DEATH(LinearBuckets(0, 1, 0), "count >= 1");
}

TEST(PrometheusCppTest, RegisteringTheSameFamilyTwiceReturnsIt) {
  Registry registry;
  auto& first = BuildCounter()
                    .Name("zf_test_events_total")
                    .Help("Events.")
                    .Labels({{"component", "x"}})
                    .Register(registry);
  auto& second = BuildCounter()
                     .Name("zf_test_events_total")
                     .Help("Events.")
                     .Labels({{"component", "x"}})
                     .Register(registry);
  EXPECT_EQ(&first, &second);
  EXPECT_EQ(&first.Add({{"a", "1"}}), &second.Add({{"a", "1"}}));
  // Another type under the same name is refused (a programmer bug: it throws).
  EXPECT_THROW(BuildGauge().Name("zf_test_events_total").Help("Events.").Register(registry),
               std::invalid_argument);
  EXPECT_THROW(BuildGauge().Name("bad-name").Help("h").Register(registry), std::invalid_argument);
}

TEST(PrometheusCppTest, CountersIgnoreNegativeIncrements) {
  prometheus::Counter counter;
  counter.Increment();
  counter.Increment(2.5);
  counter.Increment(-10);
  EXPECT_EQ(counter.Value(), 3.5);
}

TEST(PrometheusCppTest, HistogramBucketsAreCumulativeWithLeSemantics) {
  prometheus::Histogram histogram({1, 2});
  for (double v : {0.5, 1.0, 1.5, 2.0, 7.0}) histogram.Observe(v);
  const ClientMetric metric = histogram.Collect();
  EXPECT_THAT(CumulativeCounts(metric), ElementsAre(2, 4, 5));
  EXPECT_EQ(metric.histogram.bucket.back().upper_bound, kInf);
  EXPECT_EQ(metric.histogram.sample_count, 5);
  EXPECT_EQ(metric.histogram.sample_sum, 12.0);
}

TEST(TextExpositionTest, EmptyFamiliesAreNotExposed) {
  Registry registry;
  BuildCounter().Name("zf_test_unused_total").Help("Never added to.").Register(registry);
  EXPECT_THAT(registry.Collect(), IsEmpty());
  EXPECT_EQ(TextExposition(registry), "");
}

TEST(TextExpositionTest, ExactExpositionOfASmallRegistry) {
  auto registry = std::make_shared<Registry>();
  auto& requests = BuildCounter()
                       .Name("zf_test_requests_total")
                       .Help("Requests served.")
                       .Labels({{"component", "test"}})
                       .Register(*registry);
  requests.Add({{"code", "ok"}}).Increment(3);
  requests.Add({{"code", "error"}}).Increment();
  BuildGauge()
      .Name("zf_test_queue_depth")
      .Help("Rows waiting.\nSecond line with a \\ backslash.")
      .Register(*registry)
      .Add({})
      .Set(7.5);
  auto& latency =
      BuildHistogram()
          .Name("zf_test_latency_seconds")
          .Help("Latency.")
          .Register(*registry)
          .Add({{"path", "a\"b\\c\nd"}}, prometheus::Histogram::BucketBoundaries{0.125, 1});
  latency.Observe(0.0625);
  latency.Observe(0.5);
  latency.Observe(2);
  auto& special = BuildGauge().Name("zf_test_special").Help("Odd values.").Register(*registry);
  special.Add({{"v", "inf"}}).Set(kInf);
  special.Add({{"v", "nan"}}).Set(kNaN);
  special.Add({{"v", "ninf"}}).Set(-kInf);
  BuildGauge().Name("zf_test_no_help").Register(*registry).Add({}).Set(1);

  // prometheus-cpp's layout (constant labels before the series' own; a histogram's _count and
  // _sum before its buckets; NaN as "Nan"),
  // with the HELP texts escaped (TextExposition's own step) and families and series in order.
  const std::string expected = R"(# HELP zf_test_latency_seconds Latency.
# TYPE zf_test_latency_seconds histogram
zf_test_latency_seconds_count{path="a\"b\\c\nd"} 3
zf_test_latency_seconds_sum{path="a\"b\\c\nd"} 2.5625
zf_test_latency_seconds_bucket{path="a\"b\\c\nd",le="0.125"} 1
zf_test_latency_seconds_bucket{path="a\"b\\c\nd",le="1"} 2
zf_test_latency_seconds_bucket{path="a\"b\\c\nd",le="+Inf"} 3
# TYPE zf_test_no_help gauge
zf_test_no_help 1
# HELP zf_test_queue_depth Rows waiting.\nSecond line with a \\ backslash.
# TYPE zf_test_queue_depth gauge
zf_test_queue_depth 7.5
# HELP zf_test_requests_total Requests served.
# TYPE zf_test_requests_total counter
zf_test_requests_total{component="test",code="error"} 1
zf_test_requests_total{component="test",code="ok"} 3
# HELP zf_test_special Odd values.
# TYPE zf_test_special gauge
zf_test_special{v="inf"} +Inf
zf_test_special{v="nan"} Nan
zf_test_special{v="ninf"} -Inf
)";
  const std::vector<std::shared_ptr<Registry>> registries = {registry};
  EXPECT_EQ(TextExposition(CollectAll(registries)), expected);
}

TEST(CollectAllTest, MergesRegistries) {
  auto first = std::make_shared<Registry>();
  auto second = std::make_shared<Registry>();
  BuildCounter()
      .Name("zf_test_shared_total")
      .Help("Shared.")
      .Register(*first)
      .Add({{"r", "2"}})
      .Increment(2);
  BuildCounter()
      .Name("zf_test_shared_total")
      .Help("Shared.")
      .Register(*second)
      .Add({{"r", "1"}})
      .Increment(1);
  BuildGauge().Name("zf_test_only_second").Help("Second.").Register(*second).Add({}).Set(5);
  // Same name, another type: dropped (and logged), never an invalid exposition.
  BuildGauge().Name("zf_test_conflict").Help("G.").Register(*first).Add({}).Set(1);
  BuildCounter().Name("zf_test_conflict").Help("C.").Register(*second).Add({}).Increment();
  // The same series in both: the first wins.
  BuildGauge().Name("zf_test_dup").Help("D.").Register(*first).Add({}).Set(1);
  BuildGauge().Name("zf_test_dup").Help("D.").Register(*second).Add({}).Set(2);

  const std::vector<std::shared_ptr<Registry>> registries = {first, nullptr, second};
  EXPECT_EQ(TextExposition(CollectAll(registries)),
            R"(# HELP zf_test_conflict G.
# TYPE zf_test_conflict gauge
zf_test_conflict 1
# HELP zf_test_dup D.
# TYPE zf_test_dup gauge
zf_test_dup 1
# HELP zf_test_only_second Second.
# TYPE zf_test_only_second gauge
zf_test_only_second 5
# HELP zf_test_shared_total Shared.
# TYPE zf_test_shared_total counter
zf_test_shared_total{r="1"} 1
zf_test_shared_total{r="2"} 2
)");
}

TEST(ConcurrencyTest, ThreadsUpdatingWhileScrapedGiveTheExactTotals) {
  constexpr int kThreads = 8;
  constexpr int kIterations = 20000;
  auto registry = std::make_shared<Registry>();
  auto& counters = BuildCounter().Name("zf_test_hits_total").Help("Hits.").Register(*registry);
  auto& gauges = BuildGauge().Name("zf_test_balance").Help("Balance.").Register(*registry);
  auto& histograms = BuildHistogram().Name("zf_test_sizes").Help("Sizes.").Register(*registry);
  const std::vector<std::shared_ptr<Registry>> registries = {registry};
  std::vector<prometheus::Counter*> seen(kThreads);
  {
    std::vector<std::unique_ptr<Thread>> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.push_back(std::make_unique<Thread>("incrementer", [&, t] {
        // Every thread looks the series up itself: Add is thread-safe and returns one object.
        prometheus::Counter& counter = counters.Add({{"shared", "yes"}});
        seen[t] = &counter;
        prometheus::Gauge& gauge = gauges.Add({});
        prometheus::Histogram& histogram =
            histograms.Add({}, prometheus::Histogram::BucketBoundaries{1, 2});
        for (int i = 0; i < kIterations; ++i) {
          counter.Increment();
          gauge.Increment(2);
          gauge.Decrement();
          histogram.Observe(i % 3);                                   // 0, 1, 2
          if (i % 1000 == 0) TextExposition(CollectAll(registries));  // scrapes race with updates
        }
      }));
    }
  }  // joined
  for (prometheus::Counter* counter : seen) EXPECT_EQ(counter, seen[0]);
  EXPECT_EQ(counters.Add({{"shared", "yes"}}).Value(), kThreads * kIterations);
  EXPECT_EQ(gauges.Add({}).Value(), kThreads * kIterations);
  const ClientMetric metric =
      histograms.Add({}, prometheus::Histogram::BucketBoundaries{1, 2}).Collect();
  constexpr std::uint64_t kTotal = std::uint64_t{kThreads} * kIterations;
  EXPECT_EQ(metric.histogram.sample_count, kTotal);
  // 0 and 1 land in le=1; 2 in le=2; i % 3 spreads 20000 as 6667, 6667, 6666.
  EXPECT_THAT(CumulativeCounts(metric),
              ElementsAre(std::uint64_t{kThreads} * (6667 + 6667), kTotal, kTotal));
  EXPECT_EQ(metric.histogram.sample_sum, kThreads * (6667 * 1.0 + 6666 * 2.0));
}

}  // namespace
}  // namespace zf::metrics
