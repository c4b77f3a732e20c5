// Subcommands of the evaluator role: `zf ratings` (the Elo table of a run's evaluation games).
#pragma once

#include <vector>

#include "cli/command.h"

namespace zf::cli {

std::vector<Command> EvaluatorCommands();

}  // namespace zf::cli
