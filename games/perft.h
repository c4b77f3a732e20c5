// Perft: counts move sequences, the standard check of a move generator.
//
// Perft(start, depth)[d] is the number of distinct sequences of exactly d legal plies from
// `start`, for d = 0..depth, where a terminal position ends a sequence (it is counted at its
// own depth and never expanded). Element 0 is therefore 1. Known values (tic-tac-toe:
// 1, 9, 72, 504, 3024, ...) catch move-generation, terminal-detection and turn-order bugs.
//
// Cost: one copy and Apply per node; the count grows like the branching factor to the depth.
// Thread-safety: a pure function of its arguments; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "common/logging.h"
#include "games/game.h"

namespace zf::games {
namespace perft_internal {

template <Game G>
void Visit(const G& game, int ply, std::vector<std::vector<int>>* actions,
           std::vector<uint64_t>* counts) {
  ++(*counts)[ply];
  if (ply + 1 >= static_cast<int>(counts->size()) || game.IsTerminal()) return;
  std::vector<int>& legal = (*actions)[ply];  // one buffer per ply: no allocation per node
  game.LegalActions(&legal);
  for (size_t i = 0; i < legal.size(); ++i) {
    G child = game;
    child.Apply(legal[i]);
    Visit(child, ply + 1, actions, counts);
  }
}

}  // namespace perft_internal

// Requires depth >= 0 (ZF_CHECK).
template <Game G>
std::vector<uint64_t> Perft(const G& start, int depth) {
  ZF_CHECK(depth >= 0) << "perft depth " << depth;
  std::vector<uint64_t> counts(depth + 1, 0);
  std::vector<std::vector<int>> actions(depth + 1);
  perft_internal::Visit(start, 0, &actions, &counts);
  return counts;
}

}  // namespace zf::games
