// `zf inference`: the inference server (dynamic batching over a LibTorch network, gRPC).
#pragma once

#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/command.h"
#include "inference_server/batch_tuner.h"

namespace zf::cli {

std::vector<Command> InferenceCommands();

// --batch_tuning and --batch_latency_ms: the batcher's tuning options, nullopt for "off".
// Returns: InvalidArgument naming the bad flag.
absl::StatusOr<std::optional<inference::BatchTunerOptions>> BatchTuningFromFlags();

}  // namespace zf::cli
