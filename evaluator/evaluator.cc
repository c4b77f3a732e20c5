#include "evaluator/evaluator.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "prometheus/counter.h"
#include "prometheus/gauge.h"

namespace zf::evaluator {
namespace {

using zerofleet::v1::EvaluationGame;

// Stable across builds and runs (the seeds of a resumed match must be the same).
uint64_t Fnv1a(absl::string_view text, uint64_t k) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  for (int i = 0; i < 8; ++i) h = (h ^ ((k >> (8 * i)) & 0xff)) * 1099511628211ull;
  return h;
}

std::string MatchName(int64_t version, const std::string& opponent, bool gate) {
  return absl::StrCat(VersionPlayer(version), " vs ", opponent, gate ? " (gate)" : "");
}

// The outcome of `game` from `player`'s side: +1, 0, -1.
int ResultFor(const EvaluationGame& game, const std::string& player) {
  const int first = game.result() == EvaluationGame::FIRST_WON    ? 1
                    : game.result() == EvaluationGame::SECOND_WON ? -1
                                                                  : 0;
  return game.first() == player ? first : -first;
}

}  // namespace

std::string VersionPlayer(int64_t version) { return absl::StrCat("v", version); }

std::optional<int64_t> ParseVersionPlayer(const std::string& player) {
  int64_t version = 0;
  if (player.size() < 2 || player[0] != 'v' ||
      !absl::SimpleAtoi(absl::string_view(player).substr(1), &version) || version <= 0 ||
      player != VersionPlayer(version)) {
    return std::nullopt;
  }
  return version;
}

std::string BestVersionText(const EvaluatorStatus& status) {
  if (status.best_version <= 0) return "";
  const std::string best = VersionPlayer(status.best_version);
  const PlayerRating* rated = nullptr;
  if (status.ratings.has_value()) {
    for (const PlayerRating& r : status.ratings->players) {
      if (r.player == best) rated = &r;
    }
  }
  if (rated == nullptr) return absl::StrCat("best ", best, " (not rated)");
  std::vector<std::string> overlapping;
  for (const PlayerRating& r : status.ratings->players) {
    if (&r != rated && ParseVersionPlayer(r.player).has_value() && r.upper >= rated->lower &&
        r.lower <= rated->upper) {
      overlapping.push_back(r.player);
    }
  }
  if (overlapping.empty()) return absl::StrCat("best ", best);
  constexpr size_t kListed = 3;
  std::string others = absl::StrJoin(
      overlapping.begin(), overlapping.begin() + std::min(kListed, overlapping.size()), ", ");
  if (overlapping.size() > kListed) {
    absl::StrAppend(&others, " and ", overlapping.size() - kListed, " more");
  }
  return absl::StrCat("best ", best, " (tied within the intervals with ", others, ")");
}

absl::Status EvaluatorOptions::Validate() const {
  if (game.empty()) return absl::InvalidArgumentError("evaluator: the game is not named");
  if (anchors.empty())
    return absl::InvalidArgumentError("evaluator: at least one anchor is needed");
  std::set<std::string> seen;
  for (const std::string& a : anchors) {
    if (a.empty() || ParseVersionPlayer(a).has_value() || !seen.insert(a).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("evaluator: anchor \"", a, "\" is empty, a version name or named twice"));
    }
  }
  if (!seen.contains(rating_anchor)) {
    return absl::InvalidArgumentError(
        absl::StrCat("evaluator: the rating anchor ", rating_anchor, " is not among the anchors"));
  }
  if (games_per_opponent < 2 || games_per_opponent % 2 != 0 || games_per_opponent > 10000) {
    return absl::InvalidArgumentError(absl::StrCat(
        "evaluator: games per opponent must be even, 2..10000, got ", games_per_opponent));
  }
  if (opening_moves < 0 || opening_moves > 100) {
    return absl::InvalidArgumentError(
        absl::StrCat("evaluator: opening moves must be 0..100, got ", opening_moves));
  }
  if (gate) {
    ZF_RETURN_IF_ERROR(sprt.Validate());
    if (max_gate_games < 2 || max_gate_games > 100000) {
      return absl::InvalidArgumentError(
          absl::StrCat("evaluator: max gate games must be 2..100000, got ", max_gate_games));
    }
  }
  return absl::OkStatus();
}

struct Evaluator::Metrics {
  explicit Metrics(prometheus::Registry& r)
      : games(prometheus::BuildCounter()
                  .Name("zf_evaluator_games_total")
                  .Help("Evaluation games played, by result from the evaluated version's side.")
                  .Register(r)),
        elo(prometheus::BuildGauge()
                .Name("zf_evaluator_elo")
                .Help("Elo (random = 0) of the newest evaluated and the best version, with the "
                      "95% interval's bounds (bound=\"lower\"|\"upper\"|\"estimate\").")
                .Register(r)),
        version(prometheus::BuildGauge()
                    .Name("zf_evaluator_version")
                    .Help("The newest evaluated version and the best one (the one to serve "
                          "when gating).")
                    .Register(r)),
        gate(prometheus::BuildCounter()
                 .Name("zf_evaluator_gate_decisions_total")
                 .Help("SPRT gate decisions (accept: served; reject: never served).")
                 .Register(r)) {
    for (const char* result : {"win", "draw", "loss"}) games.Add({{"result", result}});
    for (const char* decision : {"accept", "reject"}) gate.Add({{"decision", decision}});
  }
  prometheus::Family<prometheus::Counter>& games;
  prometheus::Family<prometheus::Gauge>& elo;
  prometheus::Family<prometheus::Gauge>& version;
  prometheus::Family<prometheus::Counter>& gate;
};

Evaluator::Evaluator(EvaluatorOptions options, ResultsLog* log, MatchRunner* runner)
    : options_(std::move(options)), log_(log), runner_(runner) {
  if (options_.registry != nullptr) metrics_ = std::make_unique<Metrics>(*options_.registry);
}

Evaluator::~Evaluator() = default;

absl::StatusOr<std::unique_ptr<Evaluator>> Evaluator::Create(EvaluatorOptions options,
                                                             ResultsLog* log, MatchRunner* runner) {
  ZF_RETURN_IF_ERROR(options.Validate());
  std::unique_ptr<Evaluator> evaluator(new Evaluator(std::move(options), log, runner));
  // Versions in the order the log first mentions them, then their matches re-read (no play).
  std::vector<int64_t> versions;
  std::set<int64_t> seen;
  for (const EvaluationGame& game : log->games()) {
    evaluator->by_match_[game.match()].push_back(game);
    const size_t space = game.match().find(' ');
    const std::optional<int64_t> v = ParseVersionPlayer(game.match().substr(0, space));
    if (v.has_value() && seen.insert(*v).second) versions.push_back(*v);
  }
  ZF_RETURN_IF_ERROR(evaluator->Replay(versions));
  {
    absl::MutexLock lock(&evaluator->mu_);
    evaluator->status_.games = static_cast<int64_t>(log->games().size());
  }
  ZF_RETURN_IF_ERROR(evaluator->Rerate());
  evaluator->Publish();
  return evaluator;
}

absl::Status Evaluator::Replay(const std::vector<int64_t>& versions) {
  int64_t newest = 0, best = 0, accepted = 0, rejected = 0;
  for (int64_t version : versions) {
    // Complete when every anchor match is; the matches against versions are whatever was played
    // (which version was best then depended on ratings that later games have moved).
    bool complete = true;
    for (const std::string& anchor : options_.anchors) {
      auto it = by_match_.find(MatchName(version, anchor, false));
      complete &= it != by_match_.end() &&
                  static_cast<int>(it->second.size()) >= options_.games_per_opponent;
    }
    // A version cut short (a stop in the middle of its evaluation) stays unevaluated, but it is
    // no barrier: a resumed run evaluates its newest checkpoint instead, and versions after it
    // in the log were complete (breaking here once made every later evaluation play a long
    // pruned "previous" version).
    if (!complete) continue;
    if (options_.gate && best > 0) {
      // The gate match decides again from its games, in order, as when they were played.
      auto it = by_match_.find(MatchName(version, VersionPlayer(best), true));
      if (it == by_match_.end()) continue;
      const std::string player = VersionPlayer(version);
      double w = 0, d = 0, l = 0;
      SprtState sprt = EvaluateSprt(options_.sprt, 0, 0, 0);
      for (const EvaluationGame& game : it->second) {
        if (sprt.decision != SprtDecision::kContinue) break;
        const int r = ResultFor(game, player);
        (r > 0 ? w : r < 0 ? l : d) += 1;
        sprt = EvaluateSprt(options_.sprt, w, d, l);
      }
      if (sprt.decision == SprtDecision::kContinue && w + d + l < options_.max_gate_games) {
        continue;  // undecided when cut short: neither accepted nor rejected
      }
      if (sprt.decision == SprtDecision::kAccept) {
        best = version;
        ++accepted;
      } else {
        ++rejected;
      }
    } else if (options_.gate) {
      best = version;  // the first version has nothing to beat
    }
    newest = version;
  }
  absl::MutexLock lock(&mu_);
  status_.newest_version = newest;
  status_.best_version = best;  // without gating: set from the ratings (Rerate)
  status_.gate_accepted = accepted;
  status_.gate_rejected = rejected;
  return absl::OkStatus();
}

absl::StatusOr<MatchScore> Evaluator::PlayMatch(int64_t version, const std::string& opponent,
                                                bool gate, const std::atomic<bool>& stop,
                                                SprtState* sprt) {
  const std::string player = VersionPlayer(version);
  const std::string match = MatchName(version, opponent, gate);
  MatchScore score;
  score.opponent = opponent;
  score.gate = gate;
  std::vector<EvaluationGame>& logged = by_match_[match];
  const int limit = gate ? options_.max_gate_games : options_.games_per_opponent;
  for (int k = 0; k < limit; ++k) {
    if (gate) {
      *sprt = EvaluateSprt(options_.sprt, score.wins, score.draws, score.losses);
      if (sprt->decision != SprtDecision::kContinue) break;
    }
    if (k >= static_cast<int>(logged.size())) {
      if (stop.load()) return absl::CancelledError("evaluator stopping");
      const bool first = k % 2 == 0;
      const uint64_t seed = Fnv1a(match, k) ^ options_.seed;
      ZF_ASSIGN_OR_RETURN(EvaluationGame game,
                          runner_->Play(first ? player : opponent, first ? opponent : player,
                                        options_.opening_moves, seed));
      game.set_first(first ? player : opponent);
      game.set_second(first ? opponent : player);
      game.set_game(options_.game);
      game.set_opening_moves(options_.opening_moves);
      game.set_seed(seed);
      game.set_match(match);
      game.set_finished_unix_ms(absl::ToUnixMillis(absl::Now()));
      ZF_RETURN_IF_ERROR(log_->Append(game));
      logged.push_back(game);
      {
        absl::MutexLock lock(&mu_);
        ++status_.games;
      }
      if (metrics_ != nullptr) {
        const int r = ResultFor(game, player);
        metrics_->games.Add({{"result", r > 0 ? "win" : r < 0 ? "loss" : "draw"}}).Increment();
      }
    }
    const int r = ResultFor(logged[k], player);
    (r > 0 ? score.wins : r < 0 ? score.losses : score.draws) += 1;
  }
  if (gate && sprt->decision == SprtDecision::kContinue) {
    *sprt = EvaluateSprt(options_.sprt, score.wins, score.draws, score.losses);
  }
  return score;
}

absl::StatusOr<VersionReport> Evaluator::EvaluateVersion(int64_t version,
                                                         const std::atomic<bool>& stop) {
  return Evaluate(version, stop);
}

absl::StatusOr<VersionReport> Evaluator::Evaluate(int64_t version, const std::atomic<bool>& stop) {
  if (version <= 0) return absl::InvalidArgumentError("versions start at 1");
  int64_t previous = 0, best = 0;
  {
    absl::MutexLock lock(&mu_);
    previous = status_.newest_version;
    best = status_.best_version;
  }
  if (!options_.gate && best > 0 && !runner_->Available(VersionPlayer(best))) {
    ZF_RETURN_IF_ERROR(Rerate());  // the best's network is gone: the next available one
    absl::MutexLock lock(&mu_);
    best = status_.best_version;
  }
  if (version <= previous) {
    return absl::FailedPreconditionError(
        absl::StrCat("version ", version, " is not newer than the newest evaluated, ", previous));
  }
  VersionReport report;
  report.version = version;
  for (const std::string& anchor : options_.anchors) {
    ZF_ASSIGN_OR_RETURN(MatchScore s, PlayMatch(version, anchor, false, stop, nullptr));
    report.matches.push_back(s);
  }
  // The previous version only if its network is still there (a run's evaluator prunes files;
  // the previous is kept, but a directory copied or cleaned by hand may lack it): ratings go on
  // from the anchors and the best rather than failing every later version.
  if (previous > 0 && !(options_.gate && previous == best) &&
      runner_->Available(VersionPlayer(previous))) {
    ZF_ASSIGN_OR_RETURN(MatchScore s,
                        PlayMatch(version, VersionPlayer(previous), false, stop, nullptr));
    report.matches.push_back(s);
  }
  if (best > 0 && (best != previous || options_.gate)) {
    SprtState sprt;
    ZF_ASSIGN_OR_RETURN(MatchScore s,
                        PlayMatch(version, VersionPlayer(best), options_.gate, stop, &sprt));
    report.matches.push_back(s);
    if (options_.gate) report.sprt = sprt;
  }
  {
    absl::MutexLock lock(&mu_);
    status_.newest_version = version;
  }
  ZF_RETURN_IF_ERROR(Rerate());
  bool counted_decision = false, accepted = false;
  {
    absl::MutexLock lock(&mu_);
    if (status_.ratings.has_value()) {
      for (const PlayerRating& r : status_.ratings->players) {
        if (r.player == VersionPlayer(version)) report.rating = r;
      }
    }
    if (options_.gate) {
      // The first version has nothing to beat; later ones must pass the SPRT.
      accepted =
          best == 0 || (report.sprt.has_value() && report.sprt->decision == SprtDecision::kAccept);
      if (best != 0) {
        (accepted ? status_.gate_accepted : status_.gate_rejected) += 1;
        counted_decision = true;
      }
      if (accepted) status_.best_version = version;
    }
    report.best = status_.best_version == version;
  }
  if (metrics_ != nullptr && counted_decision) {
    metrics_->gate.Add({{"decision", accepted ? "accept" : "reject"}}).Increment();
  }
  Publish();
  return report;
}

absl::Status Evaluator::Rerate() {
  const std::vector<EvaluationGame> games = log_->games();
  if (games.empty()) return absl::OkStatus();
  RatingOptions options;
  options.anchor = options_.rating_anchor;
  absl::StatusOr<RatingTable> table = ComputeRatings(ToOutcomes(games), options);
  if (!table.ok()) {
    // Games but no anchor yet (a crash before the first anchor game): nothing to rate yet.
    if (table.status().code() == absl::StatusCode::kFailedPrecondition) return absl::OkStatus();
    return table.status();
  }
  absl::MutexLock lock(&mu_);
  status_.ratings = *std::move(table);
  if (!options_.gate) {
    // The best is the highest-rated evaluated version the runner can still play (players are
    // strongest first; the table can also rate a version whose evaluation is not finished).
    status_.best_version = 0;
    for (const PlayerRating& r : status_.ratings->players) {
      if (std::optional<int64_t> v = ParseVersionPlayer(r.player);
          v.has_value() && *v <= status_.newest_version && runner_->Available(r.player)) {
        status_.best_version = *v;
        break;
      }
    }
  }
  return absl::OkStatus();
}

void Evaluator::Publish() {
  if (metrics_ == nullptr) return;
  const EvaluatorStatus s = status();
  metrics_->version.Add({{"which", "newest"}}).Set(static_cast<double>(s.newest_version));
  metrics_->version.Add({{"which", "best"}}).Set(static_cast<double>(s.best_version));
  if (!s.ratings.has_value()) return;
  for (const auto& [which, v] : {std::pair<const char*, int64_t>{"newest", s.newest_version},
                                 std::pair<const char*, int64_t>{"best", s.best_version}}) {
    for (const PlayerRating& r : s.ratings->players) {
      if (r.player != VersionPlayer(v)) continue;
      metrics_->elo.Add({{"which", which}, {"bound", "estimate"}}).Set(r.elo);
      metrics_->elo.Add({{"which", which}, {"bound", "lower"}}).Set(r.lower);
      metrics_->elo.Add({{"which", which}, {"bound", "upper"}}).Set(r.upper);
    }
  }
}

EvaluatorStatus Evaluator::status() const {
  absl::MutexLock lock(&mu_);
  return status_;
}

}  // namespace zf::evaluator
