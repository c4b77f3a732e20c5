// `zf inference`: the inference server (dynamic batching over a LibTorch network, gRPC).
#pragma once

#include <vector>

#include "cli/command.h"

namespace zf::cli {

std::vector<Command> InferenceCommands();

}  // namespace zf::cli
