// The two binaries' command tables: zf-torch has every command of zf plus exactly the ones zf
// hands over by name (kNetworkCommandNames), and no name appears twice. And the flag parsing
// they share: which flags a command accepts, and FlagGiven.
#include <algorithm>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "cli/command.h"
#include "cli/common_flags.h"
#include "cli/network_runtime.h"
#include "games/registry.h"
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

// zf-torch's runtime gives net: players to every registered game (a list of names here once
// left Othello and Hex without one, and their zf run evaluations failed).
TEST(NetworkRuntimeTest, EveryRegisteredGameGetsANetworkPlayerHook) {
  InstallNetworkRuntime();
  size_t games = 0;
  games::RegisteredGames::ForEach([&games](auto type) {
    using G = typename decltype(type)::type;
    EXPECT_TRUE(static_cast<bool>(players::NetworkEvaluatorHook<G>())) << G::kFamily;
    ++games;
  });
  EXPECT_EQ(games, std::variant_size_v<games::RegisteredGames::Variant>);
}

TEST(CommandTablesTest, NoNameTwice) {
  const std::vector<std::string> all = Names(AllCommands());
  EXPECT_EQ(std::set<std::string>(all.begin(), all.end()).size(), all.size());
}

TEST(ParseCommandFlagsTest, FlagGivenTellsAGivenDefaultFromNoFlag) {
  absl::FlagSaver restore_flags_at_exit;
  const Command command{.name = "try", .flags = {"aux_heads", "seed"}};
  std::vector<std::string> positional;
  bool help = false;
  ASSERT_TRUE(ParseCommandFlags(command, {"--noaux_heads", "x"}, &positional, &help).ok());
  EXPECT_TRUE(FlagGiven("aux_heads"));
  EXPECT_FALSE(absl::GetFlag(FLAGS_aux_heads));
  EXPECT_FALSE(FlagGiven("seed"));
  EXPECT_THAT(positional, ::testing::ElementsAre("x"));

  // Each parse starts afresh.
  ASSERT_TRUE(ParseCommandFlags(command, {"--seed=7"}, &positional, &help).ok());
  EXPECT_FALSE(FlagGiven("aux_heads"));
  EXPECT_TRUE(FlagGiven("seed"));
  EXPECT_EQ(absl::GetFlag(FLAGS_seed), 7u);

  // A flag the command does not take is an error naming it, and is not given.
  const absl::Status unknown = ParseCommandFlags(command, {"--json"}, &positional, &help);
  EXPECT_EQ(unknown.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(unknown.message()), ::testing::HasSubstr("--json"));
  EXPECT_FALSE(FlagGiven("json"));
}

}  // namespace
}  // namespace zf::cli
