// Maps game names, as the `zf` command and configuration files spell them, to game types.
//
//   ZF_ASSIGN_OR_RETURN(GameConfig config, ParseGameName("dotsboxes:5x5"));
//   int n = VisitGame(config, [](const auto& game) { return game.NumActions(); });
//
// Names: "tictactoe", "connect4", "dotsboxes" (3 x 3 boxes) and "dotsboxes:RxC" (R rows and C
// columns of boxes, 1..10 each), "go" (9 x 9, komi 7.5), "go:N" (N x N, 5..19) and
// "go:N:komi=K" (K a multiple of 0.5). A game's canonical name (GameConfig::name) equals the Name()
// of the position VisitGame passes, e.g. "dotsboxes" becomes "dotsboxes:3x3".
//
// Adding a game: add a Kind, an entry in the table in registry.cc (name, syntax, description,
// parameter parser) and a case in VisitGame.
//
// Thread-safety: free functions over values; thread-safe.
#pragma once

#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/logging.h"
#include "games/connect4/connect4.h"
#include "games/dotsboxes/dotsboxes.h"
#include "games/go/go.h"
#include "games/tictactoe/tictactoe.h"

namespace zf::games {

// A parsed game name: which game and its parameters.
struct GameConfig {
  enum class Kind { kTicTacToe, kConnectFour, kDotsAndBoxes, kGo };
  Kind kind = Kind::kTicTacToe;
  // Board size in the game's own units (boxes for Dots and Boxes, points per side for Go); 0 for
  // fixed-size games.
  int rows = 0;
  int cols = 0;
  // Go only: the komi.
  float komi = 0.0f;
  // The canonical name, equal to the game's Name().
  std::string name;
};

// Parses a game name.
// Returns: InvalidArgument with a one-line message naming the text: for an unknown game it lists
// the known ones (`unknown game "chess"; known games: tictactoe, connect4, dotsboxes[:RxC]`),
// for bad parameters it says what is wrong (`dotsboxes:0x3: rows must be in 1..10`).
absl::StatusOr<GameConfig> ParseGameName(absl::string_view name);

// The known game names with their parameter syntax on one line:
// "tictactoe, connect4, dotsboxes[:RxC]".
std::string KnownGameNames();

// One line per game (syntax and a short description), for --help texts.
std::string KnownGamesHelp();

// Calls f with the initial position of the configured game as its concrete type (an lvalue
// of TicTacToe, ConnectFour, DotsAndBoxes or Go) and returns what f returns. f must return the
// same type for every game; typically it is a generic lambda that instantiates a template.
// `config` must be valid, as ParseGameName returns it (a hand-made config with an impossible
// size is a programming error and aborts).
template <typename F>
decltype(auto) VisitGame(const GameConfig& config, F&& f) {
  switch (config.kind) {
    case GameConfig::Kind::kTicTacToe: {
      TicTacToe game;
      return std::forward<F>(f)(game);
    }
    case GameConfig::Kind::kConnectFour: {
      ConnectFour game;
      return std::forward<F>(f)(game);
    }
    case GameConfig::Kind::kGo: {
      absl::StatusOr<Go> game = Go::Create(config.rows, config.komi);
      ZF_CHECK(game.ok()) << game.status();
      return std::forward<F>(f)(*game);
    }
    case GameConfig::Kind::kDotsAndBoxes:
      break;
  }
  ZF_CHECK(config.kind == GameConfig::Kind::kDotsAndBoxes)
      << "unknown game kind " << static_cast<int>(config.kind);
  absl::StatusOr<DotsAndBoxes> game = DotsAndBoxes::Create(config.rows, config.cols);
  ZF_CHECK(game.ok()) << game.status();
  return std::forward<F>(f)(*game);
}

}  // namespace zf::games
