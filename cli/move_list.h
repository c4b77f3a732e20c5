// Applying a comma-separated move list ("3,3,4" or "D4,pass") to a position, as `zf position`
// and `zf analyze` take it from --moves. Moves are in the game's own notation (ParseAction).
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "games/game.h"

namespace zf::cli {

// Applies `moves` to `game` in order; an empty string applies nothing.
// Returns: OK; InvalidArgument naming the move (1-based) that does not parse, is illegal, or
// comes after the end of the game (`game` then holds the position before that move).
template <games::Game G>
absl::Status ApplyMoveList(G& game, const std::string& moves) {
  if (moves.empty()) return absl::OkStatus();
  std::vector<std::string> tokens = absl::StrSplit(moves, ',');
  for (size_t ply = 0; ply < tokens.size(); ++ply) {
    const std::string& token = tokens[ply];
    if (game.IsTerminal()) {
      return absl::InvalidArgumentError(
          absl::StrCat("move ", ply + 1, " \"", token, "\": the game is already over"));
    }
    absl::StatusOr<int> action = game.ParseAction(token);
    if (!action.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("move ", ply + 1, " \"", token, "\": ", action.status().message()));
    }
    if (!game.IsLegal(*action)) {
      return absl::InvalidArgumentError(
          absl::StrCat("move ", ply + 1, " \"", token, "\" is illegal in this position"));
    }
    game.Apply(*action);
  }
  return absl::OkStatus();
}

}  // namespace zf::cli
