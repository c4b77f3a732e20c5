// `zf evaluator`: the evaluator role (zf-torch: it plays networks).
#pragma once

#include <vector>

#include "cli/command.h"

namespace zf::cli {

std::vector<Command> EvaluatorCommands();

}  // namespace zf::cli
