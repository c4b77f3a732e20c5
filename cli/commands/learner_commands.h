// `zf learner`: trains from replay shards and publishes checkpoints (and serves them with the
// model service) until SIGINT/SIGTERM or --max_steps.
#pragma once

#include <vector>

#include "cli/command.h"

namespace zf::cli {

std::vector<Command> LearnerCommands();

}  // namespace zf::cli
