// LocalEvaluator: search::Evaluator over an in-process InferenceSession. Torch-free header.
//
// The network behind search in the same process (`zf play`, `zf match`, and the batch-1
// baseline of the benchmarks: each actor evaluating its own model copy). Self-play at fleet
// scale goes through the inference server instead.
//
// Evaluate(positions):
//   1. encodes every position with G::Encode into one uint8 buffer [N, C, H, W];
//   2. InferenceSession::Run: policy logits z[i, a] and P(win), P(draw), P(loss);
//   3. prior p[i, a] = exp(z[i, a] - m_i) / sum_{b legal} exp(z[i, b] - m_i) for legal a, with
//      m_i the largest legal logit (a softmax over the legal actions only), and 0 for illegal a;
//   4. value v[i] = P(win) - P(loss), for the player to move, in [-1, 1];
//   5. EvaluateWithScores, from a network with the score head (aux_heads): the score head's
//      output (points / sqrt(cells)); NaN from a network without one.
//
// Ownership: shares ownership of the session, so several evaluators (one per search thread)
// can use one network.
// Thread-safety: thread-compatible (one instance per thread): Evaluate reuses buffers of the
// instance. The session itself is thread-safe.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "games/game.h"
#include "model/game_network.h"
#include "model/inference_session.h"
#include "search/evaluator.h"

namespace zf::model {

template <games::Game G>
class LocalEvaluator final : public search::Evaluator<G> {
 public:
  // `game`: any position of the game (and size) that will be evaluated.
  // Returns: InvalidArgument if `session` is null or its network does not fit the game
  // (planes or action count differ).
  static absl::StatusOr<std::unique_ptr<LocalEvaluator>> Create(
      std::shared_ptr<const InferenceSession> session, const G& game) {
    if (session == nullptr) return absl::InvalidArgumentError("LocalEvaluator: null session");
    ZF_RETURN_IF_ERROR(CheckShapeFitsGame(session->shape(), game));
    return std::unique_ptr<LocalEvaluator>(new LocalEvaluator(std::move(session), game));
  }

  // See search::Evaluator. Blocks for one forward pass.
  // Returns: OK; InvalidArgument if a span has the wrong size, or a position is terminal or of
  // another game size; Internal if the network produced non-finite outputs; the session's
  // errors otherwise.
  absl::Status Evaluate(std::span<const G> positions, std::span<float> policies,
                        std::span<float> values) override {
    return Run(positions, policies, values, {});
  }

  // See search::Evaluator. The same forward pass, with the score head's output when the
  // network has one.
  absl::Status EvaluateWithScores(std::span<const G> positions, std::span<float> policies,
                                  std::span<float> values, std::span<float> scores) override {
    if (!session_->shape().aux_heads) {
      return search::Evaluator<G>::EvaluateWithScores(positions, policies, values, scores);
    }
    ZF_RETURN_IF_ERROR(this->CheckScoresSize(scores.size(), positions.size()));
    return Run(positions, policies, values, scores);
  }

  // See search::Evaluator: the ownership head's prediction, from a network with aux_heads.
  absl::StatusOr<std::vector<float>> Ownership(const G& position) override {
    if (!session_->shape().aux_heads) {
      return search::Evaluator<G>::Ownership(position);
    }
    if (position.Shape() != plane_shape_ || position.IsTerminal()) {
      return absl::InvalidArgumentError(absl::StrCat("ownership of ", position.Name(),
                                                     " (terminal: ", position.IsTerminal(),
                                                     "); the evaluator's network fits ", name_));
    }
    std::vector<uint8_t> planes(static_cast<size_t>(session_->shape().PlaneSize()));
    position.Encode(planes.data());
    std::vector<float> ownership(static_cast<size_t>(plane_shape_.height) * plane_shape_.width);
    ZF_RETURN_IF_ERROR(session_->RunOwnership(planes, 1, ownership));
    return ownership;
  }

  const InferenceSession& session() const { return *session_; }

 private:
  LocalEvaluator(std::shared_ptr<const InferenceSession> session, const G& game)
      : session_(std::move(session)), plane_shape_(game.Shape()), name_(game.Name()) {}

  // Evaluate, and the scores when `scores` is not empty (the network has the score head).
  absl::Status Run(std::span<const G> positions, std::span<float> policies, std::span<float> values,
                   std::span<float> scores) {
    const int64_t n = static_cast<int64_t>(positions.size());
    const int actions = session_->shape().num_actions;
    if (static_cast<int64_t>(policies.size()) != n * actions) {
      return absl::InvalidArgumentError(
          absl::StrCat("policies has ", policies.size(), " floats, expected ", n, " x ", actions));
    }
    if (static_cast<int64_t>(values.size()) != n) {
      return absl::InvalidArgumentError(
          absl::StrCat("values has ", values.size(), " floats, expected ", n));
    }
    if (n == 0) return absl::OkStatus();
    const int64_t plane_size = session_->shape().PlaneSize();
    planes_.resize(n * plane_size);
    for (int64_t i = 0; i < n; ++i) {
      const G& position = positions[i];
      if (position.Shape() != plane_shape_ || position.NumActions() != actions) {
        return absl::InvalidArgumentError(absl::StrCat("position ", i, " is ", position.Name(),
                                                       ", the evaluator's network fits ", name_));
      }
      if (position.IsTerminal()) {
        return absl::InvalidArgumentError(absl::StrCat("position ", i, " is terminal"));
      }
      position.Encode(planes_.data() + i * plane_size);
    }
    wdl_.resize(n * 3);
    // The logits land in `policies` and are turned into priors in place.
    ZF_RETURN_IF_ERROR(session_->Run(planes_, static_cast<int>(n), policies, wdl_, scores));
    for (int64_t i = 0; i < n; ++i) {
      std::span<float> row = policies.subspan(i * actions, actions);
      positions[i].LegalActions(&legal_);
      float max_logit = -std::numeric_limits<float>::infinity();
      for (int a : legal_) max_logit = std::max(max_logit, row[a]);
      exps_.resize(legal_.size());
      float sum = 0;
      for (size_t k = 0; k < legal_.size(); ++k) {
        exps_[k] = std::exp(row[legal_[k]] - max_logit);
        sum += exps_[k];
      }
      if (!std::isfinite(sum) || !(sum > 0)) {
        return absl::InternalError(
            absl::StrCat("the network produced non-finite policy logits for position ", i));
      }
      std::fill(row.begin(), row.end(), 0.0f);
      for (size_t k = 0; k < legal_.size(); ++k) row[legal_[k]] = exps_[k] / sum;
      const float value = wdl_[3 * i] - wdl_[3 * i + 2];
      if (!std::isfinite(value)) {
        return absl::InternalError(
            absl::StrCat("the network produced a non-finite value for position ", i));
      }
      values[i] = std::clamp(value, -1.0f, 1.0f);
    }
    return absl::OkStatus();
  }

  std::shared_ptr<const InferenceSession> session_;
  games::PlaneShape plane_shape_;
  std::string name_;
  // Buffers reused across calls.
  std::vector<uint8_t> planes_;
  std::vector<float> wdl_;
  std::vector<int> legal_;
  std::vector<float> exps_;
};

}  // namespace zf::model
