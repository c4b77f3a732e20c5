// INTERNAL: the network as light-weight LibTorch translation units see it.
//
// This header names only at::Tensor and an opaque ResidualNetImpl, so a translation unit that
// includes it (and defines TORCH_ASSERT_ONLY_METHOD_OPERATORS, using per-op headers such as
// ATen/ops/from_blob.h) compiles in about 5 s instead of the 20 s that the nn module headers
// cost. model/internal/residual_net.h defines the module itself, for the translation units that
// build or train it (residual_net.cc, later the learner).
//
// Include only from .cc files, through the zf_model_torch target (or inside model/). Every
// other file uses the torch-free APIs: network.h, checkpoint.h, inference_session.h.
//
// Exceptions: LibTorch reports errors by throwing c10::Error. The functions returning a Status
// catch everything; Forward and PlanesToInput throw, so call them inside TorchCall().
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>
#include <c10/util/Exception.h>

#include <cstdint>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "model/network.h"

namespace zf::model::internal {

class ResidualNetImpl;  // model/internal/residual_net.h

struct NetworkOutput {
  at::Tensor policy_logits;  // float [N, num_actions]
  at::Tensor wdl_logits;     // float [N, 3]: win, draw, loss for the player to move
  // Only from ForwardWithAux on a network with aux_heads (score also from ForwardWithScore);
  // undefined otherwise.
  // float [N, H*W]: u, with tanh(u) in (-1, 1) the predicted final owner of each cell from
  // the mover's side (+1: the player to move)
  at::Tensor ownership_logits;
  at::Tensor score;  // float [N]: its final margin / sqrt(H*W)
};

// A new network on the CPU, in training mode, initialized deterministically from `seed`
// (ResidualNetImpl::ResetParameters).
// Returns: InvalidArgument if the shape is invalid; ResourceExhausted if it cannot be
// allocated; Internal for other LibTorch errors.
absl::StatusOr<std::shared_ptr<ResidualNetImpl>> CreateNetwork(const NetworkShape& shape,
                                                               uint64_t seed);

// The network's shape.
const NetworkShape& ShapeOf(const ResidualNetImpl& net);

// Puts the 4-D parameters (the convolutions' weights) in channels-last (NHWC) memory, which
// oneDNN convolves on the CPU without reordering; their values are unchanged, and a tensor
// created like them (gradients, optimizer state) follows. SerializeWeights still writes the
// standard layout.
absl::Status UseChannelsLast(ResidualNetImpl& net);

// Moves the network to `device` and puts it in eval mode: batch norm then uses its running
// statistics and writes nothing, so concurrent Forward calls are safe.
// Returns: ResourceExhausted if the device is out of memory; Internal for other errors.
absl::Status PrepareForInference(ResidualNetImpl& net, c10::Device device);

// A copy of `net` for inference only: on `device`, with floating-point parameters and buffers
// in `dtype` (kFloat, kBFloat16 or kHalf), 4-D weights in channels-last layout when
// `channels_last` (tensor cores read NHWC without a transpose), in eval mode. `net` is not
// changed, so it can keep float32 master weights (for Save) while the copy serves.
// Returns: InvalidArgument for another dtype; ResourceExhausted if the device is out of memory;
// Internal for other LibTorch errors.
absl::StatusOr<std::shared_ptr<ResidualNetImpl>> CopyForInference(const ResidualNetImpl& net,
                                                                  c10::Device device,
                                                                  c10::ScalarType dtype,
                                                                  bool channels_last);

// uint8 planes [N, C, H, W] (on any device) to the network's float input on the same device,
// values unchanged, in channels-last memory when `channels_last` (one copy does both; for a
// network after UseChannelsLast). The conversion runs where the tensor is: copy uint8 to a GPU
// first (4x fewer bytes). Throws c10::Error.
at::Tensor PlanesToInput(const at::Tensor& planes, bool channels_last = false);

// The forward pass on float input [N, C, H, W] on the network's device. Throws c10::Error.
NetworkOutput Forward(ResidualNetImpl& net, const at::Tensor& input);

// Forward plus the ownership and score heads when the shape has aux_heads (the learner's
// pass). Throws c10::Error.
NetworkOutput ForwardWithAux(ResidualNetImpl& net, const at::Tensor& input);

// Forward plus the score head (inference for search's score utility). Requires a network with
// aux_heads (ZF_CHECK). Throws c10::Error.
NetworkOutput ForwardWithScore(ResidualNetImpl& net, const at::Tensor& input);

// The weights blob of a checkpoint: a LibTorch archive (torch::save) of every parameter and
// buffer, written from CPU copies whatever device `net` is on.
// Returns: Internal if LibTorch fails.
absl::StatusOr<std::string> SerializeWeights(const ResidualNetImpl& net);

// Loads a weights blob into `net` (which must be on the CPU; move it afterwards), checking
// that every parameter and buffer is present with the shape and dtype `net` has. `where`
// names the source in error messages (the checkpoint's path). On error `net` is left
// partially loaded: discard it.
// Returns: DataLoss if the blob is not a readable archive or does not match the network;
// FailedPrecondition if `net` is not on the CPU.
absl::Status LoadWeights(absl::string_view blob, absl::string_view where, ResidualNetImpl& net);

// The LibTorch version this binary was compiled against, e.g. "1.13.0".
std::string TorchVersion();

// Runs `f` (which returns void, absl::Status or absl::StatusOr<T>), converting any exception
// into a Status: c10::OutOfMemoryError and std::bad_alloc become ResourceExhausted, any other
// c10::Error becomes `code` with `context` and LibTorch's message (without its C++
// backtrace), anything else Internal.
template <typename F>
auto TorchCall(absl::StatusCode code, absl::string_view context, F&& f)
    -> std::conditional_t<std::is_void_v<decltype(f())>, absl::Status, decltype(f())> {
  try {
    if constexpr (std::is_void_v<decltype(f())>) {
      std::forward<F>(f)();
      return absl::OkStatus();
    } else {
      return std::forward<F>(f)();
    }
  } catch (const c10::OutOfMemoryError& e) {
    return absl::ResourceExhaustedError(
        absl::StrCat(context, ": out of memory: ", e.what_without_backtrace()));
  } catch (const c10::Error& e) {
    return absl::Status(code, absl::StrCat(context, ": ", e.what_without_backtrace()));
  } catch (const std::bad_alloc& e) {
    return absl::ResourceExhaustedError(absl::StrCat(context, ": out of memory: ", e.what()));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat(context, ": ", e.what()));
  } catch (...) {
    return absl::InternalError(absl::StrCat(context, ": unknown exception"));
  }
}

}  // namespace zf::model::internal
