#include "inference_server/torch_backend.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace zf::inference {

absl::Status TorchBackend::Options::Validate() const {
  if (session == nullptr) return absl::InvalidArgumentError("TorchBackend: session is required");
  if (max_batch < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("TorchBackend: max_batch must be >= 1, got ", max_batch));
  }
  if (version.has_value() && *version < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("TorchBackend: version must be >= 0, got ", *version));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<TorchBackend>> TorchBackend::Create(Options options) {
  ZF_RETURN_IF_ERROR(options.Validate());
  const model::NetworkShape& shape = options.session->shape();
  const ModelSpec spec{.input_channels = shape.input_channels,
                       .board_height = shape.board_height,
                       .board_width = shape.board_width,
                       .num_actions = shape.num_actions,
                       .score = shape.aux_heads};
  ZF_RETURN_IF_ERROR(spec.Validate());
  const int64_t version = options.version.value_or(options.session->version());
  return std::unique_ptr<TorchBackend>(
      new TorchBackend(std::move(options.session), spec, options.max_batch, version));
}

absl::Status TorchBackend::Run(std::span<const uint8_t> planes, int batch,
                               std::span<float> policy_logits, std::span<float> wdl,
                               std::span<float> scores) {
  ZF_RETURN_IF_ERROR(
      ValidateRunArguments(spec_, max_batch_, planes, batch, policy_logits, wdl, scores));
  return session_->Run(planes, batch, policy_logits, wdl, scores);
}

}  // namespace zf::inference
