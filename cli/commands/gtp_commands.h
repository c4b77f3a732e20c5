// Subcommands that expose one player to other programs: gtp (a GTP engine on stdin/stdout) and
// analyze (what a player would play in a position, with its search statistics).
#pragma once

#include <vector>

#include "cli/command.h"

namespace zf::cli {

std::vector<Command> GtpCommands();

}  // namespace zf::cli
