// net:CHECKPOINT players need a network, which only the LibTorch-linked `zf-torch` can run
// (docs/architecture.md, "Two binaries"). players/ reaches it through the hook below: zf-torch's
// main() installs it (cli/network_runtime.cc) before dispatching; in `zf` it stays empty and a
// net: spec fails with FailedPrecondition (NoNetworkRuntime), which `zf` never reaches: it hands
// such commands to zf-torch first.
//
// Thread-safety: install before any player is made; the hook is read-only afterwards.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "games/game.h"
#include "search/evaluator.h"

namespace zf::players {

// True for a player spec that runs a network ("net:CHECKPOINT:SIMS", players/player_spec.h).
inline bool IsNetworkPlayerSpec(absl::string_view spec) { return absl::StartsWith(spec, "net:"); }

// The error of a hook used in the binary without LibTorch.
inline absl::Status NoNetworkRuntime(absl::string_view what) {
  return absl::FailedPreconditionError(
      absl::StrCat(what, " runs a network, which only zf-torch can (this binary has no LibTorch)"));
}

// net:CHECKPOINT players: the evaluator of an MCTS player over a checkpoint's network on the
// CPU (model::LocalEvaluator with one LibTorch thread). One hook per game type.
template <games::Game G>
using NetworkEvaluatorFactory = std::function<absl::StatusOr<std::unique_ptr<search::Evaluator<G>>>(
    const std::string& checkpoint, const G& start)>;

template <games::Game G>
NetworkEvaluatorFactory<G>& NetworkEvaluatorHook() {
  static NetworkEvaluatorFactory<G> hook;
  return hook;
}

template <games::Game G>
absl::StatusOr<std::unique_ptr<search::Evaluator<G>>> MakeNetworkEvaluator(
    const std::string& checkpoint, const G& start) {
  const NetworkEvaluatorFactory<G>& hook = NetworkEvaluatorHook<G>();
  if (!hook) return NoNetworkRuntime(absl::StrCat("player net:", checkpoint));
  return hook(checkpoint, start);
}

}  // namespace zf::players
