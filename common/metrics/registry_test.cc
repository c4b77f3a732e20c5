#include "common/metrics/registry.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/metrics/check_names.h"
#include "common/metrics/text_serializer.h"
#include "common/thread.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zf::metrics {
namespace {

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

std::vector<double> UpperBounds(const ClientMetric& metric) {
  std::vector<double> bounds;
  for (const ClientMetric::Bucket& bucket : metric.histogram.bucket) {
    bounds.push_back(bucket.upper_bound);
  }
  return bounds;
}

TEST(CounterTest, IncrementsAndIgnoresNegativeAndNaN) {
  Counter counter;
  EXPECT_EQ(counter.Value(), 0.0);
  counter.Increment();
  counter.Increment(2.5);
  EXPECT_EQ(counter.Value(), 3.5);
  counter.Increment(-1.0);
  counter.Increment(kNaN);
  EXPECT_EQ(counter.Value(), 3.5);
  counter.Increment(0.0);
  EXPECT_EQ(counter.Value(), 3.5);
  EXPECT_EQ(counter.Collect().counter.value, 3.5);
}

TEST(GaugeTest, SetIncrementDecrement) {
  Gauge gauge;
  EXPECT_EQ(gauge.Value(), 0.0);
  gauge.Set(10);
  gauge.Increment();
  gauge.Increment(4);
  gauge.Decrement();
  gauge.Decrement(20);
  EXPECT_EQ(gauge.Value(), -6.0);
  gauge.Increment(-1);
  EXPECT_EQ(gauge.Value(), -7.0);
  EXPECT_EQ(gauge.Collect().gauge.value, -7.0);
}

TEST(GaugeTest, SetToCurrentTimeIsUnixSeconds) {
  Gauge gauge;
  const double before = absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch());
  gauge.SetToCurrentTime();
  const double after = absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch());
  EXPECT_GE(gauge.Value(), before);
  EXPECT_LE(gauge.Value(), after);
}

TEST(HistogramTest, BucketsAreCumulativeWithLeSemantics) {
  Histogram histogram({1, 2, 5});
  for (double v : {0.5, 1.0, 1.5, 3.0, 10.0, -4.0}) histogram.Observe(v);
  const ClientMetric metric = histogram.Collect();
  EXPECT_THAT(UpperBounds(metric), ElementsAre(1, 2, 5, kInf));
  // -4 and 0.5 and 1 (inclusive bound) | 1.5 | 3 | 10
  EXPECT_THAT(CumulativeCounts(metric), ElementsAre(3, 4, 5, 6));
  EXPECT_EQ(metric.histogram.sample_count, 6u);
  EXPECT_EQ(metric.histogram.sample_sum, 12.0);
}

TEST(HistogramTest, EmptyBoundariesLeaveOnlyInf) {
  Histogram histogram({});
  histogram.Observe(3);
  const ClientMetric metric = histogram.Collect();
  EXPECT_THAT(UpperBounds(metric), ElementsAre(kInf));
  EXPECT_THAT(CumulativeCounts(metric), ElementsAre(1));
}

TEST(HistogramTest, TrailingInfIsImplicit) {
  Histogram histogram({1, kInf});
  EXPECT_THAT(histogram.boundaries(), ElementsAre(1));
  EXPECT_THAT(UpperBounds(histogram.Collect()), ElementsAre(1, kInf));
}

TEST(HistogramTest, NaNIsCountedInInfAndPoisonsSum) {
  Histogram histogram({1});
  histogram.Observe(kNaN);
  const ClientMetric metric = histogram.Collect();
  EXPECT_THAT(CumulativeCounts(metric), ElementsAre(0, 1));
  EXPECT_TRUE(std::isnan(metric.histogram.sample_sum));
}

TEST(HistogramTest, ObserveMultiple) {
  Histogram histogram({1, 2});
  histogram.Observe(1.5);
  histogram.ObserveMultiple({2, 0, 3}, 20.0);
  const ClientMetric metric = histogram.Collect();
  EXPECT_THAT(CumulativeCounts(metric), ElementsAre(2, 3, 6));
  EXPECT_EQ(metric.histogram.sample_count, 6u);
  EXPECT_EQ(metric.histogram.sample_sum, 21.5);
}

TEST(HistogramDeathTest, InvalidBoundariesAreProgrammerBugs) {
  EXPECT_DEATH(Histogram({2, 1}), "strictly increasing");
  EXPECT_DEATH(Histogram({1, 1}), "strictly increasing");
  EXPECT_DEATH(Histogram({1, kNaN}), "strictly increasing");
  Histogram histogram({1});
  EXPECT_DEATH(histogram.ObserveMultiple({1}, 1.0), "needs 2 bucket increments");
}

TEST(BucketsTest, ExponentialAndLinear) {
  EXPECT_THAT(ExponentialBuckets(0.5, 2, 4), ElementsAre(0.5, 1, 2, 4));
  EXPECT_THAT(LinearBuckets(1, 0.5, 3), ElementsAre(1, 1.5, 2));
  EXPECT_THAT(DefaultBuckets(),
              ElementsAre(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10));
  EXPECT_TRUE(IsValidBucketBoundaries(ExponentialBuckets(1e-4, 1.5, 40)));
  EXPECT_DEATH(ExponentialBuckets(0, 2, 3), "start > 0");
  EXPECT_DEATH(ExponentialBuckets(1, 1, 3), "factor > 1");
  EXPECT_DEATH(LinearBuckets(0, 0, 3), "width > 0");
  EXPECT_DEATH(LinearBuckets(0, 1, 0), "count >= 1");
}

TEST(CheckNamesTest, MetricNames) {
  for (const char* name : {"a", "_a", ":a", "zf_actor_games_total", "a1:b_2", "A"}) {
    EXPECT_TRUE(IsValidMetricName(name)) << name;
  }
  for (const char* name : {"", "1a", "a-b", "a b", "__reserved", "a.b", "é"}) {
    EXPECT_FALSE(IsValidMetricName(name)) << name;
  }
}

TEST(CheckNamesTest, LabelNames) {
  for (const char* name : {"a", "_a", "code", "le", "A_1"}) {
    EXPECT_TRUE(IsValidLabelName(name)) << name;
  }
  for (const char* name : {"", "1a", "a:b", "__name__", "__x", "a-b"}) {
    EXPECT_FALSE(IsValidLabelName(name)) << name;
  }
}

TEST(FamilyTest, SameLabelsReturnSameObject) {
  Registry registry;
  auto& family = BuildCounter().Name("zf_test_events_total").Help("Events.").Register(registry);
  Counter& a1 = family.Add({{"kind", "a"}});
  Counter& a2 = family.Add({{"kind", "a"}});
  Counter& b = family.Add({{"kind", "b"}});
  Counter& none = family.Add({});
  EXPECT_EQ(&a1, &a2);
  EXPECT_NE(&a1, &b);
  EXPECT_NE(&a1, &none);
  EXPECT_TRUE(family.Has({{"kind", "a"}}));
  EXPECT_FALSE(family.Has({{"kind", "c"}}));

  auto& histograms =
      BuildHistogram().Name("zf_test_wait_seconds").Help("Waits.").Register(registry);
  Histogram& h1 = histograms.Add({}, {1, 2});
  Histogram& h2 = histograms.Add({}, {1, 2, kInf});
  EXPECT_EQ(&h1, &h2);
}

TEST(FamilyTest, RemoveDropsTheSeries) {
  Registry registry;
  auto& family = BuildGauge().Name("zf_test_level").Help("Level.").Register(registry);
  Gauge& gauge = family.Add({{"x", "1"}});
  family.Remove(&gauge);
  EXPECT_FALSE(family.Has({{"x", "1"}}));
  EXPECT_THAT(registry.Collect(), IsEmpty());
}

TEST(RegistryTest, RegisteringTheSameFamilyTwiceReturnsIt) {
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
  EXPECT_EQ(first.GetName(), "zf_test_events_total");
  EXPECT_EQ(first.GetConstantLabels(), (Labels{{"component", "x"}}));
}

TEST(RegistryTest, EmptyFamiliesAreNotExposed) {
  Registry registry;
  BuildCounter().Name("zf_test_unused_total").Help("Never added to.").Register(registry);
  EXPECT_THAT(registry.Collect(), IsEmpty());
  EXPECT_EQ(registry.Serialize(), "");
}

TEST(RegistryDeathTest, ProgrammerBugsCheckFail) {
  Registry registry;
  BuildCounter().Name("zf_test_events_total").Help("Events.").Register(registry);
  BuildHistogram().Name("zf_test_wait_seconds").Help("Waits.").Register(registry);
  BuildCounter().Name("zf_test_x_count").Help("X.").Register(registry);

  EXPECT_DEATH(BuildCounter().Name("1bad").Help("h").Register(registry), "invalid metric name");
  EXPECT_DEATH(BuildCounter().Name("__bad").Help("h").Register(registry), "invalid metric name");
  EXPECT_DEATH(BuildGauge().Name("zf_test_events_total").Help("Events.").Register(registry),
               "registered as counter and again as gauge");
  EXPECT_DEATH(BuildCounter().Name("zf_test_events_total").Help("Other.").Register(registry),
               "different help");
  EXPECT_DEATH(BuildCounter()
                   .Name("zf_test_events_total")
                   .Help("Events.")
                   .Labels({{"a", "b"}})
                   .Register(registry),
               "different constant labels");
  EXPECT_DEATH(
      BuildCounter().Name("zf_test_y_total").Help("h").Labels({{"__a", "b"}}).Register(registry),
      "invalid constant label name");
  EXPECT_DEATH(
      BuildHistogram().Name("zf_test_h").Help("h").Labels({{"le", "1"}}).Register(registry),
      "reserved");
  EXPECT_DEATH(BuildGauge().Name("zf_test_wait_seconds_sum").Help("h").Register(registry),
               "collides with the series of zf_test_wait_seconds");
  EXPECT_DEATH(BuildHistogram().Name("zf_test_x").Help("h").Register(registry),
               "collides with the series of zf_test_x_count");

  auto& counters = BuildCounter()
                       .Name("zf_test_z_total")
                       .Help("h")
                       .Labels({{"component", "c"}})
                       .Register(registry);
  EXPECT_DEATH(counters.Add({{"bad-name", "v"}}), "invalid label name");
  EXPECT_DEATH(counters.Add({{"component", "v"}}), "also a constant label");
  auto& histograms = BuildHistogram().Name("zf_test_w_seconds").Help("h").Register(registry);
  EXPECT_DEATH(histograms.Add({{"le", "1"}}, {1}), "reserved");
  histograms.Add({}, {1, 2});
  EXPECT_DEATH(histograms.Add({}, {1, 3}), "different bucket boundaries");
}

TEST(TextSerializerTest, FormatsValuesTheWayPrometheusParsesThem) {
  EXPECT_EQ(FormatValue(0), "0");
  EXPECT_EQ(FormatValue(1), "1");
  EXPECT_EQ(FormatValue(-2), "-2");
  EXPECT_EQ(FormatValue(0.25), "0.25");
  EXPECT_EQ(FormatValue(0.1), "0.1");
  EXPECT_EQ(FormatValue(123456789), "123456789");
  EXPECT_EQ(FormatValue(1e6), "1e+06");
  EXPECT_EQ(FormatValue(1.5e-7), "1.5e-07");
  EXPECT_EQ(FormatValue(kInf), "+Inf");
  EXPECT_EQ(FormatValue(-kInf), "-Inf");
  EXPECT_EQ(FormatValue(kNaN), "NaN");
  // Round trip: the shortest text reads back as the same double.
  for (double v : {0.1 + 0.2, 1.0 / 3, 6.02214076e23, 5e-324, 1.7976931348623157e308}) {
    EXPECT_EQ(std::strtod(FormatValue(v).c_str(), nullptr), v) << FormatValue(v);
  }
}

TEST(TextSerializerTest, Escaping) {
  EXPECT_EQ(EscapeHelp("a\\b\nc\"d"), "a\\\\b\\nc\"d");
  EXPECT_EQ(EscapeLabelValue("a\\b\nc\"d"), "a\\\\b\\nc\\\"d");
  EXPECT_EQ(EscapeLabelValue("plain UTF-8: é"), "plain UTF-8: é");
}

TEST(TextSerializerTest, ExactExpositionOfASmallRegistry) {
  Registry registry;
  auto& requests = BuildCounter()
                       .Name("zf_test_requests_total")
                       .Help("Requests served.")
                       .Labels({{"component", "test"}})
                       .Register(registry);
  requests.Add({{"code", "ok"}}).Increment(3);
  requests.Add({{"code", "error"}}).Increment();
  BuildGauge()
      .Name("zf_test_queue_depth")
      .Help("Rows waiting.\nSecond line with a \\ backslash.")
      .Register(registry)
      .Add({})
      .Set(7.5);
  auto& latency = BuildHistogram()
                      .Name("zf_test_latency_seconds")
                      .Help("Latency.")
                      .Register(registry)
                      .Add({{"path", "a\"b\\c\nd"}}, {0.125, 1});
  latency.Observe(0.0625);
  latency.Observe(0.5);
  latency.Observe(2);
  auto& special = BuildGauge().Name("zf_test_special").Help("Odd values.").Register(registry);
  special.Add({{"v", "inf"}}).Set(kInf);
  special.Add({{"v", "nan"}}).Set(kNaN);
  special.Add({{"v", "ninf"}}).Set(-kInf);
  BuildGauge().Name("zf_test_no_help").Register(registry).Add({}).Set(1);

  const std::string expected = R"(# HELP zf_test_latency_seconds Latency.
# TYPE zf_test_latency_seconds histogram
zf_test_latency_seconds_bucket{path="a\"b\\c\nd",le="0.125"} 1
zf_test_latency_seconds_bucket{path="a\"b\\c\nd",le="1"} 2
zf_test_latency_seconds_bucket{path="a\"b\\c\nd",le="+Inf"} 3
zf_test_latency_seconds_sum{path="a\"b\\c\nd"} 2.5625
zf_test_latency_seconds_count{path="a\"b\\c\nd"} 3
# TYPE zf_test_no_help gauge
zf_test_no_help 1
# HELP zf_test_queue_depth Rows waiting.\nSecond line with a \\ backslash.
# TYPE zf_test_queue_depth gauge
zf_test_queue_depth 7.5
# HELP zf_test_requests_total Requests served.
# TYPE zf_test_requests_total counter
zf_test_requests_total{code="error",component="test"} 1
zf_test_requests_total{code="ok",component="test"} 3
# HELP zf_test_special Odd values.
# TYPE zf_test_special gauge
zf_test_special{v="inf"} +Inf
zf_test_special{v="nan"} NaN
zf_test_special{v="ninf"} -Inf
)";
  EXPECT_EQ(registry.Serialize(), expected);
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
  EXPECT_EQ(TextSerializer().Serialize(CollectAll(registries)),
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

TEST(ConcurrencyTest, ThreadsIncrementingGiveTheExactTotal) {
  constexpr int kThreads = 8;
  constexpr int kIterations = 100000;
  Registry registry;
  auto& counters = BuildCounter().Name("zf_test_hits_total").Help("Hits.").Register(registry);
  auto& gauges = BuildGauge().Name("zf_test_balance").Help("Balance.").Register(registry);
  auto& histograms = BuildHistogram().Name("zf_test_sizes").Help("Sizes.").Register(registry);
  std::vector<Counter*> seen(kThreads);
  {
    std::vector<std::unique_ptr<Thread>> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.push_back(std::make_unique<Thread>("incrementer", [&, t] {
        // Every thread looks the series up itself: Add is thread-safe and returns one object.
        Counter& counter = counters.Add({{"shared", "yes"}});
        seen[t] = &counter;
        Gauge& gauge = gauges.Add({});
        Histogram& histogram = histograms.Add({}, {1, 2});
        for (int i = 0; i < kIterations; ++i) {
          counter.Increment();
          gauge.Increment(2);
          gauge.Decrement();
          histogram.Observe(i % 3);                 // 0, 1, 2
          if (i % 1000 == 0) registry.Serialize();  // scrapes race with updates
        }
      }));
    }
  }  // joined
  for (Counter* counter : seen) EXPECT_EQ(counter, seen[0]);
  EXPECT_EQ(counters.Add({{"shared", "yes"}}).Value(), kThreads * kIterations);
  EXPECT_EQ(gauges.Add({}).Value(), kThreads * kIterations);
  const ClientMetric metric = histograms.Add({}, {1, 2}).Collect();
  EXPECT_EQ(metric.histogram.sample_count, std::uint64_t{kThreads} * kIterations);
  // 0 and 1 land in le=1; 2 in le=2; i % 3 spreads 100000 as 33334, 33333, 33333.
  constexpr std::uint64_t kTotal = std::uint64_t{kThreads} * kIterations;
  EXPECT_THAT(CumulativeCounts(metric),
              ElementsAre(std::uint64_t{kThreads} * (33334 + 33333), kTotal, kTotal));
  EXPECT_EQ(metric.histogram.sample_sum, kThreads * (33333 * 1.0 + 33333 * 2.0));
}

}  // namespace
}  // namespace zf::metrics
