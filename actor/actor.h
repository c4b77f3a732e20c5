// Actor: self-play at fleet scale. Worker threads play many games at once and send every leaf
// that needs the network to an AsyncEvaluator (normally the inference server, through one gRPC
// stream); finished games go to a GameSink.
//
// Per worker (one thread, owning games_per_worker games and their trees):
//   - the games are split into G = min(requests_in_flight, games_per_worker) groups;
//   - for every group without a request in flight, the worker collects up to leaves_per_game
//     leaves from each of the group's games (MCTS with virtual loss), encodes them into one
//     request and submits it;
//   - it then waits for any answer, applies it to its group's games (a game plays its move when
//     its search completes), and submits that group again.
//   With G >= 2 the worker searches one group while another group's request is in flight, so it
//   waits only when every group is waiting for the network.
//   - a finished game becomes a zerofleet.v1.GameRecord (actor/record_proto.h) with a unique id
//     "<actor_id>/<worker>/<n>" and the model versions of the answers its leaves got, is put into
//     the sink, and a new game takes its place (until max_games games have been started).
// Self-play itself (noise, temperature, playout cap randomization, resignation with
// play-through, tree reuse) is search::SelfPlayGame's.
//
// Reanalysis (reanalysis_share > 0; MuZero Reanalyse): each worker keeps the moves and outcomes
// of its last reanalysis_window self-play games. When a slot frees up and reanalysis has had
// less than reanalysis_share of the worker's leaf evaluations so far, the slot replays one of
// them, chosen uniformly, searching every position again in full with the network the server
// holds now (search::SelfPlayGame::CreateReanalysis). Its record goes to the sink like a
// self-play game's, marked `reanalysis`, with fresh policy targets for every position (the
// self-play record had them only for its full searches) and the original outcome as the value
// target. Its leaves go through the same requests as self-play's.
//
// Stop() drops the games in flight (nothing of them reaches the sink; a game is put whole or not
// at all). Answers that arrive after Stop are ignored.
//
// Metrics (registered in the given registry): zf_actor_games_total, zf_actor_moves_total,
// zf_actor_simulations_total, zf_actor_leaf_evaluations_total,
// zf_actor_evaluation_wait_seconds_total (worker time blocked waiting for answers),
// zf_actor_requests_in_flight, zf_actor_model_version (newest model version in answers),
// zf_actor_resignations_total, zf_actor_game_length_moves (histogram),
// zf_actor_resignation_enabled (1 while the ResignationGate lets games resign),
// zf_actor_resign_false_positive_ratio (the gate's measured share; NaN before any sample),
// zf_actor_reanalysis_games_total, zf_actor_reanalysis_leaf_evaluations_total. games counts
// self-play games only; moves, simulations and leaf evaluations count reanalysis's too.
//
// Example (what `zf actor` does):
//   ZF_ASSIGN_OR_RETURN(auto evaluator, ConnectInference("localhost:50051", "connect4"));
//   ZF_ASSIGN_OR_RETURN(auto sink, FileGameSink::Create({.dir = "run/games"}));
//   ActorOptions options = ActorOptions::ForGame("connect4");
//   options.max_games = 100;
//   ZF_ASSIGN_OR_RETURN(auto actor, Actor::Create(options, evaluator, sink.get(), registry));
//   ZF_RETURN_IF_ERROR(actor->Start());
//   ZF_RETURN_IF_ERROR(actor->Wait(absl::InfiniteFuture()));   // all 100 games are in the sink
//
// Thread-safety: thread-safe. Owns its worker threads; Stop() / the destructor joins them. The
// sink must outlive the actor; the evaluator is shared.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "actor/async_evaluator.h"
#include "actor/game_sink.h"
#include "actor/resignation_gate.h"
#include "common/grpc/channel.h"
#include "common/thread.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "search/self_play.h"

namespace zf::actor {

struct ActorOptions {
  // The game, as games::ParseGameName spells it. Required.
  std::string game;
  // Worker threads, 1..256.
  int workers = 1;
  // The bounds Validate() enforces on games_per_worker and requests_in_flight (the CLI flags
  // check the same ones before anything starts).
  static constexpr int kMaxGamesPerWorker = 4096;
  static constexpr int kMinRequestsInFlight = 2;
  static constexpr int kMaxRequestsInFlight = 64;
  // Games each worker plays at once, 1..kMaxGamesPerWorker.
  int games_per_worker = 32;
  // Requests each worker keeps in flight, kMinRequestsInFlight..kMaxRequestsInFlight (capped at
  // games_per_worker).
  int requests_in_flight = 2;
  // Leaves each game contributes to one request, 1..256 (virtual loss spreads them).
  int leaves_per_game = 4;
  // Games to play in all (reanalysis games included), then the workers stop (Wait returns);
  // 0 = until Stop().
  int64_t max_games = 0;
  // Reanalysis (see above): the share of leaf evaluations it may take, 0 (off) to
  // kMaxReanalysisShare, and the self-play games per worker it chooses from, 1..100000.
  static constexpr double kMaxReanalysisShare = 0.9;
  double reanalysis_share = 0;
  int reanalysis_window = 500;
  // Self-play (see search/self_play.h). ForGame() fills sane defaults.
  search::SelfPlayOptions self_play;
  // When resignation is on (self_play.resign_threshold > -1): the measurement that decides
  // whether it may be used (actor/resignation_gate.h). Until it opens, every game is played out.
  ResignationGate::Options resignation_gate;
  // Names this actor in game ids and file names; [A-Za-z0-9_.-], 1..64 characters. Empty: a
  // random one ("a" + 16 hex digits).
  std::string actor_id;
  // Seeds the games (game k of worker w gets a seed derived from seed, w and k). 0 = random.
  uint64_t seed = 0;

  // Defaults for `game`: 160 simulations with playout cap randomization (a full search in 25%
  // of moves, 32 simulations otherwise), root noise, resignation below -0.9 for 3 moves with
  // 10% play-through once 100 played-out games show at most 5% would-be false positives
  // (ResignationGate), tree reuse; temperature 1 for the first 10 moves, then 0; root noise of
  // alpha 0.3. A game's own SelfPlayHints (games/game.h) replace the alpha and the temperature
  // horizon and ask for the self-play pass rule (Go: 30 moves, alpha 0.03 * 361 / cells, the
  // pass rule; tic-tac-toe 4 moves and alpha 1; Connect Four alpha 1; Othello alpha 1 and a
  // quarter of the cells).
  static ActorOptions ForGame(const std::string& game);

  // Returns: OK; InvalidArgument naming the bad field (an unknown game included).
  absl::Status Validate() const;
};

struct ActorStats {
  int64_t games = 0;                        // self-play games put into the sink
  int64_t reanalysis_games = 0;             // reanalysis games put into the sink
  int64_t reanalysis_leaf_evaluations = 0;  // of leaf_evaluations, those of reanalysis games
  int64_t dropped_games = 0;                // finished but refused (empty game or a sink error)
  int64_t moves = 0;
  int64_t simulations = 0;
  int64_t leaf_evaluations = 0;
  int64_t resignations = 0;
  int64_t requests = 0;  // submitted
  int64_t requests_in_flight = 0;
  double evaluation_wait_seconds = 0;
  int64_t model_version = -1;  // newest seen; -1 before the first answer
  // The resignation gate: whether games started now may resign, and its measurement.
  bool resignation_enabled = false;
  int64_t resign_samples = 0;          // played-out would-be resignations in the gate's window
  int64_t resign_false_positives = 0;  // of those, games the resigning player did not lose
};

// Connects to the inference servers of `target` (RemoteEvaluatorClient::Options::target: one
// HOST:PORT, a comma-separated list, or a name that resolves to several) for `game` (its plane
// shape sizes the requests), over `wire` (TLS included). Does not wait for a server. `metrics`:
// where the client's zf_inference_client_* go (may be null; must outlive the evaluator).
// Returns: the evaluator; InvalidArgument (unknown game, a bad target).
absl::StatusOr<std::shared_ptr<AsyncEvaluator>> ConnectInference(
    const std::string& target, const std::string& game, uint64_t seed = 1,
    const grpc_util::WireSettings& wire = grpc_util::WireSettings{},
    prometheus::Registry* metrics = nullptr);

// A fresh random actor id: "a" + 16 hex digits.
std::string RandomActorId();

class Actor {
 public:
  // Returns: the actor (not started); InvalidArgument for bad options, a null evaluator or sink.
  // `registry` may be null (metrics then go to a private registry).
  static absl::StatusOr<std::unique_ptr<Actor>> Create(
      ActorOptions options, std::shared_ptr<AsyncEvaluator> evaluator, GameSink* sink,
      std::shared_ptr<prometheus::Registry> registry);
  ~Actor();  // Stop()
  Actor(const Actor&) = delete;
  Actor& operator=(const Actor&) = delete;

  // Starts the workers. Returns: OK; FailedPrecondition if already started.
  absl::Status Start() ABSL_LOCKS_EXCLUDED(mu_);

  // Blocks until every worker has finished (max_games played), the actor failed, or `deadline`.
  // Returns: OK (all max_games games are in the sink); DeadlineExceeded (always, with
  // max_games = 0, until Stop); FailedPrecondition (not started); Cancelled (stopped first); the
  // error that
  // stopped the actor (an evaluator error such as InvalidArgument for a model that does not fit
  // the game, or a sink error).
  absl::Status Wait(absl::Time deadline) ABSL_LOCKS_EXCLUDED(mu_);

  // Stops the workers and joins them; games in flight are dropped. Idempotent.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  ActorStats stats() const;
  const ActorOptions& options() const { return options_; }
  // The id in game ids and file names (options.actor_id or the random one).
  const std::string& actor_id() const { return actor_id_; }

  // Implementation detail (per-game-type worker state); public only for actor.cc.
  class WorkerBase;

 private:
  struct Metrics;
  Actor(ActorOptions options, std::shared_ptr<AsyncEvaluator> evaluator, GameSink* sink,
        std::shared_ptr<prometheus::Registry> registry);
  void WorkerDone(absl::Status status) ABSL_LOCKS_EXCLUDED(mu_);
  template <typename G>
  friend class ActorWorker;

  const ActorOptions options_;
  const std::shared_ptr<AsyncEvaluator> evaluator_;
  GameSink* const sink_;
  const std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<Metrics> metrics_;
  ResignationGate resignation_gate_;

  uint64_t seed_ = 0;
  std::string actor_id_;
  std::atomic<bool> stopping_{false};
  std::atomic<int64_t> games_started_{0};
  std::atomic<int64_t> games_{0}, dropped_{0}, moves_{0}, simulations_{0}, leaf_evaluations_{0},
      resignations_{0}, requests_{0}, requests_in_flight_{0}, model_version_{-1},
      reanalysis_games_{0}, reanalysis_leaf_evaluations_{0};
  std::atomic<int64_t> wait_nanos_{0};

  mutable absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  int workers_running_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<WorkerBase>> workers_ ABSL_GUARDED_BY(mu_);

  absl::Mutex join_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  std::vector<std::unique_ptr<Thread>> threads_ ABSL_GUARDED_BY(join_mu_);
};

}  // namespace zf::actor
