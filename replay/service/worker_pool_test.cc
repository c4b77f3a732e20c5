#include "replay/service/worker_pool.h"

#include <atomic>

#include "absl/synchronization/notification.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zf::replay {
namespace {

using ::zf::testing::StatusIs;

TEST(WorkerPoolTest, FullQueueIsResourceExhaustedAndCloseRunsQueuedJobs) {
  WorkerPool pool(WorkerPoolOptions{.num_threads = 1, .queue_capacity = 1});
  absl::Notification started, release;
  std::atomic<int> ran{0};
  ASSERT_OK(pool.Submit([&] {
    started.Notify();
    release.WaitForNotification();
    ++ran;
  }));
  started.WaitForNotification();           // the only thread is busy
  ASSERT_OK(pool.Submit([&] { ++ran; }));  // queued
  EXPECT_THAT(pool.Submit([&] { ++ran; }), StatusIs(absl::StatusCode::kResourceExhausted));
  release.Notify();
  pool.Close();
  EXPECT_EQ(ran.load(), 2);
  EXPECT_THAT(pool.Submit([] {}), StatusIs(absl::StatusCode::kUnavailable));
}

TEST(WorkerPoolTest, BadOptionsAreInvalidArgument) {
  EXPECT_THAT((WorkerPoolOptions{.num_threads = 0}).Validate(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT((WorkerPoolOptions{.num_threads = 1, .queue_capacity = 0}).Validate(),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace zf::replay
