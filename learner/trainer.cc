// The learner's only LibTorch translation unit with the nn and optim headers.
#include "learner/trainer.h"

#include <ATen/Parallel.h>
#include <torch/cuda.h>
#if ZF_WITH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif
#include <dlfcn.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>
#include <torch/types.h>

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "model/internal/network_ops.h"
#include "model/internal/residual_net.h"
#include "model/internal/torch_compat.h"

namespace zf::learner {
namespace {

using model::internal::ResidualNetImpl;
using model::internal::TorchCall;

// Gives the calling thread `threads` OpenMP threads for its LibTorch kernels, leaving every
// other thread (and LibTorch's process-wide setting) alone: in `zf run` the inference server's
// threads stay at their one. OpenMP's thread count is a per-thread setting; LibTorch applies its
// process-wide one to a thread once, lazily, so that happens first. The OpenMP functions are
// looked up at run time so that they are the runtime LibTorch itself loaded (a pip wheel bundles
// its own libgomp); without one (a non-OpenMP build) this does nothing. Checked on every call
// (two cheap calls), so a count set on this thread by something else is put back.
void UseTrainingThreadsOnThisThread(int threads) {
  if (threads <= 0) return;
  using SetThreadsFn = void (*)(int);
  using GetThreadsFn = int (*)();
  static auto* const omp_set_num_threads =
      reinterpret_cast<SetThreadsFn>(::dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  static auto* const omp_get_max_threads =
      reinterpret_cast<GetThreadsFn>(::dlsym(RTLD_DEFAULT, "omp_get_max_threads"));
  if (omp_set_num_threads == nullptr || omp_get_max_threads == nullptr) return;
  at::internal::lazy_init_num_threads();  // its per-thread flag is one across the process
  if (omp_get_max_threads() != threads) omp_set_num_threads(threads);
}

// Optimizer-state section: an OutputArchive with "kind" (0 SGD, 1 AdamW) and, per parameter
// name N, "N/momentum_buffer" (SGD) or "N/step", "N/exp_avg", "N/exp_avg_sq" (AdamW); only
// parameters that have a state (they have had a gradient) appear. Keyed by name, not by
// LibTorch's pointer-derived keys, whose format differs between LibTorch versions.
constexpr int64_t kSgdKind = 0;
constexpr int64_t kAdamWKind = 1;

// The optimizer's state-map key of parameter `p`, whatever the key type of this LibTorch:
// the TensorImpl address as text (1.13: c10::guts::to_string, i.e. ostream <<) or as void*
// (2.2 and later).
template <typename Map>
typename Map::key_type StateKey(const torch::Tensor& p) {
  using Key = typename Map::key_type;
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream os;
    os << static_cast<const void*>(p.unsafeGetTensorImpl());
    return os.str();
  } else {
    return static_cast<Key>(p.unsafeGetTensorImpl());
  }
}

absl::StatusOr<torch::Device> ResolveDevice(const std::string& text) {
  if (text == "cpu") return torch::Device(torch::kCPU);
  const bool cuda_available = torch::cuda::is_available();
  if (text == "auto") {
    return cuda_available ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
  }
  int index = 0;
  absl::string_view rest = text;
  if (rest == "cuda" || (absl::ConsumePrefix(&rest, "cuda:") && absl::SimpleAtoi(rest, &index) &&
                         index >= 0 && index < 64)) {
    if (!cuda_available) {
      return absl::InvalidArgumentError(
          absl::StrCat("device ", text, " requested but this LibTorch has no usable CUDA"));
    }
    return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("device must be cpu, cuda, cuda:N or auto, got \"", text, "\""));
}

// Copies `bytes` into a new CPU tensor of `sizes` and `dtype` (the proto's bytes need not be
// aligned for the dtype, and the tensor must own its memory).
torch::Tensor FromBytes(const std::string& bytes, std::vector<int64_t> sizes,
                        torch::ScalarType dtype) {
  torch::Tensor t = torch::empty(sizes, torch::TensorOptions().dtype(dtype));
  std::memcpy(t.data_ptr(), bytes.data(), bytes.size());
  return t;
}

}  // namespace

absl::StatusOr<OptimizerKind> ParseOptimizerKind(const std::string& name) {
  if (name == "sgd") return OptimizerKind::kSgd;
  if (name == "adamw") return OptimizerKind::kAdamW;
  return absl::InvalidArgumentError(
      absl::StrCat("optimizer must be sgd or adamw, got \"", name, "\""));
}

absl::Status TrainerOptions::Validate() const {
  ZF_RETURN_IF_ERROR(shape.Validate());
  ZF_RETURN_IF_ERROR(lr.Validate());
  auto bad = [](absl::string_view field, double value, absl::string_view range) {
    return absl::InvalidArgumentError(
        absl::StrCat("trainer: ", field, " must be ", range, ", got ", value));
  };
  if (!(momentum >= 0 && momentum < 1)) return bad("momentum", momentum, "in [0, 1)");
  if (!(weight_decay >= 0) || !std::isfinite(weight_decay)) {
    return bad("weight_decay", weight_decay, ">= 0");
  }
  if (!(adam_beta1 >= 0 && adam_beta1 < 1)) return bad("adam_beta1", adam_beta1, "in [0, 1)");
  if (!(adam_beta2 >= 0 && adam_beta2 < 1)) return bad("adam_beta2", adam_beta2, "in [0, 1)");
  if (!(adam_eps > 0)) return bad("adam_eps", adam_eps, "> 0");
  if (!(max_grad_norm >= 0) || !std::isfinite(max_grad_norm)) {
    return bad("max_grad_norm", max_grad_norm, ">= 0");
  }
  if (!(value_weight >= 0) || !std::isfinite(value_weight)) {
    return bad("value_weight", value_weight, ">= 0");
  }
  if (!(ownership_weight >= 0) || !std::isfinite(ownership_weight)) {
    return bad("ownership_weight", ownership_weight, ">= 0");
  }
  if (!(score_weight >= 0) || !std::isfinite(score_weight)) {
    return bad("score_weight", score_weight, ">= 0");
  }
  if (report_every < 0 || report_every > 10000) {
    return bad("report_every", report_every, "in [0, 10000]");
  }
  if (intra_op_threads < 0 || intra_op_threads > 1024) {
    return bad("intra_op_threads", intra_op_threads, "in [0, 1024]");
  }
  return absl::OkStatus();
}

absl::Status ValidateBatch(const zerofleet::v1::SampleBatch& batch,
                           const model::NetworkShape& shape, const std::string& game) {
  auto bad = [](absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat("training batch: ", what));
  };
  const int64_t b = batch.batch_size();
  if (b < 1 || b > (1 << 20)) return bad(absl::StrCat("batch_size ", b, " is not in [1, 2^20]"));
  if (!game.empty() && !batch.game().empty() && batch.game() != game) {
    return bad(absl::StrCat("game \"", batch.game(), "\" but the network plays \"", game, "\""));
  }
  const auto& ps = batch.plane_shape();
  if (ps.channels() != shape.input_channels || ps.height() != shape.board_height ||
      ps.width() != shape.board_width) {
    return bad(absl::StrCat("planes ", ps.channels(), "x", ps.height(), "x", ps.width(),
                            " but the network takes ", shape.input_channels, "x",
                            shape.board_height, "x", shape.board_width));
  }
  if (batch.num_actions() != shape.num_actions) {
    return bad(
        absl::StrCat(batch.num_actions(), " actions but the network has ", shape.num_actions));
  }
  auto check_size = [&](absl::string_view name, size_t actual, int64_t expected) {
    if (static_cast<int64_t>(actual) != expected) {
      return bad(absl::StrCat(name, " has ", actual, " bytes, expected ", expected));
    }
    return absl::OkStatus();
  };
  ZF_RETURN_IF_ERROR(check_size("planes", batch.planes().size(), b * shape.PlaneSize()));
  ZF_RETURN_IF_ERROR(check_size("policy", batch.policy().size(), b * shape.num_actions * 4));
  ZF_RETURN_IF_ERROR(check_size("value", batch.value().size(), b * 4));
  if (!batch.policy_mask().empty()) {
    ZF_RETURN_IF_ERROR(check_size("policy_mask", batch.policy_mask().size(), b));
  }
  for (size_t i = 0; i < batch.policy().size(); i += 4) {
    float v;
    std::memcpy(&v, batch.policy().data() + i, 4);
    if (!(v >= 0 && v <= 1)) return bad(absl::StrCat("policy entry ", i / 4, " is ", v));
  }
  for (int64_t i = 0; i < b; ++i) {
    float v;
    std::memcpy(&v, batch.value().data() + 4 * i, 4);
    if (!(v >= -1 && v <= 1)) return bad(absl::StrCat("value ", i, " is ", v));
  }
  if (!batch.ownership().empty() || !batch.score().empty() || !batch.aux_mask().empty()) {
    const int64_t cells = int64_t{shape.board_height} * shape.board_width;
    ZF_RETURN_IF_ERROR(check_size("ownership", batch.ownership().size(), b * cells));
    ZF_RETURN_IF_ERROR(check_size("score", batch.score().size(), b * 4));
    ZF_RETURN_IF_ERROR(check_size("aux_mask", batch.aux_mask().size(), b));
    for (size_t i = 0; i < batch.ownership().size(); ++i) {
      const int o = static_cast<int8_t>(batch.ownership()[i]);
      if (o < -1 || o > 1) return bad(absl::StrCat("ownership entry ", i, " is ", o));
    }
    for (int64_t i = 0; i < b; ++i) {
      float v;
      std::memcpy(&v, batch.score().data() + 4 * i, 4);
      if (!std::isfinite(v) || std::abs(v) > 4.0f * static_cast<float>(cells)) {
        return bad(absl::StrCat("score ", i, " is ", v));
      }
      const auto m = static_cast<uint8_t>(batch.aux_mask()[i]);
      if (m > 1) return bad(absl::StrCat("aux_mask ", i, " is ", static_cast<int>(m)));
    }
  }
  return absl::OkStatus();
}

// One batch on the training device.
struct DeviceBatch {
  torch::Tensor planes;  // uint8 [B, C, H, W]
  torch::Tensor pi;      // float [B, A]
  torch::Tensor z;       // float [B]
  torch::Tensor mask;    // float [B]
  // Only when the batch has ownership targets:
  torch::Tensor ownership;  // float [B, H*W] in {-1, 0, 1}
  torch::Tensor score;      // float [B], in points
  torch::Tensor aux_mask;   // float [B]
};

namespace {

// The batch's ownership targets, when it has them, on the CPU (CUDA packs them into its one
// pinned upload block instead).
void UploadAux(const zerofleet::v1::SampleBatch& batch, const model::NetworkShape& s,
               torch::Device device, DeviceBatch* out) {
  if (batch.ownership().empty()) return;
  const int64_t b = batch.batch_size();
  out->ownership =
      FromBytes(batch.ownership(), {b, int64_t{s.board_height} * s.board_width}, torch::kInt8)
          .to(device)
          .to(torch::kFloat);
  out->score = FromBytes(batch.score(), {b}, torch::kFloat).to(device);
  out->aux_mask = FromBytes(batch.aux_mask(), {b}, torch::kUInt8).to(device).to(torch::kFloat);
}

}  // namespace

struct Trainer::Impl {
  torch::Device device{torch::kCPU};
  std::shared_ptr<ResidualNetImpl> net;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  int report_every = 1;
  bool autocast = false;
  bool channels_last = false;  // TrainerOptions::cpu_channels_last on the CPU
  // Since the last report, on the device: sums of policy, value and total loss and of the
  // gradient norm, and how many steps they hold.
  torch::Tensor sums;
  int pending = 0;
  StepResult last_report;
#if ZF_WITH_CUDA
  // The upload path: two pinned staging buffers used in turn, each free again once its event
  // (recorded after its upload) has passed.
  struct Staging {
    torch::Tensor pinned;  // uint8
    at::cuda::CUDAEvent uploaded;
    bool in_use = false;
  };
  std::optional<c10::cuda::CUDAStream> upload_stream;
  std::array<Staging, 2> staging;
  int next_staging = 0;
#endif

  DeviceBatch Upload(const zerofleet::v1::SampleBatch& batch, const model::NetworkShape& s);
};

DeviceBatch Trainer::Impl::Upload(const zerofleet::v1::SampleBatch& batch,
                                  const model::NetworkShape& s) {
  const int64_t b = batch.batch_size();
  const std::vector<int64_t> plane_sizes = {b, s.input_channels, s.board_height, s.board_width};
#if ZF_WITH_CUDA
  if (device.is_cuda()) {
    // One block: the float32 parts first (4-byte aligned), then the 1-byte ones; the ownership
    // parts are empty (0 bytes) for a batch without them.
    const int64_t policy_bytes = static_cast<int64_t>(batch.policy().size());
    const int64_t value_bytes = static_cast<int64_t>(batch.value().size());
    const int64_t score_bytes = static_cast<int64_t>(batch.score().size());
    const int64_t plane_bytes = static_cast<int64_t>(batch.planes().size());
    const int64_t mask_bytes = static_cast<int64_t>(batch.policy_mask().size());
    const int64_t ownership_bytes = static_cast<int64_t>(batch.ownership().size());
    const int64_t aux_mask_bytes = static_cast<int64_t>(batch.aux_mask().size());
    const int64_t score_at = policy_bytes + value_bytes;
    const int64_t planes_at = score_at + score_bytes;
    const int64_t mask_at = planes_at + plane_bytes;
    const int64_t ownership_at = mask_at + mask_bytes;
    const int64_t aux_mask_at = ownership_at + ownership_bytes;
    const int64_t total = aux_mask_at + aux_mask_bytes;
    Staging& st = staging[next_staging];
    next_staging = (next_staging + 1) % static_cast<int>(staging.size());
    if (st.in_use) st.uploaded.synchronize();  // its previous upload has long finished
    if (!st.pinned.defined() || st.pinned.numel() < total) {
      st.pinned =
          torch::empty({total}, torch::TensorOptions().dtype(torch::kUInt8).pinned_memory(true));
    }
    uint8_t* host = st.pinned.data_ptr<uint8_t>();
    std::memcpy(host, batch.policy().data(), policy_bytes);
    std::memcpy(host + policy_bytes, batch.value().data(), value_bytes);
    std::memcpy(host + score_at, batch.score().data(), score_bytes);
    std::memcpy(host + planes_at, batch.planes().data(), plane_bytes);
    std::memcpy(host + mask_at, batch.policy_mask().data(), mask_bytes);
    std::memcpy(host + ownership_at, batch.ownership().data(), ownership_bytes);
    std::memcpy(host + aux_mask_at, batch.aux_mask().data(), aux_mask_bytes);
    const c10::cuda::CUDAStream compute = c10::cuda::getCurrentCUDAStream(device.index());
    torch::Tensor block;
    {
      // Allocated on the upload stream and marked as used by the compute stream, so the caching
      // allocator reuses it only once the step that reads it has run, however far the host runs
      // ahead of the GPU (up to report_every steps).
      c10::cuda::CUDAStreamGuard guard(*upload_stream);
      block = torch::empty({total}, torch::TensorOptions().dtype(torch::kUInt8).device(device));
      block.copy_(st.pinned.narrow(0, 0, total), /*non_blocking=*/true);
      block.record_stream(compute);
      st.uploaded.record(*upload_stream);
    }
    st.uploaded.block(compute);
    st.in_use = true;
    DeviceBatch out;
    out.pi = block.narrow(0, 0, policy_bytes).view(torch::kFloat).view({b, s.num_actions});
    out.z = block.narrow(0, policy_bytes, value_bytes).view(torch::kFloat);
    out.planes = block.narrow(0, planes_at, plane_bytes).view(plane_sizes);
    out.mask = mask_bytes == 0 ? torch::ones({b}, torch::TensorOptions().device(device))
                               : block.narrow(0, mask_at, mask_bytes).to(torch::kFloat);
    if (ownership_bytes > 0) {
      out.score = block.narrow(0, score_at, score_bytes).view(torch::kFloat);
      out.ownership = block.narrow(0, ownership_at, ownership_bytes)
                          .view(torch::kInt8)
                          .view({b, int64_t{s.board_height} * s.board_width})
                          .to(torch::kFloat);
      out.aux_mask = block.narrow(0, aux_mask_at, aux_mask_bytes).to(torch::kFloat);
    }
    return out;
  }
#endif
  // CPU: uint8 planes stay uint8 until the network's input conversion.
  DeviceBatch out;
  out.planes = FromBytes(batch.planes(), plane_sizes, torch::kUInt8).to(device);
  out.pi = FromBytes(batch.policy(), {b, s.num_actions}, torch::kFloat).to(device);
  out.z = FromBytes(batch.value(), {b}, torch::kFloat).to(device);
  out.mask = batch.policy_mask().empty()
                 ? torch::ones({b}, torch::TensorOptions().device(device))
                 : FromBytes(batch.policy_mask(), {b}, torch::kUInt8).to(device).to(torch::kFloat);
  UploadAux(batch, s, device, &out);
  return out;
}

Trainer::Trainer(TrainerOptions options, std::unique_ptr<Impl> impl)
    : options_(std::move(options)), impl_(std::move(impl)) {}
Trainer::~Trainer() = default;

namespace {

std::unique_ptr<torch::optim::Optimizer> MakeOptimizer(const TrainerOptions& o,
                                                       ResidualNetImpl& net) {
  if (o.optimizer == OptimizerKind::kAdamW) {
    return std::make_unique<torch::optim::AdamW>(net.parameters(),
                                                 torch::optim::AdamWOptions(o.lr.lr)
                                                     .betas({o.adam_beta1, o.adam_beta2})
                                                     .eps(o.adam_eps)
                                                     .weight_decay(o.weight_decay));
  }
  return std::make_unique<torch::optim::SGD>(
      net.parameters(),
      torch::optim::SGDOptions(o.lr.lr).momentum(o.momentum).weight_decay(o.weight_decay));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Trainer>> Trainer::Create(const TrainerOptions& options) {
  ZF_RETURN_IF_ERROR(options.Validate());
  auto impl = std::make_unique<Impl>();
  ZF_ASSIGN_OR_RETURN(impl->device, ResolveDevice(options.device));
  if (options.intra_op_threads > 0) {
    TorchCall(absl::StatusCode::kInternal, "setting threads", [&] {
      at::set_num_threads(options.intra_op_threads);
    }).IgnoreError();
  }
  ZF_ASSIGN_OR_RETURN(impl->net, model::internal::CreateNetwork(options.shape, options.seed));
  const bool cuda = impl->device.is_cuda();
  impl->report_every = options.report_every > 0 ? options.report_every : (cuda ? 20 : 1);
  impl->autocast = cuda && options.bf16_autocast;
  ZF_RETURN_IF_ERROR(TorchCall(absl::StatusCode::kInternal, "creating the trainer", [&] {
    if (cuda) model::internal::SetCudaMath(/*allow_tf32=*/true, /*cudnn_benchmark=*/true);
    impl->net->to(impl->device);
    impl->net->train();
    impl->channels_last = !cuda && options.cpu_channels_last;
    impl->optimizer = MakeOptimizer(options, *impl->net);
    impl->sums =
        torch::zeros({6}, torch::TensorOptions().dtype(torch::kFloat).device(impl->device));
#if ZF_WITH_CUDA
    if (cuda) {
      impl->upload_stream.emplace(
          c10::cuda::getStreamFromPool(/*isHighPriority=*/false, impl->device.index()));
    }
#endif
  }));
  if (impl->channels_last) ZF_RETURN_IF_ERROR(model::internal::UseChannelsLast(*impl->net));
  return std::unique_ptr<Trainer>(new Trainer(options, std::move(impl)));
}

absl::StatusOr<StepResult> Trainer::Step(const zerofleet::v1::SampleBatch& batch) {
  return Run(batch, /*update=*/true);
}

absl::StatusOr<StepResult> Trainer::Evaluate(const zerofleet::v1::SampleBatch& batch) {
  return Run(batch, /*update=*/false);
}

absl::StatusOr<StepResult> Trainer::Run(const zerofleet::v1::SampleBatch& batch, bool update) {
  ZF_RETURN_IF_ERROR(ValidateBatch(batch, options_.shape, options_.game));
  UseTrainingThreadsOnThisThread(options_.intra_op_threads);
  const int64_t b = batch.batch_size();
  const model::NetworkShape& s = options_.shape;
  StepResult result;
  result.batch_size = static_cast<int>(b);
  result.learning_rate = LearningRateAt(options_.lr, step_) * lr_scale_;
  ZF_RETURN_IF_ERROR(TorchCall(absl::StatusCode::kInternal, "training step", [&] {
#if ZF_WITH_CUDA
    std::optional<c10::cuda::CUDAGuard> device_guard;
    if (impl_->device.is_cuda()) device_guard.emplace(impl_->device.index());
#endif
    const DeviceBatch in = impl_->Upload(batch, s);
    torch::Tensor wdl = torch::stack({in.z.clamp_min(0), 1 - in.z.abs(), (-in.z).clamp_min(0)}, 1);

    std::unique_ptr<torch::NoGradGuard> no_grad;
    if (!update) no_grad = std::make_unique<torch::NoGradGuard>();
    // Evaluate must not move batch norm's running statistics: momentum 0 would do, but simply
    // snapshot and restore them.
    std::vector<torch::Tensor> saved_buffers;
    if (!update) {
      for (const auto& buffer : impl_->net->buffers()) saved_buffers.push_back(buffer.clone());
    }
    torch::Tensor policy_loss, value_loss, ownership_loss, score_loss, total;
    {
      // bf16 convolutions and matmuls; autocast keeps log_softmax and the sums in float32.
      std::optional<model::internal::CudaAutocast> autocast;
      if (impl_->autocast) autocast.emplace(torch::kBFloat16);
      const bool aux = s.aux_heads && in.ownership.defined();
      const torch::Tensor input = model::internal::PlanesToInput(in.planes, impl_->channels_last);
      model::internal::NetworkOutput out = aux ? model::internal::ForwardWithAux(*impl_->net, input)
                                               : model::internal::Forward(*impl_->net, input);
      torch::Tensor policy_rows =
          -(in.pi * torch::log_softmax(out.policy_logits.to(torch::kFloat), /*dim=*/1)).sum(1);
      policy_loss = (policy_rows * in.mask).sum() / in.mask.sum().clamp_min(1);
      value_loss = -(wdl * torch::log_softmax(out.wdl_logits.to(torch::kFloat), 1)).sum(1).mean();
      total = policy_loss + options_.value_weight * value_loss;
      if (aux) {
        const torch::Tensor n_aux = in.aux_mask.sum().clamp_min(1);
        // (1 + tanh u) / 2 = sigmoid(2u): the ownership cross-entropy from the logits 2u.
        const torch::Tensor ownership_rows =
            torch::binary_cross_entropy_with_logits(2 * out.ownership_logits.to(torch::kFloat),
                                                    (1 + in.ownership) / 2, {}, {},
                                                    at::Reduction::None)
                .mean(1);
        ownership_loss = (ownership_rows * in.aux_mask).sum() / n_aux;
        const double score_scale = std::sqrt(static_cast<double>(s.board_height) * s.board_width);
        const torch::Tensor score_rows = torch::smooth_l1_loss(
            out.score.to(torch::kFloat), in.score / score_scale, at::Reduction::None, /*beta=*/1.0);
        score_loss = (score_rows * in.aux_mask).sum() / n_aux;
        total =
            total + options_.ownership_weight * ownership_loss + options_.score_weight * score_loss;
      } else {
        ownership_loss = torch::zeros({}, total.options());
        score_loss = torch::zeros({}, total.options());
      }
    }
    torch::Tensor grad_norm = torch::zeros({}, total.options());
    if (update) {
      impl_->optimizer->zero_grad();
      total.backward();
      // The global L2 norm and the clipping on the device (clip_grad_norm_ returns a double,
      // i.e. waits for the GPU): grads *= min(1, max_norm / (norm + 1e-6)), as LibTorch does.
      std::vector<torch::Tensor> grads;
      for (const auto& p : impl_->net->parameters()) {
        if (p.grad().defined()) grads.push_back(p.grad());
      }
      std::vector<torch::Tensor> norms;
      norms.reserve(grads.size());
      for (const auto& g : grads) norms.push_back(g.detach().norm(2).to(torch::kFloat));
      if (!norms.empty()) grad_norm = torch::stack(norms).norm(2);
      if (options_.max_grad_norm > 0 && !grads.empty()) {
        torch::NoGradGuard guard;
        const torch::Tensor coef = (options_.max_grad_norm / (grad_norm + 1e-6)).clamp_max(1.0);
        for (auto& g : grads) g.mul_(coef);
      }
      for (auto& group : impl_->optimizer->param_groups()) {
        group.options().set_lr(result.learning_rate);
      }
      impl_->optimizer->step();
    } else {
      torch::NoGradGuard guard;
      const auto buffers = impl_->net->buffers();
      for (size_t i = 0; i < buffers.size(); ++i) buffers[i].copy_(saved_buffers[i]);
    }
    const torch::Tensor values =
        torch::stack({policy_loss.detach(), value_loss.detach(), total.detach(), grad_norm,
                      ownership_loss.detach().to(total.dtype()),
                      score_loss.detach().to(total.dtype())})
            .to(torch::kFloat);
    if (!update) {
      // Evaluate reports at once and leaves the running sums alone.
      const torch::Tensor host = values.to(torch::kCPU);
      const float* v = host.data_ptr<float>();
      result.policy_loss = v[0];
      result.value_loss = v[1];
      result.total_loss = v[2];
      result.grad_norm = 0;
      result.ownership_loss = v[4];
      result.score_loss = v[5];
      return;
    }
    {
      torch::NoGradGuard guard;
      impl_->sums.add_(values);
    }
    ++impl_->pending;
    if ((step_ + 1) % impl_->report_every == 0) {
      // The one wait for the GPU: every queued step up to this one.
      const torch::Tensor host = impl_->sums.to(torch::kCPU);
      const float* v = host.data_ptr<float>();
      const double n = impl_->pending;
      impl_->last_report.policy_loss = v[0] / n;
      impl_->last_report.value_loss = v[1] / n;
      impl_->last_report.total_loss = v[2] / n;
      impl_->last_report.grad_norm = v[3] / n;
      impl_->last_report.ownership_loss = v[4] / n;
      impl_->last_report.score_loss = v[5] / n;
      impl_->sums.zero_();
      impl_->pending = 0;
      result.reported = true;
    } else {
      result.reported = false;
    }
    result.policy_loss = impl_->last_report.policy_loss;
    result.value_loss = impl_->last_report.value_loss;
    result.total_loss = impl_->last_report.total_loss;
    result.grad_norm = impl_->last_report.grad_norm;
    result.ownership_loss = impl_->last_report.ownership_loss;
    result.score_loss = impl_->last_report.score_loss;
  }));
  if (update) ++step_;
  result.step = step_;
  return result;
}

absl::StatusOr<model::Checkpoint> Trainer::MakeCheckpoint(int64_t version) const {
  model::Checkpoint checkpoint;
  checkpoint.manifest.game = options_.game;
  checkpoint.manifest.shape = options_.shape;
  checkpoint.manifest.version = version;
  checkpoint.manifest.training_step = step_;
  checkpoint.manifest.torch_version = model::internal::TorchVersion();
  ZF_ASSIGN_OR_RETURN(checkpoint.weights, model::internal::SerializeWeights(*impl_->net));
  ZF_ASSIGN_OR_RETURN(
      checkpoint.optimizer_state,
      TorchCall(absl::StatusCode::kInternal, "serializing the optimizer state",
                [&]() -> absl::StatusOr<std::string> {
                  torch::serialize::OutputArchive archive;
                  const bool adamw = options_.optimizer == OptimizerKind::kAdamW;
                  archive.write("kind", torch::tensor(adamw ? kAdamWKind : kSgdKind));
                  archive.write("trainer_step", torch::tensor(step_));
                  auto& state = impl_->optimizer->state();
                  using Map = std::remove_reference_t<decltype(state)>;
                  for (const auto& item : impl_->net->named_parameters()) {
                    auto it = state.find(StateKey<Map>(item.value()));
                    if (it == state.end()) continue;
                    const std::string& name = item.key();
                    if (adamw) {
                      auto& st = static_cast<torch::optim::AdamWParamState&>(*it->second);
                      archive.write(name + "/step", torch::tensor(st.step()));
                      archive.write(name + "/exp_avg", st.exp_avg().cpu(), /*is_buffer=*/true);
                      archive.write(name + "/exp_avg_sq", st.exp_avg_sq().cpu(), true);
                    } else {
                      auto& st = static_cast<torch::optim::SGDParamState&>(*it->second);
                      if (!st.momentum_buffer().defined()) continue;
                      archive.write(name + "/momentum_buffer", st.momentum_buffer().cpu(), true);
                    }
                  }
                  std::ostringstream out;
                  archive.save_to(out);
                  return out.str();
                }));
  return checkpoint;
}

absl::Status Trainer::Restore(const model::Checkpoint& checkpoint) {
  const model::CheckpointManifest& m = checkpoint.manifest;
  if (m.shape != options_.shape) {
    return absl::InvalidArgumentError(absl::StrCat("checkpoint network ", m.shape.DebugString(),
                                                   " differs from the trainer's ",
                                                   options_.shape.DebugString()));
  }
  if (!options_.game.empty() && m.game != options_.game) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint plays \"", m.game, "\", the trainer \"", options_.game, "\""));
  }
  // Everything is loaded aside first, so that an error leaves the trainer unchanged.
  ZF_ASSIGN_OR_RETURN(std::shared_ptr<ResidualNetImpl> loaded,
                      model::internal::CreateNetwork(options_.shape, options_.seed));
  ZF_RETURN_IF_ERROR(model::internal::LoadWeights(checkpoint.weights, "checkpoint", *loaded));
  const bool adamw = options_.optimizer == OptimizerKind::kAdamW;
  struct ParamState {
    torch::Tensor p;  // the live parameter
    int64_t step = 0;
    torch::Tensor a, b;
  };
  std::vector<ParamState> states;
  bool have_optimizer_state = false;
  if (!checkpoint.optimizer_state.empty()) {
    ZF_RETURN_IF_ERROR(TorchCall(absl::StatusCode::kDataLoss, "reading the optimizer state", [&] {
      torch::serialize::InputArchive archive;
      archive.load_from(checkpoint.optimizer_state.data(), checkpoint.optimizer_state.size(),
                        torch::Device(torch::kCPU));
      torch::Tensor kind;
      archive.read("kind", kind);
      if (kind.item<int64_t>() != (adamw ? kAdamWKind : kSgdKind)) return;  // other optimizer
      have_optimizer_state = true;
      for (const auto& item : impl_->net->named_parameters()) {
        const std::string& name = item.key();
        ParamState st;
        st.p = item.value();
        if (adamw) {
          torch::Tensor step;
          if (!archive.try_read(name + "/step", step)) continue;
          st.step = step.item<int64_t>();
          archive.read(name + "/exp_avg", st.a, /*is_buffer=*/true);
          archive.read(name + "/exp_avg_sq", st.b, true);
        } else {
          if (!archive.try_read(name + "/momentum_buffer", st.a, true)) continue;
        }
        TORCH_CHECK(st.a.sizes() == st.p.sizes(), "optimizer state of ", name, " has shape ",
                    st.a.sizes(), ", the parameter ", st.p.sizes());
        states.push_back(std::move(st));
      }
    }));
  }
  return TorchCall(absl::StatusCode::kInternal, "restoring the trainer", [&] {
    {
      torch::NoGradGuard no_grad;
      auto src_params = loaded->parameters();
      auto dst_params = impl_->net->parameters();
      for (size_t i = 0; i < dst_params.size(); ++i) dst_params[i].copy_(src_params[i]);
      auto src_buffers = loaded->buffers();
      auto dst_buffers = impl_->net->buffers();
      for (size_t i = 0; i < dst_buffers.size(); ++i) dst_buffers[i].copy_(src_buffers[i]);
    }
    impl_->optimizer = MakeOptimizer(options_, *impl_->net);
    if (have_optimizer_state) {
      auto& state = impl_->optimizer->state();
      using Map = std::remove_reference_t<decltype(state)>;
      const torch::Device device = impl_->device;
      for (ParamState& st : states) {
        if (adamw) {
          auto s = std::make_unique<torch::optim::AdamWParamState>();
          s->step(st.step);
          s->exp_avg(st.a.to(device).contiguous(st.p.suggest_memory_format()));
          s->exp_avg_sq(st.b.to(device).contiguous(st.p.suggest_memory_format()));
          state[StateKey<Map>(st.p)] = std::move(s);
        } else {
          auto s = std::make_unique<torch::optim::SGDParamState>();
          s->momentum_buffer(st.a.to(device).contiguous(st.p.suggest_memory_format()));
          state[StateKey<Map>(st.p)] = std::move(s);
        }
      }
    }
    step_ = m.training_step;
  });
}

}  // namespace zf::learner
