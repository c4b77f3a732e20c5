#include "evaluator/ratings.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <numbers>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "Eigen/Cholesky"
#include "Eigen/Core"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace zf::evaluator {
namespace {

// Elo to natural-log odds: f(x) = sigmoid(kScale * x).
constexpr double kScale = std::numbers::ln10 / 400.0;
constexpr int kMaxIterations = 200;

double Sigmoid(double z) {
  return z >= 0 ? 1.0 / (1.0 + std::exp(-z)) : std::exp(z) / (1.0 + std::exp(z));
}
// log(sigmoid(z)), without overflow for large |z|.
double LogSigmoid(double z) {
  return z >= 0 ? -std::log1p(std::exp(-z)) : z - std::log1p(std::exp(z));
}
// sigmoid'(z) = sigmoid(z) * sigmoid(-z).
double SigmoidSlope(double z) { return Sigmoid(z) * Sigmoid(-z); }

// Results of every game between `first` and `second` in that order of play, prior included.
struct Pairing {
  int first = 0;
  int second = 0;
  double wins = 0, draws = 0, losses = 0;  // from the first player's side
};

// The fit's parameters: the rating of every player but the anchor, the first-move advantage `a`
// (Elo) and log(d), the draw width in Elo (so d > 0 always).
struct Model {
  int players = 0;
  int anchor = 0;
  double anchor_elo = 0;
  double log_draw_prior = 0;  // log(RatingOptions::draw_prior_elo)
  double draw_prior_spread = 1;
  // Index in the parameter vector of player p, or -1 for the anchor.
  int Index(int p) const { return p == anchor ? -1 : (p < anchor ? p : p - 1); }
  int AdvantageIndex() const { return players - 1; }
  int LogDrawIndex() const { return players; }
  int Size() const { return players + 1; }
  double Rating(const Eigen::VectorXd& theta, int p) const {
    return p == anchor ? anchor_elo : theta[Index(p)];
  }
};

// Log posterior, and optionally its gradient and Hessian, at `theta`.
double Evaluate(const Model& model, const std::vector<Pairing>& pairings,
                const Eigen::VectorXd& theta, Eigen::VectorXd* gradient, Eigen::MatrixXd* hessian) {
  const double d = std::exp(theta[model.LogDrawIndex()]);
  const double u = kScale * d;
  const int ia = model.AdvantageIndex(), id = model.LogDrawIndex();
  if (gradient != nullptr) gradient->setZero(model.Size());
  if (hessian != nullptr) hessian->setZero(model.Size(), model.Size());
  // The draw width's prior: log d ~ Normal(log_draw_prior, draw_prior_spread^2).
  const double precision = 1.0 / (model.draw_prior_spread * model.draw_prior_spread);
  const double from_prior = theta[id] - model.log_draw_prior;
  double log_posterior = -0.5 * precision * from_prior * from_prior;
  if (gradient != nullptr) (*gradient)[id] -= precision * from_prior;
  if (hessian != nullptr) (*hessian)(id, id) -= precision;
  for (const Pairing& p : pairings) {
    const double x =
        kScale * (model.Rating(theta, p.first) - model.Rating(theta, p.second) + theta[ia]);
    // P(win) = s(x-u), P(loss) = s(-x-u), P(draw) = s(u-x) s(u+x) (1 - e^-2u).
    const double log_draw_width = std::log(-std::expm1(-2 * u));
    log_posterior += p.wins * LogSigmoid(x - u) + p.losses * LogSigmoid(-x - u) +
                     p.draws * (LogSigmoid(u - x) + LogSigmoid(u + x) + log_draw_width);
    if (gradient == nullptr) continue;
    // Derivatives in x and u.
    const double gx = p.wins * Sigmoid(u - x) - p.losses * Sigmoid(x + u) +
                      p.draws * (Sigmoid(-u - x) - Sigmoid(x - u));
    const double gu = -p.wins * Sigmoid(u - x) - p.losses * Sigmoid(x + u) +
                      p.draws * (Sigmoid(x - u) + Sigmoid(-u - x) + 2.0 / std::expm1(2 * u));
    const double sw = SigmoidSlope(x - u), sl = SigmoidSlope(x + u);
    // 4 e^2u / (e^2u - 1)^2, written so that it neither overflows nor loses precision.
    const double draw_curvature = 4.0 / (std::expm1(2 * u) * -std::expm1(-2 * u));
    const double hxx = -p.wins * sw - p.losses * sl - p.draws * (sw + sl);
    const double hxu = p.wins * sw - p.losses * sl + p.draws * (sw - sl);
    const double huu = -p.wins * sw - p.losses * sl - p.draws * (sw + sl + draw_curvature);
    // x = kScale * (r_first - r_second + a); u = kScale * exp(logd), du/dlogd = u.
    const int i = model.Index(p.first), j = model.Index(p.second);
    const std::pair<int, double> xs[] = {{i, kScale}, {j, -kScale}, {ia, kScale}};
    for (const auto& [k, dk] : xs) {
      if (k < 0) continue;
      (*gradient)[k] += gx * dk;
    }
    (*gradient)[id] += gu * u;
    if (hessian == nullptr) continue;
    for (const auto& [k, dk] : xs) {
      if (k < 0) continue;
      for (const auto& [l, dl] : xs) {
        if (l < 0) continue;
        (*hessian)(k, l) += hxx * dk * dl;
      }
      (*hessian)(k, id) += hxu * dk * u;
      (*hessian)(id, k) += hxu * dk * u;
    }
    (*hessian)(id, id) += huu * u * u + gu * u;
  }
  return log_posterior;
}

// Players not reachable from `anchor` through pairings.
std::vector<int> Unlinked(int players, int anchor, const std::vector<Pairing>& pairings) {
  std::vector<std::vector<int>> next(players);
  for (const Pairing& p : pairings) {
    next[p.first].push_back(p.second);
    next[p.second].push_back(p.first);
  }
  std::vector<bool> seen(players, false);
  std::deque<int> queue = {anchor};
  seen[anchor] = true;
  while (!queue.empty()) {
    const int p = queue.front();
    queue.pop_front();
    for (int q : next[p]) {
      if (!seen[q]) seen[q] = true, queue.push_back(q);
    }
  }
  std::vector<int> unlinked;
  for (int p = 0; p < players; ++p) {
    if (!seen[p]) unlinked.push_back(p);
  }
  return unlinked;
}

// The inverse-normal quantile for a two-sided interval at `confidence`, by bisection on erfc.
double NormalQuantile(double confidence) {
  const double tail = (1 - confidence) / 2;  // P(Z > z) = tail
  double lo = 0, hi = 40;
  for (int k = 0; k < 200; ++k) {
    const double mid = (lo + hi) / 2;
    (0.5 * std::erfc(mid / std::numbers::sqrt2) > tail ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

}  // namespace

double ExpectedScore(double elo_difference) { return Sigmoid(kScale * elo_difference); }

double EloFromScore(double score) { return std::log(score / (1 - score)) / kScale; }

absl::StatusOr<RatingTable> ComputeRatings(const std::vector<GameOutcome>& games,
                                           const RatingOptions& options) {
  if (!(options.prior_draws >= 0) || !std::isfinite(options.prior_draws)) {
    return absl::InvalidArgumentError(
        absl::StrCat("prior_draws must be >= 0, got ", options.prior_draws));
  }
  if (!(options.confidence > 0 && options.confidence < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("confidence must be in (0, 1), got ", options.confidence));
  }
  if (!std::isfinite(options.anchor_elo)) {
    return absl::InvalidArgumentError("anchor_elo must be finite");
  }
  if (!(options.draw_prior_elo > 0) || !std::isfinite(options.draw_prior_elo)) {
    return absl::InvalidArgumentError(
        absl::StrCat("draw_prior_elo must be > 0, got ", options.draw_prior_elo));
  }
  if (!(options.draw_prior_spread > 0) || !std::isfinite(options.draw_prior_spread)) {
    return absl::InvalidArgumentError(
        absl::StrCat("draw_prior_spread must be > 0, got ", options.draw_prior_spread));
  }
  if (games.empty()) return absl::FailedPreconditionError("no games to rate");

  // Players by name, in order of first appearance.
  absl::flat_hash_map<std::string, int> index;
  std::vector<std::string> names;
  auto id = [&](const std::string& name) {
    auto [it, added] = index.try_emplace(name, static_cast<int>(names.size()));
    if (added) names.push_back(name);
    return it->second;
  };
  std::map<std::pair<int, int>, Pairing> by_order;
  RatingTable table;
  std::vector<PlayerRating> stats;
  for (const GameOutcome& g : games) {
    if (g.first.empty() || g.second.empty()) {
      return absl::InvalidArgumentError("a game names an empty player");
    }
    if (g.first == g.second) {
      return absl::InvalidArgumentError(absl::StrCat("player ", g.first, " played itself"));
    }
    const int a = id(g.first), b = id(g.second);
    stats.resize(names.size());
    Pairing& p = by_order[{a, b}];
    p.first = a, p.second = b;
    switch (g.outcome) {
      case Outcome::kFirstWon:
        p.wins += 1, stats[a].wins += 1, stats[b].losses += 1;
        break;
      case Outcome::kDraw:
        p.draws += 1, stats[a].draws += 1, stats[b].draws += 1;
        break;
      case Outcome::kSecondWon:
        p.losses += 1, stats[a].losses += 1, stats[b].wins += 1;
        break;
    }
    ++stats[a].games, ++stats[b].games;
    ++table.games;
  }
  auto anchor_it = index.find(options.anchor);
  if (anchor_it == index.end()) {
    return absl::FailedPreconditionError(
        absl::StrCat("the anchor ", options.anchor, " played no game: nothing to rate against"));
  }
  // The prior: prior_draws virtual draws per pair that met, half with each player first.
  std::set<std::pair<int, int>> met;
  for (const auto& [order, p] : by_order) met.insert(std::minmax(order.first, order.second));
  for (const auto& [a, b] : met) {
    for (const auto& [x, y] : {std::pair{a, b}, std::pair{b, a}}) {
      Pairing& p = by_order[{x, y}];
      p.first = x, p.second = y;
      p.draws += options.prior_draws / 2;
    }
  }
  std::vector<Pairing> pairings;
  double draws = 0;
  for (const auto& [order, p] : by_order) pairings.push_back(p), draws += p.draws;
  if (draws == 0) {
    return absl::InvalidArgumentError(
        "no draws, real or virtual: without the virtual ones a one-sided record has no finite "
        "rating; give prior_draws > 0");
  }

  Model model;
  model.players = static_cast<int>(names.size());
  model.anchor = anchor_it->second;
  model.anchor_elo = options.anchor_elo;
  model.log_draw_prior = std::log(options.draw_prior_elo);
  model.draw_prior_spread = options.draw_prior_spread;
  if (std::vector<int> unlinked = Unlinked(model.players, model.anchor, pairings);
      !unlinked.empty()) {
    std::vector<std::string> named;
    for (int p : unlinked) named.push_back(names[p]);
    return absl::FailedPreconditionError(
        absl::StrCat("no chain of games links ", absl::StrJoin(named, ", "), " to the anchor ",
                     options.anchor, ": their ratings would mean nothing"));
  }

  // Newton's method with a backtracking line search; the Hessian is damped towards the identity
  // where it is not negative definite (far from the maximum, the draw width can make it so).
  Eigen::VectorXd theta = Eigen::VectorXd::Zero(model.Size());
  for (int p = 0; p < model.players; ++p) {
    if (p != model.anchor) theta[model.Index(p)] = options.anchor_elo;
  }
  theta[model.LogDrawIndex()] = model.log_draw_prior;
  Eigen::VectorXd gradient;
  Eigen::MatrixXd hessian;
  double value = Evaluate(model, pairings, theta, &gradient, &hessian);
  // Converged when the Newton decrement says the log posterior is within 1e-9 of its maximum.
  bool converged = false;
  for (table.iterations = 1; table.iterations <= kMaxIterations; ++table.iterations) {
    Eigen::MatrixXd information = -hessian;
    Eigen::VectorXd step;
    for (double damping = 0;; damping = damping == 0 ? 1e-6 : damping * 10) {
      Eigen::LLT<Eigen::MatrixXd> llt(
          information + damping * Eigen::MatrixXd::Identity(model.Size(), model.Size()));
      if (llt.info() == Eigen::Success) {
        step = llt.solve(gradient);
        break;
      }
      if (damping > 1e12) return absl::InternalError("Elo fit: no ascent direction");
    }
    if (gradient.dot(step) / 2 < 1e-9) {
      converged = true;
      break;
    }
    double scale = 1;
    Eigen::VectorXd next;
    double next_value = value;
    for (int k = 0; k < 60; ++k, scale /= 2) {
      next = theta + scale * step;
      // A step that takes the draw width out of any plausible range (1e-13..22,000 Elo) is too
      // long.
      if (next[model.LogDrawIndex()] < -30 || next[model.LogDrawIndex()] > 10) continue;
      next_value = Evaluate(model, pairings, next, nullptr, nullptr);
      if (std::isfinite(next_value) && next_value >= value) break;
    }
    if (!(std::isfinite(next_value) && next_value >= value)) break;  // rounding: at the top
    theta = next;
    value = Evaluate(model, pairings, theta, &gradient, &hessian);
  }
  if (!converged) {
    // The line search found no higher point: at the maximum up to rounding, unless the gradient
    // says otherwise.
    const Eigen::VectorXd step = (-hessian).llt().solve(gradient);
    if (!(gradient.dot(step) / 2 < 1e-6)) {
      return absl::InternalError(absl::StrCat("Elo fit did not converge in ", kMaxIterations,
                                              " steps (Newton decrement ", gradient.dot(step) / 2,
                                              ")"));
    }
  }

  // Intervals from the observed information.
  Eigen::LLT<Eigen::MatrixXd> llt(-hessian);
  if (llt.info() != Eigen::Success) {
    return absl::InternalError("Elo fit: the information matrix is not positive definite");
  }
  const Eigen::MatrixXd covariance =
      llt.solve(Eigen::MatrixXd::Identity(model.Size(), model.Size()));
  const double z = NormalQuantile(options.confidence);
  for (int p = 0; p < model.players; ++p) {
    PlayerRating r = stats[p];
    r.player = names[p];
    r.elo = model.Rating(theta, p);
    const double half =
        p == model.anchor ? 0 : z * std::sqrt(covariance(model.Index(p), model.Index(p)));
    r.lower = r.elo - half;
    r.upper = r.elo + half;
    table.players.push_back(std::move(r));
  }
  std::sort(table.players.begin(), table.players.end(),
            [](const PlayerRating& a, const PlayerRating& b) {
              return a.elo != b.elo ? a.elo > b.elo : a.player < b.player;
            });
  table.first_move_elo = theta[model.AdvantageIndex()];
  table.draw_elo = std::exp(theta[model.LogDrawIndex()]);
  return table;
}

}  // namespace zf::evaluator
