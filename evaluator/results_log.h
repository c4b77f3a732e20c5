// The evaluator's durable record of every game it played: RUN_DIR/evaluation/, a replay::Log
// (replay/log.h: checksummed records, fsync before an append returns, torn tails cut off at
// open) of zerofleet.v1.EvaluationGame. Ratings are always computed from all of it again, so a
// restarted evaluator (or `zf ratings` while it runs) sees every game that was acknowledged.
//
//   ZF_ASSIGN_OR_RETURN(auto log, ResultsLog::Open(absl::StrCat(run_dir, "/evaluation")));
//   ZF_RETURN_IF_ERROR(log->Append(game));       // durable when OK
//   ComputeRatings(ToOutcomes(log->games()));
//
// Thread-safe.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "evaluator/ratings.h"
#include "proto/zerofleet/v1/evaluation.pb.h"
#include "replay/log.h"

namespace zf::evaluator {

// OK for a record the log may hold: both players named and different, a result, a game name.
// Returns: InvalidArgument naming what is missing.
absl::Status ValidateEvaluationGame(const zerofleet::v1::EvaluationGame& game);

class ResultsLog {
 public:
  // Opens (creating) the log in `dir` and reads every game in it.
  // Returns: the log; Internal for I/O errors; DataLoss for an intact record that is not a valid
  // EvaluationGame (another program's log, or a newer format: nothing is discarded).
  static absl::StatusOr<std::unique_ptr<ResultsLog>> Open(const std::string& dir);

  // Every game in `dir` without opening it for writing (safe while an evaluator appends).
  // Returns: the games, in the order they were appended; NotFound if `dir` does not exist;
  // Internal; DataLoss as Open.
  static absl::StatusOr<std::vector<zerofleet::v1::EvaluationGame>> Read(const std::string& dir);

  // Appends `game`, durably: when this returns OK the game survives a kill -9 or a power loss.
  // Returns: OK; InvalidArgument (ValidateEvaluationGame); ResourceExhausted (disk full, retry
  // later); Unavailable (the log failed: reopen it).
  absl::Status Append(const zerofleet::v1::EvaluationGame& game) ABSL_LOCKS_EXCLUDED(mu_);

  // Every game read at Open and appended since.
  std::vector<zerofleet::v1::EvaluationGame> games() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  ResultsLog() = default;

  mutable absl::Mutex mu_;
  std::vector<zerofleet::v1::EvaluationGame> games_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<replay::Log> log_;  // set once by Open
};

// The games as rating input.
std::vector<GameOutcome> ToOutcomes(const std::vector<zerofleet::v1::EvaluationGame>& games);

}  // namespace zf::evaluator
