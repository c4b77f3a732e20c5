// The sequential probability ratio test that gates a new network (`zf evaluator --gate`): play
// games against the current best one at a time and stop as soon as the evidence decides between
//   H0: the candidate is at most elo0 stronger than the best, and
//   H1: it is at least elo1 stronger,
// with P(accept | H0) <= alpha and P(reject | H1) <= beta (Wald's bounds: accept when the log
// likelihood ratio reaches log((1 - beta) / alpha), reject when it falls to log(beta / (1 -
// alpha))).
//
// Elo here is logistic Elo of the expected score (win 1, draw 1/2): elo = 400 log10(s / (1 - s)),
// as fishtest and OpenBench state their bounds. Draws enter as a nuisance: the log likelihood
// ratio is the generalized one (GSPRT) over win/draw/loss frequencies, each hypothesis's
// frequencies being the most likely ones with the hypothesis's expected score (an empirical
// likelihood fit, exact rather than the normal approximation, so lopsided results are not
// over-counted). Games are treated as independent; colours alternate in the evaluator, so the
// first-move advantage averages out over pairs.
//
// Thread-safety: free functions; thread-safe.
#pragma once

#include <string>

#include "absl/status/status.h"

namespace zf::evaluator {

struct SprtOptions {
  double elo0 = 0.0;    // H0: candidate - best <= elo0
  double elo1 = 10.0;   // H1: candidate - best >= elo1 (> elo0)
  double alpha = 0.05;  // false acceptance rate, in (0, 0.5)
  double beta = 0.05;   // false rejection rate, in (0, 0.5)

  // Returns: OK; InvalidArgument naming the bad field.
  absl::Status Validate() const;
};

enum class SprtDecision { kContinue, kAccept, kReject };

std::string SprtDecisionName(SprtDecision decision);  // "continue", "accept", "reject"

struct SprtState {
  double wins = 0, draws = 0, losses = 0;  // the candidate's results so far
  double llr = 0;                          // log likelihood ratio of H1 against H0
  double lower = 0, upper = 0;             // the bounds
  SprtDecision decision = SprtDecision::kContinue;
};

// The test after `wins`, `draws` and `losses` (counts >= 0) of the candidate, for valid options.
SprtState EvaluateSprt(const SprtOptions& options, double wins, double draws, double losses);

}  // namespace zf::evaluator
