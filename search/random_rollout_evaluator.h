// An evaluator that plays random games: uniform priors over the legal actions, and as value the
// mean outcome, for the player to move, of `num_rollouts` playouts that pick uniformly among the
// legal actions until the game ends.
//
// A classic network-free baseline (pure MCTS); strong enough to find short tactics in Connect
// Four and to play tic-tac-toe perfectly with a few hundred simulations. Deterministic for a
// given seed and sequence of calls.
//
// Thread-safety: thread-compatible (the random generator is state): one Evaluate at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "games/game.h"
#include "search/evaluator.h"
#include "search/evaluator_util.h"

namespace zf::search {

struct RandomRolloutOptions {
  int num_rollouts = 1;  // playouts per position; >= 1
  uint64_t seed = 0;

  // Returns: OK; InvalidArgument if num_rollouts < 1.
  absl::Status Validate() const {
    if (num_rollouts < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("num_rollouts must be >= 1, got ", num_rollouts));
    }
    return absl::OkStatus();
  }
};

template <games::Game G>
class RandomRolloutEvaluator final : public Evaluator<G> {
 public:
  // Returns: InvalidArgument if options.Validate() fails.
  static absl::StatusOr<std::unique_ptr<RandomRolloutEvaluator>> Create(
      const RandomRolloutOptions& options) {
    absl::Status status = options.Validate();
    if (!status.ok()) return status;
    return std::unique_ptr<RandomRolloutEvaluator>(new RandomRolloutEvaluator(options));
  }

  // Returns: OK; InvalidArgument if the spans have the wrong sizes or a position is terminal.
  absl::Status Evaluate(std::span<const G> positions, std::span<float> policies,
                        std::span<float> values) override {
    absl::Status status = internal::CheckEvaluateSpans(positions, policies, values);
    if (!status.ok()) return status;
    if (positions.empty()) return absl::OkStatus();
    const int num_actions = positions.front().NumActions();
    for (size_t i = 0; i < positions.size(); ++i) {
      const G& position = positions[i];
      if (position.IsTerminal()) {
        return absl::InvalidArgumentError(absl::StrCat("position ", i, " is terminal"));
      }
      position.LegalActions(&legal_);
      float* policy = &policies[i * num_actions];
      for (int a = 0; a < num_actions; ++a) policy[a] = 0.0f;
      for (const int a : legal_) policy[a] = 1.0f / static_cast<float>(legal_.size());
      const int player = position.ToPlay();
      float sum = 0.0f;
      for (int r = 0; r < options_.num_rollouts; ++r) {
        G game = position;
        // MaxGameLength() bounds every game; the bound only guards against a broken game.
        for (int ply = 0; ply < position.MaxGameLength() && !game.IsTerminal(); ++ply) {
          game.LegalActions(&legal_);
          const size_t pick =
              std::uniform_int_distribution<size_t>(0, legal_.size() - 1)(rng_);
          game.Apply(legal_[pick]);
        }
        if (game.IsTerminal()) sum += game.Returns()[player];
      }
      values[i] = sum / static_cast<float>(options_.num_rollouts);
    }
    return absl::OkStatus();
  }

 private:
  explicit RandomRolloutEvaluator(const RandomRolloutOptions& options)
      : options_(options), rng_(options.seed) {}

  const RandomRolloutOptions options_;
  std::mt19937_64 rng_;
  std::vector<int> legal_;
};

}  // namespace zf::search
