#include "common/thread.h"

#include <pthread.h>

#include <atomic>
#include <string>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace zf {
namespace {

TEST(ThreadTest, DestructorJoins) {
  std::atomic<bool> finished{false};
  absl::Notification release;
  {
    Thread t("worker", [&] {
      release.WaitForNotification();
      finished = true;
    });
    release.Notify();
  }  // ~Thread must wait for the body
  EXPECT_TRUE(finished);
}

TEST(ThreadTest, JoinIsIdempotentAndNameIsSet) {
  std::string seen_name;
  Thread t("a-very-long-thread-name", [&] {
    char buf[32] = {};
    pthread_getname_np(pthread_self(), buf, sizeof(buf));
    seen_name = buf;
  });
  t.Join();
  t.Join();
  EXPECT_EQ(seen_name, "a-very-long-thr");  // truncated to Linux's 15 characters
  EXPECT_EQ(t.name(), "a-very-long-thread-name");
}

}  // namespace
}  // namespace zf
