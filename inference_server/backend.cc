#include "inference_server/backend.h"

#include "absl/strings/str_cat.h"

namespace zf::inference {
namespace {

constexpr int64_t kMaxPlaneBytes = int64_t{1} << 24;
constexpr int kMaxActions = 1 << 20;

}  // namespace

absl::Status ModelSpec::Validate() const {
  if (input_channels < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("model spec: input_channels must be >= 1, got ", input_channels));
  }
  if (board_height < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("model spec: board_height must be >= 1, got ", board_height));
  }
  if (board_width < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("model spec: board_width must be >= 1, got ", board_width));
  }
  if (num_actions < 1 || num_actions > kMaxActions) {
    return absl::InvalidArgumentError(absl::StrCat("model spec: num_actions must be in [1, ",
                                                   kMaxActions, "], got ", num_actions));
  }
  if (PlaneSize() > kMaxPlaneBytes) {
    return absl::InvalidArgumentError(absl::StrCat("model spec: a position's planes (", PlaneSize(),
                                                   " bytes) exceed ", kMaxPlaneBytes, " bytes"));
  }
  return absl::OkStatus();
}

std::string ModelSpec::DebugString() const {
  return absl::StrCat(input_channels, "x", board_height, "x", board_width, " -> ", num_actions,
                      " actions", score ? ", with score" : "");
}

absl::Status ValidateRunArguments(const ModelSpec& spec, int max_batch,
                                  std::span<const uint8_t> planes, int batch,
                                  std::span<float> policy_logits, std::span<float> wdl,
                                  std::span<float> scores) {
  if (batch < 1 || batch > max_batch) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch must be in [1, ", max_batch, "], got ", batch));
  }
  const size_t expected_planes = static_cast<size_t>(batch * spec.PlaneSize());
  if (planes.size() != expected_planes) {
    return absl::InvalidArgumentError(absl::StrCat("planes: expected ", expected_planes, " bytes (",
                                                   batch, " x ", spec.DebugString(), "), got ",
                                                   planes.size()));
  }
  const size_t expected_logits = static_cast<size_t>(batch) * spec.num_actions;
  if (policy_logits.size() != expected_logits) {
    return absl::InvalidArgumentError(absl::StrCat("policy_logits: expected ", expected_logits,
                                                   " floats, got ", policy_logits.size()));
  }
  const size_t expected_wdl = static_cast<size_t>(batch) * ModelSpec::kWdlSize;
  if (wdl.size() != expected_wdl) {
    return absl::InvalidArgumentError(
        absl::StrCat("wdl: expected ", expected_wdl, " floats, got ", wdl.size()));
  }
  if (!scores.empty() && !spec.score) {
    return absl::InvalidArgumentError(
        absl::StrCat("scores: the model (", spec.DebugString(), ") has no score head"));
  }
  if (!scores.empty() && scores.size() != static_cast<size_t>(batch)) {
    return absl::InvalidArgumentError(
        absl::StrCat("scores: expected ", batch, " floats, got ", scores.size()));
  }
  return absl::OkStatus();
}

}  // namespace zf::inference
