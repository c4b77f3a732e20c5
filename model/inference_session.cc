// A light LibTorch translation unit: Tensor methods and per-op headers only (see
// model/internal/network_ops.h); the nn module headers stay in residual_net.cc.
#define TORCH_ASSERT_ONLY_METHOD_OPERATORS

#include "model/inference_session.h"

#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/from_blob.h>
#include <c10/core/InferenceMode.h>
#include <dlfcn.h>
#include <torch/cuda.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "model/checkpoint.h"
#include "model/internal/network_ops.h"
#include "model/internal/torch_compat.h"
#if ZF_WITH_CUDA
#include "model/internal/cuda_runner.h"
#endif
#include "model/network.h"

#ifndef ZF_WITH_CUDA
#error "ZF_WITH_CUDA must be defined (0 or 1) by the build"
#endif

namespace zf::model {
namespace {

constexpr int kMaxThreads = 1024;

// Bumped by SetIntraOpThreads. LibTorch's OpenMP backend applies its thread count to each
// thread lazily (omp_set_num_threads is per thread), and only inside at::parallel_for, which
// not every kernel goes through; Run re-applies it on a thread that has not seen the latest
// setting.
std::atomic<int> thread_setting_generation{0};

void ApplyThreadSettingToThisThread() {
  thread_local int seen = -1;
  const int generation = thread_setting_generation.load(std::memory_order_acquire);
  if (seen != generation) {
    at::init_num_threads();
    seen = generation;
  }
}

struct ParsedDevice {
  bool cuda = false;
  int index = 0;
  bool automatic = false;
};

absl::StatusOr<ParsedDevice> ParseDevice(absl::string_view text) {
  if (text == "cpu") return ParsedDevice{};
  if (text == "auto") return ParsedDevice{.automatic = true};
  if (text == "cuda") return ParsedDevice{.cuda = true};
  int index = -1;
  absl::string_view number = text;
  if (absl::ConsumePrefix(&number, "cuda:") && absl::SimpleAtoi(number, &index) && index >= 0 &&
      index < 64) {
    return ParsedDevice{.cuda = true, .index = index};
  }
  return absl::InvalidArgumentError(
      absl::StrCat("device must be cpu, cuda, cuda:N or auto, got \"", text, "\""));
}

bool IsPrintable(absl::string_view s) {
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return false;
  }
  return true;
}

absl::Status CheckSpan(absl::string_view name, size_t actual, int64_t expected) {
  if (static_cast<int64_t>(actual) != expected) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, " has ", actual, " elements, expected ", expected));
  }
  return absl::OkStatus();
}

// "fp32" / "bf16" / "fp16" (not "auto").
absl::StatusOr<c10::ScalarType> ParsePrecision(absl::string_view text) {
  if (text == "fp32") return c10::kFloat;
  if (text == "bf16") return c10::kBFloat16;
  if (text == "fp16") return c10::kHalf;
  return absl::InvalidArgumentError(
      absl::StrCat("precision must be auto, fp32, bf16 or fp16, got \"", text, "\""));
}

}  // namespace

struct InferenceSession::Impl {
  // The float32 weights: the CPU path runs them; on CUDA they stay on the CPU for Save while
  // the runner serves its own converted copy.
  std::shared_ptr<internal::ResidualNetImpl> net;
  c10::Device device{c10::kCPU};
#if ZF_WITH_CUDA
  std::unique_ptr<internal::CudaRunner> runner;
#endif
};

absl::Status InferenceSession::Options::Validate() const {
  ZF_RETURN_IF_ERROR(ParseDevice(device).status());
  if (intra_op_threads < 0 || intra_op_threads > kMaxThreads) {
    return absl::InvalidArgumentError(
        absl::StrCat("intra_op_threads must be in [0, ", kMaxThreads, "], got ", intra_op_threads));
  }
  if (checkpoint_path.empty() && !shape.has_value()) {
    return absl::InvalidArgumentError("a fresh network (no checkpoint_path) needs a shape");
  }
  if (shape.has_value()) ZF_RETURN_IF_ERROR(shape->Validate());
  if (!IsPrintable(game)) {
    return absl::InvalidArgumentError("game must not contain control characters");
  }
  if (precision != "auto") ZF_RETURN_IF_ERROR(ParsePrecision(precision).status());
  if (max_batch < 1 || max_batch > 65536) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_batch must be in [1, 65536], got ", max_batch));
  }
  if (concurrency < 1 || concurrency > 16) {
    return absl::InvalidArgumentError(
        absl::StrCat("concurrency must be in [1, 16], got ", concurrency));
  }
  return absl::OkStatus();
}

InferenceSession::InferenceSession(std::unique_ptr<Impl> impl, NetworkShape shape, int64_t version,
                                   std::string game, std::string device, std::string precision)
    : impl_(std::move(impl)),
      shape_(shape),
      version_(version),
      game_(std::move(game)),
      device_(std::move(device)),
      precision_(std::move(precision)) {}

InferenceSession::~InferenceSession() = default;

absl::StatusOr<std::unique_ptr<InferenceSession>> InferenceSession::Create(const Options& options) {
  ZF_RETURN_IF_ERROR(options.Validate());
  ZF_ASSIGN_OR_RETURN(ParsedDevice parsed, ParseDevice(options.device));
  if (parsed.automatic) {
    parsed = CudaAvailable() ? ParsedDevice{.cuda = true} : ParsedDevice{};
  }
  if (parsed.cuda) {
    if (!ZF_WITH_CUDA) {
      return absl::InvalidArgumentError(
          absl::StrCat("device ", options.device, ": this build's LibTorch has no CUDA support"));
    }
    if (!CudaAvailable()) {
      return absl::InvalidArgumentError(
          absl::StrCat("device ", options.device, ": no CUDA device is visible"));
    }
#if ZF_WITH_CUDA
    const int count = static_cast<int>(torch::cuda::device_count());
    if (parsed.index >= count) {
      return absl::InvalidArgumentError(
          absl::StrCat("device ", options.device, ": only ", count, " CUDA devices are visible"));
    }
#endif
  }
  const std::string precision =
      options.precision != "auto" ? options.precision : (parsed.cuda ? "bf16" : "fp32");
  ZF_ASSIGN_OR_RETURN(const c10::ScalarType dtype, ParsePrecision(precision));
  if (!parsed.cuda && dtype != c10::kFloat) {
    return absl::InvalidArgumentError(
        absl::StrCat("precision ", precision, " needs a CUDA device; the CPU runs fp32"));
  }
  if (options.intra_op_threads > 0) ZF_RETURN_IF_ERROR(SetIntraOpThreads(options.intra_op_threads));

  auto impl = std::make_unique<Impl>();
  NetworkShape shape;
  int64_t version = 0;
  std::string game = options.game;
  if (options.checkpoint_path.empty()) {
    shape = *options.shape;
    ZF_ASSIGN_OR_RETURN(impl->net, internal::CreateNetwork(shape, options.seed));
  } else {
    ZF_ASSIGN_OR_RETURN(Checkpoint checkpoint, ReadCheckpoint(options.checkpoint_path));
    const CheckpointManifest& m = checkpoint.manifest;
    // The aux heads do not count: they change neither the policy nor the value (inference runs
    // only the score head, and only when asked), and a server started from flags (without
    // them) must follow a learner that trains them.
    NetworkShape expected = options.shape.value_or(m.shape);
    expected.aux_heads = m.shape.aux_heads;
    if (options.shape.has_value() && expected != m.shape) {
      return absl::InvalidArgumentError(
          absl::StrCat(options.checkpoint_path, ": the checkpoint's network is ",
                       m.shape.DebugString(), ", expected ", options.shape->DebugString()));
    }
    if (!options.game.empty() && options.game != m.game) {
      return absl::InvalidArgumentError(absl::StrCat(options.checkpoint_path,
                                                     ": the checkpoint is for game ", m.game,
                                                     ", expected ", options.game));
    }
    shape = m.shape;
    version = m.version;
    game = m.game;
    // The initial values are overwritten; the seed only avoids LibTorch's global generator.
    ZF_ASSIGN_OR_RETURN(impl->net, internal::CreateNetwork(shape, /*seed=*/0));
    ZF_RETURN_IF_ERROR(
        internal::LoadWeights(checkpoint.weights, options.checkpoint_path, *impl->net));
  }

  impl->device = parsed.cuda ? c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(parsed.index))
                             : c10::Device(c10::kCPU);
  // The float32 weights stay on the CPU, in eval mode (Save reads them; the CPU path runs them).
  ZF_RETURN_IF_ERROR(internal::PrepareForInference(*impl->net, c10::Device(c10::kCPU)));
  if (!parsed.cuda) {
    // The CPU path convolves in channels-last (NHWC) memory, which oneDNN reads without
    // reordering (docs/benchmarks.md "Inference serving"); Save writes the standard layout.
    ZF_RETURN_IF_ERROR(internal::UseChannelsLast(*impl->net));
  }
#if ZF_WITH_CUDA
  if (parsed.cuda) {
    internal::SetCudaMath(/*allow_tf32=*/true, /*cudnn_benchmark=*/true);
    ZF_ASSIGN_OR_RETURN(impl->runner, internal::CudaRunner::Create(
                                          *impl->net, {.device = impl->device,
                                                       .dtype = dtype,
                                                       .max_batch = options.max_batch,
                                                       .slots = options.concurrency,
                                                       .cuda_graphs = options.cuda_graphs}));
  }
#endif
  std::string device = impl->device.str();
  return std::unique_ptr<InferenceSession>(new InferenceSession(
      std::move(impl), shape, version, std::move(game), std::move(device), precision));
}

absl::StatusOr<std::unique_ptr<InferenceSession>> InferenceSession::CreateFresh(
    const NetworkShape& shape, uint64_t seed) {
  Options options;
  options.shape = shape;
  options.seed = seed;
  return Create(options);
}

absl::Status InferenceSession::Run(std::span<const uint8_t> planes, int batch,
                                   std::span<float> policy_logits, std::span<float> wdl_probs,
                                   std::span<float> scores) const {
  if (batch < 0) {
    return absl::InvalidArgumentError(absl::StrCat("batch must be >= 0, got ", batch));
  }
  const int64_t n = batch;
  const int64_t actions = shape_.num_actions;
  ZF_RETURN_IF_ERROR(CheckSpan("planes", planes.size(), n * shape_.PlaneSize()));
  ZF_RETURN_IF_ERROR(CheckSpan("policy_logits", policy_logits.size(), n * actions));
  ZF_RETURN_IF_ERROR(CheckSpan("wdl_probs", wdl_probs.size(), n * 3));
  const bool with_scores = !scores.empty();
  if (with_scores) {
    if (!shape_.aux_heads) {
      return absl::InvalidArgumentError(absl::StrCat(
          "scores asked of network ", shape_.DebugString(), ", which has no score head"));
    }
    ZF_RETURN_IF_ERROR(CheckSpan("scores", scores.size(), n));
  }
  if (batch == 0) return absl::OkStatus();

#if ZF_WITH_CUDA
  if (impl_->runner != nullptr) {
    // The runner's buffers and graphs hold at most max_batch rows: larger batches go in parts.
    const int64_t plane_size = shape_.PlaneSize();
    const int max_batch = impl_->runner->options().max_batch;
    for (int64_t first = 0; first < n; first += max_batch) {
      const int64_t rows = std::min<int64_t>(max_batch, n - first);
      ZF_RETURN_IF_ERROR(impl_->runner->Run(planes.subspan(first * plane_size, rows * plane_size),
                                            static_cast<int>(rows),
                                            policy_logits.subspan(first * actions, rows * actions),
                                            wdl_probs.subspan(first * 3, rows * 3),
                                            with_scores ? scores.subspan(first, rows) : scores));
    }
    return absl::OkStatus();
  }
#endif
  return internal::TorchCall(absl::StatusCode::kInternal, "forward pass", [&] {
    ApplyThreadSettingToThisThread();
    c10::InferenceMode inference_mode;
    const std::vector<int64_t> sizes = {n, shape_.input_channels, shape_.board_height,
                                        shape_.board_width};
    const auto uint8 = at::TensorOptions().dtype(at::kByte);
    const auto float32 = at::TensorOptions().dtype(at::kFloat);
    // from_blob does not copy and never writes: PlanesToInput makes a new tensor.
    at::Tensor input = at::from_blob(const_cast<uint8_t*>(planes.data()), sizes, uint8);
    const at::Tensor x = internal::PlanesToInput(input, /*channels_last=*/true);
    internal::NetworkOutput out = with_scores ? internal::ForwardWithScore(*impl_->net, x)
                                              : internal::Forward(*impl_->net, x);
    at::from_blob(policy_logits.data(), {n, actions}, float32).copy_(out.policy_logits);
    at::from_blob(wdl_probs.data(), {n, 3}, float32).copy_(out.wdl_logits.softmax(/*dim=*/1));
    if (with_scores) at::from_blob(scores.data(), {n}, float32).copy_(out.score);
  });
}

absl::Status InferenceSession::RunOwnership(std::span<const uint8_t> planes, int batch,
                                            std::span<float> ownership) const {
  if (batch < 0) {
    return absl::InvalidArgumentError(absl::StrCat("batch must be >= 0, got ", batch));
  }
  if (!shape_.aux_heads) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ownership asked of network ", shape_.DebugString(), ", which has no ownership head"));
  }
  const int64_t n = batch;
  const int64_t cells = int64_t{shape_.board_height} * shape_.board_width;
  ZF_RETURN_IF_ERROR(CheckSpan("planes", planes.size(), n * shape_.PlaneSize()));
  ZF_RETURN_IF_ERROR(CheckSpan("ownership", ownership.size(), n * cells));
  if (batch == 0) return absl::OkStatus();
  // The float32 weights on the CPU serve it on every device (on CUDA they stay there for Save).
  return internal::TorchCall(absl::StatusCode::kInternal, "ownership forward pass", [&] {
    ApplyThreadSettingToThisThread();
    c10::InferenceMode inference_mode;
    const std::vector<int64_t> sizes = {n, shape_.input_channels, shape_.board_height,
                                        shape_.board_width};
    at::Tensor input = at::from_blob(const_cast<uint8_t*>(planes.data()), sizes,
                                     at::TensorOptions().dtype(at::kByte));
    const bool on_cpu = impl_->device.is_cpu();
    const at::Tensor x = internal::PlanesToInput(input, /*channels_last=*/on_cpu);
    internal::NetworkOutput out = internal::ForwardWithAux(*impl_->net, x);
    at::from_blob(ownership.data(), {n, cells}, at::TensorOptions().dtype(at::kFloat))
        .copy_(out.ownership_logits.tanh().reshape({n, cells}));
  });
}

absl::StatusOr<CheckpointManifest> InferenceSession::Save(const std::string& path,
                                                          const SaveOptions& options) const {
  Checkpoint checkpoint;
  CheckpointManifest& m = checkpoint.manifest;
  m.game = options.game.value_or(game_);
  if (m.game.empty()) {
    return absl::InvalidArgumentError("Save: the checkpoint needs a game name");
  }
  m.shape = shape_;
  m.version = options.version.value_or(version_);
  m.training_step = options.training_step;
  m.torch_version = internal::TorchVersion();
  ZF_ASSIGN_OR_RETURN(checkpoint.weights, internal::SerializeWeights(*impl_->net));
  return WriteCheckpoint(path, checkpoint);
}

absl::Status SetIntraOpThreads(int threads) {
  if (threads < 1 || threads > kMaxThreads) {
    return absl::InvalidArgumentError(
        absl::StrCat("intra-op threads must be in [1, ", kMaxThreads, "], got ", threads));
  }
  ZF_RETURN_IF_ERROR(internal::TorchCall(absl::StatusCode::kInternal, "at::set_num_threads",
                                         [&] { at::set_num_threads(threads); }));
  // Looked up at run time: OpenBLAS is present only when libblas.so.3 is OpenBLAS (Debian's
  // alternatives), and a CUDA LibTorch links MKL instead.
  using SetThreadsFn = void (*)(int);
  if (auto* set_openblas =
          reinterpret_cast<SetThreadsFn>(::dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) {
    set_openblas(threads);
  }
  thread_setting_generation.fetch_add(1, std::memory_order_acq_rel);
  return absl::OkStatus();
}

int IntraOpThreads() {
  try {
    ApplyThreadSettingToThisThread();
    return at::get_num_threads();
  } catch (const std::exception&) {
    return 0;
  }
}

bool CudaAvailable() {
#if ZF_WITH_CUDA
  try {
    return torch::cuda::is_available();
  } catch (...) {
    return false;
  }
#else
  return false;
#endif
}

std::string CudaDeviceName(int index) {
#if ZF_WITH_CUDA
  if (!CudaAvailable()) return "";
  return internal::CudaDeviceName(index);
#else
  (void)index;
  return "";
#endif
}

}  // namespace zf::model
