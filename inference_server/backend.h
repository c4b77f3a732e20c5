// Backend: the batch-shaped network interface the inference server's batcher evaluates through.
//
// In the spirit of lc0's network backends: a small interface that takes a whole batch of encoded
// positions and fills whole output buffers, so implementations (LibTorch on CPU or CUDA, the
// deterministic fake for tests) and decorators (caching, checking, recording) can wrap each other.
// The batcher knows only this interface; it never sees LibTorch.
//
// A backend is immutable after construction: its ModelSpec, max_batch() and version() never
// change. A new model is a new Backend, which the batcher switches to between batches
// (Batcher::SwapBackend).
//
// Thread-safety: implementations must be thread-safe. The batcher calls Run from several worker
// threads at once (at least two batches in flight).
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "absl/status/status.h"

namespace zf::inference {

// The tensor shapes of one model: input planes [C, H, W] as uint8, policy logits [A], a
// win/draw/loss value [3] per position, and, for a model with a score head, a score [1].
struct ModelSpec {
  static constexpr int kWdlSize = 3;

  int input_channels = 0;
  int board_height = 0;
  int board_width = 0;
  int num_actions = 0;
  // The model has a score head (model/network.h's aux heads): Run can also write each
  // position's expected final margin for the player to move, in points / sqrt(H * W).
  bool score = false;

  // Bytes of one position's planes: C * H * W.
  int64_t PlaneSize() const { return int64_t{input_channels} * board_height * board_width; }

  // Returns: OK if every field is at least 1 and a position is at most 2^24 bytes with at most
  // 2^20 actions; InvalidArgument naming the bad field otherwise.
  absl::Status Validate() const;

  // The same planes and actions as `other` (the score head may differ): models that can
  // replace each other behind one server.
  bool SameInputsAndActions(const ModelSpec& other) const {
    return input_channels == other.input_channels && board_height == other.board_height &&
           board_width == other.board_width && num_actions == other.num_actions;
  }

  // e.g. "3x6x7 -> 7 actions" (", with score" for a model with a score head).
  std::string DebugString() const;

  bool operator==(const ModelSpec&) const = default;
};

class Backend {
 public:
  virtual ~Backend() = default;

  // The shapes of the model; constant for the backend's lifetime.
  virtual const ModelSpec& spec() const = 0;
  // The largest `batch` Run accepts; constant, at least 1.
  virtual int max_batch() const = 0;
  // The model version this backend evaluates (0 for a fresh, untrained network); constant.
  // The batcher stamps every answer with it.
  virtual int64_t version() const = 0;

  // Evaluates `batch` positions (1 <= batch <= max_batch()). `planes` holds
  // batch * spec().PlaneSize() bytes, position after position. Writes
  //   policy_logits[i * A + a]: the raw logit of action a in position i (A = num_actions),
  //   wdl[i * 3 + k]: P(win), P(draw), P(loss) for the player to move,
  //   scores[i] (only when `scores` is not empty): the expected final margin for the player to
  //     move, in points / sqrt(H * W).
  // The spans must have exactly these sizes; `scores` may be non-empty (`batch` floats) only
  // when spec().score. Blocks for one forward pass. Thread-safe.
  // Returns: OK; InvalidArgument for a bad batch or span size (the message says which, with the
  // expected and actual size); ResourceExhausted when the device is out of memory; Internal or
  // Unavailable for a backend failure (the outputs are then unspecified).
  virtual absl::Status Run(std::span<const uint8_t> planes, int batch,
                           std::span<float> policy_logits, std::span<float> wdl,
                           std::span<float> scores) = 0;
  // Run without scores.
  absl::Status Run(std::span<const uint8_t> planes, int batch, std::span<float> policy_logits,
                   std::span<float> wdl) {
    return Run(planes, batch, policy_logits, wdl, {});
  }
};

// Checks Run's arguments against `spec` and `max_batch`, for implementations.
// Returns: OK, or InvalidArgument naming the bad argument with expected and actual sizes.
absl::Status ValidateRunArguments(const ModelSpec& spec, int max_batch,
                                  std::span<const uint8_t> planes, int batch,
                                  std::span<float> policy_logits, std::span<float> wdl,
                                  std::span<float> scores = {});

}  // namespace zf::inference
