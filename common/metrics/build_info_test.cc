#include "common/metrics/build_info.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/metrics/exposition.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zf::metrics {
namespace {

using ::prometheus::Registry;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;

TEST(BuildInfoTest, VersionStartsWithTheProjectVersion) {
  // "MAJOR.MINOR.PATCH+describe" where describe is a git description or "unknown".
  EXPECT_THAT(BuildVersion(), MatchesRegex("[0-9]+\\.[0-9]+\\.[0-9]+\\+.+"));
}

TEST(BuildInfoTest, RegistersOneGaugePerComponent) {
  Registry registry;
  RegisterBuildInfo(registry, "inference");
  RegisterBuildInfo(registry, "inference");  // idempotent
  RegisterBuildInfo(registry, "replay");
  const std::string text = TextExposition(registry);
  EXPECT_THAT(text, HasSubstr("# TYPE zf_build_info gauge\n"));
  EXPECT_THAT(text, HasSubstr(absl::StrCat("zf_build_info{component=\"inference\",version=\"",
                                           BuildVersion(), "\"} 1\n")));
  EXPECT_THAT(text, HasSubstr(absl::StrCat("zf_build_info{component=\"replay\",version=\"",
                                           BuildVersion(), "\"} 1\n")));
}

TEST(BuildInfoTest, ExportsTheProcessStartTimeOncePerProcess) {
  Registry a, b;
  RegisterBuildInfo(a, "actor");
  RegisterBuildInfo(b, "learner");
  const std::string text = TextExposition(a);
  EXPECT_THAT(text, HasSubstr("# TYPE zf_process_start_time_seconds gauge\n"));
  const size_t at = text.find("\nzf_process_start_time_seconds ");
  ASSERT_NE(at, std::string::npos) << text;
  const double seconds = std::stod(text.substr(at + 31));
  EXPECT_GT(seconds, 1.7e9);  // after 2023: a Unix time, not an uptime
  // Every registry of the process reports the same start.
  EXPECT_THAT(TextExposition(b), HasSubstr(text.substr(at + 1, text.find('\n', at + 1) - at)));
}

TEST(BuildInfoDeathTest, EmptyComponentIsABug) {
  Registry registry;
  EXPECT_DEATH(RegisterBuildInfo(registry, ""), "empty component");
}

}  // namespace
}  // namespace zf::metrics
