// TorchBackend: the Backend that runs a LibTorch network through model::InferenceSession.
//
// A thin adapter: the session already copies the planes to its device, runs the network under
// inference mode and writes logits and win/draw/loss probabilities into the caller's buffers;
// this class adds the Backend shape (ModelSpec from the network's shape, a batch limit, the model
// version). The header is torch-free; only model/ compiles LibTorch.
//
//   ZF_ASSIGN_OR_RETURN(auto session, model::InferenceSession::Create({.checkpoint_path = p,
//                                                                      .device = "auto"}));
//   ZF_ASSIGN_OR_RETURN(auto backend, TorchBackend::Create({.session = std::move(session)}));
//
// Thread-safe (InferenceSession::Run is). Owns the session (shared: a caller may keep using it).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "inference_server/backend.h"
#include "model/inference_session.h"

namespace zf::inference {

class TorchBackend : public Backend {
 public:
  struct Options {
    // Required.
    std::shared_ptr<const model::InferenceSession> session;
    // The largest batch Run accepts (the batcher's max_batch must not exceed it). At least 1.
    int max_batch = 1024;
    // The version stamped on answers; default: the session's (its checkpoint's) version.
    std::optional<int64_t> version;

    // Returns: InvalidArgument for a missing session, max_batch < 1 or a negative version.
    absl::Status Validate() const;
  };

  // Returns the backend, or InvalidArgument (see Options::Validate, and a session whose network
  // shape is not a valid ModelSpec).
  static absl::StatusOr<std::unique_ptr<TorchBackend>> Create(Options options);

  const ModelSpec& spec() const override { return spec_; }
  int max_batch() const override { return max_batch_; }
  int64_t version() const override { return version_; }

  // One InferenceSession::Run. Blocks for the forward pass.
  // Returns: OK; InvalidArgument for bad arguments (ValidateRunArguments); the session's errors
  // (ResourceExhausted when the device is out of memory, Internal for a LibTorch error).
  using Backend::Run;
  absl::Status Run(std::span<const uint8_t> planes, int batch, std::span<float> policy_logits,
                   std::span<float> wdl, std::span<float> scores) override;

 private:
  TorchBackend(std::shared_ptr<const model::InferenceSession> session, ModelSpec spec,
               int max_batch, int64_t version)
      : session_(std::move(session)), spec_(spec), max_batch_(max_batch), version_(version) {}

  const std::shared_ptr<const model::InferenceSession> session_;
  const ModelSpec spec_;
  const int max_batch_;
  const int64_t version_;
};

}  // namespace zf::inference
