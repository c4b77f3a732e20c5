// INTERNAL: the LibTorch module behind model/network.h.
//
// For the translation units that build, load or train the network as a torch::nn::Module
// (residual_net.cc, later the learner's trainer). They pay for the nn headers (about 20 s of
// compile time each); a translation unit that only runs the network includes the light
// model/internal/network_ops.h instead. Include only from .cc files, through zf_model_torch.
//
// Thread-safety: a ResidualNet is a torch::nn::Module: thread-compatible. Concurrent forward()
// calls are safe only in eval mode (batch norm then reads its running statistics and writes
// nothing), which is how InferenceSession uses it.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <vector>

#include "model/internal/network_ops.h"
#include "model/network.h"

namespace zf::model::internal {

// One residual block: y = ReLU(x + BN(conv3x3(ReLU(BN(conv3x3(x)))))); with global_pooling,
// the mean and max over the board of each channel between the convolutions go through
// `gpool_fc` (2*filters -> filters, no bias) and are added at every cell (network.h).
class ResidualBlockImpl : public torch::nn::Module {
 public:
  ResidualBlockImpl(int filters, bool global_pooling);
  torch::Tensor forward(const torch::Tensor& x);

  torch::nn::Conv2d conv1{nullptr};
  torch::nn::BatchNorm2d bn1{nullptr};
  torch::nn::Conv2d conv2{nullptr};
  torch::nn::BatchNorm2d bn2{nullptr};
  torch::nn::Linear gpool_fc{nullptr};  // global_pooling only
};
TORCH_MODULE(ResidualBlock);

// The network network.h describes. Parameter names (the keys of the weights archive) are
// stable: stem_conv, stem_bn, block0..block{B-1}.{conv1,bn1,conv2,bn2} (and .gpool_fc in the
// global pooling blocks, registered after bn2), policy_conv,
// policy_bn, policy_fc, value_conv, value_bn, value_fc1, value_fc2, and with aux_heads
// ownership_conv, score_fc (registered last, so the other parameters' initial values do not
// depend on them).
class ResidualNetImpl : public torch::nn::Module {
 public:
  // Requires shape.Validate().ok() (ZF_CHECK): CreateNetwork (network_ops.h) returns a Status
  // instead. Parameters start with LibTorch's default initialization from its global
  // generator; CreateNetwork replaces it with ResetParameters(seed).
  explicit ResidualNetImpl(const NetworkShape& shape);

  // `input`: float [N, C, H, W] on the module's device (see PlanesToInput).
  NetworkOutput forward(const torch::Tensor& input) { return Run(input, Heads::kPolicyValue); }
  // forward plus the ownership and score heads (requires shape().aux_heads).
  NetworkOutput ForwardWithAux(const torch::Tensor& input) { return Run(input, Heads::kAll); }
  // forward plus the score head only (requires shape().aux_heads): what search's score
  // utility needs at inference.
  NetworkOutput ForwardWithScore(const torch::Tensor& input) { return Run(input, Heads::kScore); }

  const NetworkShape& shape() const { return shape_; }

  // Re-initializes every parameter deterministically from `seed` (LibTorch's default scheme:
  // conv and linear weights and biases uniform in +-1/sqrt(fan_in), batch norm scale 1 and
  // shift 0, running statistics reset), independently of LibTorch's global generator, so the
  // same seed gives the same network on every device and in every process.
  void ResetParameters(uint64_t seed);

 private:
  enum class Heads { kPolicyValue, kScore, kAll };
  NetworkOutput Run(const torch::Tensor& input, Heads heads);

  NetworkShape shape_;
  torch::nn::Conv2d stem_conv_{nullptr};
  torch::nn::BatchNorm2d stem_bn_{nullptr};
  std::vector<ResidualBlock> blocks_;
  torch::nn::Conv2d policy_conv_{nullptr};
  torch::nn::BatchNorm2d policy_bn_{nullptr};
  torch::nn::Linear policy_fc_{nullptr};
  torch::nn::Conv2d value_conv_{nullptr};
  torch::nn::BatchNorm2d value_bn_{nullptr};
  torch::nn::Linear value_fc1_{nullptr};
  torch::nn::Linear value_fc2_{nullptr};
  torch::nn::Conv2d ownership_conv_{nullptr};  // aux_heads only
  torch::nn::Linear score_fc_{nullptr};        // aux_heads only
};
TORCH_MODULE(ResidualNet);  // ResidualNet(std::shared_ptr<ResidualNetImpl>) wraps CreateNetwork's

}  // namespace zf::model::internal
