// `zf learner`: a Learner over a ReplaySampler of --replay shards, checkpoints in
// --dir/checkpoints/, optionally a ModelServer on --listen. SIGINT/SIGTERM: the step in
// progress finishes, a checkpoint is written, exit 0.
#include "cli/commands/learner_commands.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "cli/common_flags.h"
#include "common/logging.h"
#include "common/metrics/build_info.h"
#include "common/metrics/metrics_server.h"
#include "common/status_macros.h"
#include "games/registry.h"
#include "learner/learner.h"
#include "learner/service/model_server.h"
#include "model/game_network.h"

// Defined by `zf replay` (cli/commands/replay_commands.cc); the learner's run directory.

ABSL_FLAG(
    int, batch_size, 256,
    "learner, run: positions per training batch, 1..65536 (zf run: the game's default when not "
    "given: 256, tic-tac-toe 128)");
ABSL_FLAG(int64_t, steps_per_checkpoint, 1000,
          "learner: optimizer steps between published checkpoints (>= 1)");
ABSL_FLAG(int, keep_checkpoints, 5, "learner: checkpoint files kept in DIR/checkpoints (>= 1)");
ABSL_FLAG(double, lr, 0.02, "learner, run: base learning rate (> 0; zf run: 1e-6..10)");
ABSL_FLAG(std::string, optimizer, "sgd",
          "learner, run: sgd (momentum 0.9; default weight decay 1e-4) or adamw (default 1e-2)");
ABSL_FLAG(std::string, lr_schedule, "constant",
          "learner: constant, step (x0.1 every --lr_step_every steps) or cosine (to 0 over "
          "--max_steps)");
ABSL_FLAG(int64_t, lr_step_every, 100000,
          "learner: steps between x0.1 decays (--lr_schedule step)");
ABSL_FLAG(int64_t, warmup_steps, 0, "learner: linear learning-rate warm-up steps");
ABSL_FLAG(double, weight_decay, -1,
          "learner: weight decay; negative (the default): 1e-4 for sgd (L2), 1e-2 for adamw "
          "(decoupled)");
ABSL_FLAG(double, search_value_weight, 0,
          "learner, run: the value head's target is (1 - W) x the game's result + W x the "
          "search's value at the position, W in [0, 1] (0: the result alone)");
ABSL_FLAG(int64_t, max_steps, 0, "learner: stop after this many steps in total (0: never)");
ABSL_FLAG(int, threads, 0,
          "learner: LibTorch intra-op threads (0: OMP_NUM_THREADS when set, else all cores)");

namespace zf::cli {
namespace {

int g_learner_signal_pipe[2] = {-1, -1};

void OnLearnerSignal(int signal_number) {
  const int saved_errno = errno;
  const char byte = static_cast<char>(signal_number);
  (void)!write(g_learner_signal_pipe[1], &byte, 1);
  errno = saved_errno;
}

absl::Status RunLearner(const std::vector<std::string>& args) {
  if (!args.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("unexpected argument \"", args[0], "\""));
  }
  learner::LearnerOptions options;
  options.dir = absl::GetFlag(FLAGS_dir);
  if (options.dir.empty()) return absl::InvalidArgumentError("--dir is required");
  for (absl::string_view address :
       absl::StrSplit(absl::GetFlag(FLAGS_replay), ',', absl::SkipWhitespace())) {
    options.sampler.shards.emplace_back(address);
  }
  ZF_ASSIGN_OR_RETURN(grpc_util::WireSettings wire, WireSettingsFromFlags());
  options.sampler.wire = wire;
  if (options.sampler.shards.empty()) {
    return absl::InvalidArgumentError("--replay is required (HOST:PORT[,HOST:PORT...])");
  }
  ZF_ASSIGN_OR_RETURN(games::GameConfig config, games::ParseGameName(absl::GetFlag(FLAGS_game)));
  options.trainer.game = config.name;
  ZF_ASSIGN_OR_RETURN(options.trainer.shape,
                      model::NetworkShapeForGame(
                          config, absl::GetFlag(FLAGS_blocks), absl::GetFlag(FLAGS_filters),
                          absl::GetFlag(FLAGS_global_pooling), absl::GetFlag(FLAGS_aux_heads)));
  options.trainer.seed = absl::GetFlag(FLAGS_seed);
  ZF_ASSIGN_OR_RETURN(options.trainer.optimizer,
                      learner::ParseOptimizerKind(absl::GetFlag(FLAGS_optimizer)));
  options.trainer.lr.lr = absl::GetFlag(FLAGS_lr);
  options.trainer.lr.warmup_steps = absl::GetFlag(FLAGS_warmup_steps);
  const std::string schedule = absl::GetFlag(FLAGS_lr_schedule);
  const int64_t max_steps = absl::GetFlag(FLAGS_max_steps);
  if (schedule == "constant") {
    options.trainer.lr.kind = learner::LrScheduleKind::kConstant;
  } else if (schedule == "step") {
    options.trainer.lr.kind = learner::LrScheduleKind::kStep;
    options.trainer.lr.step_every = absl::GetFlag(FLAGS_lr_step_every);
  } else if (schedule == "cosine") {
    if (max_steps <= 0) return absl::InvalidArgumentError("--lr_schedule cosine needs --max_steps");
    options.trainer.lr.kind = learner::LrScheduleKind::kCosine;
    options.trainer.lr.total_steps = max_steps;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--lr_schedule must be constant, step or cosine, got \"", schedule, "\""));
  }
  const double weight_decay = absl::GetFlag(FLAGS_weight_decay);
  if (weight_decay >= 0) {
    options.trainer.weight_decay = weight_decay;
  } else {
    options.trainer.weight_decay = learner::DefaultWeightDecay(options.trainer.optimizer);
  }
  options.trainer.device = absl::GetFlag(FLAGS_device);
  const int threads = absl::GetFlag(FLAGS_threads);
  options.trainer.intra_op_threads = threads > 0 ? threads : DefaultIntraOpThreads();
  options.batch_size = absl::GetFlag(FLAGS_batch_size);
  if (options.batch_size < 1 || options.batch_size > 65536) {
    return absl::InvalidArgumentError(
        absl::StrCat("--batch_size is ", options.batch_size, ", expected 1..65536"));
  }
  options.search_value_weight = absl::GetFlag(FLAGS_search_value_weight);
  ZF_RETURN_IF_ERROR(CheckRealFlagRange("search_value_weight", options.search_value_weight, 0, 1));
  options.steps_per_checkpoint = absl::GetFlag(FLAGS_steps_per_checkpoint);
  options.keep_checkpoints = absl::GetFlag(FLAGS_keep_checkpoints);
  options.max_steps = max_steps;
  options.registry = std::make_shared<prometheus::Registry>();
  const std::shared_ptr<prometheus::Registry> registry = options.registry;
  metrics::RegisterBuildInfo(*registry, "learner");
  if (absl::Status valid = options.Validate(); !valid.ok()) {
    return absl::InvalidArgumentError(valid.message());
  }

  // SIGINT/SIGTERM write a byte to a pipe (async-signal-safe); a thread reads it and asks the
  // learner to stop.
  if (pipe2(g_learner_signal_pipe, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  struct sigaction action = {};
  action.sa_handler = OnLearnerSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);

  std::unique_ptr<learner::ModelServer> model_server;
  const std::string listen = absl::GetFlag(FLAGS_listen);
  const std::string checkpoint_dir = options.dir + "/checkpoints";
  learner::ModelServer* model_server_ptr = nullptr;
  options.on_publish = [&model_server_ptr](const model::CheckpointManifest&) {
    if (model_server_ptr != nullptr) model_server_ptr->Notify();
  };
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<learner::Learner> learner,
                      learner::Learner::Create(std::move(options)));
  if (!listen.empty()) {
    learner::ModelServer::Options m;
    m.checkpoint_dir = checkpoint_dir;
    m.listen_address = listen;
    m.registry = registry;
    m.wire = wire;
    ZF_ASSIGN_OR_RETURN(model_server, learner::ModelServer::Create(m));
    model_server_ptr = model_server.get();
  }
  std::unique_ptr<metrics::MetricsServer> metrics_server;
  const std::string metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  if (!metrics_listen.empty()) {
    metrics::MetricsServer::Options mo;
    mo.listen_address = metrics_listen;
    ZF_ASSIGN_OR_RETURN(metrics_server, metrics::MetricsServer::Create(mo, {registry}));
  }
  const learner::LearnerStats start = learner->stats();
  std::cout << "zf learner: " << config.name << " step " << start.steps << " version "
            << start.published_version << ", checkpoints in " << checkpoint_dir;
  if (model_server != nullptr) std::cout << ", model service on port " << model_server->port();
  std::cout << std::endl;

  std::thread signal_thread([&learner] {
    char byte = 0;
    ssize_t n;
    while ((n = read(g_learner_signal_pipe[0], &byte, 1)) < 0 && errno == EINTR) {
    }
    if (n == 1 && byte != 0) {
      ZF_LOG(INFO) << "learner: " << strsignal(byte) << "; finishing the step";
    }
    learner->Stop();
  });
  absl::Status status = learner->Run();
  // Wake the signal thread if no signal came.
  const char zero = 0;
  (void)!write(g_learner_signal_pipe[1], &zero, 1);
  signal_thread.join();
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  const learner::LearnerStats stats = learner->stats();
  const double seconds = absl::ToDoubleSeconds(stats.run_time);
  std::cout << absl::StrFormat(
                   "zf learner: %d steps (%.2f steps/s, %.0f samples/s), data wait %.1f%%, "
                   "version %d, loss %.4f (policy %.4f, value %.4f)",
                   stats.steps_this_run, seconds > 0 ? stats.steps_this_run / seconds : 0.0,
                   seconds > 0 ? stats.samples_this_run / seconds : 0.0,
                   seconds > 0 ? 100.0 * absl::ToDoubleSeconds(stats.data_wait) / seconds : 0.0,
                   stats.published_version, stats.last.total_loss, stats.last.policy_loss,
                   stats.last.value_loss)
            << std::endl;
  if (model_server != nullptr) model_server->Shutdown();
  return status;
}

}  // namespace

std::vector<Command> LearnerCommands() {
  return {
      {"learner",
       "train from replay shards, publish checkpoints to DIR/checkpoints (and serve them with "
       "--listen) until SIGINT/SIGTERM or --max_steps",
       "zf learner --game G --replay ADDR[,ADDR...] --dir DIR [--listen ADDR] [--batch_size N] "
       "[--steps_per_checkpoint K] [--lr X] [--optimizer sgd|adamw] [--lr_schedule "
       "constant|step|cosine] [--blocks B --filters F] [--aux_heads] [--global_pooling] "
       "[--search_value_weight W] [--max_steps N] [--threads N] "
       "[--metrics_listen ADDR]",
       WithLogFileFlag(WithTlsFlags({"game",
                                     "replay",
                                     "dir",
                                     "listen",
                                     "batch_size",
                                     "steps_per_checkpoint",
                                     "keep_checkpoints",
                                     "lr",
                                     "optimizer",
                                     "lr_schedule",
                                     "lr_step_every",
                                     "warmup_steps",
                                     "weight_decay",
                                     "search_value_weight",
                                     "blocks",
                                     "filters",
                                     "aux_heads",
                                     "global_pooling",
                                     "seed",
                                     "max_steps",
                                     "threads",
                                     "device",
                                     "metrics_listen"})),
       RunLearner},
  };
}

}  // namespace zf::cli
