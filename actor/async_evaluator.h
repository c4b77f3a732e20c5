// AsyncEvaluator: what an actor needs from a network: submit a batch of encoded positions and be
// called back with the answer later, so that several batches can be in flight at once.
//
// The production implementation is RemoteAsyncEvaluator, over the inference server's
// RemoteEvaluatorClient (one gRPC stream, requests matched by id, reconnect and re-send). Tests
// implement the interface directly (e.g. one that holds requests until told to answer); the
// batch-1 baseline of `zf bench selfplay` implements it in the CLI over an in-process network
// (LibTorch stays out of actor/).
//
// Thread-safety: implementations must be thread-safe (several actor workers submit at once).
// The callback may run on any thread, including inside Submit itself, with no lock of the
// evaluator held.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <utility>

#include "absl/status/status.h"
#include "inference_server/client/remote_evaluator_client.h"

namespace zf::actor {

class AsyncEvaluator {
 public:
  // The answer to one batch: rows, the model version, policy logits [rows, A] and win/draw/loss
  // probabilities [rows, 3] for the player to move.
  using Result = inference::RemoteEvaluatorClient::Result;
  using Callback = inference::RemoteEvaluatorClient::Callback;

  virtual ~AsyncEvaluator() = default;

  // Queues `rows` positions (`planes`: rows * C * H * W bytes, copied before returning). On OK,
  // `done` runs exactly once later (or before Submit returns) with the Result or the batch's
  // error (Cancelled when the evaluator shuts down first).
  // Returns: OK; InvalidArgument for a bad batch; Cancelled after shutdown.
  virtual absl::Status Submit(std::span<const uint8_t> planes, int rows, Callback done) = 0;
};

// AsyncEvaluator over a RemoteEvaluatorClient (shared; it stays alive as long as this does).
// Thread-safe.
class RemoteAsyncEvaluator final : public AsyncEvaluator {
 public:
  explicit RemoteAsyncEvaluator(std::shared_ptr<inference::RemoteEvaluatorClient> client)
      : client_(std::move(client)) {}
  absl::Status Submit(std::span<const uint8_t> planes, int rows, Callback done) override {
    return client_->Submit(planes, rows, std::move(done));
  }
  inference::RemoteEvaluatorClient& client() { return *client_; }

 private:
  std::shared_ptr<inference::RemoteEvaluatorClient> client_;
};

}  // namespace zf::actor
