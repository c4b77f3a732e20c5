// Maps game names, as the `zf` command and configuration files spell them, to game types.
//
//   ZF_ASSIGN_OR_RETURN(GameConfig config, ParseGameName("dotsboxes:5x5"));
//   int n = VisitGame(config, [](const auto& game) { return game.NumActions(); });
//
// Names: "tictactoe", "connect4", "dotsboxes" (3 x 3 boxes) and "dotsboxes:RxC" (R rows and C
// columns of boxes, 1..10 each), "go" (9 x 9, komi 7.5), "go:N" (N x N, 5..19) and
// "go:N:komi=K" (K a multiple of 0.5), "othello" (8 x 8) and "othello:N" (N = 4, 6, 8), "hex"
// (11 x 11), "hex:N" (N x N, 3..13) and "hex:N:swap" (with the swap rule). Each
// game parses its own parameters (RegistrableGame::FromParameters, games/game.h). A game's
// canonical name (GameConfig::name) equals the Name() of its start position, e.g. "dotsboxes"
// becomes "dotsboxes:3x3".
//
// Registering a game: add its type to RegisteredGames below (docs/adding-a-game.md). Nothing
// else in the system names a game: search, the actor, replay, the learner and inference are
// templates over the type or see only its planes and actions.
//
// Thread-safety: free functions over values; thread-safe.
#pragma once

#include <string>
#include <type_traits>
#include <utility>
#include <variant>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "games/connect4/connect4.h"
#include "games/dotsboxes/dotsboxes.h"
#include "games/game.h"
#include "games/go/go.h"
#include "games/hex/hex.h"
#include "games/othello/othello.h"
#include "games/tictactoe/tictactoe.h"

namespace zf::games {

template <RegistrableGame... Gs>
struct GameList {
  using Variant = std::variant<Gs...>;
  // Calls f(std::type_identity<G>{}) once for each game type G, in order: for set-up that is per
  // type rather than per board size (zf-torch's network hooks), or a search over the types (the
  // name parser).
  template <typename F>
  static void ForEach(F&& f) {
    (f(std::type_identity<Gs>{}), ...);
  }
};

// Every game the command line knows, in the order help texts list them.
using RegisteredGames = GameList<TicTacToe, ConnectFour, DotsAndBoxes, Go, Othello, Hex>;

// A parsed game name: the game's start position, as its concrete type, and its canonical name.
struct GameConfig {
  RegisteredGames::Variant start;
  std::string name;  // == the start position's Name()

  // Whether the game is of type G.
  template <typename G>
  bool Is() const {
    return std::holds_alternative<G>(start);
  }
  // The start position as a G. Requires Is<G>().
  template <typename G>
  const G& Get() const {
    return std::get<G>(start);
  }
};

// Parses a game name.
// Returns: InvalidArgument with a one-line message naming the text: for an unknown game it lists
// the known ones (`unknown game "chess"; known games: tictactoe, connect4, dotsboxes[:RxC], ...`),
// for bad parameters it says what is wrong (`dotsboxes:0x3: rows must be in 1..10`).
absl::StatusOr<GameConfig> ParseGameName(absl::string_view name);

// The known game names with their parameter syntax on one line:
// "tictactoe, connect4, dotsboxes[:RxC], ...".
std::string KnownGameNames();

// One line per game (syntax and a short description), for --help texts.
std::string KnownGamesHelp();

// Calls f with a copy of the configured game's start position as its concrete type (an lvalue,
// which f may play on) and returns what f returns. f must return the same type for every game;
// typically it is a generic lambda that instantiates a template.
template <typename F>
decltype(auto) VisitGame(const GameConfig& config, F&& f) {
  return std::visit(
      [&f](const auto& start) -> decltype(auto) {
        auto game = start;
        return std::forward<F>(f)(game);
      },
      config.start);
}

}  // namespace zf::games
