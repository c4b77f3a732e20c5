// Accuracy against perfect play: the share of positions where a player's move keeps the
// position's game-theoretic outcome (a won position stays won, a drawn one drawn), over a fixed
// set of decisive positions drawn from real games. Unlike Elo, it is an absolute scale: anyone
// can measure any player on the same positions, and 100% is perfect play.
//
// A position set is text, one position a line (comments start with '#'):
//   MOVES OUTCOMES
// MOVES: the moves from the start, as the game's text forms joined by ','; OUTCOMES: one
// character per action of the game (NumActions), the outcome of playing it for the player to
// move: 'W' win, 'D' draw, 'L' loss, '-' illegal. Every position is decisive: its legal moves
// do not all have one outcome (otherwise any move is right and the position measures nothing).
// Lost positions are never decisive (every move loses), so each tests keeping a win or a draw.
//
// ConnectFourAccuracyPositions() is the standard set (evaluator/connect4_accuracy_positions.txt,
// compiled in): positions from ply 8 on of games between MCTS players, solved by
// games::ConnectFourSolver; `zf accuracy make` makes such sets (docs/benchmarks.md says how the
// standard one was made).
//
// Thread-compatible: free functions over values; MeasureAccuracy drives one player.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "common/status_macros.h"
#include "games/connect4/connect4.h"
#include "games/connect4/solver.h"
#include "games/game.h"
#include "players/player.h"

namespace zf::evaluator {

struct AccuracyPosition {
  std::vector<std::string> moves;  // text forms, from the start
  std::string outcomes;            // one of W D L - per action
};

// The best outcome among a position's legal moves: 'W', 'D' or 'L'.
char BestOutcome(const AccuracyPosition& p);
// Whether the legal moves do not all have one outcome (the only positions a set holds).
bool IsDecisive(const AccuracyPosition& p);

// Parses a position set (see the top of the file).
// Returns: the positions (at least one); InvalidArgument naming the line and what is wrong.
absl::StatusOr<std::vector<AccuracyPosition>> ParseAccuracyPositions(absl::string_view text,
                                                                     int num_actions);
// The text form ParseAccuracyPositions reads, with `header` lines as '#' comments first.
std::string FormatAccuracyPositions(const std::vector<AccuracyPosition>& positions,
                                    const std::vector<std::string>& header);

// The standard Connect Four set, parsed (CHECK-fails only if the compiled-in text is broken,
// which its test rules out).
const std::vector<AccuracyPosition>& ConnectFourAccuracyPositions();

// The Wilson score interval for `successes` of `trials` at 95% (z = 1.96): [lower, upper];
// [0, 1] for no trials.
struct Interval {
  double lower = 0, upper = 0;
};
Interval WilsonInterval(int64_t successes, int64_t trials);

struct AccuracyResult {
  int positions = 0;
  int correct = 0;  // moves that kept the outcome
  double accuracy = 0;
  Interval interval;                         // 95%, Wilson
  int win_positions = 0, win_correct = 0;    // won positions: kept the win
  int draw_positions = 0, draw_correct = 0;  // drawn positions: kept the draw
  double seconds = 0;                        // wall time of the player's moves
};

// "84.2% [80.3, 87.5] of 400 positions (wins kept 80.0% of 250, draws 91.3% of 150)".
std::string AccuracyText(const AccuracyResult& r);
// {"positions": N, "correct": K, "accuracy": A, "lower": L, "upper": U, ...}, with
// `leading_fields` (e.g. "\"version\": 12, ", as JSON object members each followed by ", ")
// first.
std::string AccuracyJson(const AccuracyResult& r, absl::string_view leading_fields = "");

// Asks `player` for a move in each position (`start` with the moves applied) and scores it: a
// move that keeps the best outcome is right; any other, a resignation or an illegal move is
// wrong (not an error). Blocks until done, or until `stop` (if given) becomes true between
// positions.
// Returns: the result; InvalidArgument for a position that does not replay from `start`;
// Cancelled (stopped); the player's error.
template <games::Game G>
absl::StatusOr<AccuracyResult> MeasureAccuracy(players::Player<G>& player, const G& start,
                                               const std::vector<AccuracyPosition>& positions,
                                               const std::atomic<bool>* stop = nullptr);

// How `zf accuracy make` draws a Connect Four position set from games.
struct MakePositionsOptions {
  int positions = 400;    // how many to keep
  int max_games = 2000;   // give up after this many games
  int min_ply = 8;        // positions with at least this many plies on the board
  int per_game = 3;       // at most this many from one game (spread over many games)
  int opening_moves = 2;  // random plies opening each game, as in matches
  uint64_t seed = 1;
  absl::Status Validate() const;
};

// Plays games between `first` and `second` (colours alternating), solves every decisive position
// of each from options.min_ply on with `solver`, and keeps up to options.per_game of them per
// game, each distinct, until options.positions are kept. A game's positions are solved from the
// end backwards; where one is beyond the solver's budget, it and the game's earlier ones are
// left out. Blocks until done (minutes).
// Returns: the positions; InvalidArgument (options); ResourceExhausted when max_games games
// held fewer than options.positions; Internal for a player's illegal move; the players' error.
absl::StatusOr<std::vector<AccuracyPosition>> MakeConnectFourAccuracyPositions(
    players::Player<games::ConnectFour>& first, players::Player<games::ConnectFour>& second,
    games::ConnectFourSolver& solver, const MakePositionsOptions& options);

// ---------------------------------------------------------------------------------------------

template <games::Game G>
absl::StatusOr<AccuracyResult> MeasureAccuracy(players::Player<G>& player, const G& start,
                                               const std::vector<AccuracyPosition>& positions,
                                               const std::atomic<bool>* stop) {
  AccuracyResult r;
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < positions.size(); ++i) {
    if (stop != nullptr && stop->load()) return absl::CancelledError("accuracy: stopped");
    const AccuracyPosition& p = positions[i];
    G game = start;
    for (const std::string& text : p.moves) {
      absl::StatusOr<int> action = game.ParseAction(text);
      if (!action.ok() || !game.IsLegal(*action)) {
        return absl::InvalidArgumentError(absl::StrCat("accuracy position ", i + 1, " (",
                                                       absl::StrJoin(p.moves, ","), "): move \"",
                                                       text, "\" is not legal there"));
      }
      game.Apply(*action);
    }
    if (game.IsTerminal() || static_cast<int>(p.outcomes.size()) != game.NumActions()) {
      return absl::InvalidArgumentError(absl::StrCat("accuracy position ", i + 1, " (",
                                                     absl::StrJoin(p.moves, ","),
                                                     "): the game is over or has another size"));
    }
    ZF_ASSIGN_OR_RETURN(const int action, player.ChooseAction(game));
    const char best = BestOutcome(p);
    const bool kept = action >= 0 && action < game.NumActions() && p.outcomes[action] == best;
    ++r.positions;
    r.correct += kept;
    if (best == 'W') {
      ++r.win_positions;
      r.win_correct += kept;
    } else {
      ++r.draw_positions;
      r.draw_correct += kept;
    }
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.accuracy = r.positions > 0 ? static_cast<double>(r.correct) / r.positions : 0.0;
  r.interval = WilsonInterval(r.correct, r.positions);
  return r;
}

}  // namespace zf::evaluator
