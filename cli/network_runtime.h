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
#include "players/network_evaluator.h"
#include "search/evaluator.h"

namespace zf::actor {
class AsyncEvaluator;  // actor/async_evaluator.h; not included: it brings the gRPC client, and
                       // this header is in every player's (the GTP fuzzer's too)
}  // namespace zf::actor

namespace zf::cli {

using players::NoNetworkRuntime;

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
