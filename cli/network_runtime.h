// The network runtime of the `zf` commands: what only `zf-torch` links.
//
// `zf` comes as two binaries (docs/architecture.md, "Two binaries"):
//   zf        the actor, replay, games, search, GTP, `zf top`, `zf health`, the game commands;
//             it does not link LibTorch (an actor maps no libtorch, starts in milliseconds).
//   zf-torch  every command, including those that run a network (inference, learner,
//             evaluator, run, checkpoint, bench), with LibTorch.
// Users type `zf COMMAND`: when a command, or a command's arguments (a `net:` player, `zf actor
// --local`), need a network, `zf` replaces itself with the `zf-torch` next to it (execv: same
// PID, same arguments), see cli/command.h.
//
// The commands that run in both binaries reach the network through the hooks below: zf-torch's
// main() installs them (InstallNetworkRuntime, network_runtime.cc) before dispatching; in `zf`
// they stay empty, and a command whose Command::runs_network says so never reaches them there.
//
// Thread-safety: install before any command runs; the hooks are read-only afterwards.
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

namespace zf::actor {
class AsyncEvaluator;  // actor/async_evaluator.h; not included: it brings the gRPC client, and
                       // this header is in every player's (the GTP fuzzer's too)
}  // namespace zf::actor

namespace zf::cli {

// True for a player spec that runs a network ("net:CHECKPOINT:SIMS", cli/players.h).
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

// `zf actor --local`: the batch-1 in-process network the served actor is compared with.
struct LocalActorNetwork {
  std::string game;        // the game's full name, e.g. "go:9"
  std::string checkpoint;  // empty: a fresh network of blocks x filters, seed 1
  int blocks = 0;
  int filters = 0;
  bool global_pooling = false;
  std::string device;  // --device, --precision, --cuda_graphs
  std::string precision;
  bool cuda_graphs = true;
};
using LocalActorEvaluatorFactory =
    std::function<absl::StatusOr<std::shared_ptr<actor::AsyncEvaluator>>(
        const LocalActorNetwork& network)>;

inline LocalActorEvaluatorFactory& LocalActorEvaluatorHook() {
  static LocalActorEvaluatorFactory hook;
  return hook;
}

// True once InstallNetworkRuntime ran (in zf-torch).
inline bool& NetworkRuntimeInstalled() {
  static bool installed = false;
  return installed;
}

// Installs every hook above. Defined in network_runtime.cc, linked only into zf-torch.
void InstallNetworkRuntime();

}  // namespace zf::cli
