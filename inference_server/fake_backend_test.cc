#include "inference_server/fake_backend.h"

#include <cstdint>
#include <numeric>
#include <vector>

#include "absl/synchronization/notification.h"
#include "common/clock.h"
#include "common/testing/status_matchers.h"
#include "common/testing/wait.h"
#include "common/thread.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zf::inference {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::zf::testing::StatusIs;
using ::zf::testing::WaitFor;

constexpr ModelSpec kSpec{
    .input_channels = 1, .board_height = 2, .board_width = 2, .num_actions = 4};

TEST(FakeBackendTest, OutputsDependOnlyOnEachPositionsBytesAndTheVersion) {
  ASSERT_OK_AND_ASSIGN(auto backend, FakeBackend::Create({.spec = kSpec, .version = 3}));
  const std::vector<uint8_t> planes = {1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4};
  std::vector<float> logits(3 * 4), wdl(3 * 3);
  ASSERT_OK(backend->Run(planes, 3, logits, wdl));
  // Rows 0 and 2 are the same position: the same answer wherever it sits in the batch.
  for (int a = 0; a < 4; ++a) EXPECT_EQ(logits[a], logits[8 + a]);
  for (int k = 0; k < 3; ++k) EXPECT_EQ(wdl[k], wdl[6 + k]);
  EXPECT_NE(logits[0], logits[4]);
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(wdl[i * 3] + wdl[i * 3 + 1] + wdl[i * 3 + 2], 1.0f, 1e-6);
    for (int a = 0; a < 4; ++a) {
      EXPECT_GE(logits[i * 4 + a], -4.0f);
      EXPECT_LT(logits[i * 4 + a], 4.0f);
    }
  }
  // Evaluate is the same function; another version gives another answer.
  std::vector<float> one_logits(4), one_wdl(3);
  FakeBackend::Evaluate(3, std::span<const uint8_t>(planes).subspan(4, 4), one_logits, one_wdl);
  EXPECT_THAT(one_logits, ElementsAre(logits[4], logits[5], logits[6], logits[7]));
  FakeBackend::Evaluate(4, std::span<const uint8_t>(planes).subspan(4, 4), one_logits, one_wdl);
  EXPECT_NE(one_logits[0], logits[4]);
  EXPECT_THAT(backend->BatchSizes(), ElementsAre(3));
}

TEST(FakeBackendTest, RejectsBadArgumentsAndOptions) {
  ASSERT_OK_AND_ASSIGN(auto backend, FakeBackend::Create({.spec = kSpec, .max_batch = 2}));
  std::vector<uint8_t> planes(12);
  std::vector<float> logits(12), wdl(9);
  EXPECT_THAT(backend->Run(planes, 3, logits, wdl),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("batch must be in [1, 2]")));
  EXPECT_THAT(backend->Run(std::span<const uint8_t>(planes).first(7), 2,
                           std::span<float>(logits).first(8), std::span<float>(wdl).first(6)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected 8 bytes")));
  EXPECT_THAT(backend->Run(std::span<const uint8_t>(planes).first(8), 2, logits,
                           std::span<float>(wdl).first(6)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("policy_logits")));
  std::vector<float> scores(2);
  EXPECT_THAT(
      backend->Run(std::span<const uint8_t>(planes).first(8), 2, std::span<float>(logits).first(8),
                   std::span<float>(wdl).first(6), scores),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no score head")));
  ModelSpec scored = kSpec;
  scored.score = true;
  ASSERT_OK_AND_ASSIGN(auto with_score, FakeBackend::Create({.spec = scored, .max_batch = 2}));
  EXPECT_THAT(with_score->Run(std::span<const uint8_t>(planes).first(8), 2,
                              std::span<float>(logits).first(8), std::span<float>(wdl).first(6),
                              std::span<float>(scores).first(1)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("scores: expected 2")));
  EXPECT_EQ(backend->NumRuns(), 0);
  EXPECT_THAT(FakeBackend::Create({.spec = {}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("input_channels")));
  EXPECT_THAT(FakeBackend::Create({.spec = kSpec, .max_batch = 0}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("max_batch")));
}

TEST(FakeBackendTest, FailsWhenToldTo) {
  ASSERT_OK_AND_ASSIGN(auto backend, FakeBackend::Create({.spec = kSpec}));
  std::vector<uint8_t> planes(4);
  std::vector<float> logits(4), wdl(3);
  backend->SetFailure(absl::UnavailableError("gone"));
  EXPECT_THAT(backend->Run(planes, 1, logits, wdl), StatusIs(absl::StatusCode::kUnavailable));
  backend->SetFailure(absl::OkStatus());
  EXPECT_OK(backend->Run(planes, 1, logits, wdl));
}

TEST(FakeBackendTest, PausedRunsBlockUntilResumed) {
  ASSERT_OK_AND_ASSIGN(auto backend, FakeBackend::Create({.spec = kSpec}));
  backend->PauseRuns();
  absl::Notification done;
  absl::Status status;
  Thread runner("runner", [&] {
    std::vector<uint8_t> planes(4);
    std::vector<float> logits(4), wdl(3);
    status = backend->Run(planes, 1, logits, wdl);
    done.Notify();
  });
  ASSERT_TRUE(WaitFor([&] { return backend->NumBlockedRuns() == 1; }));
  EXPECT_FALSE(done.HasBeenNotified());
  backend->ResumeRuns();
  runner.Join();
  EXPECT_OK(status);
  EXPECT_EQ(backend->NumBlockedRuns(), 0);
}

TEST(FakeBackendTest, DelayIsSleptOnTheInjectedClock) {
  FakeClock clock;
  ASSERT_OK_AND_ASSIGN(
      auto backend,
      FakeBackend::Create({.spec = kSpec, .delay = absl::Milliseconds(5), .clock = &clock}));
  absl::Notification done;
  Thread runner("runner", [&] {
    std::vector<uint8_t> planes(4);
    std::vector<float> logits(4), wdl(3);
    EXPECT_OK(backend->Run(planes, 1, logits, wdl));
    done.Notify();
  });
  ASSERT_TRUE(WaitFor([&] { return clock.NumWaiters() == 1; }));
  clock.AdvanceTime(absl::Milliseconds(4));
  EXPECT_FALSE(done.HasBeenNotified());
  clock.AdvanceTime(absl::Milliseconds(1));
  runner.Join();
  EXPECT_TRUE(done.HasBeenNotified());
}

}  // namespace
}  // namespace zf::inference
