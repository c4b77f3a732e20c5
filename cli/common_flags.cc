#include "cli/common_flags.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "cli/command.h"
#include "common/status_macros.h"
#include "games/registry.h"
#include "search/self_play.h"

// The games and their syntax come from the registry (games/registry.h), so a newly registered
// game shows up here without an edit.
ABSL_FLAG(std::string, game, "connect4",
          absl::StrCat("game name, one of:\n",
                       absl::StripSuffix(zf::games::KnownGamesHelp(), "\n")));
ABSL_FLAG(bool, json, false, "print one JSON object instead of text");
ABSL_FLAG(uint64_t, seed, 0, "random seed; 0 picks one from the clock");
ABSL_FLAG(std::string, listen, "0.0.0.0:7400", "HOST:PORT to serve gRPC on (port 0 picks one)");
ABSL_FLAG(std::string, metrics_listen, "",
          "HOST:PORT for the Prometheus /metrics endpoint (empty: none; port 0 picks one)");
ABSL_FLAG(int, blocks, 4, "network shape: residual blocks");
ABSL_FLAG(int, filters, 64, "network shape: filters per convolution");
ABSL_FLAG(bool, aux_heads, false,
          "network shape: ownership and score heads, trained from how finished games end "
          "(KataGo's auxiliary targets; games with final ownership only: Go). zf run: on by "
          "default for Go, --noaux_heads turns them off");
ABSL_FLAG(bool, global_pooling, false,
          "network shape: global pooling in every second residual block, counted from the last "
          "(KataGo's global pooling: each channel's mean and max over the board feed back into "
          "every cell)");
ABSL_FLAG(
    std::string, dir, "",
    "a directory: the replay shard's log (zf replay), the run directory (zf learner, zf run)");
ABSL_FLAG(int, sims, 800, "simulations per search: actor, bench mcts (bench mcts: 1..100000)");
ABSL_FLAG(double, forced_playout_k, -1,
          "actor, run: forced playouts and policy target pruning at the root of self-play's full "
          "searches (KataGo; it uses 2), 0..100, 0 off; not given (-1): off (zf run --resume: "
          "the run's own value); above 0 it turns zf run's default Gumbel root search (Go's) "
          "off, as the two exclude each other");
ABSL_FLAG(int, gumbel_considered_actions, -1,
          "actor, run: Gumbel root search in self-play (Danihelka et al. 2022: sequential "
          "halving over the top M actions of Gumbel noise + logits, the improved policy as the "
          "policy target, every move sampled from its noise), 2..32767 (the paper uses 16 for "
          "Go), 0 off; not given (-1): zf run the game's default (Go 16 unless "
          "--forced_playout_k is above 0, the others off), zf actor off (zf run --resume: the "
          "run's own value)");
ABSL_FLAG(double, score_utility, -1,
          "actor, run: KataGo's score utility in self-play's searches: its weight lambda next to "
          "values in [-1, 1], 0..1 (KataGo uses about 0.3), 0 off; needs a network with the "
          "score head (Go's aux heads); not given (-1): zf run: the game's default (Go 0.3 "
          "with its heads, else off; --resume: the run's own value), actor: off");
ABSL_FLAG(int, temperature_moves, -1,
          "actor, run: self-play's opening plies whose moves are sampled from the search's visits "
          "(temperature 1); later moves take the most visited, 0..1000; not given: the game's "
          "(Go 30, Othello a quarter of the squares, Hex a sixth of the cells, the others 10; "
          "zf run --resume: the run's own)");
ABSL_FLAG(double, dirichlet_alpha, -1,
          "actor, run: the Dirichlet alpha of the noise on the root priors of self-play's full "
          "searches (a quarter of each prior; AlphaZero scales alpha to about 10 / legal moves), "
          "0.01..100; not given: the game's (Connect Four and Othello 1, Go 0.03 x 361 / points, "
          "Hex the same but at least 0.1, the others 0.3; zf run --resume: the run's own)");
ABSL_FLAG(double, c_puct, -1,
          "actor, run: self-play's PUCT exploration constant (a larger one spreads the visits), "
          "0.01..100; not given: 1.5 (zf run --resume: the run's own)");
ABSL_FLAG(double, fpu_reduction, -1,
          "actor, run: self-play's first play urgency reduction (an unvisited child is valued at "
          "its parent's value less this), -2..2; not given: 0.25 (zf run --resume: the run's "
          "own)");
ABSL_FLAG(double, rollout_opponent_share, -1,
          "actor, run: the share of self-play games, 0..1, in which one side (drawn) moves by "
          "rollout MCTS instead of the network (--rollout_opponent_sims a move; its positions "
          "train the value head only), for positions unlike the network's own play; not given: "
          "0 (zf run --resume: the run's own)");
ABSL_FLAG(int, rollout_opponent_sims, -1,
          "actor, run: the rollout opponent's simulations a move (the `mcts:N` player's search), "
          "2..100000; not given: 1000 (zf run --resume: the run's own)");
ABSL_FLAG(int, opening_moves, -1,
          "evaluator, match: random plies that open each game, 0..100 (-1: per game, 1 for "
          "tictactoe, 2 else); match plays each opening twice, colours swapped");
ABSL_FLAG(std::string, sgf, "",
          "analyze, position: an SGF file of a Go game to read the position from (see --move); "
          "match, games export: a directory to write each Go game into as SGF");
ABSL_FLAG(int, move, -1,
          "analyze, position with --sgf: the position after this many moves of the file's "
          "game (-1: after its last move)");
ABSL_FLAG(std::string, out, "",
          "checkpoint new: the file to write (atomically); actor: the directory to write games "
          "into");
ABSL_FLAG(std::string, checkpoint, "",
          "inference: the checkpoint to serve (SIGHUP reloads it); empty: a fresh network for "
          "--game. actor --local: the network to evaluate with");
ABSL_FLAG(int, workers, 2,
          "inference: batches in flight at once (1..64); actor: self-play threads (1..256)");
ABSL_FLAG(std::string, replay, "", "replay shard addresses, HOST:PORT[,HOST:PORT...]");
ABSL_FLAG(std::string, model_service, "",
          "HOST:PORT of a model service to follow (zf learner --listen, or zf evaluator "
          "--gate_listen): inference fetches, verifies and hot-swaps in each new version; the "
          "evaluator rates it");
ABSL_FLAG(std::string, device, "auto",
          "where the network runs: cpu, cuda, cuda:N or auto (CUDA when this build and machine "
          "have it)");
ABSL_FLAG(std::string, precision, "auto",
          "forward-pass arithmetic: auto (bf16 on CUDA, fp32 on the CPU), fp32, bf16, fp16");
ABSL_FLAG(bool, cuda_graphs, true, "on CUDA: replay captured CUDA graphs per batch size bucket");
ABSL_FLAG(std::string, tls_cert, "",
          "PEM certificate of this process: its servers speak TLS with it, and its clients present "
          "it where --tls_ca is set (mutual TLS). Reloaded when the file changes");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls_cert");
ABSL_FLAG(std::string, tls_ca, "",
          "PEM CA bundle the servers this process calls must have certificates from: turns on "
          "TLS for its clients (empty: plaintext)");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM CA bundle for client certificates: this process's servers then require one and "
          "allow each method only to the roles that need it (docs/security.md)");
ABSL_FLAG(std::string, tls_server_name, "",
          "the name servers' certificates must carry, when not the host of the address dialled");
ABSL_FLAG(int, tls_reload_s, 10, "seconds between reads of the TLS files (certificate rotation)");

ABSL_FLAG(std::string, log_file, "",
          "append log lines to this file; stderr then keeps only warnings and errors (zf run: "
          "default RUN_DIR/zf.log, '-' for everything on stderr)");

namespace zf::cli {

absl::Status CheckFlagRange(const char* flag, int64_t value, int64_t lo, int64_t hi) {
  if (value < lo || value > hi) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, " is ", value, ", expected ", lo, "..", hi));
  }
  return absl::OkStatus();
}

absl::Status CheckRealFlagRange(const char* flag, double value, double lo, double hi) {
  if (!(value >= lo && value <= hi)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, " is ", value, ", expected ", lo, "..", hi));
  }
  return absl::OkStatus();
}

absl::Status CheckGumbelFlag(int m, double forced_playout_k) {
  if (m != 0 && (m < 2 || m > 32767)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--gumbel_considered_actions is ", m, ", expected 0 (off) or 2..32767"));
  }
  if (m > 0 && forced_playout_k > 0) {
    return absl::InvalidArgumentError(
        "--gumbel_considered_actions and --forced_playout_k exclude each other (both are rules "
        "of the search's root)");
  }
  return absl::OkStatus();
}

absl::Status SetSelfPlaySimulations(search::SelfPlayOptions* options, int full, int fast,
                                    const char* fast_flag) {
  const int full_budget = full > 0 ? full : options->mcts.num_simulations;
  if (fast != 0) ZF_RETURN_IF_ERROR(CheckFlagRange(fast_flag, fast, 2, full_budget));
  options->mcts.num_simulations = full_budget;
  options->fast_simulations =
      fast != 0 ? fast : std::max(2, std::min(options->fast_simulations, full_budget));
  return absl::OkStatus();
}

namespace {
// The double written as the float's shortest decimal (0.3f as 0.3, not 0.30000001192092896), so
// that run.json shows what a user would have typed.
double ShortestDouble(float f) {
  char text[32];
  const std::to_chars_result end = std::to_chars(text, text + sizeof(text), f);
  return std::strtod(std::string(text, end.ptr).c_str(), nullptr);
}
}  // namespace

SelfPlayExploration SelfPlayExploration::Of(const search::SelfPlayOptions& options) {
  return {.temperature_moves = options.temperature_moves,
          .dirichlet_alpha = ShortestDouble(options.mcts.dirichlet_alpha),
          .c_puct = ShortestDouble(options.mcts.c_puct),
          .fpu_reduction = ShortestDouble(options.mcts.fpu_reduction),
          .rollout_opponent_share = ShortestDouble(options.rollout_opponent_share),
          .rollout_opponent_sims = options.rollout_opponent_simulations};
}

void SelfPlayExploration::ApplyTo(search::SelfPlayOptions* options) const {
  options->temperature_moves = temperature_moves;
  options->mcts.dirichlet_alpha = static_cast<float>(dirichlet_alpha);
  options->mcts.c_puct = static_cast<float>(c_puct);
  options->mcts.fpu_reduction = static_cast<float>(fpu_reduction);
  options->rollout_opponent_share = static_cast<float>(rollout_opponent_share);
  options->rollout_opponent_simulations = rollout_opponent_sims;
}

absl::Status SelfPlayExploration::Validate() const {
  ZF_RETURN_IF_ERROR(CheckFlagRange("temperature_moves", temperature_moves, 0, 1000));
  ZF_RETURN_IF_ERROR(CheckRealFlagRange("dirichlet_alpha", dirichlet_alpha, 0.01, 100));
  ZF_RETURN_IF_ERROR(CheckRealFlagRange("c_puct", c_puct, 0.01, 100));
  ZF_RETURN_IF_ERROR(CheckRealFlagRange("fpu_reduction", fpu_reduction, -2, 2));
  ZF_RETURN_IF_ERROR(CheckRealFlagRange("rollout_opponent_share", rollout_opponent_share, 0, 1));
  return CheckFlagRange("rollout_opponent_sims", rollout_opponent_sims, 2, 100000);
}

absl::Status SelfPlayExplorationFromFlags(SelfPlayExploration* exploration) {
  if (FlagGiven("temperature_moves")) {
    exploration->temperature_moves = absl::GetFlag(FLAGS_temperature_moves);
  }
  if (FlagGiven("dirichlet_alpha")) {
    exploration->dirichlet_alpha = absl::GetFlag(FLAGS_dirichlet_alpha);
  }
  if (FlagGiven("c_puct")) exploration->c_puct = absl::GetFlag(FLAGS_c_puct);
  if (FlagGiven("fpu_reduction")) exploration->fpu_reduction = absl::GetFlag(FLAGS_fpu_reduction);
  if (FlagGiven("rollout_opponent_share")) {
    exploration->rollout_opponent_share = absl::GetFlag(FLAGS_rollout_opponent_share);
  }
  if (FlagGiven("rollout_opponent_sims")) {
    exploration->rollout_opponent_sims = absl::GetFlag(FLAGS_rollout_opponent_sims);
  }
  return exploration->Validate();
}

std::vector<std::string> WithSelfPlayExplorationFlags(std::vector<std::string> flags) {
  for (const char* f : {"temperature_moves", "dirichlet_alpha", "c_puct", "fpu_reduction",
                        "rollout_opponent_share", "rollout_opponent_sims"}) {
    flags.push_back(f);
  }
  return flags;
}

absl::StatusOr<int> OpeningMovesFromFlag(int per_game_default) {
  const int plies = absl::GetFlag(FLAGS_opening_moves);
  if (plies == -1) return per_game_default;
  ZF_RETURN_IF_ERROR(CheckFlagRange("opening_moves", plies, 0, 100));
  return plies;
}

std::vector<std::string> WithLogFileFlag(std::vector<std::string> flags) {
  flags.push_back("log_file");
  return flags;
}

std::vector<std::string> WithTlsFlags(std::vector<std::string> flags) {
  for (const char* f :
       {"tls_cert", "tls_key", "tls_ca", "tls_client_ca", "tls_server_name", "tls_reload_s"}) {
    flags.push_back(f);
  }
  return flags;
}

namespace {

// The flag's value, or when it is empty the environment variable's (ZF_TLS_CERT for
// --tls_cert, ...), so that a deployment turns TLS on by adding environment and a volume to each
// service (deploy/compose/docker-compose.tls.yml, the k8s tls component) without rewriting every
// command line, and `zf health` inside a container speaks the container's TLS.
std::string FlagOrEnv(const absl::Flag<std::string>& flag, const char* env) {
  std::string value = absl::GetFlag(flag);
  if (value.empty()) {
    if (const char* from_env = std::getenv(env); from_env != nullptr) value = from_env;
  }
  return value;
}

}  // namespace

absl::StatusOr<grpc_util::WireSettings> WireSettingsFromFlags() {
  grpc_util::WireSettings wire;
  grpc_util::TlsSettings& tls = wire.tls;
  tls.cert_file = FlagOrEnv(FLAGS_tls_cert, "ZF_TLS_CERT");
  tls.key_file = FlagOrEnv(FLAGS_tls_key, "ZF_TLS_KEY");
  tls.ca_file = FlagOrEnv(FLAGS_tls_ca, "ZF_TLS_CA");
  tls.client_ca_file = FlagOrEnv(FLAGS_tls_client_ca, "ZF_TLS_CLIENT_CA");
  tls.server_name = FlagOrEnv(FLAGS_tls_server_name, "ZF_TLS_SERVER_NAME");
  const int reload_s = absl::GetFlag(FLAGS_tls_reload_s);
  if (reload_s < 1 || reload_s > 86400) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tls_reload_s is ", reload_s, ", expected 1..86400"));
  }
  tls.reload_interval = absl::Seconds(reload_s);
  if (absl::Status valid = tls.Validate(); !valid.ok()) {
    return absl::InvalidArgumentError(valid.message());
  }
  return wire;
}

int DefaultIntraOpThreads() {
  int threads = 0;
  if (const char* omp = std::getenv("OMP_NUM_THREADS");
      omp != nullptr && absl::SimpleAtoi(omp, &threads) && threads >= 1 && threads <= 256) {
    return threads;
  }
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace zf::cli
