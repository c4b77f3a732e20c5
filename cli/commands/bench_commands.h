// `zf bench MODE` (zf-torch): mcts (search/throughput.h), inference
// (inference_server/bench/inference_bench.h), replay (replay/bench/replay_bench.h), selfplay
// (selfplay_bench.cc) and abuse (inference_server/bench/abuse_bench.h). Each prints a table, or
// with --json one JSON object.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "cli/command.h"

namespace zf::cli {

std::vector<Command> BenchCommands();

// `zf bench selfplay` (selfplay_bench.cc). `args` are the positional arguments after "selfplay".
absl::Status RunBenchSelfplay(const std::vector<std::string>& args);

// The flags `zf bench` accepts for these two benchmarks (besides game, seconds, json).
std::vector<std::string> BenchFlags();

// Returns: OK after printing; InvalidArgument for bad flags; the benchmark's error otherwise.
absl::Status RunBenchInference();
absl::Status RunBenchReplay();
// `zf bench abuse`: inference_server/bench/abuse_bench.h.
absl::Status RunBenchAbuse();

}  // namespace zf::cli
