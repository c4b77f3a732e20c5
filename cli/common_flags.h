// Flags shared by several `zf` subcommands. Defined once (absl flags are global); each
// subcommand lists the ones it accepts in its Command entry.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/grpc/channel.h"

namespace zf::search {
struct SelfPlayOptions;
}  // namespace zf::search

ABSL_DECLARE_FLAG(std::string, game);
ABSL_DECLARE_FLAG(bool, json);
ABSL_DECLARE_FLAG(uint64_t, seed);
ABSL_DECLARE_FLAG(std::string, listen);
ABSL_DECLARE_FLAG(std::string, metrics_listen);
ABSL_DECLARE_FLAG(int, blocks);
ABSL_DECLARE_FLAG(int, filters);
ABSL_DECLARE_FLAG(bool, aux_heads);
ABSL_DECLARE_FLAG(bool, global_pooling);
ABSL_DECLARE_FLAG(std::string, dir);
ABSL_DECLARE_FLAG(int, sims);
ABSL_DECLARE_FLAG(double, forced_playout_k);
ABSL_DECLARE_FLAG(int, gumbel_considered_actions);
ABSL_DECLARE_FLAG(double, score_utility);
ABSL_DECLARE_FLAG(int, temperature_moves);
ABSL_DECLARE_FLAG(double, dirichlet_alpha);
ABSL_DECLARE_FLAG(double, c_puct);
ABSL_DECLARE_FLAG(double, fpu_reduction);
ABSL_DECLARE_FLAG(int, opening_moves);
ABSL_DECLARE_FLAG(std::string, out);
ABSL_DECLARE_FLAG(std::string, sgf);
ABSL_DECLARE_FLAG(int, move);
ABSL_DECLARE_FLAG(std::string, checkpoint);
ABSL_DECLARE_FLAG(int, workers);
ABSL_DECLARE_FLAG(std::string, replay);
ABSL_DECLARE_FLAG(std::string, model_service);
ABSL_DECLARE_FLAG(std::string, device);
ABSL_DECLARE_FLAG(std::string, precision);
ABSL_DECLARE_FLAG(bool, cuda_graphs);
ABSL_DECLARE_FLAG(std::string, tls_cert);
ABSL_DECLARE_FLAG(std::string, tls_key);
ABSL_DECLARE_FLAG(std::string, tls_ca);
ABSL_DECLARE_FLAG(std::string, tls_client_ca);
ABSL_DECLARE_FLAG(std::string, tls_server_name);
ABSL_DECLARE_FLAG(int, tls_reload_s);
ABSL_DECLARE_FLAG(std::string, log_file);

namespace zf::cli {

// Returns: OK when lo <= value <= hi; otherwise InvalidArgument "--FLAG is VALUE, expected
// LO..HI".
absl::Status CheckFlagRange(const char* flag, int64_t value, int64_t lo, int64_t hi);

// The same for a real-valued flag: OK when lo <= value <= hi (NaN is never in range);
// otherwise InvalidArgument "--FLAG is VALUE, expected LO..HI".
absl::Status CheckRealFlagRange(const char* flag, double value, double lo, double hi);

// --gumbel_considered_actions M for self-play: OK for 0 (off) or 2..32767 when forced playouts
// are off (forced_playout_k 0); otherwise InvalidArgument saying which.
absl::Status CheckGumbelFlag(int m, double forced_playout_k);

// The self-play search budgets from flags, in one place for `zf actor` and `zf run`: `full`
// (> 0) replaces options->mcts.num_simulations, 0 keeps it; `fast` (the fast-search budget of
// playout cap randomization), when not 0, must be in 2..full; when 0, the options' own fast
// budget is kept but capped at the full one (and never below 2).
// Returns: OK; InvalidArgument "--FAST_FLAG is V, expected 2..FULL" for a fast budget outside it
// (the options unchanged).
absl::Status SetSelfPlaySimulations(search::SelfPlayOptions* options, int full, int fast,
                                    const char* fast_flag);

// Self-play's exploration, the settings `zf actor` and `zf run` share (a run keeps them in its
// run.json): how long moves are sampled, the root noise of the full searches, the search's
// PUCT constants, and the share of games against a rollout-MCTS opponent.
// ActorOptions::ForGame holds each game's values.
struct SelfPlayExploration {
  int temperature_moves = 10;    // plies sampled at temperature 1, then the most visited; 0..1000
  double dirichlet_alpha = 0.3;  // the root noise's Dirichlet alpha, 0.01..100
  double c_puct = 1.5;           // the PUCT exploration constant, 0.01..100
  double fpu_reduction = 0.25;   // first play urgency: unvisited children at V - this, -2..2
  // Games in which one side is rollout MCTS (search/self_play.h), 0..1, and its simulations a
  // move, 2..100000.
  double rollout_opponent_share = 0.0;
  int rollout_opponent_sims = 1000;

  // The values `options` holds.
  static SelfPlayExploration Of(const search::SelfPlayOptions& options);
  // Sets them on `options` (its other fields unchanged).
  void ApplyTo(search::SelfPlayOptions* options) const;
  // Returns: OK; InvalidArgument "--FLAG is V, expected LO..HI" for the first field out of range.
  absl::Status Validate() const;
  bool operator==(const SelfPlayExploration&) const = default;
};

// --temperature_moves, --dirichlet_alpha, --c_puct, --fpu_reduction, --rollout_opponent_share
// and --rollout_opponent_sims: each one given on the command line (FlagGiven) replaces that field
// of `*exploration`; the others keep theirs. Returns: OK; InvalidArgument "--FLAG is V, expected
// LO..HI" for a value out of range
// (*exploration may then be partly set).
absl::Status SelfPlayExplorationFromFlags(SelfPlayExploration* exploration);

// The flag names of SelfPlayExplorationFromFlags, for a command's accepted flags.
std::vector<std::string> WithSelfPlayExplorationFlags(std::vector<std::string> flags);

// --opening_moves: `per_game_default` when not given (-1).
// Returns: the plies; InvalidArgument "--opening_moves is V, expected 0..100" otherwise.
absl::StatusOr<int> OpeningMovesFromFlag(int per_game_default);

// `flags` plus --log_file, for the long-running roles (zf main applies it before the command
// runs; `zf run` defaults it to RUN_DIR/zf.log itself).
std::vector<std::string> WithLogFileFlag(std::vector<std::string> flags);

// `flags` plus the TLS flags, for every command that runs a gRPC server or client.
std::vector<std::string> WithTlsFlags(std::vector<std::string> flags);

// The wire settings every gRPC server and client of a command uses, with TLS from the flags
// (each one, when empty, from its environment variable: ZF_TLS_CERT, ZF_TLS_KEY, ZF_TLS_CA,
// ZF_TLS_CLIENT_CA, ZF_TLS_SERVER_NAME).
// Returns: the settings; InvalidArgument naming the bad TLS flag (a missing or non-PEM file, a
// key without a certificate, ...).
absl::StatusOr<grpc_util::WireSettings> WireSettingsFromFlags();

// The LibTorch intra-op threads of a network command whose own flag is 0: OMP_NUM_THREADS when
// it is a whole number 1..256 (deploy/ sets it per service: compose's ZF_INFERENCE_THREADS and
// ZF_LEARNER_THREADS, the k8s manifests' env), else every core. LibTorch's at::set_num_threads,
// which the sessions call, would otherwise override the variable with the core count.
int DefaultIntraOpThreads();

}  // namespace zf::cli
