#include "common/bounded_queue.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/notification.h"
#include "common/clock.h"
#include "common/testing/status_matchers.h"
#include "common/testing/wait.h"
#include "common/thread.h"
#include "gtest/gtest.h"

namespace zf {
namespace {

using ::zf::testing::IsOkAndHolds;
using ::zf::testing::StatusIs;
using ::zf::testing::WaitFor;

TEST(BoundedQueueTest, FifoOrder) {
  BoundedQueue<int> q(3);
  EXPECT_OK(q.Push(1));
  EXPECT_OK(q.Push(2));
  EXPECT_OK(q.TryPush(3));
  EXPECT_EQ(q.size(), 3u);
  EXPECT_THAT(q.Pop(), IsOkAndHolds(1));
  EXPECT_THAT(q.Pop(), IsOkAndHolds(2));
  EXPECT_EQ(q.TryPop(), std::optional<int>(3));
  EXPECT_EQ(q.TryPop(), std::nullopt);
}

TEST(BoundedQueueTest, TryPushOnFullQueueIsResourceExhaustedAndKeepsItem) {
  BoundedQueue<std::unique_ptr<int>> q(1);
  EXPECT_OK(q.TryPush(std::make_unique<int>(1)));
  auto item = std::make_unique<int>(2);
  EXPECT_THAT(q.TryPush(item), StatusIs(absl::StatusCode::kResourceExhausted));
  ASSERT_NE(item, nullptr);  // not moved from on failure
  EXPECT_EQ(*item, 2);
}

TEST(BoundedQueueTest, PushBlocksWhileFullUntilPop) {
  FakeClock clock;
  BoundedQueue<int> q(1, &clock);
  ASSERT_OK(q.Push(1));
  absl::Notification pushed;
  absl::Status push_status;
  Thread producer("producer", [&] {
    push_status = q.Push(2);
    pushed.Notify();
  });
  ASSERT_TRUE(WaitFor([&] { return clock.NumWaiters() == 1; }));
  EXPECT_FALSE(pushed.HasBeenNotified());
  EXPECT_THAT(q.Pop(), IsOkAndHolds(1));
  pushed.WaitForNotification();
  EXPECT_OK(push_status);
  EXPECT_THAT(q.Pop(), IsOkAndHolds(2));
}

TEST(BoundedQueueTest, PushTimesOutAtDeadline) {
  FakeClock clock;
  BoundedQueue<int> q(1, &clock);
  ASSERT_OK(q.Push(1));
  absl::Status push_status;
  absl::Notification done;
  Thread producer("producer", [&] {
    int item = 2;
    push_status = q.Push(item, clock.Now() + absl::Seconds(5));
    done.Notify();
  });
  ASSERT_TRUE(WaitFor([&] { return clock.NumWaiters() == 1; }));
  clock.AdvanceTime(absl::Seconds(4));
  EXPECT_FALSE(done.HasBeenNotified() && push_status.ok());
  clock.AdvanceTime(absl::Seconds(2));
  done.WaitForNotification();
  EXPECT_THAT(push_status, StatusIs(absl::StatusCode::kDeadlineExceeded));
  EXPECT_EQ(q.size(), 1u);
}

TEST(BoundedQueueTest, PopTimesOutAtDeadline) {
  FakeClock clock;
  BoundedQueue<int> q(2, &clock);
  absl::StatusOr<int> result;
  absl::Notification done;
  Thread consumer("consumer", [&] {
    result = q.Pop(clock.Now() + absl::Milliseconds(10));
    done.Notify();
  });
  ASSERT_TRUE(WaitFor([&] { return clock.NumWaiters() == 1; }));
  clock.AdvanceTime(absl::Milliseconds(11));
  done.WaitForNotification();
  EXPECT_THAT(result, StatusIs(absl::StatusCode::kDeadlineExceeded));
}

TEST(BoundedQueueTest, PastDeadlineFailsWithoutBlocking) {
  BoundedQueue<int> q(1);
  EXPECT_THAT(q.Pop(absl::InfinitePast()), StatusIs(absl::StatusCode::kDeadlineExceeded));
  ASSERT_OK(q.Push(1));
  EXPECT_THAT(q.Push(2, absl::InfinitePast()), StatusIs(absl::StatusCode::kDeadlineExceeded));
}

TEST(BoundedQueueTest, CloseWakesBlockedConsumerAndDrainsRemaining) {
  FakeClock clock;
  BoundedQueue<int> q(4, &clock);
  absl::StatusOr<int> result;
  absl::Notification done;
  Thread consumer("consumer", [&] {
    result = q.Pop();
    done.Notify();
  });
  ASSERT_TRUE(WaitFor([&] { return clock.NumWaiters() == 1; }));
  q.Close();
  done.WaitForNotification();
  EXPECT_THAT(result, StatusIs(absl::StatusCode::kCancelled));

  BoundedQueue<int> q2(4);
  ASSERT_OK(q2.Push(7));
  q2.Close();
  EXPECT_THAT(q2.Push(8), StatusIs(absl::StatusCode::kCancelled));
  EXPECT_THAT(q2.TryPush(8), StatusIs(absl::StatusCode::kCancelled));
  EXPECT_THAT(q2.Pop(), IsOkAndHolds(7));
  EXPECT_THAT(q2.Pop(), StatusIs(absl::StatusCode::kCancelled));
  EXPECT_TRUE(q2.closed());
}

TEST(BoundedQueueTest, CloseWakesBlockedProducer) {
  FakeClock clock;
  BoundedQueue<int> q(1, &clock);
  ASSERT_OK(q.Push(1));
  absl::Status status;
  absl::Notification done;
  Thread producer("producer", [&] {
    status = q.Push(2);
    done.Notify();
  });
  ASSERT_TRUE(WaitFor([&] { return clock.NumWaiters() == 1; }));
  q.Close();
  done.WaitForNotification();
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kCancelled));
}

TEST(BoundedQueueTest, ManyProducersAndConsumersLoseNothing) {
  BoundedQueue<int> q(8);
  constexpr int kProducers = 4, kPerProducer = 2000;
  std::vector<int64_t> sums(2, 0);
  {
    std::vector<std::unique_ptr<Thread>> threads;
    for (int c = 0; c < 2; ++c) {
      threads.push_back(std::make_unique<Thread>("consumer", [&, c] {
        while (true) {
          absl::StatusOr<int> v = q.Pop();
          if (!v.ok()) break;
          sums[c] += *v;
        }
      }));
    }
    {
      std::vector<std::unique_ptr<Thread>> producers;
      for (int p = 0; p < kProducers; ++p) {
        producers.push_back(std::make_unique<Thread>("producer", [&] {
          for (int i = 1; i <= kPerProducer; ++i) ASSERT_OK(q.Push(i));
        }));
      }
    }  // producers joined
    q.Close();
  }  // consumers joined
  EXPECT_EQ(sums[0] + sums[1], int64_t{kProducers} * kPerProducer * (kPerProducer + 1) / 2);
}

}  // namespace
}  // namespace zf
