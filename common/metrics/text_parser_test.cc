#include "common/metrics/text_parser.h"

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "common/metrics/exposition.h"
#include "common/testing/status_matchers.h"
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
using ::prometheus::Histogram;
using ::prometheus::MetricFamily;
using ::prometheus::MetricType;
using ::prometheus::Registry;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::zf::testing::StatusIs;

const MetricFamily* Find(const std::vector<MetricFamily>& families, const std::string& name) {
  for (const MetricFamily& f : families) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

TEST(TextParserTest, ReadsBackWhatTheSerializerWrites) {
  auto registry = std::make_shared<Registry>();
  auto& requests = BuildCounter()
                       .Name("zf_test_requests_total")
                       .Help("Requests\nby \\code.")
                       .Register(*registry);
  requests.Add({{"code", "ok"}}).Increment(7);
  requests.Add({{"code", "say \"no\"\n"}}).Increment(2);
  BuildGauge().Name("zf_test_version").Help("Version.").Register(*registry).Add({}).Set(-1.5);
  Histogram& latency = BuildHistogram()
                           .Name("zf_test_latency_seconds")
                           .Help("Latency.")
                           .Labels({{"shard", "0"}})
                           .Register(*registry)
                           .Add({}, Histogram::BucketBoundaries{0.1, 1.0});
  latency.Observe(0.05);
  latency.Observe(0.5);
  latency.Observe(5);
  const std::vector<std::shared_ptr<Registry>> registries = {registry};
  const std::vector<MetricFamily> expected = CollectAll(registries);

  ASSERT_OK_AND_ASSIGN(std::vector<MetricFamily> parsed, ParseText(TextExposition(expected)));
  ASSERT_EQ(parsed.size(), expected.size());
  for (size_t f = 0; f < parsed.size(); ++f) {
    SCOPED_TRACE(expected[f].name);
    EXPECT_EQ(parsed[f].name, expected[f].name);
    EXPECT_EQ(parsed[f].help, expected[f].help);
    EXPECT_EQ(parsed[f].type, expected[f].type);
    ASSERT_EQ(parsed[f].metric.size(), expected[f].metric.size());
    for (size_t s = 0; s < parsed[f].metric.size(); ++s) {
      const ClientMetric& p = parsed[f].metric[s];
      const ClientMetric& e = expected[f].metric[s];
      EXPECT_EQ(p.label, e.label);
      EXPECT_EQ(p.counter.value, e.counter.value);
      EXPECT_EQ(p.gauge.value, e.gauge.value);
      EXPECT_EQ(p.histogram.sample_count, e.histogram.sample_count);
      EXPECT_DOUBLE_EQ(p.histogram.sample_sum, e.histogram.sample_sum);
      ASSERT_EQ(p.histogram.bucket.size(), e.histogram.bucket.size());
      for (size_t b = 0; b < p.histogram.bucket.size(); ++b) {
        EXPECT_EQ(p.histogram.bucket[b].upper_bound, e.histogram.bucket[b].upper_bound);
        EXPECT_EQ(p.histogram.bucket[b].cumulative_count, e.histogram.bucket[b].cumulative_count);
      }
    }
  }
  // Spot checks against hand-written expectations, not only the round trip.
  const MetricFamily* h = Find(parsed, "zf_test_latency_seconds");
  ASSERT_NE(h, nullptr);
  ASSERT_EQ(h->metric.size(), 1u);
  EXPECT_EQ(h->metric[0].histogram.sample_count, 3u);
  ASSERT_EQ(h->metric[0].histogram.bucket.size(), 3u);
  EXPECT_EQ(h->metric[0].histogram.bucket[1].cumulative_count, 2u);
  EXPECT_TRUE(std::isinf(h->metric[0].histogram.bucket[2].upper_bound));
  EXPECT_EQ(Find(parsed, "zf_test_requests_total")->help, "Requests\nby \\code.");
}

TEST(TextParserTest, HandWrittenExposition) {
  const std::string text =
      "# A free comment\n"
      "\n"
      "# TYPE c counter\n"
      "c{b=\"2\",a=\"1\",} 3 1700000000000\n"
      "c\t{a=\"x\"}\t+Inf\n"
      "untyped_one -1.5e3\n"
      "# TYPE g gauge\n"
      "g NaN\n"
      "# TYPE s summary\n"
      "s{quantile=\"0.5\"} 0.25\n"
      "s_sum 10\n"
      "s_count 4\n"
      "# TYPE h histogram\n"
      "h_bucket{le=\"+Inf\"} 4\n"  // out of order: sorted by bound
      "h_bucket{le=\"0.5\"} 1\n"
      "h_sum 2.5\r\n";  // no _count: the +Inf bucket gives it
  ASSERT_OK_AND_ASSIGN(std::vector<MetricFamily> parsed, ParseText(text));
  std::vector<std::string> names;
  for (const MetricFamily& f : parsed) names.push_back(f.name);
  EXPECT_THAT(names, ElementsAre("c", "untyped_one", "g", "s", "s_sum", "s_count", "h"));

  const MetricFamily& c = parsed[0];
  EXPECT_EQ(c.type, MetricType::Counter);
  ASSERT_EQ(c.metric.size(), 2u);
  ASSERT_EQ(c.metric[0].label.size(), 2u);
  EXPECT_EQ(c.metric[0].label[0].name, "a");  // sorted by name
  EXPECT_EQ(c.metric[0].counter.value, 3);
  EXPECT_TRUE(std::isinf(c.metric[1].counter.value));
  EXPECT_EQ(parsed[1].type, MetricType::Untyped);
  EXPECT_EQ(parsed[1].metric[0].untyped.value, -1500);
  EXPECT_TRUE(std::isnan(parsed[2].metric[0].gauge.value));
  EXPECT_EQ(parsed[3].type, MetricType::Untyped);
  EXPECT_EQ(parsed[5].metric[0].untyped.value, 4);

  const MetricFamily& h = parsed[6];
  EXPECT_EQ(h.type, MetricType::Histogram);
  ASSERT_EQ(h.metric.size(), 1u);
  ASSERT_EQ(h.metric[0].histogram.bucket.size(), 2u);
  EXPECT_EQ(h.metric[0].histogram.bucket[0].upper_bound, 0.5);
  EXPECT_EQ(h.metric[0].histogram.bucket[0].cumulative_count, 1u);
  EXPECT_EQ(h.metric[0].histogram.sample_count, 4u);
  EXPECT_EQ(h.metric[0].histogram.sample_sum, 2.5);
}

TEST(TextParserTest, HistogramSeriesAreKeyedByLabelsWithoutLe) {
  const std::string text =
      "# TYPE h histogram\n"
      "h_bucket{op=\"a\",le=\"1\"} 1\n"
      "h_bucket{op=\"b\",le=\"1\"} 5\n"
      "h_bucket{op=\"a\",le=\"+Inf\"} 2\n"
      "h_bucket{op=\"b\",le=\"+Inf\"} 6\n"
      "h_count{op=\"a\"} 2\n"
      "h_count{op=\"b\"} 6\n";
  ASSERT_OK_AND_ASSIGN(std::vector<MetricFamily> parsed, ParseText(text));
  ASSERT_EQ(parsed.size(), 1u);
  ASSERT_EQ(parsed[0].metric.size(), 2u);
  EXPECT_EQ(parsed[0].metric[1].label[0].value, "b");
  EXPECT_EQ(parsed[0].metric[1].histogram.bucket[0].cumulative_count, 5u);
  EXPECT_EQ(parsed[0].metric[1].histogram.sample_count, 6u);
}

TEST(TextParserTest, RejectsMalformedLinesNamingTheLine) {
  EXPECT_THAT(ParseText("a 1\nb{x=\"1\" 2\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("line 2")));
  EXPECT_THAT(ParseText("a one\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bad value")));
  EXPECT_THAT(ParseText("a\n"), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(ParseText("a 1 2 3\n"), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(ParseText("a 1 notatime\n"), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(ParseText("a{x=\"1\",x=\"2\"} 1\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("repeated")));
  EXPECT_THAT(ParseText("a{x=\"\\q\"} 1\n"), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(ParseText("a{x=\"open} 1\n"), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(ParseText("# TYPE a widget\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown type")));
  EXPECT_THAT(ParseText("a 1\n# TYPE a gauge\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("after its samples")));
  EXPECT_THAT(ParseText("# TYPE h histogram\nh_bucket 1\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("le")));
  EXPECT_THAT(ParseText("# TYPE h histogram\nh_bucket{le=\"x\"} 1\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("le=")));
  EXPECT_THAT(ParseText("{x=\"1\"} 1\n"), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(TextParserTest, EmptyTextHasNoFamilies) {
  ASSERT_OK_AND_ASSIGN(std::vector<MetricFamily> parsed, ParseText(""));
  EXPECT_TRUE(parsed.empty());
}

}  // namespace
}  // namespace zf::metrics
