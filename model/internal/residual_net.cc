#include "model/internal/residual_net.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/grad_mode.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>
#include <torch/version.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/logging.h"
#include "common/status_macros.h"

namespace zf::model::internal {
namespace {

// AlphaZero's head widths; fixed, so the NetworkShape alone determines every tensor.
constexpr int kPolicyChannels = 2;
constexpr int kValueChannels = 1;

torch::nn::Conv2d Conv(int in, int out, int kernel) {
  return torch::nn::Conv2d(
      torch::nn::Conv2dOptions(in, out, kernel).padding(kernel / 2).bias(false));
}

// Draws on the CPU from `gen` and copies to `t`'s device, so every device gets the same
// numbers.
void Uniform(torch::Tensor& t, double bound, at::Generator& gen) {
  torch::Tensor cpu = t.new_empty(t.sizes(), t.options().device(torch::kCPU));
  cpu.uniform_(-bound, bound, gen);
  t.copy_(cpu);
}

std::string ShapeText(c10::IntArrayRef sizes) {
  return absl::StrCat("[", absl::StrJoin(sizes, ", "), "]");
}

bool IsOnCpu(const torch::nn::Module& m) {
  for (const torch::Tensor& p : m.parameters()) return p.device().is_cpu();
  return true;
}

// Every parameter and buffer by its dotted name, parameters first.
std::vector<std::pair<std::string, torch::Tensor>> NamedState(const torch::nn::Module& m) {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& item : m.named_parameters()) out.emplace_back(item.key(), item.value());
  for (const auto& item : m.named_buffers()) out.emplace_back(item.key(), item.value());
  return out;
}

}  // namespace

ResidualBlockImpl::ResidualBlockImpl(int filters, bool global_pooling)
    : conv1(register_module("conv1", Conv(filters, filters, 3))),
      bn1(register_module("bn1", torch::nn::BatchNorm2d(filters))),
      conv2(register_module("conv2", Conv(filters, filters, 3))),
      bn2(register_module("bn2", torch::nn::BatchNorm2d(filters))) {
  if (global_pooling) {
    gpool_fc = register_module(
        "gpool_fc", torch::nn::Linear(torch::nn::LinearOptions(2 * filters, filters).bias(false)));
  }
}

torch::Tensor ResidualBlockImpl::forward(const torch::Tensor& x) {
  torch::Tensor y = bn1(conv1(x)).relu_();
  if (gpool_fc) {
    // [N, F, H, W] -> [N, 2F]: each channel's mean and max over the board.
    const torch::Tensor pooled = torch::cat({y.mean({2, 3}), y.amax({2, 3})}, 1);
    y = y + gpool_fc(pooled).unsqueeze(-1).unsqueeze(-1);
  }
  y = bn2(conv2(y));
  return y.add_(x).relu_();
}

ResidualNetImpl::ResidualNetImpl(const NetworkShape& shape) : shape_(shape) {
  const absl::Status valid = shape.Validate();
  ZF_CHECK(valid.ok()) << valid;
  const int f = shape.filters;
  const int cells = shape.board_height * shape.board_width;
  stem_conv_ = register_module("stem_conv", Conv(shape.input_channels, f, 3));
  stem_bn_ = register_module("stem_bn", torch::nn::BatchNorm2d(f));
  for (int i = 0; i < shape.blocks; ++i) {
    blocks_.push_back(
        register_module(absl::StrCat("block", i), ResidualBlock(f, shape.HasGlobalPooling(i))));
  }
  policy_conv_ = register_module("policy_conv", Conv(f, kPolicyChannels, 1));
  policy_bn_ = register_module("policy_bn", torch::nn::BatchNorm2d(kPolicyChannels));
  policy_fc_ =
      register_module("policy_fc", torch::nn::Linear(kPolicyChannels * cells, shape.num_actions));
  value_conv_ = register_module("value_conv", Conv(f, kValueChannels, 1));
  value_bn_ = register_module("value_bn", torch::nn::BatchNorm2d(kValueChannels));
  value_fc1_ =
      register_module("value_fc1", torch::nn::Linear(kValueChannels * cells, shape.value_hidden));
  value_fc2_ = register_module("value_fc2", torch::nn::Linear(shape.value_hidden, 3));
  if (shape.aux_heads) {
    ownership_conv_ = register_module(
        "ownership_conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(f, 1, 1).bias(true)));
    score_fc_ = register_module("score_fc", torch::nn::Linear(shape.value_hidden, 1));
  }
}

NetworkOutput ResidualNetImpl::Run(const torch::Tensor& input, Heads heads) {
  ZF_CHECK(heads == Heads::kPolicyValue || shape_.aux_heads)
      << "the ownership or score head asked of a network without aux heads";
  torch::Tensor x = stem_bn_(stem_conv_(input)).relu_();
  for (ResidualBlock& block : blocks_) x = block(x);
  torch::Tensor policy = policy_bn_(policy_conv_(x)).relu_().flatten(1);
  torch::Tensor value = value_bn_(value_conv_(x)).relu_().flatten(1);
  value = value_fc1_(value).relu_();
  NetworkOutput out{policy_fc_(policy), value_fc2_(value)};
  if (heads == Heads::kAll) out.ownership_logits = ownership_conv_(x).flatten(1);
  if (heads != Heads::kPolicyValue) out.score = score_fc_(value).squeeze(1);
  return out;
}

void ResidualNetImpl::ResetParameters(uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  at::NoGradGuard no_grad;
  // apply() visits modules in registration order, so the draws are in a fixed order.
  apply([&gen](torch::nn::Module& m) {
    torch::Tensor* weight = nullptr;
    torch::Tensor* bias = nullptr;
    if (auto* conv = m.as<torch::nn::Conv2d>()) {
      weight = &conv->weight;
      bias = &conv->bias;
    } else if (auto* linear = m.as<torch::nn::Linear>()) {
      weight = &linear->weight;
      bias = &linear->bias;
    } else if (auto* bn = m.as<torch::nn::BatchNorm2d>()) {
      bn->reset_parameters();  // scale 1, shift 0, running mean 0 and variance 1
      return;
    } else {
      return;
    }
    const double bound = 1.0 / std::sqrt(static_cast<double>(weight->numel() / weight->size(0)));
    Uniform(*weight, bound, gen);
    if (bias->defined()) Uniform(*bias, bound, gen);
  });
}

absl::StatusOr<std::shared_ptr<ResidualNetImpl>> CreateNetwork(const NetworkShape& shape,
                                                               uint64_t seed) {
  ZF_RETURN_IF_ERROR(shape.Validate());
  return TorchCall(absl::StatusCode::kInternal, "creating the network",
                   [&]() -> absl::StatusOr<std::shared_ptr<ResidualNetImpl>> {
                     auto net = std::make_shared<ResidualNetImpl>(shape);
                     net->ResetParameters(seed);
                     return net;
                   });
}

const NetworkShape& ShapeOf(const ResidualNetImpl& net) { return net.shape(); }

absl::Status PrepareForInference(ResidualNetImpl& net, c10::Device device) {
  return TorchCall(absl::StatusCode::kInternal,
                   absl::StrCat("moving the network to ", device.str()), [&] {
                     net.to(device);
                     net.eval();
                   });
}

absl::Status UseChannelsLast(ResidualNetImpl& net) {
  return TorchCall(absl::StatusCode::kInternal, "channels-last weights", [&] {
    torch::NoGradGuard no_grad;
    for (torch::Tensor& p : net.parameters()) {
      if (p.dim() == 4) p.set_data(p.contiguous(at::MemoryFormat::ChannelsLast));
    }
  });
}

torch::Tensor PlanesToInput(const torch::Tensor& planes, bool channels_last) {
  return planes.to(torch::kFloat, /*non_blocking=*/false, /*copy=*/false,
                   channels_last ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous);
}

NetworkOutput Forward(ResidualNetImpl& net, const torch::Tensor& input) {
  return net.forward(input);
}

NetworkOutput ForwardWithAux(ResidualNetImpl& net, const torch::Tensor& input) {
  return net.shape().aux_heads ? net.ForwardWithAux(input) : net.forward(input);
}

NetworkOutput ForwardWithScore(ResidualNetImpl& net, const torch::Tensor& input) {
  return net.ForwardWithScore(input);
}

absl::StatusOr<std::shared_ptr<ResidualNetImpl>> CopyForInference(const ResidualNetImpl& net,
                                                                  c10::Device device,
                                                                  c10::ScalarType dtype,
                                                                  bool channels_last) {
  if (dtype != at::kFloat && dtype != at::kBFloat16 && dtype != at::kHalf) {
    return absl::InvalidArgumentError(absl::StrCat(
        "inference dtype must be float32, bfloat16 or float16, got ", c10::toString(dtype)));
  }
  return TorchCall(absl::StatusCode::kInternal,
                   absl::StrCat("copying the network to ", device.str()),
                   [&]() -> absl::StatusOr<std::shared_ptr<ResidualNetImpl>> {
                     auto copy = std::make_shared<ResidualNetImpl>(net.shape());
                     {
                       at::NoGradGuard no_grad;
                       auto src = NamedState(net);
                       auto dst = NamedState(*copy);
                       for (size_t i = 0; i < src.size(); ++i) dst[i].second.copy_(src[i].second);
                     }
                     copy->to(device);
                     {
                       // Module::to(dtype) would also turn batch norm's int64 step counters into
                       // floats.
                       at::NoGradGuard no_grad;
                       for (auto& [name, t] : NamedState(*copy)) {
                         if (!t.is_floating_point()) continue;
                         torch::Tensor converted = t.to(dtype);
                         if (channels_last && converted.dim() == 4) {
                           converted = converted.contiguous(at::MemoryFormat::ChannelsLast);
                         }
                         t.set_data(converted);
                       }
                     }
                     copy->eval();
                     return copy;
                   });
}

absl::StatusOr<std::string> SerializeWeights(const ResidualNetImpl& net) {
  return TorchCall(absl::StatusCode::kInternal, "serializing the weights",
                   [&]() -> absl::StatusOr<std::string> {
                     const ResidualNetImpl* cpu = &net;
                     std::shared_ptr<ResidualNetImpl> copy;
                     bool standard_layout = true;
                     for (const auto& [name, t] : NamedState(net)) {
                       standard_layout = standard_layout && t.is_contiguous();
                     }
                     if (!IsOnCpu(net) || !standard_layout) {
                       // Archives of CUDA tensors would need CUDA to load; checkpoints must load
                       // anywhere, and hold the standard (contiguous NCHW) layout whatever
                       // layout trained them.
                       copy = std::make_shared<ResidualNetImpl>(net.shape());
                       at::NoGradGuard no_grad;
                       auto src = NamedState(net);
                       auto dst = NamedState(*copy);
                       for (size_t i = 0; i < src.size(); ++i) dst[i].second.copy_(src[i].second);
                       cpu = copy.get();
                     }
                     torch::serialize::OutputArchive archive;
                     cpu->save(archive);
                     std::string out;
                     archive.save_to([&out](const void* data, size_t size) -> size_t {
                       out.append(static_cast<const char*>(data), size);
                       return size;
                     });
                     return out;
                   });
}

absl::Status LoadWeights(absl::string_view blob, absl::string_view where, ResidualNetImpl& net) {
  if (!IsOnCpu(net)) {
    return absl::FailedPreconditionError("LoadWeights: the network must be on the CPU");
  }
  // Module::load replaces each tensor with the archive's, whatever its shape, so check the
  // shapes against a snapshot taken before.
  struct Expected {
    std::string name;
    std::vector<int64_t> sizes;
    c10::ScalarType dtype;
  };
  std::vector<Expected> expected;
  for (const auto& [name, tensor] : NamedState(net)) {
    expected.push_back({name, tensor.sizes().vec(), tensor.scalar_type()});
  }
  ZF_RETURN_IF_ERROR(
      TorchCall(absl::StatusCode::kDataLoss, absl::StrCat(where, ": the weights do not load"), [&] {
        torch::serialize::InputArchive archive;
        archive.load_from(blob.data(), blob.size(), torch::Device(torch::kCPU));
        net.load(archive);
      }));
  const auto loaded = NamedState(net);
  if (loaded.size() != expected.size()) {
    return absl::DataLossError(absl::StrCat(where, ": the weights have ", loaded.size(),
                                            " tensors, the network ", expected.size()));
  }
  for (size_t i = 0; i < loaded.size(); ++i) {
    const torch::Tensor& t = loaded[i].second;
    if (loaded[i].first != expected[i].name || t.sizes().vec() != expected[i].sizes ||
        t.scalar_type() != expected[i].dtype) {
      return absl::DataLossError(absl::StrCat(
          where, ": the weights do not match the network shape: ", expected[i].name, " is ",
          ShapeText(t.sizes()), " ", c10::toString(t.scalar_type()), ", expected ",
          ShapeText(expected[i].sizes), " ", c10::toString(expected[i].dtype)));
    }
  }
  return absl::OkStatus();
}

std::string TorchVersion() {
  // Built from the numbers: older releases define no TORCH_VERSION string.
  return absl::StrCat(TORCH_VERSION_MAJOR, ".", TORCH_VERSION_MINOR, ".", TORCH_VERSION_PATCH);
}

}  // namespace zf::model::internal
