// The only thing search knows about a network: a batch-shaped evaluator of positions.
//
// Search gathers its own mini-batches (many leaves, possibly from many games) and hands them to
// an Evaluator in one call, lc0-style. Backends (the in-process LibTorch LocalEvaluator in
// model/, the gRPC RemoteEvaluator in actor/) and decorators (CachingEvaluator) implement this
// interface; the uniform and random-rollout evaluators in search/ are always built so search can
// be tested and benchmarked without a network.
//
// Thread-safety: implementations say; a caller must not assume concurrent Evaluate calls on one
// instance are allowed unless the implementation says "Thread-safe".
#pragma once

#include <algorithm>
#include <cstddef>
#include <limits>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "games/game.h"

namespace zf::search {

template <games::Game G>
class Evaluator {
 public:
  virtual ~Evaluator() = default;

  // Evaluates `positions` (none of them terminal). For position i it writes
  //   policies[i * A + a], a in [0, A) with A = positions[i].NumActions(): the prior probability
  //     of action a; 0 for illegal actions; the legal ones sum to 1 (within float rounding);
  //   values[i]: the expected outcome for the player to move in positions[i], in [-1, 1].
  // `policies` has positions.size() * A floats and `values` positions.size() floats (all
  // positions of one call come from one game type and size, so A is the same for all).
  // Blocks until every position is evaluated.
  // Returns: OK; InvalidArgument if the spans have the wrong sizes; a backend's error
  // (Unavailable, Internal, ...) otherwise, with the outputs unspecified.
  virtual absl::Status Evaluate(std::span<const G> positions, std::span<float> policies,
                                std::span<float> values) = 0;

  // Evaluate, and scores[i]: the expected final margin of the player to move in positions[i],
  // in points / sqrt(board cells) (a network's score head: model/network.h), or NaN where the
  // evaluator has no score. `scores` has positions.size() floats. What search's score utility
  // (search/mcts.h) reads. The default calls Evaluate and writes NaN: evaluators without a
  // score need not override it.
  // Returns: as Evaluate; InvalidArgument also if `scores` has the wrong size.
  virtual absl::Status EvaluateWithScores(std::span<const G> positions, std::span<float> policies,
                                          std::span<float> values, std::span<float> scores) {
    absl::Status status = CheckScoresSize(scores.size(), positions.size());
    if (status.ok()) status = Evaluate(positions, policies, values);
    if (status.ok()) {
      std::fill(scores.begin(), scores.end(), std::numeric_limits<float>::quiet_NaN());
    }
    return status;
  }

  // The predicted final owner of each of the position's H * W cells, row-major from the top
  // left, in [-1, 1] from the side of the player to move (+1: theirs): a network's ownership
  // head (model/network.h), for analysis (GTP kata-analyze). One position, not terminal.
  // Returns: the H * W values; Unimplemented (the default) for evaluators without one.
  virtual absl::StatusOr<std::vector<float>> Ownership(const G& position) {
    (void)position;
    return absl::UnimplementedError("this evaluator predicts no ownership");
  }

 protected:
  // Returns: OK when `scores` floats were given for `positions` positions; InvalidArgument
  // otherwise. For EvaluateWithScores overrides.
  static absl::Status CheckScoresSize(size_t scores, size_t positions) {
    if (scores == positions) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat("scores has ", scores, " floats, expected ", positions));
  }
};

}  // namespace zf::search
