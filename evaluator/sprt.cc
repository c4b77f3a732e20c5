#include "evaluator/sprt.h"

#include <array>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "evaluator/ratings.h"

namespace zf::evaluator {
namespace {

constexpr std::array<double, 3> kScores = {1.0, 0.5, 0.0};  // win, draw, loss
// Added to every count: keeps each outcome possible under both hypotheses (a run of wins alone
// must not make a hypothesis with any losses impossible) while changing nothing measurable.
constexpr double kPseudoCount = 1e-3;

// The most likely win/draw/loss probabilities with expected score `s`, given frequencies `f`
// (empirical likelihood): p_i = f_i / (1 + t (a_i - s)), with t the root of
// sum_i f_i (a_i - s) / (1 + t (a_i - s)) = 0, found by bisection where every p_i > 0.
std::array<double, 3> MostLikelyWithScore(const std::array<double, 3>& f, double s) {
  double lo = -1.0 / (kScores[0] - s), hi = -1.0 / (kScores[2] - s);  // 1 + t (a_i - s) > 0
  auto excess = [&](double t) {
    double sum = 0;
    for (int i = 0; i < 3; ++i) sum += f[i] * (kScores[i] - s) / (1 + t * (kScores[i] - s));
    return sum;  // decreasing in t
  };
  for (int k = 0; k < 200; ++k) {
    const double mid = lo + (hi - lo) / 2;
    if (mid == lo || mid == hi) break;
    (excess(mid) > 0 ? lo : hi) = mid;
  }
  const double t = lo + (hi - lo) / 2;
  std::array<double, 3> p;
  double total = 0;
  for (int i = 0; i < 3; ++i) total += p[i] = f[i] / (1 + t * (kScores[i] - s));
  for (double& x : p) x /= total;
  return p;
}

}  // namespace

absl::Status SprtOptions::Validate() const {
  if (!std::isfinite(elo0) || !std::isfinite(elo1) || !(elo1 > elo0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("SPRT needs finite elo0 < elo1, got elo0 ", elo0, " and elo1 ", elo1));
  }
  if (std::abs(elo0) > 1000 || std::abs(elo1) > 1000) {
    return absl::InvalidArgumentError(
        absl::StrCat("SPRT bounds must be within +-1000 Elo, got ", elo0, " and ", elo1));
  }
  if (!(alpha > 0 && alpha < 0.5)) {
    return absl::InvalidArgumentError(absl::StrCat("SPRT alpha must be in (0, 0.5), got ", alpha));
  }
  if (!(beta > 0 && beta < 0.5)) {
    return absl::InvalidArgumentError(absl::StrCat("SPRT beta must be in (0, 0.5), got ", beta));
  }
  return absl::OkStatus();
}

std::string SprtDecisionName(SprtDecision decision) {
  switch (decision) {
    case SprtDecision::kContinue:
      return "continue";
    case SprtDecision::kAccept:
      return "accept";
    case SprtDecision::kReject:
      return "reject";
  }
  return "unknown";
}

SprtState EvaluateSprt(const SprtOptions& options, double wins, double draws, double losses) {
  SprtState state;
  state.wins = wins, state.draws = draws, state.losses = losses;
  state.lower = std::log(options.beta / (1 - options.alpha));
  state.upper = std::log((1 - options.beta) / options.alpha);
  const std::array<double, 3> counts = {wins + kPseudoCount, draws + kPseudoCount,
                                        losses + kPseudoCount};
  const double n = counts[0] + counts[1] + counts[2];
  const std::array<double, 3> f = {counts[0] / n, counts[1] / n, counts[2] / n};
  const std::array<double, 3> p0 = MostLikelyWithScore(f, ExpectedScore(options.elo0));
  const std::array<double, 3> p1 = MostLikelyWithScore(f, ExpectedScore(options.elo1));
  for (int i = 0; i < 3; ++i) state.llr += counts[i] * std::log(p1[i] / p0[i]);
  if (state.llr >= state.upper) {
    state.decision = SprtDecision::kAccept;
  } else if (state.llr <= state.lower) {
    state.decision = SprtDecision::kReject;
  }
  return state;
}

}  // namespace zf::evaluator
