#include "fleet/fleet_view.h"

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/metrics/exposition.h"
#include "common/testing/status_matchers.h"
#include "fleet/scrape.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace zf::fleet {
namespace {

using ::testing::HasSubstr;
using ::zf::testing::StatusIs;

// Synthetic expositions, written by hand the way each component exports them.
std::string Actor(double games, double leaves, double wait_seconds, double workers,
                  double version) {
  return absl::StrCat(
      "# TYPE zf_actor_games_total counter\nzf_actor_games_total ", games, "\n",
      "# TYPE zf_actor_moves_total counter\nzf_actor_moves_total ", games * 20, "\n",
      "# TYPE zf_actor_leaf_evaluations_total counter\nzf_actor_leaf_evaluations_total ", leaves,
      "\n",
      "# TYPE zf_actor_evaluation_wait_seconds_total counter\n"
      "zf_actor_evaluation_wait_seconds_total ",
      wait_seconds, "\n", "# TYPE zf_actor_workers gauge\nzf_actor_workers ", workers, "\n",
      "# TYPE zf_actor_model_version gauge\nzf_actor_model_version ", version, "\n");
}

// An inference server with max_batch 8 whose histograms have seen `batches` batches of `rows`
// rows each, queue waits split 3:1 between the (0, 1ms] and (1ms, 2ms] buckets, and `compute`
// seconds of forward passes.
std::string Inference(double batches, double rows, double compute, double version) {
  const double waits = batches;
  return absl::StrCat(
      "# TYPE zf_inference_evaluations_total counter\nzf_inference_evaluations_total ",
      batches * rows, "\n",
      "# TYPE zf_inference_requests_total counter\n"
      "zf_inference_requests_total{code=\"ok\"} ",
      batches, "\n", "zf_inference_requests_total{code=\"invalid_argument\"} ", batches / 10, "\n",
      "# TYPE zf_inference_batch_rows histogram\n", "zf_inference_batch_rows_bucket{le=\"4\"} ",
      rows <= 4 ? batches : 0, "\n", "zf_inference_batch_rows_bucket{le=\"8\"} ", batches, "\n",
      "zf_inference_batch_rows_bucket{le=\"+Inf\"} ", batches, "\n", "zf_inference_batch_rows_sum ",
      batches * rows, "\n", "zf_inference_batch_rows_count ", batches, "\n",
      "# TYPE zf_inference_queue_wait_seconds histogram\n",
      "zf_inference_queue_wait_seconds_bucket{le=\"0.001\"} ", waits * 3 / 4, "\n",
      "zf_inference_queue_wait_seconds_bucket{le=\"0.002\"} ", waits, "\n",
      "zf_inference_queue_wait_seconds_bucket{le=\"+Inf\"} ", waits, "\n",
      "zf_inference_queue_wait_seconds_sum 0\n", "zf_inference_queue_wait_seconds_count ", waits,
      "\n", "# TYPE zf_inference_compute_seconds histogram\n",
      "zf_inference_compute_seconds_bucket{le=\"+Inf\"} ", batches, "\n",
      "zf_inference_compute_seconds_sum ", compute, "\n", "zf_inference_compute_seconds_count ",
      batches, "\n", "# TYPE zf_inference_max_batch_rows gauge\nzf_inference_max_batch_rows 8\n",
      "# TYPE zf_inference_model_version gauge\nzf_inference_model_version ", version, "\n");
}

std::string Replay(double positions, double inserted, double sampled, double insert_wait,
                   double sample_wait) {
  return absl::StrCat(
      "# TYPE zf_replay_positions_stored gauge\nzf_replay_positions_stored ", positions, "\n",
      "# TYPE zf_replay_games_stored gauge\nzf_replay_games_stored ", positions / 20, "\n",
      "# TYPE zf_replay_inserted_positions_total counter\nzf_replay_inserted_positions_total ",
      inserted, "\n",
      "# TYPE zf_replay_sampled_positions_total counter\nzf_replay_sampled_positions_total ",
      sampled, "\n", "# TYPE zf_replay_rate_limiter_wait_seconds_total counter\n",
      "zf_replay_rate_limiter_wait_seconds_total{operation=\"insert\"} ", insert_wait, "\n",
      "zf_replay_rate_limiter_wait_seconds_total{operation=\"sample\"} ", sample_wait, "\n");
}

std::string Learner(double steps, double data_wait, double version) {
  return absl::StrCat(
      "# TYPE zf_learner_steps_total counter\nzf_learner_steps_total ", steps, "\n",
      "# TYPE zf_learner_samples_total counter\nzf_learner_samples_total ", steps * 256, "\n",
      "# TYPE zf_learner_data_wait_seconds_total counter\nzf_learner_data_wait_seconds_total ",
      data_wait, "\n", "# TYPE zf_learner_published_version gauge\nzf_learner_published_version ",
      version, "\n", "# TYPE zf_learner_loss gauge\nzf_learner_loss{head=\"policy\"} 1.5\n",
      "zf_learner_loss{head=\"total\"} 2.25\n");
}

TargetScrape Target(const std::string& name, const std::string& text) {
  TargetScrape t = TargetFromText(name, text);
  EXPECT_OK(t.status) << name;
  return t;
}

TEST(HistogramQuantileTest, InterpolatesLikePrometheus) {
  using B = prometheus::ClientMetric::Bucket;
  const std::vector<B> buckets = {
      {/*cumulative_count=*/3, /*upper_bound=*/1.0}, {4, 2.0}, {4, INFINITY}};
  EXPECT_DOUBLE_EQ(HistogramQuantile(0.5, buckets), 2.0 / 3.0);  // rank 2 of 3 in (0, 1]
  EXPECT_DOUBLE_EQ(HistogramQuantile(0.75, buckets), 1.0);
  EXPECT_DOUBLE_EQ(HistogramQuantile(0.875, buckets), 1.5);  // rank 3.5: half into (1, 2]
  // A rank in the +Inf bucket answers the highest finite bound.
  EXPECT_DOUBLE_EQ(HistogramQuantile(0.99, {{1, 1.0}, {10, INFINITY}}), 1.0);
  EXPECT_TRUE(std::isnan(HistogramQuantile(0.5, {{0, 1.0}, {0, INFINITY}})));
  EXPECT_TRUE(std::isnan(HistogramQuantile(0.5, {})));
}

TEST(FleetViewTest, RatesQuantilesAndStalenessOverTwoScrapes) {
  const FleetScrape before = {
      Target("a1", Actor(/*games=*/10, /*leaves=*/1000, /*wait=*/1, /*workers=*/2, 3)),
      Target("a2", Actor(20, 2000, 2, 2, 4)),
      Target("inf", Inference(/*batches=*/100, /*rows=*/6, /*compute=*/1, /*version=*/4)),
      Target("r0", Replay(1000, 5000, 20000, 0, 0)),
      Target("l", Learner(/*steps=*/50, /*data_wait=*/1, /*version=*/5))};
  const FleetScrape after = {
      Target("a1", Actor(14, 3000, 3, 2, 4)), Target("a2", Actor(26, 4000, 4, 2, 4)),
      Target("inf", Inference(500, 6, 4.2, 4)), Target("r0", Replay(1400, 5400, 21600, 0, 0.8)),
      Target("l", Learner(70, 1.4, 5))};
  const FleetView v = ComputeFleetView(before, after, /*elapsed_seconds=*/4);

  EXPECT_EQ(v.actors, 2);
  EXPECT_EQ(v.inference_servers, 1);
  EXPECT_EQ(v.replay_shards, 1);
  EXPECT_EQ(v.learners, 1);
  EXPECT_DOUBLE_EQ(v.games_per_second, (4 + 6) / 4.0);
  EXPECT_DOUBLE_EQ(v.moves_per_second, (4 + 6) * 20 / 4.0);
  EXPECT_DOUBLE_EQ(v.leaf_evaluations_per_second, 4000 / 4.0);
  EXPECT_DOUBLE_EQ(v.actor_workers, 4);
  EXPECT_DOUBLE_EQ(v.actor_wait_share, 4.0 / 4 / 4);  // 4 s waited over 4 workers x 4 s

  EXPECT_DOUBLE_EQ(v.inference_evaluations_per_second, 400 * 6 / 4.0);
  EXPECT_DOUBLE_EQ(v.batches_per_second, 100);
  EXPECT_DOUBLE_EQ(v.mean_batch_rows, 6);
  EXPECT_DOUBLE_EQ(v.max_batch_rows, 8);
  EXPECT_DOUBLE_EQ(v.batch_fill, 0.75);
  EXPECT_DOUBLE_EQ(v.queue_wait_p50_seconds, 0.001 * 2 / 3);
  EXPECT_DOUBLE_EQ(v.queue_wait_p99_seconds, 0.001 + 0.001 * (0.99 * 400 - 300) / 100);
  EXPECT_DOUBLE_EQ(v.duty_cycle, 3.2 / 4);
  EXPECT_DOUBLE_EQ(v.inference_errors_per_second, 40 / 4.0);

  EXPECT_DOUBLE_EQ(v.learner_version, 5);
  EXPECT_DOUBLE_EQ(v.inference_version, 4);
  EXPECT_DOUBLE_EQ(v.actor_version, 4);
  EXPECT_DOUBLE_EQ(v.inference_staleness, 1);
  EXPECT_DOUBLE_EQ(v.actor_staleness, 1);

  EXPECT_DOUBLE_EQ(v.replay_positions, 1400);
  EXPECT_DOUBLE_EQ(v.replay_games, 70);
  EXPECT_DOUBLE_EQ(v.insert_positions_per_second, 100);
  EXPECT_DOUBLE_EQ(v.sample_positions_per_second, 400);
  EXPECT_DOUBLE_EQ(v.sample_insert_ratio, 4);
  EXPECT_DOUBLE_EQ(v.replay_insert_wait, 0);
  EXPECT_DOUBLE_EQ(v.replay_sample_wait, 0.2);

  EXPECT_DOUBLE_EQ(v.learner_steps_per_second, 5);
  EXPECT_DOUBLE_EQ(v.learner_samples_per_second, 5 * 256);
  EXPECT_NEAR(v.learner_data_wait_share, 0.1, 1e-12);
  EXPECT_DOUBLE_EQ(v.learner_loss, 2.25);
  // Data wait 10% < 20%: the learner trains flat out.
  EXPECT_EQ(v.bottleneck.component, "learner");
  EXPECT_THAT(v.bottleneck.reason, HasSubstr("10%"));

  const std::string text = RenderFleetView(v);
  EXPECT_THAT(text, HasSubstr("games/s 2.50"));
  EXPECT_THAT(text, HasSubstr("fill 75%"));
  EXPECT_THAT(text, HasSubstr("inference v4 (1 behind)"));
  EXPECT_THAT(text, HasSubstr("bottleneck learner: "));
  const std::string json = FleetViewJson(v);
  EXPECT_THAT(json, HasSubstr("\"batch_fill\": 0.75"));
  EXPECT_THAT(json, HasSubstr("\"sample_insert_ratio\": 4"));
  EXPECT_THAT(json, HasSubstr("\"bottleneck\": {\"component\": \"learner\""));
}

// The bottleneck rule, case by case. Before: all counters zero; after: `elapsed` = 10 s later.
struct Case {
  double learner_wait;  // learner data-wait share
  double sample_wait;   // replay sample-side limiter wait, s/s
  double actor_wait;    // actor eval-wait share (1 worker)
  double duty;          // inference duty cycle
  double rows;          // mean batch rows of max 8
  const char* expected;
};

FleetView Scenario(const Case& c, bool with_learner = true, bool with_replay = true) {
  FleetScrape before = {Target("a", Actor(0, 0, 0, 1, 1)), Target("i", Inference(0, c.rows, 0, 1))};
  FleetScrape after = {Target("a", Actor(10, 1000, 10 * c.actor_wait, 1, 1)),
                       Target("i", Inference(100, c.rows, 10 * c.duty, 1))};
  if (with_replay) {
    before.push_back(Target("r", Replay(100, 0, 0, 0, 0)));
    after.push_back(Target("r", Replay(200, 100, 400, 0, 10 * c.sample_wait)));
  }
  if (with_learner) {
    before.push_back(Target("l", Learner(0, 0, 1)));
    after.push_back(Target("l", Learner(10, 10 * c.learner_wait, 1)));
  }
  return ComputeFleetView(before, after, /*elapsed_seconds=*/10);
}

TEST(FleetViewTest, BottleneckRule) {
  const std::vector<Case> cases = {
      // Learner not starved: the learner.
      {0.1, 0.5, 0.9, 0.9, 8, "learner"},
      // Learner starved, replay holding samples: producers; actors wait on a saturated server.
      {0.6, 0.5, 0.9, 0.9, 8, "inference"},
      // ... actors wait, server idle on small batches: too few leaves in flight -> actors.
      {0.6, 0.5, 0.9, 0.2, 2, "actors"},
      // ... actors wait, server not busy but batches full: latency-bound -> inference.
      {0.6, 0.5, 0.9, 0.2, 8, "inference"},
      // ... actors rarely wait: CPU-bound search -> actors.
      {0.6, 0.5, 0.1, 0.9, 8, "actors"},
      // Learner starved but the limiter is not holding samples: replay.
      {0.6, 0.0, 0.1, 0.9, 8, "replay"},
  };
  for (const Case& c : cases) {
    const FleetView v = Scenario(c);
    EXPECT_EQ(v.bottleneck.component, c.expected)
        << "learner wait " << c.learner_wait << " sample wait " << c.sample_wait << " actor wait "
        << c.actor_wait << " duty " << c.duty << " rows " << c.rows << ": " << v.bottleneck.reason;
  }
  // The reason carries the numbers that decided it.
  const FleetView replay = Scenario(cases.back());
  EXPECT_THAT(replay.bottleneck.reason, HasSubstr("learner waits 60%"));
  const FleetView cpu = Scenario(cases[4]);
  EXPECT_THAT(cpu.bottleneck.reason, HasSubstr("wait only 10%"));
}

TEST(FleetViewTest, AFillingReplayIsWarmingUpNotABottleneck) {
  const std::string min_size =
      "# TYPE zf_replay_min_size_to_sample gauge\nzf_replay_min_size_to_sample 1000\n";
  const FleetScrape before = {Target("a", Actor(0, 0, 0, 1, 1)), Target("i", Inference(0, 8, 0, 1)),
                              Target("r", Replay(100, 0, 0, 0, 0) + min_size),
                              Target("l", Learner(0, 0, 1))};
  FleetScrape after = {Target("a", Actor(10, 1000, 5, 1, 1)), Target("i", Inference(100, 8, 5, 1)),
                       Target("r", Replay(600, 500, 0, 0, 0) + min_size),
                       Target("l", Learner(0, 10, 1))};
  FleetView v = ComputeFleetView(before, after, /*elapsed_seconds=*/10);
  EXPECT_EQ(v.bottleneck.component, "warming up");
  EXPECT_THAT(v.bottleneck.reason, HasSubstr("600 of the 1000 positions"));
  // Once the window holds enough, a starved learner is a real finding again.
  after[2] = Target("r", Replay(1200, 1100, 0, 0, 0) + min_size);
  v = ComputeFleetView(before, after, /*elapsed_seconds=*/10);
  EXPECT_EQ(v.bottleneck.component, "replay");
}

TEST(FleetViewTest, SelfPlayOnlyAndNothingToDecide) {
  // No learner, no replay: actors against inference.
  EXPECT_EQ(Scenario({0, 0, 0.9, 0.95, 8, ""}, false, false).bottleneck.component, "inference");
  EXPECT_EQ(Scenario({0, 0, 0.2, 0.95, 8, ""}, false, false).bottleneck.component, "actors");
  // Actors that made no progress at all are named as stalled, not as CPU-bound.
  const FleetScrape stalled = {Target("a", Actor(5, 500, 0, 1, 1))};
  const FleetView idle = ComputeFleetView(stalled, stalled, 1);
  EXPECT_EQ(idle.bottleneck.component, "actors");
  EXPECT_THAT(idle.bottleneck.reason, HasSubstr("no progress"));
  // Only a replay shard: nothing to decide, said so.
  const FleetScrape before = {Target("r", Replay(0, 0, 0, 0, 0))};
  const FleetScrape after = {Target("r", Replay(10, 10, 0, 0, 0))};
  const FleetView v = ComputeFleetView(before, after, 1);
  EXPECT_EQ(v.bottleneck.component, "unknown");
  EXPECT_THAT(v.bottleneck.reason, HasSubstr("no actor"));
  EXPECT_TRUE(std::isnan(v.games_per_second));
  EXPECT_THAT(FleetViewJson(v), HasSubstr("\"games_per_second\": null"));
  EXPECT_THAT(RenderFleetView(v), HasSubstr("actors     none scraped"));
}

TEST(FleetViewTest, DownTargetsAndRestartsAndMissingWorkerGauge) {
  // A counter that went down is a restart: its new value is the increase.
  std::string old_actor = Actor(100, 5000, 0, 1, 1);
  std::string restarted = Actor(3, 300, 0, 1, 1);
  // An actor without the zf_actor_workers gauge counts as one worker.
  const std::string no_workers =
      "# TYPE zf_actor_games_total counter\nzf_actor_games_total 5\n"
      "# TYPE zf_actor_evaluation_wait_seconds_total counter\n"
      "zf_actor_evaluation_wait_seconds_total 1\n";
  const FleetScrape before = {Target("a", old_actor), Target("b", no_workers)};
  TargetScrape down;
  down.target = "c";
  down.status = absl::UnavailableError("connection refused");
  const FleetScrape after = {Target("a", restarted), Target("b", absl::StrCat(no_workers, "")),
                             down};
  const FleetView v = ComputeFleetView(before, after, 1);
  EXPECT_EQ(v.actors, 2);
  EXPECT_DOUBLE_EQ(v.games_per_second, 3);
  EXPECT_DOUBLE_EQ(v.actor_workers, 2);
  ASSERT_EQ(v.targets.size(), 3u);
  EXPECT_FALSE(v.targets[2].up);
  EXPECT_EQ(v.targets[2].error, "connection refused");
  EXPECT_THAT(RenderFleetView(v), HasSubstr("c DOWN (connection refused)"));
  EXPECT_THAT(FleetViewJson(v), HasSubstr("{\"target\": \"c\", \"up\": false"));
}

TEST(FleetViewTest, InProcessRegistriesGiveTheSameView) {
  auto registry = std::make_shared<prometheus::Registry>();
  prometheus::Counter& games = prometheus::BuildCounter()
                                   .Name("zf_actor_games_total")
                                   .Help("Games.")
                                   .Register(*registry)
                                   .Add({});
  const FleetScrape before = {TargetFromRegistries("run", {registry})};
  games.Increment(6);
  const FleetScrape after = {TargetFromRegistry("run", *registry)};
  const FleetView v = ComputeFleetView(before, after, 2);
  EXPECT_EQ(v.actors, 1);
  EXPECT_DOUBLE_EQ(v.games_per_second, 3);
  EXPECT_EQ(v.targets[0].roles, "actor");
  // And through the text form, as `zf top` sees it.
  const FleetView text =
      ComputeFleetView(before, {TargetFromText("run", metrics::TextExposition(*registry))}, 2);
  EXPECT_DOUBLE_EQ(text.games_per_second, 3);
}

TEST(FleetViewTest, BadExpositionIsATargetError) {
  const TargetScrape t = TargetFromText("x", "zf_actor_games_total one\n");
  EXPECT_THAT(t.status, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("line 1")));
}

TEST(ScrapeAddressTest, ParsesHostPortAndPath) {
  ASSERT_OK_AND_ASSIGN(ScrapeAddress a, ParseScrapeAddress("127.0.0.1:9100"));
  EXPECT_EQ(a.host, "127.0.0.1");
  EXPECT_EQ(a.port, 9100);
  EXPECT_EQ(a.path, "/metrics");
  ASSERT_OK_AND_ASSIGN(ScrapeAddress b, ParseScrapeAddress("http://replay-0:9400/custom"));
  EXPECT_EQ(b.host, "replay-0");
  EXPECT_EQ(b.path, "/custom");
  ASSERT_OK_AND_ASSIGN(ScrapeAddress c, ParseScrapeAddress("[::1]:9090"));
  EXPECT_EQ(c.host, "::1");
  EXPECT_THAT(ParseScrapeAddress("localhost"), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(ParseScrapeAddress(":80"), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(ParseScrapeAddress("h:0"), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(ParseScrapeAddress("h:99999"), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(ScrapeTest, UnreachableTargetIsUnavailable) {
  // Port 1 on loopback: nothing listens there in a test sandbox.
  const TargetScrape t =
      ScrapeTarget("127.0.0.1:1", {"127.0.0.1", 1, "/metrics"}, absl::Seconds(5));
  EXPECT_FALSE(t.status.ok());
  EXPECT_TRUE(t.families.empty());
}

}  // namespace
}  // namespace zf::fleet
