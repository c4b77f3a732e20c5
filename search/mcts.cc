#include "search/mcts.h"

#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace zf::search {

absl::Status MctsOptions::Validate() const {
  if (num_simulations < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_simulations must be >= 1, got ", num_simulations));
  }
  if (!(c_puct > 0.0f) || !std::isfinite(c_puct)) {
    return absl::InvalidArgumentError(absl::StrCat("c_puct must be > 0, got ", c_puct));
  }
  if (!(c_puct_base >= 0.0f) || !std::isfinite(c_puct_base)) {
    return absl::InvalidArgumentError(
        absl::StrCat("c_puct_base must be >= 0 (0 = constant c_puct), got ", c_puct_base));
  }
  if (!std::isfinite(fpu_reduction)) {
    return absl::InvalidArgumentError(
        absl::StrCat("fpu_reduction must be finite, got ", fpu_reduction));
  }
  if (virtual_loss < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("virtual_loss must be >= 1, got ", virtual_loss));
  }
  if (!(dirichlet_alpha > 0.0f) || !std::isfinite(dirichlet_alpha)) {
    return absl::InvalidArgumentError(
        absl::StrCat("dirichlet_alpha must be > 0, got ", dirichlet_alpha));
  }
  if (!(dirichlet_epsilon >= 0.0f && dirichlet_epsilon <= 1.0f)) {
    return absl::InvalidArgumentError(
        absl::StrCat("dirichlet_epsilon must be in [0, 1], got ", dirichlet_epsilon));
  }
  if (!(forced_playout_k >= 0.0f) || !std::isfinite(forced_playout_k)) {
    return absl::InvalidArgumentError(
        absl::StrCat("forced_playout_k must be >= 0 (0 = off), got ", forced_playout_k));
  }
  if (!(score_utility >= 0.0f && score_utility <= 1.0f)) {
    return absl::InvalidArgumentError(
        absl::StrCat("score_utility must be in [0, 1] (0 = off), got ", score_utility));
  }
  if (!(score_utility_scale > 0.0f) || !std::isfinite(score_utility_scale)) {
    return absl::InvalidArgumentError(
        absl::StrCat("score_utility_scale must be > 0, got ", score_utility_scale));
  }
  if (!(lcb_stdevs >= 0.0f) || !std::isfinite(lcb_stdevs)) {
    return absl::InvalidArgumentError(
        absl::StrCat("lcb_stdevs must be finite and >= 0 (0 = off), got ", lcb_stdevs));
  }
  if (!(lcb_min_visit_fraction >= 0.0f && lcb_min_visit_fraction <= 1.0f)) {
    return absl::InvalidArgumentError(
        absl::StrCat("lcb_min_visit_fraction must be in [0, 1], got ", lcb_min_visit_fraction));
  }
  if (gumbel_considered_actions < 0 || gumbel_considered_actions > 32767) {
    return absl::InvalidArgumentError(
        absl::StrCat("gumbel_considered_actions must be in [0, 32767] (0 = off), got ",
                     gumbel_considered_actions));
  }
  if (!(gumbel_c_visit >= 0.0f) || !std::isfinite(gumbel_c_visit)) {
    return absl::InvalidArgumentError(
        absl::StrCat("gumbel_c_visit must be finite and >= 0, got ", gumbel_c_visit));
  }
  if (!(gumbel_c_scale > 0.0f) || !std::isfinite(gumbel_c_scale)) {
    return absl::InvalidArgumentError(
        absl::StrCat("gumbel_c_scale must be finite and > 0, got ", gumbel_c_scale));
  }
  if (gumbel_considered_actions > 0 && forced_playout_k > 0.0f) {
    return absl::InvalidArgumentError(
        "forced_playout_k and gumbel_considered_actions exclude each other (both are root "
        "rules)");
  }
  return absl::OkStatus();
}

}  // namespace zf::search
