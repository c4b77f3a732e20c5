// The two binaries' command tables: zf-torch has every command of zf plus exactly the ones zf
// hands over by name (kNetworkCommandNames), and no name appears twice.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "cli/command.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zf::cli {
namespace {

std::vector<std::string> Names(const std::vector<Command>& commands) {
  std::vector<std::string> names;
  for (const Command& c : commands) names.push_back(c.name);
  return names;
}

TEST(CommandTablesTest, NetworkCommandsAreExactlyWhatZfHandsOverByName) {
  const std::vector<std::string> lean = Names(LeanCommands());
  const std::vector<std::string> all = Names(AllCommands());
  std::vector<std::string> network;
  for (const std::string& name : all) {
    if (std::find(lean.begin(), lean.end(), name) == lean.end()) network.push_back(name);
  }
  std::vector<std::string> expected(kNetworkCommandNames.begin(), kNetworkCommandNames.end());
  EXPECT_THAT(network, ::testing::UnorderedElementsAreArray(expected));
  for (const std::string& name : lean) EXPECT_THAT(all, ::testing::Contains(name));
}

TEST(CommandTablesTest, NoNameTwice) {
  const std::vector<std::string> all = Names(AllCommands());
  EXPECT_EQ(std::set<std::string>(all.begin(), all.end()).size(), all.size());
}

}  // namespace
}  // namespace zf::cli
