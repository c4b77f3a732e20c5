// Tests of the dynamic batcher with FakeClock and FakeBackend. Blocking and "not yet dispatched"
// are observed through Batcher::stats() (workers_awaiting_delay, queued rows) and FakeBackend's
// pause counters, never with sleeps.
#include "inference_server/batcher.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/metrics/exposition.h"
#include "common/testing/status_matchers.h"
#include "common/testing/wait.h"
#include "common/thread.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "inference_server/fake_backend.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace zf::inference {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::zf::testing::StatusIs;
using ::zf::testing::WaitFor;

constexpr ModelSpec kSpec{
    .input_channels = 2, .board_height = 3, .board_width = 3, .num_actions = 5};
constexpr absl::Duration kTestTimeout = absl::Seconds(30);  // bounds a broken test only

std::shared_ptr<FakeBackend> MakeBackend(int64_t version, int max_batch = 1024) {
  auto backend = FakeBackend::Create({.spec = kSpec, .max_batch = max_batch, .version = version});
  EXPECT_OK(backend.status());
  return std::shared_ptr<FakeBackend>(std::move(backend).value());
}

std::vector<uint8_t> RandomPlanes(int rows, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> planes(rows * kSpec.PlaneSize());
  for (uint8_t& p : planes) p = static_cast<uint8_t>(rng());
  return planes;
}

// Checks that `evaluation` is exactly the fake network's answer (at `version`) for `planes`.
void ExpectAnswerFor(const Evaluation& evaluation, const std::vector<uint8_t>& planes,
                     int64_t version) {
  const int rows = static_cast<int>(planes.size() / kSpec.PlaneSize());
  ASSERT_EQ(evaluation.rows, rows);
  EXPECT_EQ(evaluation.model_version, version);
  ASSERT_EQ(evaluation.policy_logits.size(), static_cast<size_t>(rows * kSpec.num_actions));
  ASSERT_EQ(evaluation.wdl.size(), static_cast<size_t>(rows * 3));
  std::vector<float> logits(kSpec.num_actions);
  std::vector<float> wdl(3);
  for (int i = 0; i < rows; ++i) {
    FakeBackend::Evaluate(
        version, std::span<const uint8_t>(planes).subspan(i * kSpec.PlaneSize(), kSpec.PlaneSize()),
        logits, wdl);
    for (int a = 0; a < kSpec.num_actions; ++a) {
      ASSERT_EQ(evaluation.policy_logits[i * kSpec.num_actions + a], logits[a])
          << "row " << i << " action " << a;
    }
    for (int k = 0; k < 3; ++k) ASSERT_EQ(evaluation.wdl[i * 3 + k], wdl[k]) << "row " << i;
  }
}

// One request's outcome, filled by its callback.
struct Outcome {
  absl::Notification done;
  absl::StatusOr<Evaluation> result = absl::UnknownError("not completed");

  Batcher::DoneCallback Callback() {
    return [this](absl::StatusOr<Evaluation> r) {
      result = std::move(r);
      done.Notify();
    };
  }
  bool Wait() { return done.WaitForNotificationWithTimeout(kTestTimeout); }
};

class BatcherTest : public ::testing::Test {
 protected:
  absl::StatusOr<std::unique_ptr<Batcher>> Make(Batcher::Options options) {
    if (options.clock == nullptr) options.clock = &clock_;
    if (options.registry == nullptr) options.registry = &registry_;
    return Batcher::Create(std::move(options));
  }

  // Waits until `n` workers have seen the queued rows and wait only for max_delay.
  static bool AwaitingDelay(const Batcher& batcher, int n) {
    return WaitFor([&] { return batcher.stats().workers_awaiting_delay == n; });
  }

  FakeClock clock_;
  prometheus::Registry registry_;
};

TEST_F(BatcherTest, DispatchesOnSizeWithoutWaitingForTheDelay) {
  auto backend = MakeBackend(/*version=*/7);
  ASSERT_OK_AND_ASSIGN(
      auto batcher,
      Make({.backend = backend, .max_batch = 4, .max_delay = absl::Hours(1), .num_workers = 1}));
  const auto a = RandomPlanes(1, 1), b = RandomPlanes(1, 2), c = RandomPlanes(2, 3);
  Outcome oa, ob, oc;
  ASSERT_OK(batcher->Submit(a, 1, oa.Callback()));
  ASSERT_OK(batcher->Submit(b, 1, ob.Callback()));
  ASSERT_TRUE(AwaitingDelay(*batcher, 1));
  EXPECT_EQ(backend->NumRuns(), 0);
  EXPECT_FALSE(oa.done.HasBeenNotified());
  EXPECT_EQ(batcher->stats().queued_rows, 2);

  ASSERT_OK(batcher->Submit(c, 2, oc.Callback()));  // 4 rows: a full batch, no time passes
  ASSERT_TRUE(oa.Wait() && ob.Wait() && oc.Wait());
  ASSERT_OK(oa.result.status());
  ASSERT_OK(ob.result.status());
  ASSERT_OK(oc.result.status());
  ExpectAnswerFor(*oa.result, a, 7);
  ExpectAnswerFor(*ob.result, b, 7);
  ExpectAnswerFor(*oc.result, c, 7);
  EXPECT_THAT(backend->BatchSizes(), ElementsAre(4));
}

TEST_F(BatcherTest, RequestsThatFitInABatchAreNeverSplit) {
  auto backend = MakeBackend(/*version=*/1);
  ASSERT_OK_AND_ASSIGN(
      auto batcher,
      Make({.backend = backend, .max_batch = 4, .max_delay = absl::Hours(1), .num_workers = 1}));
  const auto a = RandomPlanes(3, 1), b = RandomPlanes(2, 2);
  Outcome oa, ob;
  ASSERT_OK(batcher->Submit(a, 3, oa.Callback()));
  ASSERT_OK(batcher->Submit(b, 2, ob.Callback()));  // 5 rows queued: a goes alone
  ASSERT_TRUE(oa.Wait());
  ASSERT_OK(oa.result.status());
  ExpectAnswerFor(*oa.result, a, 1);
  ASSERT_TRUE(WaitFor([&] { return batcher->stats().queued_rows == 2; }));
  ASSERT_TRUE(AwaitingDelay(*batcher, 1));  // b waits for its own delay, whole
  EXPECT_FALSE(ob.done.HasBeenNotified());
  clock_.AdvanceTime(absl::Hours(1));
  ASSERT_TRUE(ob.Wait());
  ASSERT_OK(ob.result.status());
  ExpectAnswerFor(*ob.result, b, 1);
  EXPECT_THAT(backend->BatchSizes(), ElementsAre(3, 2));
}

TEST_F(BatcherTest, DispatchesOnDelayCountedFromTheFirstQueuedRow) {
  auto backend = MakeBackend(/*version=*/1);
  ASSERT_OK_AND_ASSIGN(auto batcher, Make({.backend = backend,
                                           .max_batch = 8,
                                           .max_delay = absl::Milliseconds(10),
                                           .num_workers = 1}));
  const auto a = RandomPlanes(2, 1), b = RandomPlanes(1, 2);
  Outcome oa, ob;
  ASSERT_OK(batcher->Submit(a, 2, oa.Callback()));
  ASSERT_TRUE(AwaitingDelay(*batcher, 1));
  clock_.AdvanceTime(absl::Milliseconds(6));
  ASSERT_OK(batcher->Submit(b, 1, ob.Callback()));  // joins a's batch; a's deadline still holds
  clock_.AdvanceTime(absl::Milliseconds(3));        // 9 ms after a: not yet
  EXPECT_EQ(backend->NumRuns(), 0);
  EXPECT_EQ(batcher->stats().queued_rows, 3);
  EXPECT_FALSE(oa.done.HasBeenNotified());

  clock_.AdvanceTime(absl::Milliseconds(1));  // 10 ms after a
  ASSERT_TRUE(oa.Wait() && ob.Wait());
  ASSERT_OK(oa.result.status());
  ASSERT_OK(ob.result.status());
  ExpectAnswerFor(*oa.result, a, 1);
  ExpectAnswerFor(*ob.result, b, 1);
  EXPECT_THAT(backend->BatchSizes(), ElementsAre(3));
  EXPECT_EQ(batcher->stats().rows_evaluated, 3);
  const std::string text = metrics::TextExposition(registry_);
  EXPECT_THAT(text, HasSubstr("zf_inference_batch_rows_count 1\n"));
  EXPECT_THAT(text, HasSubstr("zf_inference_queue_wait_seconds_count 2\n"));
  EXPECT_THAT(text, HasSubstr("zf_inference_max_batch_rows 8\n"));  // batch fill's denominator
}

TEST_F(BatcherTest, ZeroDelayDispatchesWhateverIsQueued) {
  auto backend = MakeBackend(/*version=*/1);
  ASSERT_OK_AND_ASSIGN(auto batcher, Make({.backend = backend,
                                           .max_batch = 8,
                                           .max_delay = absl::ZeroDuration(),
                                           .num_workers = 1}));
  const auto a = RandomPlanes(1, 1);
  Outcome oa;
  ASSERT_OK(batcher->Submit(a, 1, oa.Callback()));
  ASSERT_TRUE(oa.Wait());
  ASSERT_OK(oa.result.status());
  ExpectAnswerFor(*oa.result, a, 1);
}

// A model with a score head: every row's score comes back with it, also across the batches of
// a split request; a model without one answers no scores, and a swap may add or drop the head
// (a server started from flags without it takes the learner's checkpoints with it).
TEST_F(BatcherTest, ScoresTravelWithTheirRowsWhenTheModelHasAScoreHead) {
  ModelSpec spec = kSpec;
  spec.score = true;
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<FakeBackend> backend,
                       FakeBackend::Create({.spec = spec, .max_batch = 4, .version = 3}));
  ASSERT_OK_AND_ASSIGN(auto batcher, Make({.backend = backend,
                                           .max_batch = 4,
                                           .max_delay = absl::ZeroDuration(),
                                           .num_workers = 2}));
  const auto planes = RandomPlanes(10, 4);
  Outcome outcome;
  ASSERT_OK(batcher->Submit(planes, 10, outcome.Callback()));
  ASSERT_TRUE(outcome.Wait());
  ASSERT_OK(outcome.result.status());
  ExpectAnswerFor(*outcome.result, planes, 3);
  ASSERT_EQ(outcome.result->scores.size(), 10u);
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(outcome.result->scores[i],
              FakeBackend::Score(3, std::span<const uint8_t>(planes).subspan(i * kSpec.PlaneSize(),
                                                                             kSpec.PlaneSize())))
        << "row " << i;
  }

  ASSERT_OK(batcher->SwapBackend(MakeBackend(/*version=*/4)));
  Outcome none;
  ASSERT_OK(batcher->Submit(RandomPlanes(2, 5), 2, none.Callback()));
  ASSERT_TRUE(none.Wait());
  ASSERT_OK(none.result.status());
  EXPECT_EQ(none.result->model_version, 4);
  EXPECT_TRUE(none.result->scores.empty());
  EXPECT_FALSE(batcher->serving_scores());
  ASSERT_OK(batcher->SwapBackend(backend));
  EXPECT_TRUE(batcher->serving_scores());
  Outcome again;
  ASSERT_OK(batcher->Submit(RandomPlanes(3, 6), 3, again.Callback()));
  ASSERT_TRUE(again.Wait());
  ASSERT_OK(again.result.status());
  EXPECT_EQ(again.result->scores.size(), 3u);
}

TEST_F(BatcherTest, FullQueueIsResourceExhaustedUntilRowsAreTaken) {
  auto backend = MakeBackend(/*version=*/1);
  ASSERT_OK_AND_ASSIGN(auto batcher, Make({.backend = backend,
                                           .max_batch = 8,
                                           .max_delay = absl::Milliseconds(5),
                                           .max_queued_rows = 4,
                                           .max_request_rows = 4,
                                           .num_workers = 1}));
  Outcome o1, o2, o3;
  ASSERT_OK(batcher->Submit(RandomPlanes(3, 1), 3, o1.Callback()));
  EXPECT_THAT(batcher->Submit(RandomPlanes(2, 2), 2, o2.Callback()),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("3 rows queued")));
  ASSERT_OK(batcher->Submit(RandomPlanes(1, 3), 1, o3.Callback()));  // fits exactly
  EXPECT_THAT(batcher->Submit(RandomPlanes(1, 4), 1, o2.Callback()),
              StatusIs(absl::StatusCode::kResourceExhausted));

  clock_.AdvanceTime(absl::Milliseconds(5));
  ASSERT_TRUE(o1.Wait() && o3.Wait());
  EXPECT_OK(o1.result.status());
  EXPECT_OK(o3.result.status());
  EXPECT_FALSE(o2.done.HasBeenNotified());  // a rejected request's callback never runs
  Outcome o4;
  EXPECT_OK(batcher->Submit(RandomPlanes(4, 5), 4, o4.Callback()));  // room again
  EXPECT_THAT(metrics::TextExposition(registry_),
              HasSubstr("zf_inference_requests_total{code=\"resource_exhausted\"} 2\n"));
  batcher->Close();
  ASSERT_TRUE(o4.done.HasBeenNotified());
  EXPECT_THAT(o4.result, StatusIs(absl::StatusCode::kCancelled));
}

TEST_F(BatcherTest, CloseCancelsQueuedRequestsAndFinishesInFlightOnes) {
  auto backend = MakeBackend(/*version=*/3);
  backend->PauseRuns();
  ASSERT_OK_AND_ASSIGN(
      auto batcher,
      Make({.backend = backend, .max_batch = 2, .max_delay = absl::Hours(1), .num_workers = 2}));
  const auto a = RandomPlanes(2, 1);
  Outcome oa, ob;
  ASSERT_OK(batcher->Submit(a, 2, oa.Callback()));  // a full batch: in flight, held
  ASSERT_TRUE(WaitFor([&] { return backend->NumBlockedRuns() == 1; }));
  ASSERT_OK(batcher->Submit(RandomPlanes(1, 2), 1, ob.Callback()));  // queued
  ASSERT_TRUE(AwaitingDelay(*batcher, 1));

  Thread closer("closer", [&] { batcher->Close(); });
  ASSERT_TRUE(ob.Wait());  // cancelled while a is still in flight
  EXPECT_THAT(ob.result, StatusIs(absl::StatusCode::kCancelled));
  EXPECT_FALSE(oa.done.HasBeenNotified());
  Outcome oc;
  EXPECT_THAT(batcher->Submit(RandomPlanes(1, 3), 1, oc.Callback()),
              StatusIs(absl::StatusCode::kCancelled));

  backend->ResumeRuns();
  closer.Join();
  ASSERT_TRUE(oa.done.HasBeenNotified());  // Close returned after the in-flight batch
  ASSERT_OK(oa.result.status());
  ExpectAnswerFor(*oa.result, a, 3);
  EXPECT_EQ(batcher->stats().batches_in_flight, 0);
  EXPECT_FALSE(oc.done.HasBeenNotified());
  EXPECT_THAT(batcher->SwapBackend(MakeBackend(4)), StatusIs(absl::StatusCode::kCancelled));
}

TEST_F(BatcherTest, DestructorCancelsQueuedRequests) {
  auto backend = MakeBackend(/*version=*/1);
  Outcome oa;
  {
    ASSERT_OK_AND_ASSIGN(auto batcher,
                         Make({.backend = backend, .max_batch = 4, .max_delay = absl::Hours(1)}));
    ASSERT_OK(batcher->Submit(RandomPlanes(1, 1), 1, oa.Callback()));
  }
  ASSERT_TRUE(oa.done.HasBeenNotified());
  EXPECT_THAT(oa.result, StatusIs(absl::StatusCode::kCancelled));
  EXPECT_EQ(backend->NumRuns(), 0);
}

TEST_F(BatcherTest, OversizedRequestIsSplitAcrossBatchesAndCompletesOnce) {
  auto backend = MakeBackend(/*version=*/2);
  ASSERT_OK_AND_ASSIGN(
      auto batcher,
      Make({.backend = backend, .max_batch = 4, .max_delay = absl::Hours(1), .num_workers = 1}));
  const auto big = RandomPlanes(10, 1), small = RandomPlanes(1, 2);
  std::atomic<int> big_calls{0};
  Outcome obig, osmall;
  ASSERT_OK(batcher->Submit(big, 10, [&](absl::StatusOr<Evaluation> r) {
    ++big_calls;
    obig.result = std::move(r);
    obig.done.Notify();
  }));
  // Two full batches go at once; the last 2 rows wait for the delay, and share a batch with
  // the next request.
  ASSERT_TRUE(
      WaitFor([&] { return backend->NumRuns() == 2 && batcher->stats().queued_rows == 2; }));
  EXPECT_FALSE(obig.done.HasBeenNotified());
  ASSERT_OK(batcher->Submit(small, 1, osmall.Callback()));
  ASSERT_TRUE(AwaitingDelay(*batcher, 1));
  clock_.AdvanceTime(absl::Hours(1));
  ASSERT_TRUE(obig.Wait() && osmall.Wait());
  ASSERT_OK(obig.result.status());
  ASSERT_OK(osmall.result.status());
  ExpectAnswerFor(*obig.result, big, 2);
  ExpectAnswerFor(*osmall.result, small, 2);
  EXPECT_THAT(backend->BatchSizes(), ElementsAre(4, 4, 3));
  EXPECT_EQ(big_calls.load(), 1);
}

TEST_F(BatcherTest, CloseCancelsTheRestOfASplitRequestAfterItsInFlightPart) {
  auto backend = MakeBackend(/*version=*/1);
  backend->PauseRuns();
  ASSERT_OK_AND_ASSIGN(
      auto batcher,
      Make({.backend = backend, .max_batch = 2, .max_delay = absl::Hours(1), .num_workers = 1}));
  Outcome o;
  ASSERT_OK(batcher->Submit(RandomPlanes(3, 1), 3, o.Callback()));
  ASSERT_TRUE(WaitFor([&] { return backend->NumBlockedRuns() == 1; }));
  EXPECT_EQ(batcher->stats().queued_rows, 1);
  Thread closer("closer", [&] { batcher->Close(); });
  ASSERT_TRUE(WaitFor([&] { return batcher->stats().queued_rows == 0; }));
  EXPECT_FALSE(o.done.HasBeenNotified());  // its first part is still being computed
  backend->ResumeRuns();
  ASSERT_TRUE(o.Wait());
  EXPECT_THAT(o.result, StatusIs(absl::StatusCode::kCancelled));
}

TEST_F(BatcherTest, TwoBatchesAreInFlightAtOnce) {
  auto backend = MakeBackend(/*version=*/1);
  backend->PauseRuns();
  ASSERT_OK_AND_ASSIGN(
      auto batcher,
      Make({.backend = backend, .max_batch = 2, .max_delay = absl::Hours(1), .num_workers = 2}));
  const auto a = RandomPlanes(2, 1), b = RandomPlanes(2, 2), c = RandomPlanes(2, 3);
  Outcome oa, ob, oc;
  ASSERT_OK(batcher->Submit(a, 2, oa.Callback()));
  ASSERT_OK(batcher->Submit(b, 2, ob.Callback()));
  ASSERT_TRUE(WaitFor([&] { return backend->NumBlockedRuns() == 2; }));
  EXPECT_EQ(batcher->stats().batches_in_flight, 2);
  ASSERT_OK(batcher->Submit(c, 2, oc.Callback()));  // no free worker: stays queued
  EXPECT_EQ(batcher->stats().queued_rows, 2);
  backend->ResumeRuns();
  ASSERT_TRUE(oa.Wait() && ob.Wait() && oc.Wait());
  ExpectAnswerFor(*oa.result, a, 1);
  ExpectAnswerFor(*ob.result, b, 1);
  ExpectAnswerFor(*oc.result, c, 1);
  EXPECT_THAT(backend->BatchSizes(), ElementsAre(2, 2, 2));
}

TEST_F(BatcherTest, BusyTimeCountsOverlappingForwardPassesOnce) {
  auto backend = MakeBackend(/*version=*/1);
  backend->PauseRuns();
  ASSERT_OK_AND_ASSIGN(
      auto batcher,
      Make({.backend = backend, .max_batch = 2, .max_delay = absl::Hours(1), .num_workers = 2}));
  const auto a = RandomPlanes(2, 1), b = RandomPlanes(2, 2);
  Outcome oa, ob;
  ASSERT_OK(batcher->Submit(a, 2, oa.Callback()));
  ASSERT_OK(batcher->Submit(b, 2, ob.Callback()));
  ASSERT_TRUE(WaitFor([&] { return backend->NumBlockedRuns() == 2; }));
  clock_.AdvanceTime(absl::Milliseconds(10));
  EXPECT_DOUBLE_EQ(batcher->stats().busy_seconds, 0.010) << "counted while in flight";
  backend->ResumeRuns();
  ASSERT_TRUE(oa.Wait() && ob.Wait());
  ASSERT_TRUE(WaitFor([&] { return batcher->stats().batches_completed == 2; }));
  // Two 10 ms passes side by side: 20 ms of compute in 10 ms of busy wall time.
  EXPECT_DOUBLE_EQ(batcher->stats().compute_seconds, 0.020);
  EXPECT_DOUBLE_EQ(batcher->stats().busy_seconds, 0.010);
  clock_.AdvanceTime(absl::Milliseconds(5));
  EXPECT_DOUBLE_EQ(batcher->stats().busy_seconds, 0.010) << "idle time is not busy";
}

TEST_F(BatcherTest, ManyConcurrentSubmittersEachGetTheirOwnAnswers) {
  auto backend = MakeBackend(/*version=*/5);
  ASSERT_OK_AND_ASSIGN(auto batcher, Batcher::Create({.backend = backend,
                                                      .max_batch = 16,
                                                      .max_delay = absl::Microseconds(200),
                                                      .num_workers = 2,
                                                      .clock = RealClock(),
                                                      .registry = &registry_}));
  constexpr int kThreads = 8, kRounds = 40, kInFlight = 4;
  std::atomic<int64_t> rows_submitted{0};
  std::atomic<int> failures{0};
  {
    std::vector<Thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back("submitter", [&, t] {
        std::mt19937 rng(t);
        for (int round = 0; round < kRounds; ++round) {
          std::vector<std::vector<uint8_t>> planes(kInFlight);
          std::vector<Outcome> outcomes(kInFlight);
          for (int i = 0; i < kInFlight; ++i) {
            const int rows = 1 + static_cast<int>(rng() % 5);
            planes[i] = RandomPlanes(rows, rng());
            rows_submitted += rows;
            if (!batcher->Submit(planes[i], rows, outcomes[i].Callback()).ok()) ++failures;
          }
          for (int i = 0; i < kInFlight; ++i) {
            if (!outcomes[i].Wait() || !outcomes[i].result.ok()) {
              ++failures;
              continue;
            }
            ExpectAnswerFor(*outcomes[i].result, planes[i], 5);
          }
        }
      });
    }
  }
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(batcher->stats().rows_evaluated, rows_submitted.load());
  EXPECT_EQ(batcher->stats().requests_completed, kThreads * kRounds * kInFlight);
  EXPECT_THAT(metrics::TextExposition(registry_),
              HasSubstr(absl::StrCat("zf_inference_requests_total{code=\"ok\"} ",
                                     kThreads * kRounds * kInFlight, "\n")));
  EXPECT_THAT(
      metrics::TextExposition(registry_),
      HasSubstr(absl::StrCat("zf_inference_evaluations_total ", rows_submitted.load(), "\n")));
}

TEST_F(BatcherTest, SwapFinishesInFlightBatchesOnTheOldBackend) {
  auto v1 = MakeBackend(/*version=*/1);
  v1->PauseRuns();
  ASSERT_OK_AND_ASSIGN(
      auto batcher,
      Make({.backend = v1, .max_batch = 2, .max_delay = absl::Hours(1), .num_workers = 2}));
  const auto a = RandomPlanes(2, 1), b = RandomPlanes(2, 2);
  Outcome oa, ob;
  ASSERT_OK(batcher->Submit(a, 2, oa.Callback()));
  ASSERT_TRUE(WaitFor([&] { return v1->NumBlockedRuns() == 1; }));
  ASSERT_OK(batcher->SwapBackend(MakeBackend(/*version=*/2)));
  EXPECT_EQ(batcher->model_version(), 2);
  EXPECT_THAT(metrics::TextExposition(registry_), HasSubstr("zf_inference_model_version 2\n"));
  ASSERT_OK(batcher->Submit(b, 2, ob.Callback()));
  ASSERT_TRUE(ob.Wait());  // served by v2 while v1 still holds a's batch
  ASSERT_OK(ob.result.status());
  ExpectAnswerFor(*ob.result, b, 2);
  EXPECT_FALSE(oa.done.HasBeenNotified());

  std::weak_ptr<FakeBackend> weak_v1 = v1;
  v1->ResumeRuns();
  v1.reset();
  ASSERT_TRUE(oa.Wait());
  ASSERT_OK(oa.result.status());
  ExpectAnswerFor(*oa.result, a, 1);
  EXPECT_TRUE(WaitFor([&] { return weak_v1.expired(); }));  // the old model is released
}

TEST_F(BatcherTest, HotSwapDuringTrafficFailsNothingAndVersionsNeverGoDown) {
  ASSERT_OK_AND_ASSIGN(auto batcher, Batcher::Create({.backend = MakeBackend(1),
                                                      .max_batch = 8,
                                                      .max_delay = absl::Microseconds(100),
                                                      .num_workers = 2,
                                                      .clock = RealClock()}));
  constexpr int kThreads = 4;
  std::atomic<bool> stop{false};
  std::vector<std::atomic<int64_t>> completed(kThreads);
  std::atomic<int> failures{0}, regressions{0};
  std::vector<int64_t> last_seen(kThreads, 0);
  auto total = [&] {
    int64_t sum = 0;
    for (const auto& c : completed) sum += c.load();
    return sum;
  };
  bool progressed = true;
  {
    std::vector<Thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back("submitter", [&, t] {
        std::mt19937 rng(100 + t);
        int64_t last = 0;
        while (!stop.load()) {
          const int rows = 1 + static_cast<int>(rng() % 4);
          const auto planes = RandomPlanes(rows, rng());
          Outcome o;
          if (!batcher->Submit(planes, rows, o.Callback()).ok() || !o.Wait() || !o.result.ok()) {
            ++failures;
            continue;
          }
          if (o.result->model_version < last) ++regressions;
          last = o.result->model_version;
          ExpectAnswerFor(*o.result, planes, last);
          ++completed[t];
        }
        last_seen[t] = last;
      });
    }
    for (int version = 2; version <= 6 && progressed; ++version) {
      const int64_t before = total();
      progressed = WaitFor([&] { return total() >= before + 20; });
      EXPECT_OK(batcher->SwapBackend(MakeBackend(version)));
    }
    // Every submitter gets answers from the last model before we stop.
    std::vector<int64_t> before(kThreads);
    for (int t = 0; t < kThreads; ++t) before[t] = completed[t].load();
    progressed = progressed && WaitFor([&] {
                   for (int t = 0; t < kThreads; ++t) {
                     if (completed[t].load() < before[t] + 5) return false;
                   }
                   return true;
                 });
    stop = true;
  }
  EXPECT_TRUE(progressed);
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(regressions.load(), 0);
  for (int64_t v : last_seen) EXPECT_EQ(v, 6);
}

TEST_F(BatcherTest, BadInputIsInvalidArgumentNamingTheProblem) {
  auto backend = MakeBackend(/*version=*/1);
  ASSERT_OK_AND_ASSIGN(auto batcher, Make({.backend = backend,
                                           .max_batch = 4,
                                           .max_delay = absl::Hours(1),
                                           .max_request_rows = 8}));
  Outcome o;
  EXPECT_THAT(batcher->Submit(std::string(), 0, o.Callback()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("rows must be >= 1, got 0")));
  EXPECT_THAT(
      batcher->Submit(RandomPlanes(9, 1), 9, o.Callback()),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("rows: 9 exceeds the limit of 8")));
  std::vector<uint8_t> short_planes = RandomPlanes(2, 1);
  short_planes.pop_back();
  EXPECT_THAT(batcher->Submit(short_planes, 2, o.Callback()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("planes: expected 36 bytes (2 rows of 18 bytes for 2x3x3 -> 5 "
                                 "actions), got 35")));
  EXPECT_THAT(batcher->Submit(RandomPlanes(1, 1), 1, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("callback")));
  EXPECT_FALSE(o.done.HasBeenNotified());
  EXPECT_EQ(batcher->stats().queued_rows, 0);
  EXPECT_THAT(metrics::TextExposition(registry_),
              HasSubstr("zf_inference_requests_total{code=\"invalid_argument\"} 4\n"));
  // The batcher keeps serving.
  ASSERT_OK(batcher->Submit(RandomPlanes(4, 2), 4, o.Callback()));
  ASSERT_TRUE(o.Wait());
  EXPECT_OK(o.result.status());
}

TEST_F(BatcherTest, BackendFailureFailsTheBatchAndServingContinues) {
  auto backend = MakeBackend(/*version=*/1);
  ASSERT_OK_AND_ASSIGN(
      auto batcher,
      Make({.backend = backend, .max_batch = 2, .max_delay = absl::Hours(1), .num_workers = 1}));
  backend->SetFailure(absl::InternalError("device fell over"));
  Outcome o1, o2;
  ASSERT_OK(batcher->Submit(RandomPlanes(2, 1), 2, o1.Callback()));
  ASSERT_TRUE(o1.Wait());
  EXPECT_THAT(o1.result, StatusIs(absl::StatusCode::kInternal, HasSubstr("device fell over")));
  backend->SetFailure(absl::OkStatus());
  const auto planes = RandomPlanes(2, 2);
  ASSERT_OK(batcher->Submit(planes, 2, o2.Callback()));
  ASSERT_TRUE(o2.Wait());
  ASSERT_OK(o2.result.status());
  ExpectAnswerFor(*o2.result, planes, 1);
  EXPECT_EQ(batcher->stats().rows_evaluated, 2);
  EXPECT_THAT(metrics::TextExposition(registry_),
              HasSubstr("zf_inference_requests_total{code=\"internal\"} 1\n"));
}

TEST_F(BatcherTest, SwapBackendRejectsAnIncompatibleModel) {
  ASSERT_OK_AND_ASSIGN(auto batcher, Make({.backend = MakeBackend(1), .max_batch = 8}));
  EXPECT_THAT(batcher->SwapBackend(nullptr), StatusIs(absl::StatusCode::kInvalidArgument));
  ModelSpec other = kSpec;
  other.num_actions = 6;
  ASSERT_OK_AND_ASSIGN(auto different, FakeBackend::Create({.spec = other, .version = 2}));
  EXPECT_THAT(batcher->SwapBackend(std::move(different)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("2x3x3 -> 6 actions")));
  EXPECT_THAT(batcher->SwapBackend(MakeBackend(2, /*max_batch=*/4)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("max_batch")));
  EXPECT_EQ(batcher->model_version(), 1);
}

TEST_F(BatcherTest, CreateValidatesOptions) {
  EXPECT_THAT(Make({}), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("backend")));
  EXPECT_THAT(Make({.backend = MakeBackend(1, /*max_batch=*/4), .max_batch = 8}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("max_batch")));
  EXPECT_THAT(Make({.backend = MakeBackend(1), .max_delay = -absl::Milliseconds(1)}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("max_delay")));
  EXPECT_THAT(Make({.backend = MakeBackend(1), .max_queued_rows = 4, .max_request_rows = 8}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("max_queued_rows")));
  EXPECT_THAT(Make({.backend = MakeBackend(1), .num_workers = 0}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("num_workers")));
}

}  // namespace
}  // namespace zf::inference
