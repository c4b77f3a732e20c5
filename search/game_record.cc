#include "search/game_record.h"

#include <cmath>
#include <cstddef>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace zf::search {

absl::Status GameRecord::Validate() const {
  const size_t n = to_play.size();
  if (shape.Size() <= 0 || num_actions <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("record of ", game, " has plane size ",
                                                   shape.Size(), " and ", num_actions, " actions"));
  }
  if (planes.size() != n * static_cast<size_t>(shape.Size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("planes has ", planes.size(), " bytes, want ", n, " x ", shape.Size()));
  }
  if (policy_targets.size() != n * static_cast<size_t>(num_actions)) {
    return absl::InvalidArgumentError(absl::StrCat("policy_targets has ", policy_targets.size(),
                                                   " floats, want ", n, " x ", num_actions));
  }
  if (full_search.size() != n || actions.size() != n || root_values.size() != n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "per-position arrays disagree: to_play ", n, ", full_search ", full_search.size(),
        ", actions ", actions.size(), ", root_values ", root_values.size()));
  }
  if (num_moves != static_cast<int>(n)) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_moves is ", num_moves, " but ", n, " positions are recorded"));
  }
  for (size_t i = 0; i < n; ++i) {
    if (to_play[i] != 0 && to_play[i] != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("to_play[", i, "] is ", static_cast<int>(to_play[i])));
    }
    if (actions[i] < 0 || actions[i] >= num_actions) {
      return absl::InvalidArgumentError(absl::StrCat("actions[", i, "] is ", actions[i]));
    }
    double sum = 0.0;
    for (int a = 0; a < num_actions; ++a) {
      const float p = policy_targets[i * num_actions + a];
      if (!(p >= 0.0f)) {
        return absl::InvalidArgumentError(absl::StrCat("policy_targets[", i, ", ", a, "] is ", p));
      }
      sum += p;
    }
    if (std::abs(sum - 1.0) > 1e-3) {
      return absl::InvalidArgumentError(absl::StrCat("policy target ", i, " sums to ", sum));
    }
    if (!(root_values[i] >= -1.0f && root_values[i] <= 1.0f)) {
      return absl::InvalidArgumentError(absl::StrCat("root_values[", i, "] is ", root_values[i]));
    }
  }
  for (const float r : returns) {
    if (!(r >= -1.0f && r <= 1.0f)) {
      return absl::InvalidArgumentError(absl::StrCat("return ", r, " is out of [-1, 1]"));
    }
  }
  if (returns[0] != -returns[1]) {
    return absl::InvalidArgumentError(
        absl::StrCat("returns ", returns[0], ", ", returns[1], " are not zero-sum"));
  }
  if (final_ownership.empty() != !final_score.has_value()) {
    return absl::InvalidArgumentError("final_ownership and final_score come together");
  }
  if (!final_ownership.empty()) {
    if (final_ownership.size() != static_cast<size_t>(shape.Cells())) {
      return absl::InvalidArgumentError(absl::StrCat("final_ownership has ", final_ownership.size(),
                                                     " cells, want ", shape.Cells()));
    }
    for (size_t c = 0; c < final_ownership.size(); ++c) {
      if (final_ownership[c] < -1 || final_ownership[c] > 1) {
        return absl::InvalidArgumentError(
            absl::StrCat("final_ownership[", c, "] is ", static_cast<int>(final_ownership[c])));
      }
    }
    if (!std::isfinite(*final_score) ||
        std::abs(*final_score) > static_cast<float>(kMaxScorePerCell * shape.Cells())) {
      return absl::InvalidArgumentError(absl::StrCat("final_score ", *final_score, " is beyond ",
                                                     kMaxScorePerCell, " points a cell"));
    }
    if (resigned || truncated) {
      return absl::InvalidArgumentError(
          "a resigned or truncated game has no final ownership or score");
    }
    if ((*final_score > 0) != (returns[0] > 0) || (*final_score < 0) != (returns[0] < 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("final_score ", *final_score, " disagrees with returns[0] = ", returns[0]));
    }
  }
  if (resigned) {
    if (resigning_player != 0 && resigning_player != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("resigned with resigning_player ", resigning_player));
    }
    if (returns[resigning_player] != -1.0f || resignation_disabled || truncated) {
      return absl::InvalidArgumentError(
          "a resigned game must be lost by the resigning player, with resignation enabled");
    }
  }
  if (would_have_resigned) {
    if (!resignation_disabled || (would_resign_player != 0 && would_resign_player != 1) ||
        would_resign_move < 0 || would_resign_move > num_moves) {
      return absl::InvalidArgumentError(
          absl::StrCat("would_have_resigned with player ", would_resign_player, " at move ",
                       would_resign_move, " (resignation_disabled ", resignation_disabled, ")"));
    }
    if (resign_false_positive != (returns[would_resign_player] >= 0.0f)) {
      return absl::InvalidArgumentError("resign_false_positive disagrees with the returns");
    }
  } else if (resign_false_positive) {
    return absl::InvalidArgumentError("resign_false_positive without would_have_resigned");
  }
  return absl::OkStatus();
}

}  // namespace zf::search
