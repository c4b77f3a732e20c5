#include "cli/commands/bench_commands.h"

#include <unistd.h>

#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "cli/commands/inference_commands.h"
#include "cli/common_flags.h"
#include "common/host_info.h"
#include "common/json.h"
#include "common/status_macros.h"
#include "games/registry.h"
#include "inference_server/bench/abuse_bench.h"
#include "inference_server/bench/inference_bench.h"
#include "replay/bench/replay_bench.h"
#include "search/throughput.h"

ABSL_FLAG(double, seconds, 3.0, "bench: measuring time in seconds (0.1..600)");
ABSL_FLAG(int, streams, 8, "bench inference: concurrent gRPC client streams (1..1024)");
ABSL_FLAG(int, rows, 2, "bench inference: positions per request (1..4096)");
ABSL_FLAG(int, in_flight, 2, "bench inference: requests in flight per stream (1..64)");
ABSL_FLAG(std::string, transport, "tcp",
          "bench inference: the clients' wire to the server, tcp (loopback) or unix (a Unix "
          "domain socket)");
ABSL_FLAG(int, baseline_threads, 8,
          "bench inference: threads of the batch-1 baseline, each with its own model (1..256)");
ABSL_FLAG(int, intra_op_threads, 1, "bench inference: LibTorch intra-op threads (1..256)");
ABSL_FLAG(std::string, stream_counts, "10,100,1000",
          "bench streams: the numbers of client streams to measure, increasing (each 1..20000)");
ABSL_FLAG(std::string, row_counts, "16,64,256,1024",
          "bench serving: the rows per request to measure (each 1..1024)");
ABSL_FLAG(std::string, transports, "tcp,unix", "bench serving: the wires to measure: tcp, unix");
ABSL_FLAG(int, inserters, 16, "bench replay: threads inserting games (1..256)");
ABSL_FLAG(int, idle_streams, 1000,
          "bench abuse: Evaluate streams opened and left idle (0..100000)");
ABSL_FLAG(int, slow_sockets, 200,
          "bench abuse: connections that send half an HTTP/2 preface and stall (0..10000)");
ABSL_FLAG(int, abandoned, 2000,
          "bench abuse: streams that send a request and are cancelled unread (0..1000000)");
ABSL_FLAG(int, well_behaved, 4, "bench abuse: well-behaved client streams (1..256)");
ABSL_FLAG(int, max_rss_mib, 1024, "bench abuse: the server's memory bound in MiB; above fails");
ABSL_FLAG(double, peak_tflops, 0,
          "bench inference: the device's peak TFLOP/s in the precision used (0: known GPUs by "
          "name)");

ABSL_DECLARE_FLAG(int, max_batch);
ABSL_DECLARE_FLAG(int64_t, max_delay_us);
ABSL_DECLARE_FLAG(int64_t, capacity);
ABSL_DECLARE_FLAG(bool, position_averaging);
ABSL_DECLARE_FLAG(int, games_per_worker);

namespace zf::cli {

std::vector<std::string> BenchFlags() {
  return {"blocks",       "filters",       "max_batch",          "streams",
          "rows",         "in_flight",     "baseline_threads",   "intra_op_threads",
          "capacity",     "inserters",     "position_averaging", "dir",
          "device",       "precision",     "cuda_graphs",        "peak_tflops",
          "idle_streams", "slow_sockets",  "abandoned",          "well_behaved",
          "max_rss_mib",  "transport",     "batch_tuning",       "batch_latency_ms",
          "max_delay_us", "stream_counts", "global_pooling",     "row_counts",
          "transports"};
}

absl::Status RunBenchAbuse() {
  inference::AbuseBenchOptions options;
  options.zf = "/proc/self/exe";
  options.game = absl::GetFlag(FLAGS_game);
  options.well_behaved = absl::GetFlag(FLAGS_well_behaved);
  options.rows = absl::GetFlag(FLAGS_rows);
  options.streams = absl::GetFlag(FLAGS_idle_streams);
  options.slow_sockets = absl::GetFlag(FLAGS_slow_sockets);
  options.abandoned = absl::GetFlag(FLAGS_abandoned);
  options.seconds = absl::GetFlag(FLAGS_seconds);
  options.max_rss_mib = absl::GetFlag(FLAGS_max_rss_mib);
  ZF_RETURN_IF_ERROR(options.Validate());
  ZF_ASSIGN_OR_RETURN(inference::AbuseBenchResult result, inference::RunAbuseBench(options));
  std::cout << (absl::GetFlag(FLAGS_json) ? inference::FormatAbuseBenchJson(result)
                                          : inference::FormatAbuseBenchTable(result))
            << std::flush;
  return absl::OkStatus();
}

absl::Status RunBenchInference() {
  inference::InferenceBenchOptions options;
  options.game = absl::GetFlag(FLAGS_game);
  options.blocks = absl::GetFlag(FLAGS_blocks);
  options.filters = absl::GetFlag(FLAGS_filters);
  options.global_pooling = absl::GetFlag(FLAGS_global_pooling);
  options.max_batch = absl::GetFlag(FLAGS_max_batch);
  options.streams = absl::GetFlag(FLAGS_streams);
  options.rows = absl::GetFlag(FLAGS_rows);
  options.in_flight = absl::GetFlag(FLAGS_in_flight);
  options.transport = absl::GetFlag(FLAGS_transport);
  options.baseline_threads = absl::GetFlag(FLAGS_baseline_threads);
  options.intra_op_threads = absl::GetFlag(FLAGS_intra_op_threads);
  options.seconds = absl::GetFlag(FLAGS_seconds);
  options.device = absl::GetFlag(FLAGS_device);
  options.precision = absl::GetFlag(FLAGS_precision);
  options.cuda_graphs = absl::GetFlag(FLAGS_cuda_graphs);
  ZF_ASSIGN_OR_RETURN(std::optional<inference::BatchTunerOptions> tuning, BatchTuningFromFlags());
  options.batch_tuning = tuning.has_value();
  if (tuning.has_value()) {
    options.batch_latency_ms = absl::ToDoubleMilliseconds(tuning->latency_target);
  }
  options.max_delay_us = static_cast<int>(absl::GetFlag(FLAGS_max_delay_us));
  options.peak_tflops = absl::GetFlag(FLAGS_peak_tflops);
  ZF_RETURN_IF_ERROR(options.Validate());
  ZF_ASSIGN_OR_RETURN(inference::InferenceBenchResult result,
                      inference::RunInferenceBench(options));
  std::cout << (absl::GetFlag(FLAGS_json) ? inference::FormatInferenceBenchJson(result)
                                          : inference::FormatInferenceBenchTable(result))
            << std::flush;
  return absl::OkStatus();
}

absl::Status RunBenchStreams() {
  inference::StreamsBenchOptions options;
  options.server_binary = "/proc/self/exe";
  options.game = absl::GetFlag(FLAGS_game);
  options.blocks = absl::GetFlag(FLAGS_blocks);
  options.filters = absl::GetFlag(FLAGS_filters);
  options.global_pooling = absl::GetFlag(FLAGS_global_pooling);
  options.rows = absl::GetFlag(FLAGS_rows);
  options.in_flight = absl::GetFlag(FLAGS_in_flight);
  options.seconds = absl::GetFlag(FLAGS_seconds);
  options.streams.clear();
  for (absl::string_view count :
       absl::StrSplit(absl::GetFlag(FLAGS_stream_counts), ',', absl::SkipEmpty())) {
    int n = 0;
    if (!absl::SimpleAtoi(count, &n)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--stream_counts: \"", count, "\" is not a number"));
    }
    options.streams.push_back(n);
  }
  ZF_ASSIGN_OR_RETURN(inference::StreamsBenchResult result, inference::RunStreamsBench(options));
  std::cout << (absl::GetFlag(FLAGS_json) ? inference::FormatStreamsBenchJson(result)
                                          : inference::FormatStreamsBenchTable(result))
            << std::flush;
  return absl::OkStatus();
}

absl::Status RunBenchServing() {
  inference::ServingBenchOptions options;
  options.server_binary = "/proc/self/exe";
  options.game = absl::GetFlag(FLAGS_game);
  options.streams = absl::GetFlag(FLAGS_streams);
  options.in_flight = absl::GetFlag(FLAGS_in_flight);
  options.seconds = absl::GetFlag(FLAGS_seconds);
  options.rows.clear();
  for (absl::string_view count :
       absl::StrSplit(absl::GetFlag(FLAGS_row_counts), ',', absl::SkipEmpty())) {
    int n = 0;
    if (!absl::SimpleAtoi(count, &n)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--row_counts: \"", count, "\" is not a number"));
    }
    options.rows.push_back(n);
  }
  options.transports = absl::StrSplit(absl::GetFlag(FLAGS_transports), ',', absl::SkipEmpty());
  ZF_ASSIGN_OR_RETURN(inference::ServingBenchResult result, inference::RunServingBench(options));
  std::cout << (absl::GetFlag(FLAGS_json) ? inference::FormatServingBenchJson(result)
                                          : inference::FormatServingBenchTable(result))
            << std::flush;
  return absl::OkStatus();
}

absl::Status RunBenchReplay() {
  replay::ReplayBenchOptions options;
  options.capacity = absl::GetFlag(FLAGS_capacity);
  options.inserters = absl::GetFlag(FLAGS_inserters);
  options.position_averaging = absl::GetFlag(FLAGS_position_averaging);
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

namespace {

absl::Status RunBench(const std::vector<std::string>& args) {
  if (args.size() == 1 && args[0] == "inference") return RunBenchInference();
  if (args.size() == 1 && args[0] == "replay") return RunBenchReplay();
  if (args.size() == 1 && args[0] == "streams") return RunBenchStreams();
  if (args.size() == 1 && args[0] == "serving") return RunBenchServing();
  if (args.size() == 1 && args[0] == "abuse") return RunBenchAbuse();
  if (!args.empty() && args[0] == "selfplay") {
    return RunBenchSelfplay(std::vector<std::string>(args.begin() + 1, args.end()));
  }
  if (args.size() != 1 || args[0] != "mcts") {
    return absl::InvalidArgumentError(
        args.empty()
            ? "which benchmark? usage: zf bench "
              "mcts|inference|serving|streams|replay|selfplay|abuse [--json]"
            : absl::StrCat("unknown benchmark \"", args[0],
                           "\"; benchmarks: mcts, inference, serving, streams, replay, selfplay, "
                           "abuse"));
  }
  ZF_ASSIGN_OR_RETURN(games::GameConfig config, games::ParseGameName(absl::GetFlag(FLAGS_game)));
  int sims = absl::GetFlag(FLAGS_sims);
  if (sims < 1 || sims > 100000) {
    return absl::InvalidArgumentError(absl::StrCat("--sims must be in 1..100000, got ", sims));
  }
  double seconds = absl::GetFlag(FLAGS_seconds);
  if (!(seconds >= 0.1 && seconds <= 600)) {
    return absl::InvalidArgumentError(absl::StrCat("--seconds must be in 0.1..600, got ", seconds));
  }
  return games::VisitGame(config, [&](const auto& start) -> absl::Status {
    search::ThroughputResult r =
        search::MeasureThroughput(start, sims, absl::Seconds(seconds), /*batch_size=*/16);
    const std::string cpu = CpuModelName();
    const unsigned cores = std::thread::hardware_concurrency();
    if (absl::GetFlag(FLAGS_json)) {
      std::cout << "{\"game\": " << JsonString(start.Name())
                << ", \"sims_per_sec\": " << absl::StrFormat("%.0f", r.SimulationsPerSecond())
                << ", \"simulations\": " << r.simulations << ", \"searches\": " << r.searches
                << ", \"seconds\": " << absl::StrFormat("%.3f", r.seconds)
                << ", \"sims_per_search\": " << sims << ", \"threads\": 1"
                << ", \"evaluator\": \"uniform\", \"cpu\": " << JsonString(cpu)
                << ", \"cores\": " << cores << "}\n";
    } else {
      std::cout << absl::StrFormat(
          "MCTS search speed, one thread, uniform evaluator (tree work only)\n"
          "  machine          %s, %u cores\n"
          "  game             %s\n"
          "  sims per search  %d\n"
          "  searches         %d\n"
          "  simulations      %d in %.2f s\n"
          "  sims/s           %.0f\n",
          cpu, cores, start.Name(), sims, r.searches, r.simulations, r.seconds,
          r.SimulationsPerSecond());
    }
    return absl::OkStatus();
  });
}

std::vector<std::string> BenchCommandFlags() {
  std::vector<std::string> flags = {"game", "sims",   "seconds",
                                    "json", "actors", "games_per_worker"};
  for (std::string& flag : BenchFlags()) flags.push_back(std::move(flag));
  return flags;
}

}  // namespace

std::vector<Command> BenchCommands() {
  return {
      {"bench",
       "benchmarks; 'zf bench mcts': MCTS simulations per second on one thread; 'zf bench "
       "inference': batched gRPC serving vs raw and batch-1 baseline; 'zf bench streams': one "
       "inference server process under 10, 100, 1,000 ... client streams (memory, threads, "
       "throughput); 'zf bench serving': the server's CPU per evaluation over a backend that "
       "costs nothing (its host path: gRPC, decoding, batching, copies, encoding); 'zf bench "
       "replay': shard "
       "insert/sample throughput and memory; 'zf bench selfplay': P actor processes served by one "
       "inference server vs P batch-1 local actors; 'zf bench abuse': an inference server's "
       "well-behaved clients while others open thousands of streams, send oversized messages, "
       "stall and abandon streams",
       "zf bench mcts --game G [--sims N] [--seconds S] [--json]\n"
       "  zf bench inference [--game G] [--blocks B] [--filters F] [--global_pooling] "
       "[--max_batch N] [--streams S] "
       "[--rows R] [--in_flight K] [--batch_tuning auto|off] [--batch_latency_ms L] "
       "[--max_delay_us D] "
       "[--baseline_threads P] [--intra_op_threads N] [--seconds T] "
       "[--json]\n"
       "  zf bench streams [--stream_counts 10,100,1000] [--game G] [--blocks B] [--filters F] "
       "[--global_pooling] "
       "[--rows R] [--in_flight K] [--seconds T] [--json]\n"
       "  zf bench serving [--game G] [--row_counts 16,64,256,1024] [--transports tcp,unix] "
       "[--streams S] [--in_flight K] [--seconds T] [--json]\n"
       "  zf bench replay [--capacity N] [--inserters K] [--position_averaging] [--seconds S] "
       "[--dir DIR] [--json]\n"
       "  zf bench abuse [--game G] [--idle_streams N] [--slow_sockets N] [--abandoned N] "
       "[--well_behaved N] [--rows R] [--seconds S] [--max_rss_mib M] [--json]\n"
       "  zf bench selfplay --actors P [--game G] [--blocks B --filters F] [--global_pooling] "
       "[--sims N] "
       "[--games_per_worker N] [--seconds S] [--json]",
       BenchCommandFlags(), RunBench},
  };
}

}  // namespace zf::cli
