// RemoteEvaluator<G>: a search::Evaluator over an inference::RemoteEvaluatorClient, for simple
// synchronous use (one batch at a time). The client speaks tensors (planes in, logits and WDL
// out); this adapter is where a game's positions become planes and answers become priors. The
// actor's workers submit through the client directly to keep several requests in flight; this
// adapter blocks for each batch.
//
// Evaluate encodes the positions into one request, waits for the answer, and turns it into
// priors and values as LocalEvaluator does: a softmax over the legal actions' logits (0 for
// illegal actions) and value = P(win) - P(loss) for the player to move.
//
// Thread-compatible: one Evaluate at a time per instance (it reuses buffers). The client must
// outlive the evaluator.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/status_macros.h"
#include "games/game.h"
#include "inference_server/client/remote_evaluator_client.h"
#include "search/evaluator.h"

namespace zf::actor {

template <games::Game G>
class RemoteEvaluator final : public search::Evaluator<G> {
 public:
  explicit RemoteEvaluator(inference::RemoteEvaluatorClient* client) : client_(client) {}

  // Blocks until the server answers (through reconnections, if any).
  // Returns: OK; InvalidArgument for wrong span sizes or a terminal position; the request's
  // error (InvalidArgument when the server's model does not fit the game, Cancelled when the
  // client is closed, Internal for a malformed or non-finite answer).
  absl::Status Evaluate(std::span<const G> positions, std::span<float> policies,
                        std::span<float> values) override {
    return Run(positions, policies, values, {});
  }

  // Evaluate, with the server's scores (NaN when its model has no score head).
  absl::Status EvaluateWithScores(std::span<const G> positions, std::span<float> policies,
                                  std::span<float> values, std::span<float> scores) override {
    ZF_RETURN_IF_ERROR(this->CheckScoresSize(scores.size(), positions.size()));
    return Run(positions, policies, values, scores);
  }

 private:
  // Evaluate; fills `scores` too unless it is empty.
  absl::Status Run(std::span<const G> positions, std::span<float> policies, std::span<float> values,
                   std::span<float> scores) {
    const int64_t n = static_cast<int64_t>(positions.size());
    if (n == 0) return absl::OkStatus();
    const int actions = positions[0].NumActions();
    if (static_cast<int64_t>(policies.size()) != n * actions ||
        static_cast<int64_t>(values.size()) != n) {
      return absl::InvalidArgumentError(absl::StrCat("policies/values have ", policies.size(), "/",
                                                     values.size(), " floats, expected ",
                                                     n * actions, "/", n));
    }
    const games::PlaneShape shape = positions[0].Shape();
    const int64_t plane_size = int64_t{shape.channels} * shape.height * shape.width;
    planes_.assign(static_cast<size_t>(n * plane_size), 0);
    for (int64_t i = 0; i < n; ++i) {
      if (positions[i].IsTerminal()) {
        return absl::InvalidArgumentError(absl::StrCat("position ", i, " is terminal"));
      }
      positions[i].Encode(planes_.data() + i * plane_size);
    }
    absl::Notification answered;
    absl::StatusOr<inference::RemoteEvaluatorClient::Result> result;
    absl::Status submitted =
        client_->Submit(planes_, static_cast<int>(n),
                        [&](absl::StatusOr<inference::RemoteEvaluatorClient::Result> r) {
                          result = std::move(r);
                          answered.Notify();
                        });
    if (!submitted.ok()) return submitted;
    answered.WaitForNotification();
    if (!result.ok()) return result.status();
    if (static_cast<int64_t>(result->policy_logits.size()) != n * actions) {
      return absl::InvalidArgumentError(absl::StrCat("the server's model has ",
                                                     result->policy_logits.size() / n,
                                                     " actions, the game ", actions));
    }
    for (int64_t i = 0; i < n; ++i) {
      std::span<float> row = policies.subspan(i * actions, actions);
      const float* logits = result->policy_logits.data() + i * actions;
      positions[i].LegalActions(&legal_);
      float max_logit = -std::numeric_limits<float>::infinity();
      for (int a : legal_) max_logit = std::max(max_logit, logits[a]);
      std::fill(row.begin(), row.end(), 0.0f);
      float sum = 0;
      for (int a : legal_) {
        row[a] = std::exp(logits[a] - max_logit);
        sum += row[a];
      }
      if (!std::isfinite(sum) || !(sum > 0)) {
        return absl::InternalError(absl::StrCat("non-finite policy logits for position ", i));
      }
      for (int a : legal_) row[a] /= sum;
      const float value = result->wdl[3 * i] - result->wdl[3 * i + 2];
      if (!std::isfinite(value)) {
        return absl::InternalError(absl::StrCat("non-finite value for position ", i));
      }
      values[i] = std::clamp(value, -1.0f, 1.0f);
      if (!scores.empty()) {
        scores[i] =
            result->score.empty() ? std::numeric_limits<float>::quiet_NaN() : result->score[i];
      }
    }
    return absl::OkStatus();
  }

  inference::RemoteEvaluatorClient* const client_;
  std::vector<uint8_t> planes_;
  std::vector<int> legal_;
};

}  // namespace zf::actor
