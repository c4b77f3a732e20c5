// An exact Connect Four solver: the ground truth `perfect` and `zf accuracy` measure against.
//
// Score of a position for the player to move (the usual convention of Connect Four solvers):
//   0 for a draw with best play; for a win, 22 - k where k is the number of stones the winner
//   has placed when the fourth in a row lands (a win with fewer stones scores higher); for a
//   loss, minus the opponent's winning score. So a higher score means a quicker win or a slower
//   loss, and |score| <= 21. The empty board scores +1 (X wins with its 21st stone).
//
// Algorithm: negamax with alpha-beta on the two-mask bitboard of games/connect4/connect4.h
// (bit col * 7 + row), with the standard techniques:
//   - the player to move never misses an immediate win (checked before searching), and only
//     "non-losing" moves are searched: a move that leaves the opponent an immediate win, or
//     plays under an opponent's winning cell, is never considered, and two forced blocks mean
//     the position is lost;
//   - scores are bounded before searching: alpha >= -(40 - plies) / 2 and
//     beta <= (41 - plies) / 2, tightened by the transposition table;
//   - a transposition table keyed by position (stones of the player to move + all stones: 49
//     bits, unique), one bound per entry (upper bound from a fail-low, lower bound from a
//     fail-high), replace-always;
//   - move ordering by the number of winning cells a move creates for the mover, ties broken
//     centre first;
//   - at the root, a sequence of null-window searches (alpha, alpha + 1) that narrow [min, max]
//     to the exact score, probing near 0 first (most positions are close to a draw).
// The optimal moves are those whose exact score equals the position's: each candidate needs one
// more null-window search around the root score (the table from the root search makes it cheap).
//
// Cost: measured in docs/benchmarks.md ("Connect Four solver"): from ply 8 on, ordinary
// positions take well under a second here; earlier plies grow steeply, so every call takes a
// node budget (Options::max_nodes) and answers ResourceExhausted when it runs out, never a guess.
//
// Thread-compatible: one instance per thread (the table is not locked). The table is kept
// between calls, so solving the positions of one game in order reuses most of it.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "games/connect4/connect4.h"

namespace zf::games {

class ConnectFourSolver {
 public:
  struct Options {
    // Transposition table entries (8 bytes each); rounded to a prime near this. Default 64 MiB.
    int64_t table_entries = int64_t{1} << 23;
    // Positions visited per call (Score, OptimalActions, MoveOutcomes) before giving up with
    // ResourceExhausted; 0 = no limit. The default is about four minutes on the development VM
    // (5.5-7 million positions a second, docs/benchmarks.md).
    int64_t max_nodes = 1'500'000'000;
    absl::Status Validate() const;
  };

  // The outcome of one move for the player who makes it.
  enum class Outcome : int8_t { kLoss = -1, kDraw = 0, kWin = 1 };

  // Returns: the solver (a movable value, not a pointer: the perfect player holds one by
  // value); InvalidArgument for bad options.
  static absl::StatusOr<ConnectFourSolver> Create(const Options& options);
  // A solver with the default options.
  ConnectFourSolver();

  // The exact score of non-terminal `game` for the player to move (see the top of the file).
  // Blocks until solved (CPU only).
  // Returns: the score; InvalidArgument for a terminal position; ResourceExhausted past the
  // node budget (the message names the ply and the budget).
  absl::StatusOr<int> Score(const ConnectFour& game);

  // The moves of non-terminal `game` that keep its exact score (the quickest win, or the
  // slowest loss, or a draw): the perfect player's choices.
  // Returns: the actions in increasing order; the errors of Score.
  absl::StatusOr<std::vector<int>> OptimalActions(const ConnectFour& game);

  // The game-theoretic outcome of every move of non-terminal `game` for the player to move:
  // out[a] for each column (kLoss for an illegal column as well; check IsLegal). Cheaper than
  // exact scores (searches with windows around 0), and what accuracy against perfect play needs.
  // Returns: seven outcomes; the errors of Score.
  absl::StatusOr<std::vector<Outcome>> MoveOutcomes(const ConnectFour& game);

  // Positions visited since the solver was made (every call), for benchmarks.
  int64_t nodes() const { return nodes_; }

 private:
  // The bitboard position the search works on: `current` holds the stones of the player to
  // move, `mask` all stones; bit col * 7 + row, row 0 at the bottom.
  struct Position {
    uint64_t current = 0;
    uint64_t mask = 0;
    int plies = 0;
  };

  explicit ConnectFourSolver(const Options& options);

  static Position FromGame(const ConnectFour& game);
  // Starts a public call on `game`: the node budget counts from here.
  // Returns: its position; InvalidArgument for a terminal one.
  absl::StatusOr<Position> BeginCall(const ConnectFour& game);
  // Blocks until the exact score of `p` (the player to move has no immediate win) is known, or
  // the node budget runs out (budget_exceeded_).
  int SolveExact(const Position& p);
  // Null-window helpers on a position reached by one move: true when the mover's score is at
  // least `score`.
  bool MoverScoresAtLeast(const Position& after, int score);
  int Negamax(const Position& p, int alpha, int beta);
  absl::Status BudgetError(const ConnectFour& game) const;

  Options options_;
  std::vector<uint64_t> table_;  // (key << 8) | stored bound byte; 0 = empty
  int64_t nodes_ = 0;
  int64_t call_start_nodes_ = 0;
  bool budget_exceeded_ = false;
};

}  // namespace zf::games
