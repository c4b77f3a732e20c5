// The hooks of cli/network_runtime.h, with LibTorch behind them (zf-torch only).
#include "cli/network_runtime.h"

#include <memory>
#include <span>
#include <string>
#include <utility>

#include "actor/async_evaluator.h"
#include "common/status_macros.h"
#include "games/registry.h"
#include "model/game_network.h"
#include "model/inference_session.h"
#include "model/local_evaluator.h"

namespace zf::cli {
namespace {

// The batch-1 baseline of `zf bench selfplay`: each position of a request is its own forward
// pass, answered inside Submit (as a home-grown self-play loop with its own model copy would do).
class LocalBatch1Evaluator final : public actor::AsyncEvaluator {
 public:
  explicit LocalBatch1Evaluator(std::shared_ptr<const model::InferenceSession> session)
      : session_(std::move(session)) {}
  absl::Status Submit(std::span<const uint8_t> planes, int rows, Callback done) override {
    const int64_t plane_size = session_->shape().PlaneSize();
    const int actions = session_->shape().num_actions;
    if (rows < 1 || static_cast<int64_t>(planes.size()) != rows * plane_size) {
      return absl::InvalidArgumentError("bad batch");
    }
    Result result;
    result.rows = rows;
    result.model_version = session_->version();
    result.policy_logits.resize(static_cast<size_t>(rows) * actions);
    result.wdl.resize(static_cast<size_t>(rows) * 3);
    const bool with_score = session_->shape().aux_heads;
    result.score.resize(with_score ? static_cast<size_t>(rows) : 0);
    for (int i = 0; i < rows; ++i) {
      absl::Status status = session_->Run(
          planes.subspan(i * plane_size, plane_size), 1,
          std::span<float>(result.policy_logits).subspan(i * actions, actions),
          std::span<float>(result.wdl).subspan(i * 3, 3),
          with_score ? std::span<float>(result.score).subspan(i, 1) : std::span<float>());
      if (!status.ok()) {
        done(status);
        return absl::OkStatus();
      }
    }
    done(std::move(result));
    return absl::OkStatus();
  }

 private:
  std::shared_ptr<const model::InferenceSession> session_;
};

absl::StatusOr<std::shared_ptr<actor::AsyncEvaluator>> MakeLocalActorEvaluator(
    const LocalActorNetwork& network) {
  ZF_ASSIGN_OR_RETURN(games::GameConfig config, games::ParseGameName(network.game));
  model::InferenceSession::Options options;
  options.checkpoint_path = network.checkpoint;
  options.game = config.name;
  if (options.checkpoint_path.empty()) {
    ZF_ASSIGN_OR_RETURN(options.shape,
                        model::NetworkShapeForGame(config, network.blocks, network.filters,
                                                   network.global_pooling));
    ZF_RETURN_IF_ERROR(options.shape->Validate());
    options.seed = 1;
  }
  options.intra_op_threads = 1;
  // Batch 1, one caller: on CUDA one slot with one (batch-1) graph.
  options.device = network.device;
  options.precision = network.precision;
  options.cuda_graphs = network.cuda_graphs;
  options.max_batch = 1;
  options.concurrency = 1;
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<model::InferenceSession> session,
                      model::InferenceSession::Create(options));
  return std::make_shared<LocalBatch1Evaluator>(std::move(session));
}

template <games::Game G>
absl::StatusOr<std::unique_ptr<search::Evaluator<G>>> MakeNetPlayerEvaluator(
    const std::string& checkpoint, const G& start) {
  model::InferenceSession::Options options;
  options.checkpoint_path = checkpoint;
  options.game = start.Name();
  options.device = "cpu";
  options.intra_op_threads = 1;
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<model::InferenceSession> session,
                      model::InferenceSession::Create(options));
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<model::LocalEvaluator<G>> evaluator,
                      model::LocalEvaluator<G>::Create(std::move(session), start));
  return std::unique_ptr<search::Evaluator<G>>(std::move(evaluator));
}

}  // namespace

void InstallNetworkRuntime() {
  // The hooks are per game type, not per board size: every registered type gets one.
  games::RegisteredGames::ForEach([](auto type) {
    using G = typename decltype(type)::type;
    players::NetworkEvaluatorHook<G>() = &MakeNetPlayerEvaluator<G>;
  });
  LocalActorEvaluatorHook() = &MakeLocalActorEvaluator;
  NetworkRuntimeInstalled() = true;
}

}  // namespace zf::cli
