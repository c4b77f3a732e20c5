// `zf actor` (self-play against an inference server into a run directory or replay shards) and
// `zf games dump FILE` (print a .zfgames file).
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "cli/command.h"

namespace zf::cli {

std::vector<Command> ActorCommands();

}  // namespace zf::cli
