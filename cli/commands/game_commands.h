// Subcommands over the game rules alone: perft, position, random.
#pragma once

#include <vector>

#include "cli/command.h"

namespace zf::cli {

std::vector<Command> GameCommands();

}  // namespace zf::cli
