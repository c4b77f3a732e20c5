// `zf actor` (self-play against an inference server into a run directory or replay shards),
// `zf games dump FILE` (print a .zfgames file) and `zf bench selfplay` (served self-play versus
// batch-1 in-process self-play, P processes each).
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "cli/command.h"

namespace zf::cli {

std::vector<Command> ActorCommands();

// `zf bench selfplay`, dispatched from `zf bench` (player_commands.cc). `args` are the
// positional arguments after "selfplay".
absl::Status RunBenchSelfplay(const std::vector<std::string>& args);

}  // namespace zf::cli
