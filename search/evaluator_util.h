// Helpers shared by the evaluators in search/: the size checks every Evaluate call makes.
#pragma once

#include <cstddef>
#include <span>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "games/game.h"

namespace zf::search::internal {

// Returns: OK when policies has positions.size() * A floats (A = NumActions() of the first
// position, the same for every position) and values has positions.size() floats;
// InvalidArgument saying which span is wrong otherwise.
template <games::Game G>
absl::Status CheckEvaluateSpans(std::span<const G> positions, std::span<float> policies,
                                std::span<float> values) {
  const size_t n = positions.size();
  const size_t a = n == 0 ? 0 : static_cast<size_t>(positions.front().NumActions());
  if (policies.size() != n * a) {
    return absl::InvalidArgumentError(absl::StrCat("policies has ", policies.size(),
                                                   " floats, want ", n, " x ", a));
  }
  if (values.size() != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("values has ", values.size(), " floats, want ", n));
  }
  return absl::OkStatus();
}

}  // namespace zf::search::internal
