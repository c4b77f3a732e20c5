#include "cli/serving_model.h"

#include <algorithm>
#include <thread>
#include <utility>

#include "common/status_macros.h"
#include "inference_server/torch_backend.h"
#include "model/inference_session.h"

namespace zf::cli {

absl::StatusOr<ServingModel> LoadServingModel(const std::string& checkpoint,
                                              const std::string& game,
                                              std::optional<model::NetworkShape> shape,
                                              uint64_t seed, int max_batch, int intra_op_threads) {
  model::InferenceSession::Options options;
  options.checkpoint_path = checkpoint;
  options.game = game;
  options.shape = shape;
  options.seed = seed;
  options.device = "auto";
  // A CPU server parallelizes inside the forward pass; on CUDA this only sizes the CPU pool.
  options.intra_op_threads =
      intra_op_threads > 0 ? intra_op_threads
                           : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<model::InferenceSession> session,
                      model::InferenceSession::Create(options));
  ServingModel out;
  out.game = session->game();
  out.shape = session->shape();
  inference::TorchBackend::Options backend;
  backend.session = std::move(session);
  backend.max_batch = max_batch;
  ZF_ASSIGN_OR_RETURN(out.backend, inference::TorchBackend::Create(std::move(backend)));
  return out;
}

}  // namespace zf::cli
