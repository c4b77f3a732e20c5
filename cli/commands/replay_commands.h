// `zf replay`: one replay shard served over gRPC until SIGINT or SIGTERM.
#pragma once

#include <vector>

#include "cli/command.h"

namespace zf::cli {

std::vector<Command> ReplayCommands();

}  // namespace zf::cli
