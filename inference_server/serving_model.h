// Loading a network for serving: a checkpoint (or a fresh network) wrapped as the inference
// server's TorchBackend. Shared by `zf inference` and the in-process fleet of `zf run`.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "inference_server/backend.h"
#include "model/network.h"

namespace zf::inference {

struct ServingModel {
  std::shared_ptr<Backend> backend;
  std::string game;
  model::NetworkShape shape;
};

struct ServingModelOptions {
  // A checkpoint file; empty: a fresh network for `game` with `shape`, seeded with `seed`.
  std::string checkpoint;
  // With a checkpoint, a non-empty `game` and a set `shape` must match it.
  std::string game;
  std::optional<model::NetworkShape> shape;
  uint64_t seed = 0;
  // The largest batch the backend takes (the batcher's max_batch).
  int max_batch = 256;
  // LibTorch/OpenBLAS intra-op threads, >= 1 (a CPU server parallelizes inside the forward pass;
  // on CUDA this only sizes the CPU pool). `zf inference` takes OMP_NUM_THREADS or every core.
  int intra_op_threads = 1;
  // model::InferenceSession::Options: device, precision, CUDA graphs, and the Runs that proceed
  // at once (give it the batcher's worker count).
  std::string device = "auto";
  std::string precision = "auto";
  bool cuda_graphs = true;
  int concurrency = 2;
};

// Loads the network as a TorchBackend.
// Returns: the model; the session's errors (NotFound, DataLoss, InvalidArgument).
absl::StatusOr<ServingModel> LoadServingModel(const ServingModelOptions& options);

}  // namespace zf::inference
