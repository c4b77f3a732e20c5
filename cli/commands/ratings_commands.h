// `zf ratings`: the Elo table of a run's evaluation games (no network: in `zf` and zf-torch).
#pragma once

#include <vector>

#include "cli/command.h"

namespace zf::cli {

std::vector<Command> RatingsCommands();

}  // namespace zf::cli
