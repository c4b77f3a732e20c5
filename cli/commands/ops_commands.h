// Operator commands: `zf health` (a grpc.health.v1 Check client, used by docker-compose health
// checks) and `zf top` (a live view of the fleet from its /metrics endpoints; fleet/).
#pragma once

#include <vector>

#include "cli/command.h"

namespace zf::cli {

std::vector<Command> OpsCommands();

}  // namespace zf::cli
