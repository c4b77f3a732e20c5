// NullBackend: a Backend that costs nothing. It answers every position at once with fixed
// outputs (every policy logit 0, win/draw/loss 1/3 each, score 0), so that a server over it
// spends its CPU on the host path alone: gRPC, request decoding and validation, batch assembly,
// the copies, answer encoding. `zf inference --backend null` serves it and `zf bench serving`
// measures the server's CPU-seconds per evaluation with it (docs/benchmarks.md), which bounds
// how many evaluations/s a server host can ever feed a GPU: cores / (CPU-seconds per evaluation).
// (FakeBackend computes an answer from each position's bytes, for tests that check routing; that
// hash costs about as much as the host path itself.)
//
// Thread-safe and immutable.
#pragma once

#include <cstdint>
#include <span>

#include "absl/status/status.h"
#include "inference_server/backend.h"

namespace zf::inference {

class NullBackend : public Backend {
 public:
  // `spec` must be valid (ModelSpec::Validate) and `max_batch` at least 1.
  NullBackend(const ModelSpec& spec, int max_batch, int64_t version)
      : spec_(spec), max_batch_(max_batch), version_(version) {}

  const ModelSpec& spec() const override { return spec_; }
  int max_batch() const override { return max_batch_; }
  int64_t version() const override { return version_; }

  // Checks the sizes (ValidateRunArguments) and writes the fixed outputs.
  // Returns: OK; InvalidArgument for bad arguments.
  using Backend::Run;
  absl::Status Run(std::span<const uint8_t> planes, int batch, std::span<float> policy_logits,
                   std::span<float> wdl, std::span<float> scores) override;

 private:
  const ModelSpec spec_;
  const int max_batch_;
  const int64_t version_;
};

}  // namespace zf::inference
