// `zf run`: the whole fleet in one process (see run_commands.cc for the run directory layout).
#pragma once

#include <vector>

#include "cli/command.h"

namespace zf::cli {

std::vector<Command> RunCommands();

}  // namespace zf::cli
