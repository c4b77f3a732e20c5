#include "common/logging.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

#include "common/log_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zf {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;

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

// Everything goes to the file; only warnings and above reach stderr too.
TEST(LoggingTest, LogFileTakesEverythingStderrOnlyWarnings) {
  const std::string path =
      ::testing::TempDir() + "/zf_logging_test_" + std::to_string(::getpid()) + ".log";
  std::remove(path.c_str());
  ASSERT_TRUE(logging::LogToFile(path).ok());
  ::testing::internal::CaptureStderr();
  ZF_LOG(INFO) << "quiet detail";
  ZF_LOG(WARNING) << "worth seeing";
  std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(logging::LogToFile("").ok());
  std::ifstream in(path);
  std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::remove(path.c_str());
  EXPECT_THAT(file, HasSubstr("quiet detail"));
  EXPECT_THAT(file, HasSubstr("worth seeing"));
  EXPECT_THAT(err, Not(HasSubstr("quiet detail")));
  EXPECT_THAT(err, HasSubstr("worth seeing"));

  absl::Status bad = logging::LogToFile("/nonexistent-dir/zf.log");
  EXPECT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.message()), HasSubstr("/nonexistent-dir/zf.log"));
  ::testing::internal::CaptureStderr();
  ZF_LOG(INFO) << "back on stderr";
  EXPECT_THAT(::testing::internal::GetCapturedStderr(), HasSubstr("back on stderr"));
}

}  // namespace
}  // namespace zf
