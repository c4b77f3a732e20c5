#include "search/self_play.h"

#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace zf::search {

absl::Status SelfPlayOptions::Validate() const {
  absl::Status status = mcts.Validate();
  if (!status.ok()) return status;
  // A search needs a visit beyond the root's own expansion to have a visit distribution.
  if (mcts.num_simulations < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mcts.num_simulations must be >= 2 for self-play, got ", mcts.num_simulations));
  }
  if (temperature_moves < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("temperature_moves must be >= 0, got ", temperature_moves));
  }
  if (!(temperature >= 0.0f) || !std::isfinite(temperature)) {
    return absl::InvalidArgumentError(absl::StrCat("temperature must be >= 0, got ", temperature));
  }
  if (!(final_temperature >= 0.0f) || !std::isfinite(final_temperature)) {
    return absl::InvalidArgumentError(
        absl::StrCat("final_temperature must be >= 0, got ", final_temperature));
  }
  if (!(full_search_probability >= 0.0f && full_search_probability <= 1.0f)) {
    return absl::InvalidArgumentError(
        absl::StrCat("full_search_probability must be in [0, 1], got ", full_search_probability));
  }
  if (full_search_probability < 1.0f && fast_simulations < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("fast_simulations must be >= 2, got ", fast_simulations));
  }
  if (!(resign_threshold >= -1.0f && resign_threshold <= 1.0f)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "resign_threshold must be in [-1, 1] (-1 = never resign), got ", resign_threshold));
  }
  if (resign_consecutive < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("resign_consecutive must be >= 1, got ", resign_consecutive));
  }
  if (!(resign_playthrough_fraction >= 0.0f && resign_playthrough_fraction <= 1.0f)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "resign_playthrough_fraction must be in [0, 1], got ", resign_playthrough_fraction));
  }
  if (!(rollout_opponent_share >= 0.0f && rollout_opponent_share <= 1.0f)) {
    return absl::InvalidArgumentError(
        absl::StrCat("rollout_opponent_share must be in [0, 1], got ", rollout_opponent_share));
  }
  if (rollout_opponent_share > 0.0f && rollout_opponent_simulations < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "rollout_opponent_simulations must be >= 2, got ", rollout_opponent_simulations));
  }
  if (max_moves < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_moves must be >= 0 (0 = the game's maximum), got ", max_moves));
  }
  return absl::OkStatus();
}

}  // namespace zf::search
