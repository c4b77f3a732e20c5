#include "cli/commands/bench_commands.h"

#include <unistd.h>

#include <iostream>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "cli/common_flags.h"
#include "common/status_macros.h"
#include "inference_server/bench/inference_bench.h"
#include "replay/bench/replay_bench.h"

ABSL_FLAG(int, streams, 8, "bench inference: concurrent gRPC client streams (1..1024)");
ABSL_FLAG(int, rows, 2, "bench inference: positions per request (1..4096)");
ABSL_FLAG(int, in_flight, 2, "bench inference: requests in flight per stream (1..64)");
ABSL_FLAG(int, baseline_threads, 8,
          "bench inference: threads of the batch-1 baseline, each with its own model (1..256)");
ABSL_FLAG(int, intra_op_threads, 1, "bench inference: LibTorch intra-op threads (1..256)");
ABSL_FLAG(int, inserters, 16, "bench replay: threads inserting games (1..256)");
ABSL_FLAG(double, peak_tflops, 0,
          "bench inference: the device's peak TFLOP/s in the precision used (0: known GPUs by "
          "name)");

ABSL_DECLARE_FLAG(int, max_batch);
ABSL_DECLARE_FLAG(int64_t, capacity);
ABSL_DECLARE_FLAG(double, seconds);

namespace zf::cli {

std::vector<std::string> BenchFlags() {
  return {"blocks",    "filters",          "max_batch",        "streams",     "rows",
          "in_flight", "baseline_threads", "intra_op_threads", "capacity",    "inserters",
          "dir",       "device",           "precision",        "cuda_graphs", "peak_tflops"};
}

absl::Status RunBenchInference() {
  inference::InferenceBenchOptions options;
  options.game = absl::GetFlag(FLAGS_game);
  options.blocks = absl::GetFlag(FLAGS_blocks);
  options.filters = absl::GetFlag(FLAGS_filters);
  options.max_batch = absl::GetFlag(FLAGS_max_batch);
  options.streams = absl::GetFlag(FLAGS_streams);
  options.rows = absl::GetFlag(FLAGS_rows);
  options.in_flight = absl::GetFlag(FLAGS_in_flight);
  options.baseline_threads = absl::GetFlag(FLAGS_baseline_threads);
  options.intra_op_threads = absl::GetFlag(FLAGS_intra_op_threads);
  options.seconds = absl::GetFlag(FLAGS_seconds);
  options.device = absl::GetFlag(FLAGS_device);
  options.precision = absl::GetFlag(FLAGS_precision);
  options.cuda_graphs = absl::GetFlag(FLAGS_cuda_graphs);
  options.peak_tflops = absl::GetFlag(FLAGS_peak_tflops);
  ZF_RETURN_IF_ERROR(options.Validate());
  ZF_ASSIGN_OR_RETURN(inference::InferenceBenchResult result,
                      inference::RunInferenceBench(options));
  std::cout << (absl::GetFlag(FLAGS_json) ? inference::FormatInferenceBenchJson(result)
                                          : inference::FormatInferenceBenchTable(result))
            << std::flush;
  return absl::OkStatus();
}

absl::Status RunBenchReplay() {
  replay::ReplayBenchOptions options;
  options.capacity = absl::GetFlag(FLAGS_capacity);
  options.inserters = absl::GetFlag(FLAGS_inserters);
  options.seconds = absl::GetFlag(FLAGS_seconds);
  options.dir = absl::GetFlag(FLAGS_dir);
  if (options.dir.empty()) options.dir = absl::StrCat("/tmp/zf_bench_replay_", getpid());
  ZF_RETURN_IF_ERROR(options.Validate());
  ZF_ASSIGN_OR_RETURN(replay::ReplayBenchResult result, replay::RunReplayBench(options));
  std::cout << (absl::GetFlag(FLAGS_json) ? replay::FormatReplayBenchJson(result)
                                          : replay::FormatReplayBenchTable(result))
            << std::flush;
  return absl::OkStatus();
}

}  // namespace zf::cli
