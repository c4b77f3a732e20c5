// Players for `zf match`, `zf play` (and later `zf gtp`/`zf analyze`), built from a spec string:
//
//   random              uniformly random legal moves
//   mcts:SIMS           MCTS with SIMS simulations, random-rollout evaluator
//   uniform:SIMS        MCTS with SIMS simulations, uniform priors and value 0
//   net:CHECKPOINT:SIMS MCTS with SIMS simulations over a network checkpoint (LocalEvaluator,
//                       CPU, one LibTorch thread); CHECKPOINT may itself contain ':'
//   perfect             tic-tac-toe only: an exact solver picking among optimal moves at random
//
// SIMS is 1..1,000,000. Thread-compatible: one player per thread.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "games/game.h"
#include "games/tictactoe/tictactoe.h"
#include "model/game_network.h"
#include "model/inference_session.h"
#include "model/local_evaluator.h"
#include "search/evaluator.h"
#include "search/mcts.h"
#include "search/minimax.h"
#include "search/random_rollout_evaluator.h"
#include "search/uniform_evaluator.h"

namespace zf::cli {

template <games::Game G>
class Player {
 public:
  virtual ~Player() = default;
  // Chooses a move in the non-terminal position `game`.
  // Returns: a legal action; an evaluator's error (e.g. Internal) otherwise.
  virtual absl::StatusOr<int> ChooseAction(const G& game) = 0;
  // What the last ChooseAction considered, for people watching (empty if nothing to say).
  virtual std::string Thinking(const G& game) const { return ""; }
};

template <games::Game G>
class RandomPlayer final : public Player<G> {
 public:
  explicit RandomPlayer(uint64_t seed) : rng_(seed) {}
  absl::StatusOr<int> ChooseAction(const G& game) override {
    game.LegalActions(&legal_);
    return legal_[std::uniform_int_distribution<size_t>(0, legal_.size() - 1)(rng_)];
  }

 private:
  std::mt19937_64 rng_;
  std::vector<int> legal_;
};

template <games::Game G>
class PerfectPlayer final : public Player<G> {
 public:
  explicit PerfectPlayer(uint64_t seed) : rng_(seed) {}
  absl::StatusOr<int> ChooseAction(const G& game) override {
    ZF_ASSIGN_OR_RETURN(std::vector<int> best, solver_.OptimalActions(game));
    last_best_ = best;
    return best[std::uniform_int_distribution<size_t>(0, best.size() - 1)(rng_)];
  }
  std::string Thinking(const G& game) const override {
    std::vector<std::string> names;
    for (int a : last_best_) names.push_back(game.ActionToString(a));
    return absl::StrCat("optimal moves: ", absl::StrJoin(names, " "));
  }

 private:
  std::mt19937_64 rng_;
  search::MinimaxSolver<G> solver_;
  std::vector<int> last_best_;
};

// MCTS over any evaluator: a fresh tree per move, the most visited move is played.
template <games::Game G>
class MctsPlayer final : public Player<G> {
 public:
  static absl::StatusOr<std::unique_ptr<MctsPlayer>> Create(
      const G& start, int simulations, std::unique_ptr<search::Evaluator<G>> evaluator,
      uint64_t seed, int batch_size) {
    search::MctsOptions options;
    options.num_simulations = simulations;
    options.seed = seed;
    ZF_ASSIGN_OR_RETURN(std::unique_ptr<search::Mcts<G>> mcts,
                        search::Mcts<G>::Create(start, options));
    return std::unique_ptr<MctsPlayer>(
        new MctsPlayer(std::move(mcts), std::move(evaluator), batch_size));
  }

  absl::StatusOr<int> ChooseAction(const G& game) override {
    mcts_->SetRoot(game);
    ZF_RETURN_IF_ERROR(mcts_->Run(*evaluator_, batch_size_));
    return mcts_->BestAction();
  }

  std::string Thinking(const G& game) const override {
    std::vector<search::ChildStats> children = mcts_->RootChildren();
    std::sort(children.begin(), children.end(),
              [](const auto& a, const auto& b) { return a.visits > b.visits; });
    std::string out = absl::StrFormat("value %+.3f over %d visits; top moves:",
                                      mcts_->RootValue(), mcts_->RootVisits());
    for (size_t i = 0; i < children.size() && i < 5; ++i) {
      absl::StrAppendFormat(&out, "  %s %d visits (%+.2f)",
                            game.ActionToString(children[i].action), children[i].visits,
                            children[i].value);
    }
    return out;
  }

 private:
  MctsPlayer(std::unique_ptr<search::Mcts<G>> mcts,
             std::unique_ptr<search::Evaluator<G>> evaluator, int batch_size)
      : mcts_(std::move(mcts)), evaluator_(std::move(evaluator)), batch_size_(batch_size) {}

  std::unique_ptr<search::Mcts<G>> mcts_;
  std::unique_ptr<search::Evaluator<G>> evaluator_;
  int batch_size_;
};

namespace internal {

inline absl::StatusOr<int> ParseSimulations(absl::string_view spec, absl::string_view text) {
  int sims = 0;
  if (!absl::SimpleAtoi(text, &sims) || sims < 1 || sims > 1'000'000) {
    return absl::InvalidArgumentError(absl::StrCat("player \"", spec, "\": simulations must be ",
                                                   "a number in 1..1000000, got \"", text, "\""));
  }
  return sims;
}

}  // namespace internal

inline constexpr char kPlayerSpecHelp[] =
    "random, mcts:SIMS (random rollouts), uniform:SIMS, net:CHECKPOINT:SIMS, perfect "
    "(tictactoe)";

namespace internal {
template <games::Game G>
absl::StatusOr<std::unique_ptr<Player<G>>> MakePlayerImpl(absl::string_view spec, const G& start,
                                                          uint64_t seed);
}  // namespace internal

// Builds the player `spec` describes for games starting at `start`. `seed` makes random
// choices reproducible.
// Returns: the player; InvalidArgument for a bad spec, naming it, including a checkpoint that
// is missing, corrupt, or of another game (the spec is user input).
template <games::Game G>
absl::StatusOr<std::unique_ptr<Player<G>>> MakePlayer(absl::string_view spec, const G& start,
                                                      uint64_t seed) {
  absl::StatusOr<std::unique_ptr<Player<G>>> player = internal::MakePlayerImpl(spec, start, seed);
  if (!player.ok() && player.status().code() != absl::StatusCode::kInvalidArgument) {
    return absl::InvalidArgumentError(
        absl::StrCat("player \"", spec, "\": ", player.status().message()));
  }
  return player;
}

namespace internal {
template <games::Game G>
absl::StatusOr<std::unique_ptr<Player<G>>> MakePlayerImpl(absl::string_view spec, const G& start,
                                                          uint64_t seed) {
  if (spec == "random") return std::unique_ptr<Player<G>>(new RandomPlayer<G>(seed));
  if (spec == "perfect") {
    if constexpr (std::is_same_v<G, games::TicTacToe>) {
      return std::unique_ptr<Player<G>>(new PerfectPlayer<G>(seed));
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("player \"perfect\" is only available for tictactoe, not ", start.Name()));
    }
  }
  size_t colon = spec.find(':');
  absl::string_view kind = spec.substr(0, colon);
  if (colon == absl::string_view::npos || (kind != "mcts" && kind != "uniform" && kind != "net")) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown player \"", spec, "\"; players: ", kPlayerSpecHelp));
  }
  std::unique_ptr<search::Evaluator<G>> evaluator;
  absl::string_view sims_text;
  int batch_size = 1;
  if (kind == "net") {
    absl::string_view rest = spec.substr(colon + 1);
    size_t last = rest.rfind(':');
    if (last == absl::string_view::npos || last == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("player \"", spec, "\": expected net:CHECKPOINT:SIMS"));
    }
    sims_text = rest.substr(last + 1);
    ZF_RETURN_IF_ERROR(internal::ParseSimulations(spec, sims_text).status());
    model::InferenceSession::Options options;
    options.checkpoint_path = std::string(rest.substr(0, last));
    options.game = start.Name();
    options.device = "cpu";
    options.intra_op_threads = 1;
    ZF_ASSIGN_OR_RETURN(std::unique_ptr<model::InferenceSession> session,
                        model::InferenceSession::Create(options));
    ZF_ASSIGN_OR_RETURN(evaluator, model::LocalEvaluator<G>::Create(std::move(session), start));
    batch_size = 8;  // a few leaves per forward pass: same search, fewer network calls
  } else {
    sims_text = spec.substr(colon + 1);
    if (kind == "uniform") {
      evaluator = std::make_unique<search::UniformEvaluator<G>>();
      batch_size = 16;
    } else {
      search::RandomRolloutOptions options;
      options.seed = seed * 7919 + 1;
      ZF_ASSIGN_OR_RETURN(evaluator, search::RandomRolloutEvaluator<G>::Create(options));
    }
  }
  ZF_ASSIGN_OR_RETURN(int sims, internal::ParseSimulations(spec, sims_text));
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<MctsPlayer<G>> player,
                      MctsPlayer<G>::Create(start, sims, std::move(evaluator), seed, batch_size));
  return std::unique_ptr<Player<G>>(std::move(player));
}
}  // namespace internal

}  // namespace zf::cli
