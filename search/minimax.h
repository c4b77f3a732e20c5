// An exact game solver for small games: memoized negamax over the whole game tree.
//
// Value(g) = Returns()[ToPlay] if g is terminal, otherwise
//            max over legal a of  sign(g, a) * Value(g.Apply(a)),
// where sign is +1 when the same player moves again after a (Dots and Boxes' extra turn) and -1
// otherwise. Values are memoized by Hash(), so the cost is one evaluation per distinct position
// (5,478 for tic-tac-toe). Meant for tic-tac-toe's `perfect` player and for tests; it is
// exponential in general and refuses games above a position budget.
//
// Thread-compatible: one instance per thread (the memo table is not locked).
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "games/game.h"

namespace zf::search {

template <games::Game G>
class MinimaxSolver {
 public:
  // `max_positions` bounds the memo table; solving a larger game fails with ResourceExhausted.
  explicit MinimaxSolver(int64_t max_positions = 2'000'000) : max_positions_(max_positions) {}

  // The exact value of `game` for the player to move: +1 win, 0 draw, -1 loss.
  // Returns: the value; ResourceExhausted if the game has more positions than max_positions.
  absl::StatusOr<int> Value(const G& game) {
    int v = Solve(game);
    if (exhausted_) {
      return absl::ResourceExhaustedError(
          absl::StrCat("game too large to solve exactly: over ", max_positions_, " positions"));
    }
    return v;
  }

  // The optimal actions of a non-terminal `game` (those that keep its exact value).
  // Returns: the actions in increasing order; ResourceExhausted as Value;
  // InvalidArgument for a terminal position.
  absl::StatusOr<std::vector<int>> OptimalActions(const G& game) {
    if (game.IsTerminal()) return absl::InvalidArgumentError("terminal position has no moves");
    std::vector<int> legal, best;
    game.LegalActions(&legal);
    int best_value = -2;
    for (int a : legal) {
      G next = game;
      next.Apply(a);
      int v = ValueAfter(game, next);
      if (v > best_value) {
        best_value = v;
        best.clear();
      }
      if (v == best_value) best.push_back(a);
    }
    if (exhausted_) {
      return absl::ResourceExhaustedError(
          absl::StrCat("game too large to solve exactly: over ", max_positions_, " positions"));
    }
    return best;
  }

  int64_t positions_solved() const { return static_cast<int64_t>(memo_.size()); }

 private:
  // Value for the player to move (for a terminal position: that player's return).
  int Solve(const G& game) {
    if (game.IsTerminal()) return static_cast<int>(game.Returns()[game.ToPlay()]);
    if (exhausted_) return 0;
    uint64_t key = game.Hash();
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    if (static_cast<int64_t>(memo_.size()) >= max_positions_) {
      exhausted_ = true;
      return 0;
    }
    std::vector<int> legal;
    game.LegalActions(&legal);
    int best = -2;
    for (int a : legal) {
      G next = game;
      next.Apply(a);
      int v = ValueAfter(game, next);
      if (v > best) best = v;
      if (best == 1) break;
    }
    memo_[key] = best;
    return best;
  }

  // The value of `next` (reached from `game` by one move) for the player who moved.
  int ValueAfter(const G& game, const G& next) {
    if (next.IsTerminal()) return static_cast<int>(next.Returns()[game.ToPlay()]);
    int v = Solve(next);
    return next.ToPlay() == game.ToPlay() ? v : -v;
  }

  int64_t max_positions_;
  bool exhausted_ = false;
  absl::flat_hash_map<uint64_t, int> memo_;
};

}  // namespace zf::search
