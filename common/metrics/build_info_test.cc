#include "common/metrics/build_info.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zf::metrics {
namespace {

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
  const std::string text = registry.Serialize();
  EXPECT_THAT(text, HasSubstr("# TYPE zf_build_info gauge\n"));
  EXPECT_THAT(text, HasSubstr(absl::StrCat("zf_build_info{component=\"inference\",version=\"",
                                           BuildVersion(), "\"} 1\n")));
  EXPECT_THAT(text, HasSubstr(absl::StrCat("zf_build_info{component=\"replay\",version=\"",
                                           BuildVersion(), "\"} 1\n")));
}

TEST(BuildInfoDeathTest, EmptyComponentIsABug) {
  Registry registry;
  EXPECT_DEATH(RegisterBuildInfo(registry, ""), "empty component");
}

}  // namespace
}  // namespace zf::metrics
