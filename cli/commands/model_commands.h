// Subcommands over network checkpoints: `zf checkpoint new` and `zf checkpoint show`.
#pragma once

#include <vector>

#include "cli/command.h"

namespace zf::cli {

std::vector<Command> ModelCommands();

}  // namespace zf::cli
