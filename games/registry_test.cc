#include "games/registry.h"

#include <string>

#include "absl/status/status.h"
#include "games/perft.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zf::games {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

GameConfig ParseOrDie(absl::string_view name) {
  absl::StatusOr<GameConfig> config = ParseGameName(name);
  EXPECT_TRUE(config.ok()) << name << ": " << config.status();
  return config.ok() ? *config : GameConfig{};
}

std::string ErrorOf(absl::string_view name) {
  absl::StatusOr<GameConfig> config = ParseGameName(name);
  if (config.ok()) {
    ADD_FAILURE() << "\"" << name << "\" parsed as " << config->name;
    return "";
  }
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument) << config.status();
  return std::string(config.status().message());
}

TEST(RegistryTest, ParsesKnownNames) {
  GameConfig config = ParseOrDie("tictactoe");
  EXPECT_TRUE(config.Is<TicTacToe>());
  EXPECT_EQ(config.name, "tictactoe");

  config = ParseOrDie("connect4");
  EXPECT_TRUE(config.Is<ConnectFour>());
  EXPECT_EQ(config.name, "connect4");

  config = ParseOrDie("dotsboxes");
  ASSERT_TRUE(config.Is<DotsAndBoxes>());
  EXPECT_EQ(config.Get<DotsAndBoxes>().rows(), 3);
  EXPECT_EQ(config.Get<DotsAndBoxes>().cols(), 3);
  EXPECT_EQ(config.name, "dotsboxes:3x3");

  config = ParseOrDie("dotsboxes:5x4");
  ASSERT_TRUE(config.Is<DotsAndBoxes>());
  EXPECT_EQ(config.Get<DotsAndBoxes>().rows(), 5);
  EXPECT_EQ(config.Get<DotsAndBoxes>().cols(), 4);
  EXPECT_EQ(config.name, "dotsboxes:5x4");

  EXPECT_EQ(ParseOrDie("dotsboxes:1x1").name, "dotsboxes:1x1");
  EXPECT_EQ(ParseOrDie("dotsboxes:10x10").name, "dotsboxes:10x10");
  EXPECT_EQ(ParseOrDie("dotsboxes:05x5").name, "dotsboxes:5x5");  // canonical form
}

TEST(RegistryTest, ParsesGo) {
  const GameConfig config = ParseOrDie("go");
  ASSERT_TRUE(config.Is<Go>());
  EXPECT_EQ(config.Get<Go>().Size(), 9);
  EXPECT_EQ(config.Get<Go>().Komi(), 7.5f);
  EXPECT_EQ(config.name, "go:9");
  EXPECT_EQ(ParseOrDie("go:19").name, "go:19");
  EXPECT_EQ(ParseOrDie("go:9:komi=6.5").name, "go:9:komi=6.5");
  EXPECT_EQ(ErrorOf("go:4"), "go:4: go board size 4 must be in 5..19");
}

TEST(RegistryTest, ParsesOthello) {
  const GameConfig config = ParseOrDie("othello");
  ASSERT_TRUE(config.Is<Othello>());
  EXPECT_EQ(config.Get<Othello>().Size(), 8);
  EXPECT_EQ(config.name, "othello");
  EXPECT_EQ(ParseOrDie("othello:8").name, "othello");  // canonical form
  EXPECT_EQ(ParseOrDie("othello:6").name, "othello:6");
  EXPECT_EQ(ErrorOf("othello:7"), "othello:7: othello board size 7: expected 4, 6 or 8");
  EXPECT_EQ(ErrorOf("othello:6x6"),
            "othello:6x6: expected othello:N with N = 4, 6 or 8, e.g. othello:6");
}

TEST(RegistryTest, UnknownGameListsKnownGames) {
  EXPECT_EQ(ErrorOf("chess"),
            "unknown game \"chess\"; known games: tictactoe, connect4, dotsboxes[:RxC], "
            "go[:N[:komi=K]], othello[:N], hex[:N[:swap]]");
  EXPECT_THAT(ErrorOf(""), HasSubstr("unknown game \"\""));
  EXPECT_THAT(ErrorOf("Connect4"), HasSubstr("unknown game \"Connect4\""));
  EXPECT_THAT(ErrorOf(" tictactoe"), HasSubstr("unknown game"));
  EXPECT_THAT(ErrorOf("gomoku"), HasSubstr("known games: "));
}

TEST(RegistryTest, BadParametersSayWhatIsWrong) {
  EXPECT_EQ(ErrorOf("dotsboxes:0x3"), "dotsboxes:0x3: rows must be in 1..10");
  EXPECT_EQ(ErrorOf("dotsboxes:3x11"), "dotsboxes:3x11: cols must be in 1..10");
  EXPECT_EQ(ErrorOf("dotsboxes:11x11"), "dotsboxes:11x11: rows must be in 1..10");
  for (const char* bad :
       {"dotsboxes:", "dotsboxes:3", "dotsboxes:3x", "dotsboxes:x3", "dotsboxes:3x3x3",
        "dotsboxes:-1x3", "dotsboxes: 3x3", "dotsboxes:3X3", "dotsboxes:axb", "dotsboxes:1000x1"}) {
    const std::string error = ErrorOf(bad);
    EXPECT_THAT(error, HasSubstr(bad));
    EXPECT_THAT(error, HasSubstr("expected dotsboxes:RxC"));
  }
  EXPECT_EQ(ErrorOf("tictactoe:3"), "tictactoe:3: tictactoe takes no parameters");
  EXPECT_EQ(ErrorOf("connect4:"), "connect4:: connect4 takes no parameters");
}

TEST(RegistryTest, ErrorsAreOneLine) {
  for (const char* bad : {"chess", "dotsboxes:0x0", "dotsboxes:zz", "connect4:7x6"}) {
    EXPECT_THAT(ErrorOf(bad), Not(HasSubstr("\n"))) << bad;
  }
}

TEST(RegistryTest, VisitGamePassesTheConcreteStartPosition) {
  for (const char* name : {"tictactoe", "connect4", "dotsboxes", "dotsboxes:2x5", "dotsboxes:10x10",
                           "othello", "othello:4", "hex", "hex:5:swap"}) {
    const GameConfig config = ParseOrDie(name);
    const std::string visited_name = VisitGame(config, [](const auto& game) {
      EXPECT_FALSE(game.IsTerminal());
      EXPECT_EQ(game.ToPlay(), 0);
      return game.Name();
    });
    EXPECT_EQ(visited_name, config.name);
  }
  const auto num_actions = [](const auto& game) { return game.NumActions(); };
  EXPECT_EQ(VisitGame(ParseOrDie("tictactoe"), num_actions), 9);
  EXPECT_EQ(VisitGame(ParseOrDie("connect4"), num_actions), 7);
  EXPECT_EQ(VisitGame(ParseOrDie("dotsboxes:2x5"), num_actions), 2 * 2 * 5 + 2 + 5);
}

TEST(RegistryTest, VisitGameInstantiatesTemplatesPerGame) {
  const auto perft2 = [](const auto& game) { return Perft(game, 2)[2]; };
  EXPECT_EQ(VisitGame(ParseOrDie("tictactoe"), perft2), 72u);
  EXPECT_EQ(VisitGame(ParseOrDie("connect4"), perft2), 49u);
  EXPECT_EQ(VisitGame(ParseOrDie("dotsboxes:1x1"), perft2), 12u);
  EXPECT_EQ(VisitGame(ParseOrDie("othello"), perft2), 12u);
  // f may take the position by non-const reference and play on it.
  int plies = 0;
  VisitGame(ParseOrDie("connect4"), [&plies](auto& game) {
    std::vector<int> legal;
    while (!game.IsTerminal()) {
      game.LegalActions(&legal);
      game.Apply(legal.front());
      ++plies;
    }
  });
  // Always the lowest column: columns 0, 1, 2 fill up alternately, then X's first piece in
  // column 3 completes the bottom row on ply 19.
  EXPECT_EQ(plies, 19);
}

template <typename... Gs>
void ExpectEachParsesByItsFamily(GameList<Gs...>) {
  (
      [] {
        absl::StatusOr<GameConfig> config = ParseGameName(Gs::kFamily);
        ASSERT_TRUE(config.ok()) << Gs::kFamily << ": " << config.status();
        EXPECT_TRUE(config->template Is<Gs>()) << Gs::kFamily;
        EXPECT_THAT(KnownGamesHelp(), HasSubstr(std::string(Gs::kDescription)));
      }(),
      ...);
}

TEST(RegistryTest, EveryRegisteredGameParsesByItsFamilyName) {
  ExpectEachParsesByItsFamily(RegisteredGames{});
}

TEST(RegistryTest, HelpListsEveryGame) {
  const std::string help = KnownGamesHelp();
  EXPECT_THAT(help, HasSubstr("tictactoe"));
  EXPECT_THAT(help, HasSubstr("connect4"));
  EXPECT_THAT(help, HasSubstr("dotsboxes[:RxC]"));
  EXPECT_THAT(help, HasSubstr("go[:N[:komi=K]]"));
  EXPECT_THAT(help, HasSubstr("othello[:N]"));
  EXPECT_THAT(help, HasSubstr("hex[:N[:swap]]"));
  EXPECT_EQ(KnownGameNames(),
            "tictactoe, connect4, dotsboxes[:RxC], go[:N[:komi=K]], othello[:N], hex[:N[:swap]]");
}

}  // namespace
}  // namespace zf::games
