// BatchTuner and the self-tuning Batcher against backends whose cost curves are known: each Run
// advances a FakeClock by cost(rows), so profiles and choices are exact and instant.
#include "inference_server/batch_tuner.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "common/metrics/exposition.h"
#include "common/status_macros.h"
#include "common/testing/status_matchers.h"
#include "common/testing/wait.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "inference_server/batcher.h"
#include "inference_server/fake_backend.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace zf::inference {
namespace {

using ::zf::testing::StatusIs;
using Cost = std::function<absl::Duration(int rows)>;

// FakeBackend's answers; each Run moves `clock` forward by cost(rows) (no real time passes).
class CurveBackend : public Backend {
 public:
  CurveBackend(FakeClock* clock, Cost cost) : clock_(clock), cost_(std::move(cost)) {}
  const ModelSpec& spec() const override { return spec_; }
  int max_batch() const override { return 1024; }
  int64_t version() const override { return 1; }
  using Backend::Run;
  absl::Status Run(std::span<const uint8_t> planes, int batch, std::span<float> policy_logits,
                   std::span<float> wdl, std::span<float> scores) override {
    ZF_RETURN_IF_ERROR(
        ValidateRunArguments(spec_, max_batch(), planes, batch, policy_logits, wdl, scores));
    for (int i = 0; i < batch; ++i) {
      FakeBackend::Evaluate(1, planes.subspan(i * spec_.PlaneSize(), spec_.PlaneSize()),
                            policy_logits.subspan(i * spec_.num_actions, spec_.num_actions),
                            wdl.subspan(i * 3, 3));
    }
    absl::Duration cost;
    {
      absl::MutexLock lock(&mu_);
      cost = cost_(batch);
    }
    clock_->AdvanceTime(cost);
    return absl::OkStatus();
  }
  void SetCost(Cost cost) {
    absl::MutexLock lock(&mu_);
    cost_ = std::move(cost);
  }

 private:
  const ModelSpec spec_{.input_channels = 2, .board_height = 3, .board_width = 3, .num_actions = 9};
  FakeClock* const clock_;
  absl::Mutex mu_;
  Cost cost_ ABSL_GUARDED_BY(mu_);
};

// A CPU-like curve: 1 ms fixed + 0.1 ms per row up to 16 rows, then 0.3 ms per further row
// (caches spill): the cost per row is lowest at 16.
absl::Duration CpuLike(int rows) {
  const double ms = 1.0 + 0.1 * std::min(rows, 16) + 0.3 * std::max(0, rows - 16);
  return absl::Microseconds(static_cast<int64_t>(ms * 1000));
}

// A GPU-like curve: flat 2 ms up to 256 rows, then linear (the device is full).
absl::Duration GpuLike(int rows) { return absl::Microseconds(2000 * std::max(1.0, rows / 256.0)); }

// Waits (real time, bounded) until `done` reaches `submitted`. Rows that wait for a fuller
// batch wait on the fake clock, which only a forward pass moves: while a worker is parked on its
// delay and no batch is running, time moves on by `step` (never during a forward pass, so every
// measured cost stays exact).
bool AnswerAll(Batcher& batcher, FakeClock& clock, const std::atomic<int>& done, int submitted,
               absl::Duration step = absl::Microseconds(100)) {
  return testing::WaitFor(
      [&] {
        if (done == submitted) return true;
        const Batcher::Stats stats = batcher.stats();
        if (stats.batches_in_flight == 0 && stats.workers_awaiting_delay > 0) {
          clock.AdvanceTime(step);
        }
        return false;
      },
      absl::Seconds(10));
}

TEST(BatchTunerTest, ProfileMeasuresEachPowerOfTwoUpToTheCeiling) {
  FakeClock clock;
  CurveBackend backend(&clock, CpuLike);
  BatchTunerOptions options;
  ASSERT_OK_AND_ASSIGN(std::vector<BatchCostPoint> curve,
                       BatchTuner::Profile(backend, 48, options, clock));
  std::vector<int> rows;
  for (const BatchCostPoint& p : curve) rows.push_back(p.rows);
  EXPECT_THAT(rows, ::testing::ElementsAre(1, 2, 4, 8, 16, 32, 48));
  for (const BatchCostPoint& p : curve) {
    EXPECT_NEAR(p.seconds, absl::ToDoubleSeconds(CpuLike(p.rows)), 1e-9) << p.rows;
  }
}

TEST(BatchTunerTest, ProfileStopsAfterTheFirstSizeOverFourTimesTheLatencyTarget) {
  FakeClock clock;
  CurveBackend backend(&clock, CpuLike);
  BatchTunerOptions options;
  options.latency_target = absl::Milliseconds(7);  // 64 rows take 17 ms, 128 rows 36.2 ms
  ASSERT_OK_AND_ASSIGN(std::vector<BatchCostPoint> curve,
                       BatchTuner::Profile(backend, 1024, options, clock));
  EXPECT_EQ(curve.back().rows, 128);
}

// What pinned a restarted server to batches of 1 in the chaos suite: one slow measurement. The
// fastest repeat counts, and a slow size does not end the curve.
TEST(BatchTunerTest, ProfileShrugsOffSlowRuns) {
  FakeClock clock;
  int runs = 0;
  CurveBackend backend(&clock, [&runs](int rows) {
    ++runs;
    // Runs 2..4 (the first measured runs of 1 row) and every run of 4 rows stall for 60 ms.
    return CpuLike(rows) +
           ((runs >= 2 && runs <= 4) || rows == 4 ? absl::Milliseconds(60) : absl::ZeroDuration());
  });
  BatchTunerOptions options;
  ASSERT_OK_AND_ASSIGN(std::vector<BatchCostPoint> curve,
                       BatchTuner::Profile(backend, 16, options, clock));
  ASSERT_EQ(curve.size(), 5u);
  EXPECT_NEAR(curve[0].seconds, 0.0011, 1e-9);  // the stalls of 1 row are not the minimum
  EXPECT_NEAR(curve[2].seconds, 0.0614, 1e-9);  // 4 rows always stall: measured so
  EXPECT_EQ(curve.back().rows, 16);             // ... and the curve goes on past them
  ASSERT_OK_AND_ASSIGN(BatchTuner tuner, BatchTuner::Create(16, options, curve));
  EXPECT_EQ(tuner.Choose(0).max_batch, 16);
}

TEST(BatchTunerTest, ChoosesTheBatchWithTheLowestCostPerRow) {
  FakeClock clock;
  for (const auto& [cost, expected] :
       std::vector<std::pair<Cost, int>>{{CpuLike, 16}, {GpuLike, 256}}) {
    CurveBackend backend(&clock, cost);
    BatchTunerOptions options;
    options.latency_target = absl::Milliseconds(50);
    ASSERT_OK_AND_ASSIGN(std::vector<BatchCostPoint> curve,
                         BatchTuner::Profile(backend, 1024, options, clock));
    ASSERT_OK_AND_ASSIGN(BatchTuner tuner, BatchTuner::Create(1024, options, curve));
    EXPECT_EQ(tuner.Choose(0).max_batch, expected) << tuner.CurveString();
  }
}

TEST(BatchTunerTest, TheLatencyTargetCapsTheBatch) {
  FakeClock clock;
  CurveBackend backend(&clock, GpuLike);
  BatchTunerOptions options;
  options.latency_target = absl::Milliseconds(5);  // 512 rows take 4 ms, 1024 take 8 ms
  ASSERT_OK_AND_ASSIGN(std::vector<BatchCostPoint> curve,
                       BatchTuner::Profile(backend, 1024, options, clock));
  ASSERT_OK_AND_ASSIGN(BatchTuner tuner, BatchTuner::Create(1024, options, curve));
  // 256 and 512 rows cost the same per row within the tolerance: the smaller wins.
  EXPECT_EQ(tuner.Choose(0).max_batch, 256);
  options.latency_target = absl::Milliseconds(1);  // nothing fits: one row at a time
  ASSERT_OK_AND_ASSIGN(BatchTuner tight, BatchTuner::Create(1024, options, curve));
  EXPECT_EQ(tight.Choose(0).max_batch, 1);
  EXPECT_EQ(tight.Choose(0).max_delay, absl::ZeroDuration());
}

TEST(BatchTunerTest, TheDelayIsTheFillTimeAtMostOneForwardPass) {
  BatchTunerOptions options;
  options.latency_target = absl::Milliseconds(50);
  // 16 rows: 2.6 ms per pass.
  ASSERT_OK_AND_ASSIGN(
      BatchTuner tuner,
      BatchTuner::Create(
          64, options,
          {{1, 0.0011}, {2, 0.0012}, {4, 0.0014}, {8, 0.0018}, {16, 0.0026}, {32, 0.0074}}));
  EXPECT_EQ(tuner.Choose(0).max_batch, 16);
  EXPECT_EQ(tuner.Choose(0).max_delay, absl::Microseconds(2600));     // unknown rate
  EXPECT_EQ(tuner.Choose(1000).max_delay, absl::Microseconds(2600));  // 16 ms to fill
  EXPECT_EQ(tuner.Choose(16000).max_delay, absl::Milliseconds(1));    // 1 ms to fill
  EXPECT_EQ(tuner.Choose(1e9).max_delay, absl::Nanoseconds(16));      // floods: no wait
}

TEST(BatchTunerTest, ObservationsScaleTheCurveAndTheLatencyCapFollows) {
  BatchTunerOptions options;
  options.latency_target = absl::Milliseconds(5);
  options.smoothing = 0.5;
  ASSERT_OK_AND_ASSIGN(
      BatchTuner tuner,
      BatchTuner::Create(
          32, options,
          {{1, 0.001}, {2, 0.0011}, {4, 0.0012}, {8, 0.0014}, {16, 0.0018}, {32, 0.0040}}));
  EXPECT_EQ(tuner.Choose(0).max_batch, 16);
  // Batches of 16 (and of 18: within 25% above, scaled to 16) take 3x their profiled time.
  for (int i = 0; i < 20; ++i) tuner.Observe(i % 2 ? 16 : 18, i % 2 ? 0.0054 : 0.006075);
  EXPECT_NEAR(tuner.slowdown(), 3.0, 1e-3);
  EXPECT_NEAR(tuner.curve()[2].seconds, 0.0036, 1e-6);  // 4 rows: scaled like the rest
  // 16 rows now take 5.4 ms, over the 5 ms target: the cheapest per row that fits is 8.
  EXPECT_EQ(tuner.Choose(0).max_batch, 8);
  EXPECT_NEAR(absl::ToDoubleSeconds(tuner.Choose(0).max_delay), 0.0008, 1e-6);  // 5 - 4.2 ms
  // A batch of 12 is too far above 8 to say anything.
  tuner.Observe(12, 1.0);
  EXPECT_NEAR(tuner.slowdown(), 3.0, 1e-3);
  // One batch that took 1,000x (the process was stopped) counts as 4x the current factor.
  tuner.Observe(16, 5.4);
  EXPECT_NEAR(tuner.slowdown(), 3.0 + 0.5 * (12.0 - 3.0), 1e-3);
}

// What pinned a restarted server to batches of 1 in the chaos suite (with profile_repeats
// and the margin already in place): every profiled run was slow, in a shape the device does not
// have when serving (1 row 50 ms, 2 rows 148 ms; served, 1 row took 0.35 ms). Probes of the next
// size up, trusted over the profile once served, climb to the served curve's best size.
TEST(BatchTunerTest, ProbesCorrectAProfileWithTheWrongShape) {
  BatchTunerOptions options;
  options.latency_target = absl::Milliseconds(20);
  ASSERT_OK_AND_ASSIGN(BatchTuner tuner, BatchTuner::Create(64, options, {{1, 0.050}, {2, 0.148}}));
  EXPECT_EQ(tuner.Choose(0).max_batch, 1);
  std::vector<int> sizes;
  for (int round = 0; round < 12; ++round) {
    const BatchLimits limits = tuner.Next(/*arrival_rows_per_second=*/0, /*cap=*/64);
    sizes.push_back(limits.max_batch);
    for (int i = 0; i < BatchTuner::kProbeBatches; ++i) {
      EXPECT_FALSE(tuner.ProbeMeasured());
      tuner.Observe(limits.max_batch, absl::ToDoubleSeconds(CpuLike(limits.max_batch)));
    }
    EXPECT_EQ(tuner.ProbeMeasured(), limits.probe);
  }
  // Each round probes one size up until the cost per row rises (32 rows cost more per row
  // than 16); 64 is estimated from 32, not served, and not probed from 16.
  EXPECT_THAT(sizes, ::testing::ElementsAre(2, 4, 8, 16, 32, 16, 16, 16, 16, 16, 16, 16));
  EXPECT_EQ(tuner.Choose(0, 64).max_batch, 16) << tuner.CurveString();
  // The sizes served hold their served costs (16 rows: 2.6 ms), whatever the profile said.
  EXPECT_NEAR(tuner.curve()[4].seconds, 0.0026, 1e-6) << tuner.CurveString();
}

TEST(BatchTunerTest, ASizeServedBeforeIsProbedAgainEveryProbeEveryRounds) {
  BatchTunerOptions options;
  options.latency_target = absl::Milliseconds(20);
  options.probe_every = 3;
  FakeClock clock;
  CurveBackend backend(&clock, CpuLike);
  ASSERT_OK_AND_ASSIGN(std::vector<BatchCostPoint> curve,
                       BatchTuner::Profile(backend, 64, options, clock));
  ASSERT_OK_AND_ASSIGN(BatchTuner tuner, BatchTuner::Create(64, options, curve));
  std::vector<int> sizes;
  for (int round = 0; round < 8; ++round) {
    const BatchLimits limits = tuner.Next(0, 64);
    sizes.push_back(limits.max_batch);
    tuner.Observe(limits.max_batch, absl::ToDoubleSeconds(CpuLike(limits.max_batch)));
  }
  EXPECT_THAT(sizes, ::testing::ElementsAre(32, 16, 16, 32, 16, 16, 32, 16));
  // A probe that never fills (nothing is served at 32) is not repeated every round either.
  ASSERT_OK_AND_ASSIGN(BatchTuner starved, BatchTuner::Create(64, options, curve));
  sizes.clear();
  for (int round = 0; round < 8; ++round) {
    const BatchLimits limits = starved.Next(0, 64);
    sizes.push_back(limits.max_batch);
    starved.Observe(16, absl::ToDoubleSeconds(CpuLike(16)));
  }
  EXPECT_THAT(sizes, ::testing::ElementsAre(32, 16, 16, 32, 16, 16, 32, 16));
  // Callers that cannot fill 32 rows are never made to wait for them.
  for (int round = 0; round < 8; ++round) EXPECT_EQ(tuner.Next(0, 16).max_batch, 16);
}

TEST(BatchTunerTest, WaitsOnlyWhileWaitingLowersTheCostPerRow) {
  FakeClock clock;
  BatchTunerOptions options;
  options.latency_target = absl::Milliseconds(50);
  CurveBackend cpu(&clock, CpuLike);
  ASSERT_OK_AND_ASSIGN(std::vector<BatchCostPoint> cpu_curve,
                       BatchTuner::Profile(cpu, 64, options, clock));
  ASSERT_OK_AND_ASSIGN(BatchTuner tuner, BatchTuner::Create(64, options, cpu_curve));
  auto ms = [](absl::Duration d) { return absl::ToDoubleMilliseconds(d); };
  // t(16) = 2.6 ms. 1 row: 16 x 1.1 - 2.6; 8 rows: 16 x 1.8 / 8 - 2.6; 12 rows (t(12) = 2.2 ms,
  // between the points): 16 x 2.2 / 12 - 2.6.
  EXPECT_NEAR(ms(tuner.WorthWaiting(1, 16)), 15.0, 1e-6);
  EXPECT_NEAR(ms(tuner.WorthWaiting(8, 16)), 1.0, 1e-6);
  EXPECT_NEAR(ms(tuner.WorthWaiting(12, 16)), 16 * 2.2 / 12 - 2.6, 1e-6);
  EXPECT_EQ(tuner.WorthWaiting(16, 16), absl::ZeroDuration());
  // Beyond 16 rows the cost per row rises: waiting for 32 never pays.
  EXPECT_EQ(tuner.WorthWaiting(16, 32), absl::ZeroDuration());

  CurveBackend gpu(&clock, GpuLike);
  ASSERT_OK_AND_ASSIGN(std::vector<BatchCostPoint> gpu_curve,
                       BatchTuner::Profile(gpu, 256, options, clock));
  ASSERT_OK_AND_ASSIGN(BatchTuner flat, BatchTuner::Create(256, options, gpu_curve));
  EXPECT_NEAR(ms(flat.WorthWaiting(128, 256)), 2.0, 1e-6);  // 256 x 2 / 128 - 2
  EXPECT_NEAR(ms(flat.WorthWaiting(8, 256)), 62.0, 1e-6);
}

TEST(BatchTunerTest, RejectsBadInput) {
  BatchTunerOptions options;
  EXPECT_THAT(BatchTuner::Create(8, options, {}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
  EXPECT_THAT(BatchTuner::Create(8, options, {{2, 0.1}}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
  EXPECT_THAT(BatchTuner::Create(8, options, {{1, 0.1}, {16, 0.2}}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("at most 8")));
  options.tolerance = 1.5;
  EXPECT_THAT(BatchTuner::Create(8, options, {{1, 0.1}}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("tolerance")));
}

// The batcher with tuning: chooses at Create, exports its choice, adapts while serving.
TEST(BatchTunerTest, TheBatcherTunesItselfAndFollowsTheDevice) {
  FakeClock clock;
  auto backend = std::make_shared<CurveBackend>(&clock, CpuLike);
  prometheus::Registry registry;
  Batcher::Options options;
  options.backend = backend;
  options.max_batch = 256;
  options.max_delay = absl::Seconds(5);  // unused when tuning
  options.clock = &clock;
  options.registry = &registry;
  options.num_workers = 1;
  options.tuning = BatchTunerOptions{.latency_target = absl::Milliseconds(10),
                                     .smoothing = 0.5,
                                     .retune_interval = absl::Milliseconds(20)};
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Batcher> batcher, Batcher::Create(options));
  EXPECT_EQ(batcher->stats().max_batch, 16);
  EXPECT_EQ(batcher->stats().max_delay, CpuLike(16));
  EXPECT_THAT(metrics::TextExposition(registry),
              ::testing::HasSubstr("zf_inference_max_batch_rows 16"));
  EXPECT_THAT(metrics::TextExposition(registry),
              ::testing::HasSubstr("zf_inference_max_delay_seconds 0.0026"));

  // The device gets 5x slower (a CPU shared with actors): 16 rows take 13 ms, over the
  // 10 ms target; 8 rows take 9 ms.
  backend->SetCost([](int rows) { return 5 * CpuLike(rows); });
  const int64_t plane = batcher->spec().PlaneSize();
  std::atomic<int> done{0};
  int submitted = 0;
  for (int round = 0; round < 200 && batcher->stats().max_batch == 16; ++round) {
    for (int i = 0; i < 16; ++i, ++submitted) {
      ASSERT_OK(batcher->Submit(std::vector<uint8_t>(plane, 1), 1,
                                [&](absl::StatusOr<Evaluation> e) { done += e.ok(); }));
    }
    ASSERT_TRUE(AnswerAll(*batcher, clock, done, submitted));
  }
  EXPECT_EQ(batcher->stats().max_batch, 8) << batcher->tuning_curve();
  EXPECT_THAT(metrics::TextExposition(registry),
              ::testing::HasSubstr("zf_inference_max_batch_rows 8"));
}

// A tuning batcher over CpuLike (tuned to 16 rows at a 10 ms target) with a ceiling of 256.
Batcher::Options TunedCpuLike(FakeClock* clock, int num_workers, absl::Duration retune_interval) {
  Batcher::Options options;
  options.backend = std::make_shared<CurveBackend>(clock, CpuLike);
  options.max_batch = 256;
  options.clock = clock;
  options.num_workers = num_workers;
  options.tuning = BatchTunerOptions{.latency_target = absl::Milliseconds(10),
                                     .retune_interval = retune_interval};
  return options;
}

// Callers that keep only 8 rows in flight: with 2 workers each batch takes at most 4, so one
// worker computes while the other fills.
TEST(BatchTunerTest, RowsInFlightCapTheBatchSoWorkersPipeline) {
  FakeClock clock;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Batcher> batcher,
                       Batcher::Create(TunedCpuLike(&clock, 2, absl::Milliseconds(20))));
  EXPECT_EQ(batcher->stats().max_batch, 16);
  const int64_t plane = batcher->spec().PlaneSize();
  std::atomic<int> done{0};
  int submitted = 0;
  for (int round = 0; round < 200 && batcher->stats().max_batch != 4; ++round) {
    for (int i = 0; i < 8; ++i, ++submitted) {
      ASSERT_OK(batcher->Submit(std::vector<uint8_t>(plane, 1), 1,
                                [&](absl::StatusOr<Evaluation> e) { done += e.ok(); }));
    }
    ASSERT_TRUE(AnswerAll(*batcher, clock, done, submitted, absl::Milliseconds(1)));
  }
  EXPECT_EQ(batcher->stats().max_batch, 4);
}

// A request larger than the tuned max_batch but within the ceiling is one batch of its own, not
// cut into pieces: an actor's 27-row requests cut to the tuner's 4 to 16 cost a 2-core fleet
// 17-66% of its games/s with 1 or 2 actors (docs/benchmarks.md).
TEST(BatchTunerTest, ARequestWithinTheCeilingIsNeverSplitByTheTunedSize) {
  FakeClock clock;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Batcher> batcher,
                       Batcher::Create(TunedCpuLike(&clock, 1, absl::Hours(1))));
  ASSERT_EQ(batcher->stats().max_batch, 16);
  const int64_t plane = batcher->spec().PlaneSize();
  std::atomic<int> done{0};
  const int64_t batches_before = batcher->stats().batches_completed;
  ASSERT_OK(
      batcher->Submit(std::vector<uint8_t>(24 * plane, 1), 24,
                      [&](absl::StatusOr<Evaluation> e) { done += e.ok() && e->rows == 24; }));
  ASSERT_TRUE(AnswerAll(*batcher, clock, done, 1));
  EXPECT_EQ(batcher->stats().batches_completed - batches_before, 1);
  // Behind a queued request, it waits for the next batch rather than filling this one.
  const int64_t rows_before = batcher->stats().rows_evaluated;
  ASSERT_OK(batcher->Submit(std::vector<uint8_t>(4 * plane, 1), 4,
                            [&](absl::StatusOr<Evaluation> e) { done += e.ok(); }));
  ASSERT_OK(
      batcher->Submit(std::vector<uint8_t>(24 * plane, 1), 24,
                      [&](absl::StatusOr<Evaluation> e) { done += e.ok() && e->rows == 24; }));
  ASSERT_TRUE(AnswerAll(*batcher, clock, done, 3));
  EXPECT_EQ(batcher->stats().batches_completed - batches_before, 3);
  EXPECT_EQ(batcher->stats().rows_evaluated - rows_before, 28);
}

// The batcher end to end: a profile taken while the host was loaded (every run 50 ms slower)
// starts it at batches of 1; served costs and probes take it to 16 rows under load.
TEST(BatchTunerTest, TheBatcherRecoversFromAProfileTakenUnderLoad) {
  FakeClock clock;
  std::atomic<bool> loaded{true};
  auto backend = std::make_shared<CurveBackend>(&clock, [&loaded](int rows) {
    return CpuLike(rows) + (loaded ? absl::Milliseconds(50) * rows : absl::ZeroDuration());
  });
  Batcher::Options options;
  options.backend = backend;
  options.max_batch = 64;
  options.clock = &clock;
  options.num_workers = 1;
  options.tuning = BatchTunerOptions{.latency_target = absl::Milliseconds(20),
                                     .retune_interval = absl::Milliseconds(20)};
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Batcher> batcher, Batcher::Create(options));
  EXPECT_EQ(batcher->stats().max_batch, 1) << batcher->tuning_curve();
  loaded = false;
  const int64_t plane = batcher->spec().PlaneSize();
  std::atomic<int> done{0};
  int submitted = 0;
  // Callers keep 64 rows in flight, in requests of 4. A probe of 16 does not count: the
  // batcher must choose it.
  auto chose_16 = [&] { return batcher->stats().max_batch == 16 && !batcher->stats().probing; };
  for (int round = 0; round < 400 && !chose_16(); ++round) {
    for (int i = 0; i < 16; ++i, ++submitted) {
      ASSERT_OK(batcher->Submit(std::vector<uint8_t>(4 * plane, 1), 4,
                                [&](absl::StatusOr<Evaluation> e) { done += e.ok(); }));
    }
    ASSERT_TRUE(AnswerAll(*batcher, clock, done, submitted));
  }
  EXPECT_TRUE(chose_16()) << batcher->tuning_curve();
}

TEST(BatchTunerTest, WithoutTuningTheOptionsApply) {
  FakeClock clock;
  Batcher::Options options;
  options.backend = std::make_shared<CurveBackend>(&clock, CpuLike);
  options.max_batch = 64;
  options.max_delay = absl::Milliseconds(3);
  options.clock = &clock;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Batcher> batcher, Batcher::Create(options));
  EXPECT_EQ(batcher->stats().max_batch, 64);
  EXPECT_EQ(batcher->stats().max_delay, absl::Milliseconds(3));
  EXPECT_EQ(batcher->tuning_curve(), "");
}

}  // namespace
}  // namespace zf::inference
