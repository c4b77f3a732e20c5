#include "common/logging.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zf {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;

TEST(LoggingTest, InfoLineHasLevelLocationAndText) {
  ::testing::internal::CaptureStderr();
  ZF_LOG(INFO) << "hello " << 42;
  std::string out = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(out, MatchesRegex("I[0-9]{4} [0-9:.]+ [0-9]+ logging_test.cc:[0-9]+\\] hello 42\n"));
}

TEST(LoggingTest, BelowMinLevelIsDroppedAndNotEvaluated) {
  logging::SetMinLevel(logging::Level::kWarning);
  int evaluated = 0;
  auto count = [&] { return ++evaluated; };
  ::testing::internal::CaptureStderr();
  ZF_LOG(INFO) << count();
  ZF_LOG(WARNING) << "kept";
  std::string out = ::testing::internal::GetCapturedStderr();
  logging::SetMinLevel(logging::Level::kInfo);
  EXPECT_EQ(evaluated, 0);
  EXPECT_THAT(out, HasSubstr("kept"));
  EXPECT_THAT(out, ::testing::StartsWith("W"));
}

TEST(LoggingDeathTest, CheckFailureAbortsWithCondition) {
  int x = 1;
  EXPECT_DEATH(ZF_CHECK(x == 2) << "x was " << x, "Check failed: x == 2 x was 1");
}

}  // namespace
}  // namespace zf
