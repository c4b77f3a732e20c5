#include "replay/rate_limiter.h"

#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "absl/synchronization/notification.h"
#include "common/clock.h"
#include "common/testing/status_matchers.h"
#include "common/testing/wait.h"
#include "common/thread.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zf::replay {
namespace {

using ::testing::HasSubstr;
using ::zf::testing::StatusIs;
using ::zf::testing::WaitFor;

// spi 1, min size 2, band [-3, 3]: with max_insert 2 and max_sample 4 the band must be >= 6 wide.
RateLimiterOptions SmallOptions(Clock* clock) {
  RateLimiterOptions o;
  o.samples_per_insert = 1.0;
  o.min_size_to_sample = 2;
  o.min_diff = -3;
  o.max_diff = 3;
  o.max_insert_positions = 2;
  o.max_sample_positions = 4;
  o.clock = clock;
  return o;
}

TEST(RateLimiterOptionsTest, RefusesBandsThatCouldDeadlock) {
  FakeClock clock;
  RateLimiterOptions o = SmallOptions(&clock);
  o.max_diff = 2.5;  // 5.5 wide < 2 * 1 + 4
  EXPECT_THAT(o.Validate(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("deadlock")));
  EXPECT_THAT(RateLimiter::Create(o).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("deadlock")));
  // Reverb's SampleToInsertRatio with too small an error buffer.
  RateLimiterOptions ratio = SampleToInsertRatio(4.0, 1000, /*error_buffer=*/100);
  ratio.clock = &clock;
  EXPECT_THAT(ratio.Validate(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("deadlock")));
  ratio = SampleToInsertRatio(4.0, 1000, /*error_buffer=*/0.5 * (512 * 4 + 4096));
  ratio.clock = &clock;
  EXPECT_OK(ratio.Validate());
  EXPECT_DOUBLE_EQ(ratio.min_diff, 4000 - 3072);
  EXPECT_DOUBLE_EQ(ratio.max_diff, 4000 + 3072);
}

TEST(RateLimiterOptionsTest, RefusesBadFields) {
  FakeClock clock;
  RateLimiterOptions o = SmallOptions(&clock);
  o.samples_per_insert = 0;
  EXPECT_THAT(o.Validate(), StatusIs(absl::StatusCode::kInvalidArgument));
  o = SmallOptions(&clock);
  o.min_size_to_sample = 0;
  EXPECT_THAT(o.Validate(), StatusIs(absl::StatusCode::kInvalidArgument));
  o = SmallOptions(&clock);
  o.min_diff = 10;
  EXPECT_THAT(o.Validate(), StatusIs(absl::StatusCode::kInvalidArgument));
  o = SmallOptions(&clock);
  EXPECT_OK(o.Validate());
}

TEST(RateLimiterTest, SamplesWaitForMinSizeThenProceed) {
  FakeClock clock;
  ASSERT_OK_AND_ASSIGN(auto limiter, RateLimiter::Create(SmallOptions(&clock)));
  absl::Status sample_status = absl::UnknownError("not run");
  absl::Notification sampled;
  Thread sampler("sampler", [&] {
    sample_status = limiter->AwaitSample(1, absl::InfiniteFuture());
    sampled.Notify();
  });
  ASSERT_TRUE(WaitFor([&] { return clock.NumWaiters() == 1; }));
  // One committed position is below min size 2: still blocked.
  ASSERT_OK(limiter->AwaitInsert(1, clock.Now()));
  limiter->CommitInsert(1);
  // A reserved but uncommitted position does not count towards min size.
  ASSERT_OK(limiter->AwaitInsert(1, clock.Now()));
  EXPECT_FALSE(sampled.HasBeenNotified());
  EXPECT_EQ(clock.NumWaiters(), 1);
  limiter->CommitInsert(1);
  sampled.WaitForNotification();
  EXPECT_OK(sample_status);
  RateLimiterStats s = limiter->stats();
  EXPECT_EQ(s.sampled, 1);
  EXPECT_EQ(s.samples_blocked, 1);
}

TEST(RateLimiterTest, InsertsBlockWhenAheadAndSamplesReleaseThem) {
  FakeClock clock;
  ASSERT_OK_AND_ASSIGN(auto limiter, RateLimiter::Create(SmallOptions(&clock)));
  // Below min size inserts are free; at size 2 the diff is 2; an insert of 1 makes it 3 (ok),
  // one more would make it 4 > max_diff 3.
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK(limiter->AwaitInsert(1, clock.Now()));
    limiter->CommitInsert(1);
  }
  EXPECT_THAT(limiter->AwaitInsert(1, clock.Now()), StatusIs(absl::StatusCode::kDeadlineExceeded));

  absl::Status insert_status = absl::UnknownError("not run");
  absl::Notification inserted;
  Thread inserter("inserter", [&] {
    insert_status = limiter->AwaitInsert(1, absl::InfiniteFuture());
    inserted.Notify();
  });
  ASSERT_TRUE(WaitFor([&] { return clock.NumWaiters() == 1; }));
  EXPECT_FALSE(inserted.HasBeenNotified());
  ASSERT_OK(limiter->AwaitSample(1, clock.Now()));  // diff 3 -> 2: the insert fits again
  inserted.WaitForNotification();
  EXPECT_OK(insert_status);
  limiter->CommitInsert(1);
  EXPECT_DOUBLE_EQ(limiter->stats().diff, 3.0);
}

TEST(RateLimiterTest, SamplesBlockWhenAheadOfInserts) {
  FakeClock clock;
  ASSERT_OK_AND_ASSIGN(auto limiter, RateLimiter::Create(SmallOptions(&clock)));
  ASSERT_OK(limiter->AwaitInsert(2, clock.Now()));
  limiter->CommitInsert(2);  // diff 2
  // diff - 4 = -2 >= -3: ok; then diff -2, and another sample of 2 would make it -4 < -3.
  ASSERT_OK(limiter->AwaitSample(4, clock.Now()));
  EXPECT_THAT(limiter->AwaitSample(2, clock.Now()), StatusIs(absl::StatusCode::kDeadlineExceeded));
  ASSERT_OK(limiter->AwaitSample(1, clock.Now()));  // -3 is still inside the band
}

TEST(RateLimiterTest, DeadlineExpiresOnTheFakeClock) {
  FakeClock clock;
  ASSERT_OK_AND_ASSIGN(auto limiter, RateLimiter::Create(SmallOptions(&clock)));
  absl::Status status = absl::UnknownError("not run");
  absl::Notification done;
  const absl::Time deadline = clock.Now() + absl::Seconds(10);
  Thread sampler("sampler", [&] {
    status = limiter->AwaitSample(1, deadline);
    done.Notify();
  });
  ASSERT_TRUE(WaitFor([&] { return clock.NumWaiters() == 1; }));
  clock.AdvanceTime(absl::Seconds(9));
  EXPECT_FALSE(done.HasBeenNotified());
  clock.AdvanceTime(absl::Seconds(1));
  done.WaitForNotification();
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kDeadlineExceeded));
  EXPECT_EQ(limiter->stats().sample_wait, absl::Seconds(10));
}

TEST(RateLimiterTest, CancelWakesWaitersAndRefusesLaterCalls) {
  FakeClock clock;
  ASSERT_OK_AND_ASSIGN(auto limiter, RateLimiter::Create(SmallOptions(&clock)));
  absl::Status status = absl::UnknownError("not run");
  absl::Notification done;
  Thread sampler("sampler", [&] {
    status = limiter->AwaitSample(1, absl::InfiniteFuture());
    done.Notify();
  });
  ASSERT_TRUE(WaitFor([&] { return clock.NumWaiters() == 1; }));
  limiter->Cancel();
  done.WaitForNotification();
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kCancelled));
  EXPECT_THAT(limiter->AwaitInsert(1, absl::InfiniteFuture()),
              StatusIs(absl::StatusCode::kCancelled));
}

TEST(RateLimiterTest, RefusesOversizedRequests) {
  FakeClock clock;
  ASSERT_OK_AND_ASSIGN(auto limiter, RateLimiter::Create(SmallOptions(&clock)));
  EXPECT_THAT(limiter->AwaitInsert(3, clock.Now()), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(limiter->AwaitSample(5, clock.Now()), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(limiter->AwaitSample(0, clock.Now()), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(RateLimiterTest, AbortedInsertsAndDeletesAreForgotten) {
  FakeClock clock;
  ASSERT_OK_AND_ASSIGN(auto limiter, RateLimiter::Create(SmallOptions(&clock)));
  ASSERT_OK(limiter->AwaitInsert(2, clock.Now()));
  limiter->AbortInsert(2);
  EXPECT_EQ(limiter->stats().inserted, 0);
  EXPECT_THAT(limiter->AwaitSample(1, clock.Now()), StatusIs(absl::StatusCode::kDeadlineExceeded));
  ASSERT_OK(limiter->AwaitInsert(2, clock.Now()));
  limiter->CommitInsert(2);
  limiter->Delete(1);  // size 1 < min size again: samples wait, inserts are free
  EXPECT_THAT(limiter->AwaitSample(1, clock.Now()), StatusIs(absl::StatusCode::kDeadlineExceeded));
  EXPECT_OK(limiter->AwaitInsert(2, clock.Now()));
}

TEST(RateLimiterTest, RestorePutsALargeWindowAtTheBandCentre) {
  FakeClock clock;
  ASSERT_OK_AND_ASSIGN(auto limiter, RateLimiter::Create(SmallOptions(&clock)));
  limiter->Restore(100);  // 100 * spi would be far above max_diff 3
  EXPECT_DOUBLE_EQ(limiter->stats().diff, 0.0);
  EXPECT_OK(limiter->AwaitInsert(2, clock.Now()));
  limiter->CommitInsert(2);
  EXPECT_OK(limiter->AwaitSample(4, clock.Now()));
}

// Many inserters and samplers with a real clock: nothing deadlocks, and the diff stays in the band.
TEST(RateLimiterTest, ConcurrentInsertsAndSamplesMakeProgressWithinTheBand) {
  RateLimiterOptions o = SmallOptions(RealClock());
  ASSERT_OK_AND_ASSIGN(auto limiter, RateLimiter::Create(o));
  constexpr int kRounds = 2000;
  std::optional<Thread> inserter, sampler;
  inserter.emplace("inserter", [&] {
    for (int i = 0; i < kRounds; ++i) {
      ASSERT_OK(limiter->AwaitInsert(1, absl::InfiniteFuture()));
      limiter->CommitInsert(1);
      EXPECT_LE(limiter->stats().diff, o.max_diff);
    }
  });
  sampler.emplace("sampler", [&] {
    for (int i = 0; i < kRounds - 3; ++i) {
      ASSERT_OK(limiter->AwaitSample(1, absl::InfiniteFuture()));
      EXPECT_GE(limiter->stats().diff, o.min_diff);
    }
  });
  inserter.reset();
  sampler.reset();
  EXPECT_EQ(limiter->stats().inserted, kRounds);
  EXPECT_EQ(limiter->stats().sampled, kRounds - 3);
}

}  // namespace
}  // namespace zf::replay
