// One game of AlphaZero self-play driven by MCTS, producing a GameRecord.
//
// Per move:
//  1. Playout cap randomization (KataGo): with probability full_search_probability the move
//     gets a full search (budget mcts.num_simulations, Dirichlet noise if mcts.add_noise, but
//     never with Gumbel root search) and its visit distribution (the improved policy with
//     Gumbel root search, step 3) is a policy target (full_search = 1); otherwise a fast
//     search (budget fast_simulations, no Dirichlet noise; Gumbel noise, step 3), recorded with
//     full_search = 0 so the learner uses it for the value target only. With tree reuse, visits
//     kept from the previous move count towards the budget.
//  2. Resignation: after the search, the mover's resign value is max(root value, value of the
//     most visited child). When it stays below resign_threshold for resign_consecutive of that
//     player's moves in a row, the player resigns: the game ends as a loss for them before the
//     move is played (that position is not recorded). In a fraction
//     resign_playthrough_fraction of games (drawn at the start) resignation is disabled; the
//     first would-be resignation is recorded and, at the end, whether it would have been a false
//     positive (the player did not lose). resign_threshold = -1 turns resignation off.
//  3. Move choice: temperature `temperature` for the first temperature_moves plies, then
//     final_temperature (0 = most visited, random among ties), via Mcts::SelectAction. With
//     Gumbel root search (mcts.gumbel_considered_actions > 0) the move is instead the winner of
//     sequential halving, and every search, fast ones too, draws its Gumbel noise when
//     mcts.add_noise is set (a move whose search ran no simulation of its own is then drawn
//     from the improved policy, as it is at a temperature above 0; otherwise the temperatures
//     are not used); the policy target is the improved policy (Mcts, "Gumbel root search").
//  4. The position (planes from G::Encode), policy target, player to move, full-search flag,
//     action and root value are appended to the record; the move is played and the tree
//     advanced (reuse_tree) or rebuilt. A terminal position or max_moves plies (truncated,
//     scored as a draw) ends the game.
//
// Rollout opponents (rollout_opponent_share > 0): in that share of games, drawn at the start, one
// side, drawn too, moves by rollout MCTS (a fresh tree of rollout_opponent_simulations with the
// random-rollout evaluator each move, the `mcts:N` player's search) instead of the network's
// search. Its moves are played at once, inside the call that reaches them, without leaves; its
// positions are recorded with full_search = 0 (value target only; the policy target is the
// rollout search's visits) and never resign. The network's side plays and records as usual, so
// the games add positions unlike the network's own play and their values. The rollout search
// runs on the thread that drives the game, so every game that thread drives waits for it: cheap
// in Connect Four (about a millisecond a move at 1,000 simulations), long in big games.
//
// Reanalysis (CreateReanalysis): a finished game's moves replayed with a fresh full search of
// every position, so old positions get policy targets from a newer network.
//
// The collect/apply API is Mcts's, so an actor can put the leaves of many games into one
// request and keep several requests in flight: CollectLeaves returns the leaves of the current
// move's search; ApplyEvaluation applies one, and when that completes the search it plays the
// move (steps 2-4) and starts the next search, so a game moves forward only through these calls.
// Play (one game) and PlaySelfPlayBatched (many games, one Evaluate call per round) are the
// synchronous drivers.
//
// Randomness: everything (search kind, move sampling, playthrough draw, and the search's noise,
// seeded from mcts.seed mixed with seed) follows from the options, so a game is reproducible.
//
// Thread-compatibility: thread-compatible; one thread drives a game at a time.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "games/game.h"
#include "search/evaluator.h"
#include "search/game_record.h"
#include "search/mcts.h"
#include "search/random_rollout_evaluator.h"

namespace zf::search {

struct SelfPlayOptions {
  // The search. num_simulations is the full-search budget (>= 2); add_noise applies to full
  // searches only (with Gumbel root search to every search); mcts.seed is mixed with `seed`
  // below.
  MctsOptions mcts;
  // Temperature for plies [0, temperature_moves), then final_temperature; >= 0 each.
  int temperature_moves = 16;
  float temperature = 1.0f;
  float final_temperature = 0.0f;
  // Playout cap randomization: probability of a full search, in [0, 1] (1 = always full), and
  // the budget of the others (>= 2 when full_search_probability < 1).
  float full_search_probability = 1.0f;
  int fast_simulations = 32;
  // Resignation: threshold in [-1, 1] (-1 = never resign), moves in a row (>= 1), and the
  // fraction of games, in [0, 1], played out with resignation disabled.
  float resign_threshold = -1.0f;
  int resign_consecutive = 3;
  float resign_playthrough_fraction = 0.1f;
  // Rollout opponents: the share of games in [0, 1] in which one side moves by rollout MCTS of
  // rollout_opponent_simulations (>= 2 when the share is > 0); 0 = every game is self-play.
  float rollout_opponent_share = 0.0f;
  int rollout_opponent_simulations = 1000;
  // Plies after which the game stops as a draw; 0 = the game's MaxGameLength().
  int max_moves = 0;
  // Keep the chosen child's subtree between moves.
  bool reuse_tree = true;
  // Games with a self-play pass rule (Go: G::SetSelfPlayPassRule, see games/go/go.h) pass only
  // when it is needed: in reply to a pass, or when every other move fills an own eye. Ignored
  // by other games.
  bool restrict_pass = false;
  uint64_t seed = 0;

  // Returns: OK; InvalidArgument naming the first field out of range.
  absl::Status Validate() const;
};

namespace internal {
// SplitMix64: derives independent seeds from one.
inline uint64_t MixSeed(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}
}  // namespace internal

template <games::Game G>
class SelfPlayGame {
 public:
  // A game starting at `start` (usually the initial position). With a rollout opponent that
  // moves first, its first move is searched and played here (blocking for that search).
  // Returns: InvalidArgument if options.Validate() fails or `start` is terminal.
  static absl::StatusOr<std::unique_ptr<SelfPlayGame>> Create(const G& start,
                                                              const SelfPlayOptions& options) {
    absl::Status status = options.Validate();
    if (!status.ok()) return status;
    if (start.IsTerminal()) return absl::InvalidArgumentError("start position is terminal");
    G root = start;
    if constexpr (requires(G & g) { g.SetSelfPlayPassRule(true); }) {
      if (options.restrict_pass) root.SetSelfPlayPassRule(true);
    }
    MctsOptions mcts_options = options.mcts;
    mcts_options.seed = options.mcts.seed ^ internal::MixSeed(options.seed);
    absl::StatusOr<std::unique_ptr<Mcts<G>>> mcts = Mcts<G>::Create(root, mcts_options);
    if (!mcts.ok()) return mcts.status();
    RolloutOpponent opponent;
    if (options.rollout_opponent_share > 0.0f) {
      const uint64_t seed = internal::MixSeed(options.seed ^ 0x0770'0000'0000'0002ULL);
      MctsOptions rollout_options;  // the `mcts:N` player's search
      rollout_options.num_simulations = options.rollout_opponent_simulations;
      rollout_options.seed = seed;
      ZF_ASSIGN_OR_RETURN(opponent.search, Mcts<G>::Create(root, rollout_options));
      ZF_ASSIGN_OR_RETURN(opponent.evaluator,
                          RandomRolloutEvaluator<G>::Create({.num_rollouts = 1, .seed = seed}));
    }
    return std::unique_ptr<SelfPlayGame>(
        new SelfPlayGame(root, options, *std::move(mcts), std::move(opponent)));
  }

  // Reanalysis (MuZero Reanalyse): the game `played`, played from `start`, searched again by
  // the evaluator this game is driven with (normally a newer network than the one that played
  // it). Every position gets a full search (mcts.num_simulations; no noise of either kind) whose
  // policy target and root value are recorded with full_search = 1, and the move then played is
  // played.actions[i], whatever the search prefers. The game ends where `played` did, with its
  // outcome: a terminal position's own returns, ownership and score, or else `played`'s returns,
  // resignation and truncation. Temperatures, playout cap randomization and resignation are not
  // used. The record has `reanalysis` set.
  // Returns: InvalidArgument if options.Validate() fails, `start` is terminal, `played` has no
  // moves, a move is illegal or follows a terminal position, or a game that neither resigned
  // nor was truncated does not end in a terminal position.
  static absl::StatusOr<std::unique_ptr<SelfPlayGame>> CreateReanalysis(
      const G& start, const SelfPlayOptions& options, PlayedGame played) {
    if (played.actions.empty()) return absl::InvalidArgumentError("reanalysis: a game of no moves");
    G check = start;
    if constexpr (requires(G & g) { g.SetSelfPlayPassRule(true); }) {
      if (options.restrict_pass) check.SetSelfPlayPassRule(true);
    }
    for (size_t i = 0; i < played.actions.size(); ++i) {
      if (check.IsTerminal()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "reanalysis: move ", i, " of ", played.actions.size(), " follows the game's end"));
      }
      if (!check.IsLegal(played.actions[i])) {
        return absl::InvalidArgumentError(
            absl::StrCat("reanalysis: move ", i, " (action ", played.actions[i], ") is illegal"));
      }
      check.Apply(played.actions[i]);
    }
    if (!check.IsTerminal() && !played.resigned && !played.truncated) {
      return absl::InvalidArgumentError(
          "reanalysis: the game neither reached its end nor resigned nor was truncated");
    }
    SelfPlayOptions reanalysis = options;
    reanalysis.rollout_opponent_share = 0.0f;
    reanalysis.full_search_probability = 1.0f;
    reanalysis.mcts.add_noise = false;
    reanalysis.resign_threshold = -1.0f;
    reanalysis.max_moves = static_cast<int>(played.actions.size());
    ZF_ASSIGN_OR_RETURN(std::unique_ptr<SelfPlayGame> game, Create(start, reanalysis));
    game->record_.reanalysis = true;
    game->played_ = std::move(played);
    return game;
  }

  SelfPlayGame(const SelfPlayGame&) = delete;
  SelfPlayGame& operator=(const SelfPlayGame&) = delete;

  // Appends up to max_leaves leaves of the current move's search to *out and returns how many
  // (Mcts::CollectLeaves). Plays moves whose search completes during collection (terminal
  // shortcuts, reused visits). Returns 0 when Finished(), or when every leaf it could reach is
  // already pending or a Gumbel halving waits for the pending ones (apply them first). Blocks
  // for the rollout opponent's searches of the moves it plays (rollout opponents, above).
  int CollectLeaves(int max_leaves, std::vector<PendingLeaf<G>>* out) {
    if (max_leaves < 1) return 0;
    int added = 0;
    while (!finished_ && added == 0) {
      if (mcts_->Done()) {
        FinishMove();
        continue;
      }
      added = mcts_->CollectLeaves(max_leaves, out);
      if (added == 0 && !mcts_->Done()) break;  // collided with our own pending leaves
    }
    return added;
  }

  // Whether the search reads scores (Mcts::WantsScores).
  bool WantsScores() const { return mcts_->WantsScores(); }

  // Mcts::ApplyEvaluation; when the search is then complete, plays the move (and any following
  // move whose search is already complete, and the rollout opponent's replies, blocking for
  // their searches). Same requirements as Mcts::ApplyEvaluation.
  void ApplyEvaluation(const PendingLeaf<G>& leaf, std::span<const float> policy, float value,
                       float score = std::numeric_limits<float>::quiet_NaN()) {
    mcts_->ApplyEvaluation(leaf, policy, value, score);
    while (!finished_ && mcts_->Done()) FinishMove();
  }

  // Mcts::CancelLeaf.
  void CancelLeaf(const PendingLeaf<G>& leaf) { mcts_->CancelLeaf(leaf); }

  // Plays the game to the end with `evaluator`, up to leaves_per_round leaves per Evaluate call.
  // Returns: OK; InvalidArgument if leaves_per_round < 1; FailedPrecondition if leaves are
  // pending; the evaluator's error (the game stays usable).
  absl::Status Play(Evaluator<G>& evaluator, int leaves_per_round = 8) {
    SelfPlayGame* self = this;
    internal::BatchScratch<G> scratch;
    return internal::RunRounds<G>(
        std::span<SelfPlayGame* const>(&self, 1), evaluator, leaves_per_round,
        [](const SelfPlayGame& g) { return g.Finished(); }, scratch);
  }

  bool Finished() const { return finished_; }
  int NumPending() const { return mcts_->NumPending(); }
  // Plies played so far.
  int num_moves() const { return record_.num_moves; }
  const G& position() const { return position_; }
  const Mcts<G>& search() const { return *mcts_; }
  // Whether the current move's search is a full one.
  bool current_move_is_full() const { return current_full_; }
  // The player who moves by rollout MCTS (rollout opponents), or -1 when both sides self-play.
  int rollout_player() const { return rollout_player_; }
  // The record so far; complete once Finished().
  const GameRecord& record() const { return record_; }
  // Moves the record out. Requires Finished() (ZF_CHECK).
  GameRecord TakeRecord() {
    ZF_CHECK(finished_) << "TakeRecord before the game finished";
    return std::move(record_);
  }

 private:
  // The rollout opponent's search and evaluator; both null without rollout opponents.
  struct RolloutOpponent {
    std::unique_ptr<Mcts<G>> search;
    std::unique_ptr<RandomRolloutEvaluator<G>> evaluator;
  };

  SelfPlayGame(const G& start, const SelfPlayOptions& options, std::unique_ptr<Mcts<G>> mcts,
               RolloutOpponent opponent)
      : options_(options),
        position_(start),
        mcts_(std::move(mcts)),
        opponent_(std::move(opponent)),
        rng_(internal::MixSeed(options.seed ^ 0x5E1F'0000'0000'0001ULL)),
        max_moves_(options.max_moves > 0 ? options.max_moves : start.MaxGameLength()),
        resign_enabled_(options.resign_threshold > -1.0f) {
    record_.game = start.Name();
    record_.shape = start.Shape();
    record_.num_actions = start.NumActions();
    const size_t expected = static_cast<size_t>(std::min(max_moves_, start.MaxGameLength()));
    record_.planes.reserve(expected * record_.shape.Size());
    record_.policy_targets.reserve(expected * record_.num_actions);
    record_.resignation_disabled =
        resign_enabled_ && std::bernoulli_distribution(options.resign_playthrough_fraction)(rng_);
    if (opponent_.search != nullptr &&
        std::bernoulli_distribution(options.rollout_opponent_share)(rng_)) {
      rollout_player_ = std::uniform_int_distribution<int>(0, 1)(rng_);
    }
    StartMove();
  }

  // Plays the rollout opponent's moves while it is to move, then starts the network's search
  // (unless the game ended).
  void StartMove() {
    while (position_.ToPlay() == rollout_player_) {
      if (!PlayRolloutMove()) return;
    }
    current_full_ = std::bernoulli_distribution(options_.full_search_probability)(rng_);
    mcts_->SetSimulationBudget(current_full_ ? options_.mcts.num_simulations
                                             : options_.fast_simulations);
    // Gumbel root search samples every move from its noise (it never changes the priors).
    const bool gumbel = options_.mcts.gumbel_considered_actions > 0;
    mcts_->SetAddNoise((current_full_ || gumbel) && options_.mcts.add_noise);
  }

  // The rollout opponent's move: a fresh rollout search of the position, recorded as a fast
  // search's. Returns whether the game goes on.
  bool PlayRolloutMove() {
    Mcts<G>& search = *opponent_.search;
    search.SetRoot(position_);
    const absl::Status status = search.Run(*opponent_.evaluator);
    // The rollout evaluator fails only on a terminal position, which SetRoot never hands it.
    ZF_CHECK(status.ok()) << "rollout opponent's search: " << status;
    return RecordAndPlay(search, /*full=*/false);
  }

  // Called when the current search is Done(): resignation check, record, move, next search.
  void FinishMove() {
    const int player = position_.ToPlay();
    const int move = record_.num_moves;
    const float root_value = mcts_->RootValue();
    if (resign_enabled_) {
      float best_value = root_value;
      int best_visits = -1;
      for (const ChildStats& child : mcts_->RootChildren()) {
        if (child.visits > best_visits) {
          best_visits = child.visits;
          best_value = child.value;
        }
      }
      const float resign_value = std::max(root_value, best_value);
      below_threshold_[player] =
          resign_value < options_.resign_threshold ? below_threshold_[player] + 1 : 0;
      if (below_threshold_[player] >= options_.resign_consecutive) {
        if (!record_.resignation_disabled) {
          record_.resigned = true;
          record_.resigning_player = player;
          games::Returns returns;
          returns[player] = -1.0f;
          returns[1 - player] = 1.0f;
          EndGame(returns);
          return;
        }
        if (!record_.would_have_resigned) {
          record_.would_have_resigned = true;
          record_.would_resign_player = player;
          record_.would_resign_move = move;
        }
      }
    }

    if (RecordAndPlay(*mcts_, current_full_)) StartMove();
  }

  // Records the position with `search`'s policy target and root value, plays its move (or the
  // replayed game's) and advances the network's tree. Returns whether the game goes on (else it
  // has ended: EndGame).
  bool RecordAndPlay(Mcts<G>& search, bool full) {
    const int player = position_.ToPlay();
    const int move = record_.num_moves;
    const size_t plane_size = static_cast<size_t>(record_.shape.Size());
    record_.planes.resize(record_.planes.size() + plane_size);
    position_.Encode(record_.planes.data() + record_.planes.size() - plane_size);
    const size_t a = static_cast<size_t>(record_.num_actions);
    record_.policy_targets.resize(record_.policy_targets.size() + a);
    search.PolicyTarget(std::span<float>(record_.policy_targets).last(a));
    record_.to_play.push_back(static_cast<int8_t>(player));
    record_.full_search.push_back(full ? 1 : 0);
    record_.root_values.push_back(search.RootValue());

    const float temperature =
        move < options_.temperature_moves ? options_.temperature : options_.final_temperature;
    const int action = played_.has_value() ? played_->actions[static_cast<size_t>(move)]
                                           : search.SelectAction(temperature, rng_);
    record_.actions.push_back(action);
    ++record_.num_moves;
    position_.Apply(action);
    if (options_.reuse_tree) {
      mcts_->Advance(action);
    } else {
      mcts_->SetRoot(position_);
    }
    if (position_.IsTerminal()) {
      if constexpr (games::GameWithFinalOwnership<G>) {
        record_.final_ownership.resize(static_cast<size_t>(record_.shape.Cells()));
        position_.FinalOwnership(record_.final_ownership.data());
        record_.final_score = position_.FinalScore();
      }
      EndGame(position_.Returns());
    } else if (played_.has_value() &&
               record_.num_moves == static_cast<int>(played_->actions.size())) {
      record_.resigned = played_->resigned;
      record_.resigning_player = played_->resigning_player;
      record_.truncated = played_->truncated;
      EndGame(played_->returns);
    } else if (record_.num_moves >= max_moves_) {
      record_.truncated = true;
      EndGame({0.0f, 0.0f});
    }
    return !finished_;
  }

  void EndGame(const games::Returns& returns) {
    record_.returns = returns;
    if (record_.would_have_resigned) {
      record_.resign_false_positive = returns[record_.would_resign_player] >= 0.0f;
    }
    finished_ = true;
  }

  const SelfPlayOptions options_;
  G position_;
  std::unique_ptr<Mcts<G>> mcts_;
  RolloutOpponent opponent_;
  std::mt19937_64 rng_;
  const int max_moves_;
  const bool resign_enabled_;
  bool current_full_ = true;
  bool finished_ = false;
  int rollout_player_ = -1;  // who moves by rollout MCTS, -1 nobody
  int below_threshold_[2] = {0, 0};
  GameRecord record_;
  // Reanalysis: the game whose moves are replayed (CreateReanalysis).
  std::optional<PlayedGame> played_;
};

// Plays every game in `games` to the end, putting the leaves of all unfinished games (up to
// leaves_per_game each) into one Evaluate call per round. Blocks for as long as the evaluator
// does.
// Returns: OK; InvalidArgument if leaves_per_game < 1; FailedPrecondition if a game has leaves
// pending; the evaluator's error (that round's leaves are cancelled).
template <games::Game G>
absl::Status PlaySelfPlayBatched(std::type_identity_t<std::span<SelfPlayGame<G>* const>> games,
                                 Evaluator<G>& evaluator, int leaves_per_game) {
  internal::BatchScratch<G> scratch;
  return internal::RunRounds<G>(
      games, evaluator, leaves_per_game, [](const SelfPlayGame<G>& g) { return g.Finished(); },
      scratch);
}

}  // namespace zf::search
