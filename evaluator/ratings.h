// Elo ratings from game results, all computed at once by maximum a posteriori estimation in the
// model BayesElo uses (Rémi Coulom), so draws and the first player's advantage are part of the
// fit rather than folded into a score.
//
// Model. For a game where player i moves first against player j, with ratings r_i, r_j, the first
// player's advantage `a` and the draw width `d` (all in Elo), and f(x) = 1 / (1 + 10^(-x/400)):
//   P(first wins)  = f(r_i - r_j + a - d)
//   P(second wins) = f(r_j - r_i - a - d)
//   P(draw)        = 1 - P(first wins) - P(second wins)
// All ratings, `a` and `d` (d >= 0) are estimated together. The anchor player's rating is fixed
// (at 0 by default: "random" = 0), so every rating says how much stronger than the anchor.
//
// Prior. Like BayesElo, every pair of players that met gets `prior_draws` virtual draws (half with
// each player first). Without them a player that won or lost every game has no finite rating;
// with them such a rating is large but finite, and its interval says how little is known.
// The draw width has a prior too: log(d) is normal around log(draw_prior_elo) with standard
// deviation draw_prior_spread. Without it, when every pair's real games went one way (an early
// evaluation: 4-0 against random, 0-4 against GNU Go) and no game was drawn (Go never draws),
// only the virtual draws speak of d, and they are explained ever better by a wider d with the
// ratings spread apart by as much: the fit drifted along that ridge and reported, for example,
// 1766 [-178265, 181798]. The prior bounds the ridge; where real draws are many (tic-tac-toe)
// they outweigh it.
//
// Intervals. The covariance of the estimate is the inverse of the negative Hessian of the log
// posterior at its maximum (observed information, anchor fixed); a rating's 95% interval is
// +-1.96 standard deviations. This is what BayesElo's "exact distribution" approximates with a
// Gaussian; it is symmetric, and it widens with fewer games or games only against far weaker or
// stronger players.
//
// Cost: Newton's method on n players + 2 parameters with a dense Hessian (n^3 per step; a few
// hundred versions take milliseconds, a few thousand seconds). The evaluator rates versions it
// chose to evaluate, so n stays small.
//
// Thread-safety: free functions over their arguments; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace zf::evaluator {

enum class Outcome { kFirstWon, kDraw, kSecondWon };

// One finished game: who moved first, who second, how it ended. Players are names ("v12",
// "random", "mcts:200", "gnugo:1"); the same name is the same player.
struct GameOutcome {
  std::string first;
  std::string second;
  Outcome outcome = Outcome::kDraw;
};

struct RatingOptions {
  std::string anchor = "random";  // its rating is fixed at anchor_elo
  double anchor_elo = 0.0;
  double prior_draws = 2.0;  // virtual draws per pair of players that met (>= 0)
  // The draw width's prior (see above): median in Elo (> 0) and spread of its log (> 0;
  // 1 = a factor of e).
  double draw_prior_elo = 100.0;
  double draw_prior_spread = 1.0;
  double confidence = 0.95;  // of the intervals, in (0, 1)
};

struct PlayerRating {
  std::string player;
  double elo = 0.0;
  double lower = 0.0;  // the interval at `confidence`; equal to elo for the anchor
  double upper = 0.0;
  int games = 0;
  double wins = 0, draws = 0, losses = 0;  // real games only, from this player's side
};

struct RatingTable {
  std::vector<PlayerRating> players;  // strongest first
  double first_move_elo = 0.0;        // the first player's advantage `a`
  double draw_elo = 0.0;              // the draw width `d`
  int games = 0;
  int iterations = 0;  // Newton steps taken
};

// Rates every player in `games`.
// Returns: the table; InvalidArgument for bad options, an empty player name or a player playing
// itself; FailedPrecondition when there is no game, the anchor played none, or some players are
// not linked to the anchor by a chain of games (named: their ratings would mean nothing);
// Internal if the fit does not converge.
absl::StatusOr<RatingTable> ComputeRatings(const std::vector<GameOutcome>& games,
                                           const RatingOptions& options = {});

// The expected score (win = 1, draw = 1/2) of a player `elo_difference` stronger, in the logistic
// Elo model: 1 / (1 + 10^(-elo_difference / 400)).
double ExpectedScore(double elo_difference);

// Inverse of ExpectedScore for a score in (0, 1).
double EloFromScore(double score);

}  // namespace zf::evaluator
