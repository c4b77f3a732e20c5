#include "common/clock.h"

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "common/testing/wait.h"
#include "common/thread.h"
#include "gtest/gtest.h"

namespace zf {
namespace {

using ::zf::testing::WaitFor;

TEST(FakeClockTest, MovesOnlyWhenTold) {
  FakeClock clock;
  absl::Time t0 = clock.Now();
  EXPECT_EQ(clock.Now(), t0);
  clock.AdvanceTime(absl::Seconds(3));
  EXPECT_EQ(clock.Now(), t0 + absl::Seconds(3));
  clock.AdvanceTime(-absl::Seconds(1));  // ignored
  clock.SetTime(t0);                     // never backwards
  EXPECT_EQ(clock.Now(), t0 + absl::Seconds(3));
}

TEST(FakeClockTest, SleepUntilWakesWhenTimeArrives) {
  FakeClock clock;
  absl::Notification woke;
  absl::Time deadline = clock.Now() + absl::Minutes(1);
  Thread sleeper("sleeper", [&] {
    clock.SleepUntil(deadline);
    woke.Notify();
  });
  ASSERT_TRUE(WaitFor([&] { return clock.NumWaiters() == 1; }));
  clock.AdvanceTime(absl::Seconds(59));
  EXPECT_FALSE(woke.HasBeenNotified());
  clock.AdvanceTime(absl::Seconds(1));
  woke.WaitForNotification();
  EXPECT_EQ(clock.NumWaiters(), 0);
}

TEST(FakeClockTest, AwaitReturnsTrueWhenConditionTurnsTrue) {
  FakeClock clock;
  absl::Mutex mu;
  bool flag = false;
  bool result = false;
  absl::Notification done;
  Thread waiter("waiter", [&] {
    absl::MutexLock lock(&mu);
    result = clock.AwaitWithDeadline(&mu, absl::Condition(&flag), clock.Now() + absl::Hours(1));
    done.Notify();
  });
  ASSERT_TRUE(WaitFor([&] { return clock.NumWaiters() == 1; }));
  {
    absl::MutexLock lock(&mu);
    flag = true;
  }
  done.WaitForNotification();
  EXPECT_TRUE(result);
}

TEST(RealClockTest, AwaitHonoursPastDeadline) {
  absl::Mutex mu;
  bool flag = false;
  absl::MutexLock lock(&mu);
  EXPECT_FALSE(RealClock()->AwaitWithDeadline(&mu, absl::Condition(&flag), absl::InfinitePast()));
  flag = true;
  EXPECT_TRUE(RealClock()->AwaitWithDeadline(&mu, absl::Condition(&flag), absl::InfinitePast()));
}

}  // namespace
}  // namespace zf
