// Fake evaluators for search tests: they record what they were asked and fail on demand.
//
// Thread-compatibility: thread-compatible (they keep counters).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "games/game.h"
#include "gtest/gtest.h"
#include "search/evaluator.h"
#include "search/evaluator_util.h"
#include "search/uniform_evaluator.h"

namespace zf::search::testing {

// Uniform priors; the value comes from `value_fn` (default: 0). Fails the test if asked about a
// terminal position, counts calls and positions, records each batch's size and every hash, and
// returns `fail_with` instead of answering while it is not OK.
template <games::Game G>
class RecordingEvaluator final : public Evaluator<G> {
 public:
  using ValueFn = std::function<float(const G&)>;
  explicit RecordingEvaluator(ValueFn value_fn = nullptr) : value_fn_(std::move(value_fn)) {}

  absl::Status Evaluate(std::span<const G> positions, std::span<float> policies,
                        std::span<float> values) override {
    ++calls;
    if (!fail_with.ok()) return fail_with;
    absl::Status status = internal::CheckEvaluateSpans(positions, policies, values);
    if (!status.ok()) return status;
    batch_sizes.push_back(static_cast<int>(positions.size()));
    for (const G& position : positions) {
      if (position.IsTerminal()) ADD_FAILURE() << "evaluator asked about a terminal position";
      hashes.push_back(position.Hash());
    }
    status = uniform_.Evaluate(positions, policies, values);
    if (!status.ok()) return status;
    if (value_fn_) {
      for (size_t i = 0; i < positions.size(); ++i) values[i] = value_fn_(positions[i]);
    }
    return absl::OkStatus();
  }

  int64_t NumPositions() const { return static_cast<int64_t>(hashes.size()); }

  int calls = 0;
  std::vector<int> batch_sizes;
  std::vector<uint64_t> hashes;
  absl::Status fail_with;

 private:
  ValueFn value_fn_;
  UniformEvaluator<G> uniform_;
};

// Uniform priors, values from `value_fn` and scores from `score_fn` (both for the player to
// move), through EvaluateWithScores; Evaluate alone answers the same without scores.
template <games::Game G>
class ScoringEvaluator final : public Evaluator<G> {
 public:
  using Fn = std::function<float(const G&)>;
  ScoringEvaluator(Fn value_fn, Fn score_fn)
      : value_fn_(std::move(value_fn)), score_fn_(std::move(score_fn)) {}

  absl::Status Evaluate(std::span<const G> positions, std::span<float> policies,
                        std::span<float> values) override {
    absl::Status status = uniform_.Evaluate(positions, policies, values);
    if (!status.ok()) return status;
    for (size_t i = 0; i < positions.size(); ++i) values[i] = value_fn_(positions[i]);
    return absl::OkStatus();
  }

  absl::Status EvaluateWithScores(std::span<const G> positions, std::span<float> policies,
                                  std::span<float> values, std::span<float> scores) override {
    if (scores.size() != positions.size()) return absl::InvalidArgumentError("scores size");
    absl::Status status = Evaluate(positions, policies, values);
    if (!status.ok()) return status;
    for (size_t i = 0; i < positions.size(); ++i) scores[i] = score_fn_(positions[i]);
    return absl::OkStatus();
  }

 private:
  Fn value_fn_;
  Fn score_fn_;
  UniformEvaluator<G> uniform_;
};

}  // namespace zf::search::testing
