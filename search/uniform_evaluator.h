// The evaluator without a network: uniform priors over the legal actions and value 0.
//
// With it, search is pure tree work (and exact values at terminal positions), which is what the
// MCTS throughput benchmark measures and what many tests use. It costs one IsLegal call per
// action per position.
//
// Thread-safety: stateless; thread-safe.
#pragma once

#include <span>

#include "absl/status/status.h"
#include "games/game.h"
#include "search/evaluator.h"
#include "search/evaluator_util.h"

namespace zf::search {

template <games::Game G>
class UniformEvaluator final : public Evaluator<G> {
 public:
  // Returns: OK; InvalidArgument if the spans have the wrong sizes.
  absl::Status Evaluate(std::span<const G> positions, std::span<float> policies,
                        std::span<float> values) override {
    absl::Status status = internal::CheckEvaluateSpans(positions, policies, values);
    if (!status.ok()) return status;
    if (positions.empty()) return absl::OkStatus();
    const int num_actions = positions.front().NumActions();
    float* policy = policies.data();
    for (size_t i = 0; i < positions.size(); ++i, policy += num_actions) {
      const G& position = positions[i];
      int legal = 0;
      for (int a = 0; a < num_actions; ++a) {
        const bool is_legal = position.IsLegal(a);
        policy[a] = is_legal ? 1.0f : 0.0f;
        legal += is_legal;
      }
      if (legal > 0) {
        const float p = 1.0f / static_cast<float>(legal);
        for (int a = 0; a < num_actions; ++a) policy[a] *= p;
      }
      values[i] = 0.0f;
    }
    return absl::OkStatus();
  }
};

}  // namespace zf::search
