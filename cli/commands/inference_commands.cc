// `zf inference`: serves a network over gRPC (zerofleet.v1.Inference) until SIGINT or SIGTERM,
// then drains and exits 0. SIGHUP reloads --checkpoint (the learner will drive reloads later).
#include "cli/commands/inference_commands.h"

#include <signal.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cli/common_flags.h"
#include "common/logging.h"
#include "common/metrics/build_info.h"
#include "common/status_macros.h"
#include "games/registry.h"
#include "inference_server/model_watcher.h"
#include "inference_server/null_backend.h"
#include "inference_server/service/inference_server.h"
#include "inference_server/serving_model.h"
#include "inference_server/torch_backend.h"
#include "model/game_network.h"
#include "model/inference_session.h"

ABSL_FLAG(int, max_batch, 256,
          "inference: rows per network batch at most (1..65536); with --batch_tuning=auto the "
          "ceiling of the batcher's own choice");
ABSL_FLAG(int64_t, max_delay_us, 2000,
          "inference: how long the first queued row waits for others, in microseconds "
          "(0..1000000); used with --batch_tuning=off");
ABSL_FLAG(std::string, batch_tuning, "auto",
          "inference: auto (measure the forward pass per batch size at start-up and choose "
          "max_batch and max_delay, adapting to the batches served) or off (--max_batch and "
          "--max_delay_us as given)");
ABSL_FLAG(std::string, backend, "torch",
          "inference: torch (the network) or null (fixed answers at no cost, for measuring the "
          "server's host path: `zf bench serving`)");
ABSL_FLAG(double, batch_latency_ms, 20,
          "inference --batch_tuning=auto: a forward pass may take at most this long (0..10000]");

namespace zf::cli {
namespace {

using Model = inference::ServingModel;

absl::StatusOr<Model> LoadModel(const std::string& checkpoint, const std::string& game,
                                std::optional<model::NetworkShape> shape, uint64_t seed,
                                int max_batch) {
  return inference::LoadServingModel({.checkpoint = checkpoint,
                                      .game = game,
                                      .shape = shape,
                                      .seed = seed,
                                      .max_batch = max_batch,
                                      .intra_op_threads = DefaultIntraOpThreads(),
                                      .device = absl::GetFlag(FLAGS_device),
                                      .precision = absl::GetFlag(FLAGS_precision),
                                      .cuda_graphs = absl::GetFlag(FLAGS_cuda_graphs),
                                      .concurrency = absl::GetFlag(FLAGS_workers)});
}

}  // namespace

absl::StatusOr<std::optional<inference::BatchTunerOptions>> BatchTuningFromFlags() {
  const std::string mode = absl::GetFlag(FLAGS_batch_tuning);
  const double latency_ms = absl::GetFlag(FLAGS_batch_latency_ms);
  if (mode == "off") return std::nullopt;
  if (mode != "auto") {
    return absl::InvalidArgumentError(
        absl::StrCat("--batch_tuning must be auto or off, got \"", mode, "\""));
  }
  if (!(latency_ms > 0 && latency_ms <= 10000)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--batch_latency_ms must be in (0, 10000], got ", latency_ms));
  }
  return inference::BatchTunerOptions{.latency_target = absl::Microseconds(latency_ms * 1000)};
}

namespace {

absl::Status RunInference(const std::vector<std::string>& args) {
  if (!args.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("zf inference takes no positional arguments, got \"", args[0], "\""));
  }
  const std::string checkpoint = absl::GetFlag(FLAGS_checkpoint);
  const int max_batch = absl::GetFlag(FLAGS_max_batch);
  ZF_RETURN_IF_ERROR(CheckFlagRange("max_batch", max_batch, 1, 65536));
  ZF_RETURN_IF_ERROR(CheckFlagRange("max_delay_us", absl::GetFlag(FLAGS_max_delay_us), 0, 1000000));
  ZF_RETURN_IF_ERROR(CheckFlagRange("workers", absl::GetFlag(FLAGS_workers), 1, 64));
  ZF_ASSIGN_OR_RETURN(grpc_util::WireSettings wire, WireSettingsFromFlags());

  // Block the signals before any thread starts (threads inherit the mask), then wait for them
  // synchronously with sigwait: no async signal handler.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGHUP);
  if (int rc = pthread_sigmask(SIG_BLOCK, &signals, nullptr); rc != 0) {
    return absl::InternalError(absl::StrCat("pthread_sigmask: ", std::strerror(rc)));
  }

  const std::string backend = absl::GetFlag(FLAGS_backend);
  if (backend != "torch" && backend != "null") {
    return absl::InvalidArgumentError(
        absl::StrCat("--backend must be torch or null, got \"", backend, "\""));
  }
  if (backend == "null" && (!checkpoint.empty() || !absl::GetFlag(FLAGS_model_service).empty())) {
    return absl::InvalidArgumentError(
        "--backend=null serves no network: drop --checkpoint and --model_service");
  }
  Model first;
  if (backend == "null") {
    ZF_ASSIGN_OR_RETURN(games::GameConfig config, games::ParseGameName(absl::GetFlag(FLAGS_game)));
    ZF_ASSIGN_OR_RETURN(first.shape, model::NetworkShapeForGame(config, 1, 1, false));
    const inference::ModelSpec spec{.input_channels = first.shape.input_channels,
                                    .board_height = first.shape.board_height,
                                    .board_width = first.shape.board_width,
                                    .num_actions = first.shape.num_actions};
    ZF_RETURN_IF_ERROR(spec.Validate());
    first.backend = std::make_shared<inference::NullBackend>(spec, max_batch, 1);
    first.game = config.name;
  } else if (checkpoint.empty()) {
    ZF_ASSIGN_OR_RETURN(games::GameConfig config, games::ParseGameName(absl::GetFlag(FLAGS_game)));
    ZF_ASSIGN_OR_RETURN(const model::NetworkShape shape,
                        model::NetworkShapeForGame(config, absl::GetFlag(FLAGS_blocks),
                                                   absl::GetFlag(FLAGS_filters),
                                                   absl::GetFlag(FLAGS_global_pooling)));
    ZF_RETURN_IF_ERROR(shape.Validate());
    ZF_ASSIGN_OR_RETURN(first,
                        LoadModel("", config.name, shape, absl::GetFlag(FLAGS_seed), max_batch));
  } else {
    ZF_ASSIGN_OR_RETURN(first, LoadModel(checkpoint, "", std::nullopt, 0, max_batch));
  }

  inference::InferenceServer::Options options;
  options.listen_address = absl::GetFlag(FLAGS_listen);
  options.backend = first.backend;
  options.game = first.game;
  options.loader =
      [game = first.game, shape = first.shape,
       max_batch](const std::string& path) -> absl::StatusOr<std::shared_ptr<inference::Backend>> {
    ZF_ASSIGN_OR_RETURN(Model model, LoadModel(path, game, shape, 0, max_batch));
    return model.backend;
  };
  options.batcher.max_batch = max_batch;
  options.batcher.max_delay = absl::Microseconds(absl::GetFlag(FLAGS_max_delay_us));
  ZF_ASSIGN_OR_RETURN(options.batcher.tuning, BatchTuningFromFlags());
  options.batcher.num_workers = absl::GetFlag(FLAGS_workers);
  options.batcher.max_request_rows = std::max(4096, max_batch);
  options.batcher.max_queued_rows = 8 * int64_t{options.batcher.max_request_rows};
  options.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  options.wire = wire;
  const std::string options_metrics_listen_host =
      options.metrics_listen.substr(0, options.metrics_listen.rfind(':'));
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<inference::InferenceServer> server,
                      inference::InferenceServer::Create(std::move(options)));
  metrics::RegisterBuildInfo(server->registry(), "inference");
  ZF_LOG(INFO) << "inference: listening on port " << server->port()
               << " (NOT_SERVING until warmed up)";
  if (const std::string curve = server->batcher().tuning_curve(); !curve.empty()) {
    const inference::Batcher::Stats stats = server->batcher().stats();
    ZF_LOG(INFO) << "inference: forward pass by batch size " << curve
                 << "; batcher chose max_batch " << stats.max_batch << ", max_delay "
                 << absl::FormatDuration(stats.max_delay);
  }
  if (server->metrics_port() != 0) {
    ZF_LOG(INFO) << "inference: metrics on " << options_metrics_listen_host << ":"
                 << server->metrics_port();
  }
  ZF_RETURN_IF_ERROR(server->Serve());
  // One line on stdout for scripts and tests: the bound port (useful with port 0).
  std::cout << "zf inference: serving " << first.game << " "
            << (backend == "null" ? "null backend" : first.shape.DebugString()) << " version "
            << server->model_version() << " on port " << server->port();
  if (server->metrics_port() != 0) std::cout << ", metrics on port " << server->metrics_port();
  std::cout << std::endl;
  const absl::Time serving_since = absl::Now();

  std::unique_ptr<inference::ModelWatcher> watcher;
  if (const std::string address = absl::GetFlag(FLAGS_model_service); !address.empty()) {
    inference::ModelWatcherOptions w;
    w.address = address;
    w.wire = wire;
    w.temp_dir = std::filesystem::temp_directory_path().string();
    w.reload = [&server](const std::string& path) { return server->Reload(path); };
    w.current_version = [&server] { return server->model_version(); };
    // Not owned: the server outlives the watcher.
    w.registry =
        std::shared_ptr<prometheus::Registry>(&server->registry(), [](prometheus::Registry*) {});
    ZF_ASSIGN_OR_RETURN(watcher, inference::ModelWatcher::Create(std::move(w)));
    ZF_LOG(INFO) << "inference: watching the model service at " << address;
  }

  while (true) {
    int signal_number = 0;
    if (sigwait(&signals, &signal_number) != 0) continue;
    if (signal_number != SIGHUP) {
      ZF_LOG(INFO) << "inference: " << strsignal(signal_number) << "; draining";
      break;
    }
    if (checkpoint.empty()) {
      ZF_LOG(WARNING) << "inference: SIGHUP ignored: serving a fresh network, no --checkpoint";
      continue;
    }
    absl::Status reloaded = server->Reload(checkpoint);
    if (reloaded.ok()) {
      ZF_LOG(INFO) << "inference: reloaded " << checkpoint << ", now serving version "
                   << server->model_version();
    } else {
      ZF_LOG(ERROR) << "inference: " << reloaded;
    }
  }
  if (watcher != nullptr) watcher->Stop();
  server->Shutdown();
  // What the device did while serving, for `zf bench selfplay` and operators: mean batch and
  // duty cycle (share of the wall time with a forward pass in flight).
  const inference::Batcher::Stats stats = server->batcher().stats();
  const double wall = absl::ToDoubleSeconds(absl::Now() - serving_since);
  std::cout << absl::StrFormat(
                   "{\"event\": \"inference_stopped\", \"seconds\": %.3f, \"batches\": %d, "
                   "\"rows\": %d, \"mean_batch\": %.2f, \"compute_seconds\": %.3f, "
                   "\"busy_seconds\": %.3f, \"duty_cycle\": %.4f, \"max_batch\": %d, "
                   "\"max_delay_ms\": %.3f}",
                   wall, stats.batches_completed, stats.rows_evaluated,
                   stats.batches_completed > 0
                       ? static_cast<double>(stats.rows_evaluated) / stats.batches_completed
                       : 0.0,
                   stats.compute_seconds, stats.busy_seconds,
                   wall > 0 ? stats.busy_seconds / wall : 0.0, stats.max_batch,
                   absl::ToDoubleMilliseconds(stats.max_delay))
            << std::endl;
  ZF_LOG(INFO) << "inference: stopped";
  return absl::OkStatus();
}

}  // namespace

std::vector<Command> InferenceCommands() {
  return {
      {"inference",
       "serve a network over gRPC with dynamic batching until SIGINT/SIGTERM (SIGHUP reloads)",
       "zf inference --listen ADDR (--checkpoint FILE | --game G [--blocks B] [--filters F] "
       "[--global_pooling] [--seed S]) [--max_batch N] [--batch_tuning auto|off] "
       "[--batch_latency_ms L] "
       "[--max_delay_us N] [--workers N] [--metrics_listen ADDR] "
       "[--model_service ADDR] [--device cpu|cuda|cuda:N|auto] [--precision auto|fp32|bf16|fp16] "
       "[--cuda_graphs=true|false] [--backend torch|null]",
       WithLogFileFlag(WithTlsFlags(
           {"listen", "checkpoint", "game", "blocks", "filters", "global_pooling", "seed",
            "backend", "max_batch", "max_delay_us", "batch_tuning", "batch_latency_ms", "workers",
            "metrics_listen", "model_service", "device", "precision", "cuda_graphs"})),
       RunInference},
  };
}

}  // namespace zf::cli
