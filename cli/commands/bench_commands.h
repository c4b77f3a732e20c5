// `zf bench inference` and `zf bench replay` (dispatched by `zf bench` in player_commands.cc):
// the serving benchmark (inference_server/bench/inference_bench.h) and the replay shard benchmark
// (replay/bench/replay_bench.h). Each prints a table, or with --json one JSON object.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace zf::cli {

// The flags `zf bench` accepts for these two benchmarks (besides game, seconds, json).
std::vector<std::string> BenchFlags();

// Returns: OK after printing; InvalidArgument for bad flags; the benchmark's error otherwise.
absl::Status RunBenchInference();
absl::Status RunBenchReplay();
// `zf bench abuse`: cli/abuse_bench.h.
absl::Status RunBenchAbuse();

}  // namespace zf::cli
