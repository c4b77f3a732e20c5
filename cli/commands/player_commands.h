// Subcommands that pit players against each other or against a person: match, play, bench.
#pragma once

#include <vector>

#include "cli/command.h"

namespace zf::cli {

std::vector<Command> PlayerCommands();

}  // namespace zf::cli
