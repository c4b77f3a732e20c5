#include "inference_server/serving_model.h"

#include <algorithm>
#include <utility>

#include "common/status_macros.h"
#include "inference_server/torch_backend.h"
#include "model/inference_session.h"

namespace zf::inference {

absl::StatusOr<ServingModel> LoadServingModel(const ServingModelOptions& o) {
  model::InferenceSession::Options options;
  options.checkpoint_path = o.checkpoint;
  options.game = o.game;
  options.shape = o.shape;
  options.seed = o.seed;
  options.device = o.device;
  options.precision = o.precision;
  options.cuda_graphs = o.cuda_graphs;
  options.max_batch = o.max_batch;
  options.concurrency = o.concurrency;
  options.intra_op_threads = o.intra_op_threads;
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<model::InferenceSession> session,
                      model::InferenceSession::Create(options));
  ServingModel out;
  out.game = session->game();
  out.shape = session->shape();
  TorchBackend::Options backend;
  backend.session = std::move(session);
  backend.max_batch = o.max_batch;
  ZF_ASSIGN_OR_RETURN(out.backend, TorchBackend::Create(std::move(backend)));
  return out;
}

}  // namespace zf::inference
