// ResignationGate: turns self-play resignation on only while it is measured to be safe.
//
// Resignation saves most of the time of lost games, but a young network's value head is often
// confidently wrong (in 9x9 Go under komi 7.5 it learns early that black loses, and black then
// resigns after three moves: the run trains on openings that end in resignation and learns
// nothing). AlphaGo Zero kept resignation honest by playing 10% of games out and choosing the
// threshold so that fewer than 5% of them would have been resigned by mistake. The gate does the
// same with a fixed threshold (search::SelfPlayOptions::resign_threshold) and decides only
// whether resignation is on:
//
//   - every game an actor starts while the gate is closed is played out (resignation disabled),
//     and still records whether, and with what outcome, its players would have resigned;
//   - each such game in which a player would have resigned is one sample: a false positive if
//     that player did not lose (search::GameRecord::resign_false_positive);
//   - the gate is open while the last `window` samples number at least `min_samples` and hold at
//     most `max_false_positive_rate` false positives. Once open, the configured
//     resign_playthrough_fraction of games is still played out and keeps feeding samples, so the
//     gate closes again if the network's judgement gets worse.
//
// min_samples = 0 trusts the threshold from the start (the gate is always open).
//
// Thread-safety: thread-safe (the actor's workers share one gate).
#pragma once

#include <cstdint>
#include <deque>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace zf::actor {

class ResignationGate {
 public:
  struct Options {
    // Samples (played-out games in which a player would have resigned) needed before the gate
    // may open; 0..100000. 0: always open.
    int min_samples = 100;
    // The most recent samples the false-positive rate is measured over; >= min_samples, >= 1.
    int window = 400;
    // The largest false-positive share, in [0, 1], at which resignation stays on.
    double max_false_positive_rate = 0.05;

    // Returns: OK; InvalidArgument naming the bad field.
    absl::Status Validate() const;
  };

  struct Stats {
    bool open = false;
    int64_t samples = 0;          // samples in the window
    int64_t false_positives = 0;  // of those, false positives
    int64_t total_samples = 0;    // ever recorded
  };

  // `options` must be valid (Validate()); CHECK-fails otherwise (a caller's bug: ActorOptions
  // validates them first).
  explicit ResignationGate(Options options);

  // Whether games started now may resign (subject to their play-through draw).
  bool open() const ABSL_LOCKS_EXCLUDED(mu_);

  // Records one played-out game in which a player would have resigned: `false_positive` if
  // that player did not lose. Never blocks beyond the gate's lock. Returns the stats after it.
  Stats Record(bool false_positive) ABSL_LOCKS_EXCLUDED(mu_);

  Stats stats() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  bool OpenLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Stats StatsLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  mutable absl::Mutex mu_;
  std::deque<bool> window_ ABSL_GUARDED_BY(mu_);  // true = false positive
  int64_t false_positives_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t total_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace zf::actor
