// Evaluator: rates each new network version by playing it (the `zf evaluator` role's core; the
// process around it follows the model service and plays with real networks).
//
// For a version vN it plays, in this order, matches of games_per_opponent games against
//   - each anchor (`random`, `mcts:200`, `perfect`, `gnugo:1`...: fixed strength, so the scale
//     does not drift),
//   - the previous version it evaluated, if the runner can still play it (Available), and
//   - the current best version, if that is another one.
// Colours alternate game by game, and each game starts with `opening_moves` random plies drawn
// from its own seed, so deterministic players do not repeat one game. Every game is appended to
// the ResultsLog (durable) as soon as it ends, and the ratings are computed again from the whole
// log (ratings.h) after each match.
//
// Best version. Without gating, the best is the highest-rated version. With gating
// (options.gate), the match against the best is an SPRT (sprt.h) played game by game, up to
// max_gate_games: accepted, vN becomes the best (the version the fleet should serve); rejected
// or undecided at the limit, it does not, and is never served. The first version has no best to
// beat and is accepted.
//
// Restarts. Each game names its match ("v12 vs random", "v12 vs v9 (gate)") in the log. On
// construction the evaluator reads the log again, versions in the order it first names them: a
// version whose anchor matches (and, gating, whose gate match, to a decision) are complete is
// evaluated, and the newest of those is the newest evaluated; a version cut short is skipped
// (not evaluated; gating, never accepted), not a barrier to the ones after it. The gate
// decisions are made again from the same games in the same order (the SPRT is deterministic),
// so the best version is the same as before the crash. Evaluating the version cut short again
// (while it is newer than the newest evaluated) resumes each match at the game it was on.
//
// Thread-compatible: one caller at a time; status() may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "evaluator/ratings.h"
#include "evaluator/results_log.h"
#include "evaluator/sprt.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "proto/zerofleet/v1/evaluation.pb.h"

namespace zf::evaluator {

// "v12" for version 12.
std::string VersionPlayer(int64_t version);
// 12 for "v12"; nullopt for any other name.
std::optional<int64_t> ParseVersionPlayer(const std::string& player);

// Plays games. Implementations: the `zf evaluator` process (networks by checkpoint, MCTS), and
// fakes with known strengths in tests.
class MatchRunner {
 public:
  virtual ~MatchRunner() = default;
  // Plays one game, `first` to move first, after `opening_moves` random plies drawn from `seed`
  // (the players' own randomness also comes from `seed`). Players are VersionPlayer names of
  // versions the runner can load, or anchor specs. The returned record needs at least
  // result, moves and resigned; the evaluator fills in the rest.
  // Returns: the game; the player's or engine's error.
  virtual absl::StatusOr<zerofleet::v1::EvaluationGame> Play(const std::string& first,
                                                             const std::string& second,
                                                             int opening_moves, uint64_t seed) = 0;
  // Whether `player` can still be played (a version's network may have been pruned). Without
  // gating, the best version is the highest-rated one that is.
  virtual bool Available(const std::string& player) const { return true; }
};

struct EvaluatorOptions {
  std::string game;                               // canonical game name, for the records
  std::vector<std::string> anchors = {"random"};  // fixed-strength opponents
  std::string rating_anchor = "random";           // rated 0; must be among anchors
  int games_per_opponent = 20;                    // per match; even, so colours balance
  int opening_moves = 2;                          // random plies before the players take over
  uint64_t seed = 1;
  bool gate = false;
  SprtOptions sprt;
  int max_gate_games = 400;                  // an SPRT undecided after this many games rejects
  prometheus::Registry* registry = nullptr;  // zf_evaluator_*; may be null

  // Returns: OK; InvalidArgument naming the bad field.
  absl::Status Validate() const;
};

struct MatchScore {
  std::string opponent;
  int wins = 0, draws = 0, losses = 0;  // from the evaluated version's side
  bool gate = false;                    // the SPRT match against the best
};

struct VersionReport {
  int64_t version = 0;
  std::vector<MatchScore> matches;
  std::optional<PlayerRating> rating;  // after this version's games
  std::optional<SprtState> sprt;       // gated versions with a best to beat
  bool best = false;                   // this version is now the best
};

struct EvaluatorStatus {
  int64_t newest_version = 0;  // last version fully evaluated (0: none)
  int64_t best_version = 0;    // 0: none yet
  int64_t games = 0;           // in the log
  int64_t gate_accepted = 0, gate_rejected = 0;
  std::optional<RatingTable> ratings;
};

// How a report names the best version: "best v9" when the ratings separate it (no other rated
// version's interval overlaps its own); "best v9 (tied within the intervals with v2, v7)" when
// some do, so that a tie is not read as a ranking; "best v9 (not rated)" for a best the table
// does not hold yet (a gate's accepted version before its games are rated); "" for no best.
std::string BestVersionText(const EvaluatorStatus& status);

class Evaluator {
 public:
  // Reads `log` (see Restarts). `log` and `runner` must outlive the evaluator.
  // Returns: the evaluator; InvalidArgument (options); what re-deciding the log's gates fails with.
  static absl::StatusOr<std::unique_ptr<Evaluator>> Create(EvaluatorOptions options,
                                                           ResultsLog* log, MatchRunner* runner);

  // Evaluates `version` (see above), which must be newer than the newest evaluated one. Stops
  // between games when `stop` becomes true.
  // Returns: the report; FailedPrecondition (not newer); Cancelled (stopped: what was played is
  // kept and resumes if this version is evaluated again); the runner's or the log's error.
  absl::StatusOr<VersionReport> EvaluateVersion(int64_t version, const std::atomic<bool>& stop)
      ABSL_LOCKS_EXCLUDED(mu_);

  EvaluatorStatus status() const ABSL_LOCKS_EXCLUDED(mu_);

  ~Evaluator();
  Evaluator(const Evaluator&) = delete;
  Evaluator& operator=(const Evaluator&) = delete;

 private:
  Evaluator(EvaluatorOptions options, ResultsLog* log, MatchRunner* runner);
  absl::StatusOr<VersionReport> Evaluate(int64_t version, const std::atomic<bool>& stop)
      ABSL_LOCKS_EXCLUDED(mu_);
  // At Create: the newest complete version and the gate's decisions, from the log's matches of
  // `versions` (in the order the log first names them).
  absl::Status Replay(const std::vector<int64_t>& versions) ABSL_LOCKS_EXCLUDED(mu_);
  // Plays (or reads from the log) one match for `version`.
  absl::StatusOr<MatchScore> PlayMatch(int64_t version, const std::string& opponent, bool gate,
                                       const std::atomic<bool>& stop, SprtState* sprt);
  absl::Status Rerate() ABSL_LOCKS_EXCLUDED(mu_);
  void Publish() ABSL_LOCKS_EXCLUDED(mu_);

  const EvaluatorOptions options_;
  ResultsLog* const log_;
  MatchRunner* const runner_;
  // Games of the log by match name (read at Create, appended as played).
  std::map<std::string, std::vector<zerofleet::v1::EvaluationGame>> by_match_;

  mutable absl::Mutex mu_;
  EvaluatorStatus status_ ABSL_GUARDED_BY(mu_);

  struct Metrics;
  std::unique_ptr<Metrics> metrics_;
};

}  // namespace zf::evaluator
