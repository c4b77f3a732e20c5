// Loading a network for serving: a checkpoint (or a fresh network) wrapped as the inference
// server's TorchBackend. Shared by `zf inference` and `zf run`.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "inference_server/backend.h"
#include "model/network.h"

namespace zf::cli {

struct ServingModel {
  std::shared_ptr<inference::Backend> backend;
  std::string game;
  model::NetworkShape shape;
};

// Loads `checkpoint` (or, when it is empty, a fresh network for `game` with `shape`, seeded
// with `seed`) as a TorchBackend taking batches of up to `max_batch` rows. With a checkpoint, a
// non-empty `game` and a set `shape` must match it. `intra_op_threads` <= 0: one per core.
// Returns: the model; the session's errors (NotFound, DataLoss, InvalidArgument).
absl::StatusOr<ServingModel> LoadServingModel(const std::string& checkpoint,
                                              const std::string& game,
                                              std::optional<model::NetworkShape> shape,
                                              uint64_t seed, int max_batch,
                                              int intra_op_threads = 0);

}  // namespace zf::cli
