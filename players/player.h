// The player interface and the players that need nothing outside search/ and games/: random
// moves, the exact solvers (tic-tac-toe by search::MinimaxSolver, Connect Four by
// games::ConnectFourSolver), and MCTS over any evaluator. Built from spec strings by MakePlayer
// (players/player_spec.h); GTP engines (GNU Go among them) are players/gtp_player.h.
//
// Thread-compatible: one player per thread.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
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
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "games/connect4/solver.h"
#include "games/game.h"
#include "games/tictactoe/tictactoe.h"
#include "search/evaluator.h"
#include "search/mcts.h"
#include "search/minimax.h"

namespace zf::players {

// What ChooseAction returns for a player that resigns (only gnugo:LEVEL does): the game ends
// with a loss for the player to move. `zf match` and `zf play` score it so; `zf gtp` answers
// "resign".
inline constexpr int kResignAction = -1;

// Random plies that open each evaluation or match game unless told otherwise: 1 for tic-tac-toe
// (nine first moves), 2 else. Without them two deterministic players (MCTS at a fixed simulation
// count, GNU Go) replay the same few games.
inline int DefaultOpeningMoves(const std::string& game) { return game == "tictactoe" ? 1 : 2; }

// Plays up to `plies` uniformly random legal moves on `game` (fewer if it ends), appending each
// action to `actions` when given; a game with a pass (Go) never passes in the opening (two
// random passes would end the game on the empty board). The same rng state gives the same
// opening.
template <games::Game G>
void PlayRandomOpening(G& game, int plies, std::mt19937_64& rng,
                       std::vector<int>* actions = nullptr) {
  std::vector<int> legal;
  for (int k = 0; k < plies && !game.IsTerminal(); ++k) {
    game.LegalActions(&legal);
    if constexpr (requires(const G& g) { g.PassAction(); }) {
      if (legal.size() > 1) std::erase(legal, game.PassAction());
    }
    const int action = legal[std::uniform_int_distribution<size_t>(0, legal.size() - 1)(rng)];
    game.Apply(action);
    if (actions != nullptr) actions->push_back(action);
  }
}

// The statistics of a player's last search, for `zf analyze`.
struct SearchReport {
  float value = 0.0f;  // the root's mean value for the player to move, in [-1, 1]
  int root_visits = 0;
  std::vector<search::ChildStats> children;  // legal actions, increasing
};

// One candidate move of a live analysis (GTP lz-analyze, kata-analyze: cli/gtp/gtp_engine.h).
struct AnalysisMove {
  int action = -1;
  int visits = 0;
  float winrate = 0.5f;  // the move's mean value as a win probability for the player to move
  float prior = 0.0f;
  float lcb = 0.0f;  // a one-sided 95% lower bound of winrate (1.645 standard errors), in [0, 1]
  float score_lead = std::numeric_limits<float>::quiet_NaN();  // points, the player to move's
  std::vector<int> pv;  // the principal variation, starting with `action`
};

// A live analysis as it stands: the root and its visited moves, most visited first.
struct Analysis {
  int visits = 0;
  float winrate = 0.5f;
  float score_lead = std::numeric_limits<float>::quiet_NaN();
  std::vector<AnalysisMove> moves;
  // BeginAnalysis(..., ownership = true) with an evaluator that has it: H * W values in [-1, 1],
  // row-major from the top left, +1 the player to move's. Else empty.
  std::vector<float> ownership;
};

template <games::Game G>
class Player {
 public:
  virtual ~Player() = default;
  // Chooses a move in the non-terminal position `game`.
  // Returns: a legal action, or kResignAction from a player that can resign; an evaluator's
  // or engine's error (e.g. Internal, Unavailable) otherwise.
  virtual absl::StatusOr<int> ChooseAction(const G& game) = 0;
  // What the last ChooseAction considered, for people watching (empty if nothing to say).
  virtual std::string Thinking(const G& game) const { return ""; }
  // The last ChooseAction's search statistics; nullopt for players that do not search.
  virtual std::optional<SearchReport> LastSearch() const { return std::nullopt; }

  // Live analysis, for players that search (the MCTS players): BeginAnalysis starts a fresh
  // search of `game` (not terminal), ContinueAnalysis adds `simulations` more (stopping at
  // `max_visits` root visits), AnalysisReport says where it stands, AnalysisBestAction is the
  // move ChooseAction would play from that search. ChooseAction afterwards searches afresh.
  // Returns: Unimplemented (the default) for players that do not search; ContinueAnalysis
  // false once the search cannot grow (max_visits, a terminal root); an evaluator's error.
  virtual absl::Status BeginAnalysis(const G& game, bool ownership) {
    (void)game;
    (void)ownership;
    return absl::UnimplementedError("this player does not search: no analysis");
  }
  virtual absl::StatusOr<bool> ContinueAnalysis(int simulations, int max_visits) {
    (void)simulations;
    (void)max_visits;
    return absl::UnimplementedError("this player does not search: no analysis");
  }
  virtual Analysis AnalysisReport(int max_pv_length) const {
    (void)max_pv_length;
    return {};
  }
  virtual int AnalysisBestAction() const { return kResignAction; }
  // The simulations ChooseAction searches with; 0 for players that do not search.
  virtual int SimulationsPerMove() const { return 0; }
};

// The search behind a move `player` just chose in `game`, in one line for SGF comments: "value
// +0.120 for Black, 400 visits; top: D4 250 (+0.13), C3 100 (+0.08), E5 30 (+0.02)"; "" for
// players that do not search (LastSearch is nullopt).
template <games::Game G>
std::string SearchSummary(const G& game, const Player<G>& player) {
  const std::optional<SearchReport> report = player.LastSearch();
  if (!report) return "";
  std::vector<search::ChildStats> children = report->children;
  std::sort(children.begin(), children.end(), [](const auto& a, const auto& b) {
    return a.visits != b.visits ? a.visits > b.visits : a.action < b.action;
  });
  std::string out = absl::StrFormat("value %+.3f for %s, %d visits; top:", report->value,
                                    game.ToPlay() == 0 ? "Black" : "White", report->root_visits);
  for (size_t i = 0; i < children.size() && i < 3 && children[i].visits > 0; ++i) {
    absl::StrAppendFormat(&out, "%s %s %d (%+.2f)", i == 0 ? "" : ",",
                          game.ActionToString(children[i].action), children[i].visits,
                          children[i].value);
  }
  return out;
}

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

// Perfect play: a move chosen at random among those an exact solver says keep the position's
// value. `Solver` has OptimalActions(const G&) -> StatusOr<std::vector<int>>: MinimaxSolver
// (tic-tac-toe: win/draw/loss) or games::ConnectFourSolver (the quickest win, the slowest loss;
// ResourceExhausted where a position is beyond its node budget, never a guess).
template <games::Game G, typename Solver = search::MinimaxSolver<G>>
class PerfectPlayer final : public Player<G> {
 public:
  explicit PerfectPlayer(uint64_t seed) : rng_(seed) {}
  PerfectPlayer(uint64_t seed, Solver solver) : rng_(seed), solver_(std::move(solver)) {}
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
  Solver solver_;
  std::vector<int> last_best_;
};

// MCTS over any evaluator: a fresh tree per move, the most visited move is played (with
// options.lcb_stdevs > 0 the one with the best lower confidence bound). `options` is the search
// (search::MctsOptions: c_puct, fpu_reduction, score_utility...); its num_simulations and seed
// are replaced by `simulations` and `seed`.
template <games::Game G>
class MctsPlayer final : public Player<G> {
 public:
  static absl::StatusOr<std::unique_ptr<MctsPlayer>> Create(
      const G& start, int simulations, std::unique_ptr<search::Evaluator<G>> evaluator,
      uint64_t seed, int batch_size, search::MctsOptions options = {}) {
    options.num_simulations = simulations;
    options.seed = seed;
    ZF_ASSIGN_OR_RETURN(std::unique_ptr<search::Mcts<G>> mcts,
                        search::Mcts<G>::Create(start, options));
    return std::unique_ptr<MctsPlayer>(
        new MctsPlayer(std::move(mcts), std::move(evaluator), batch_size, simulations));
  }

  absl::StatusOr<int> ChooseAction(const G& game) override {
    mcts_->SetReportScores(false);  // an analysis may have changed these
    mcts_->SetRoot(game);
    mcts_->SetSimulationBudget(simulations_);
    ZF_RETURN_IF_ERROR(mcts_->Run(*evaluator_, batch_size_));
    return mcts_->BestAction();
  }

  absl::Status BeginAnalysis(const G& game, bool ownership) override {
    // Scores (from evaluators that have them) for the score lead; the search is the same.
    mcts_->SetReportScores(true);
    mcts_->SetRoot(game);
    ownership_.clear();
    if (ownership && !game.IsTerminal()) {
      absl::StatusOr<std::vector<float>> predicted = evaluator_->Ownership(game);
      if (predicted.ok()) {
        ownership_ = std::move(*predicted);
      } else if (predicted.status().code() != absl::StatusCode::kUnimplemented) {
        return predicted.status();
      }
    }
    return absl::OkStatus();
  }

  absl::StatusOr<bool> ContinueAnalysis(int simulations, int max_visits) override {
    const int visits = mcts_->RootVisits();
    if (mcts_->root_position().IsTerminal() || visits >= max_visits || simulations < 1) {
      return false;
    }
    mcts_->SetSimulationBudget(std::min(max_visits, visits + simulations));
    ZF_RETURN_IF_ERROR(mcts_->Run(*evaluator_, batch_size_));
    return true;
  }

  Analysis AnalysisReport(int max_pv_length) const override {
    const G& game = mcts_->root_position();
    // Scores come in points / sqrt(cells), player 0's view.
    const games::PlaneShape shape = game.Shape();
    const float points = std::sqrt(static_cast<float>(shape.height * shape.width));
    const float side = game.IsTerminal() || game.ToPlay() == 0 ? 1.0f : -1.0f;
    Analysis out;
    out.visits = mcts_->RootVisits();
    out.winrate = 0.5f * (mcts_->RootValue() + 1.0f);
    out.score_lead = side * points * mcts_->RootScore0();
    out.ownership = ownership_;
    std::vector<search::ChildStats> children = mcts_->RootChildren();
    std::sort(children.begin(), children.end(), [](const auto& a, const auto& b) {
      return a.visits != b.visits ? a.visits > b.visits : a.prior > b.prior;
    });
    for (const search::ChildStats& c : children) {
      if (c.visits == 0) break;
      AnalysisMove move;
      move.action = c.action;
      move.visits = c.visits;
      move.winrate = 0.5f * (c.value + 1.0f);
      move.prior = c.prior;
      // The bound's standard error (of value + score utility, the search's own estimate) below
      // the win-only mean that `winrate` shows; in winrate units, half the value's.
      const float standard_error = mcts_->RootLowerConfidenceBound(c.action, 0.0f) -
                                   mcts_->RootLowerConfidenceBound(c.action, 1.0f);
      move.lcb =
          std::isfinite(standard_error)
              ? std::clamp(move.winrate - 0.5f * kAnalysisLcbStdevs * standard_error, 0.0f, 1.0f)
              : 0.0f;
      move.score_lead = side * points * mcts_->RootChildScore0(c.action);
      move.pv = mcts_->PrincipalVariation(c.action, max_pv_length);
      out.moves.push_back(std::move(move));
    }
    return out;
  }

  int AnalysisBestAction() const override { return mcts_->BestAction(); }
  // The standard errors below the mean at which AnalysisReport's lcb sits (a one-sided 95%).
  static constexpr float kAnalysisLcbStdevs = 1.645f;
  int SimulationsPerMove() const override { return simulations_; }

  std::string Thinking(const G& game) const override {
    std::vector<search::ChildStats> children = mcts_->RootChildren();
    std::sort(children.begin(), children.end(),
              [](const auto& a, const auto& b) { return a.visits > b.visits; });
    std::string out = absl::StrFormat("value %+.3f over %d visits; top moves:", mcts_->RootValue(),
                                      mcts_->RootVisits());
    for (size_t i = 0; i < children.size() && i < 5; ++i) {
      absl::StrAppendFormat(&out, "  %s %d visits (%+.2f)", game.ActionToString(children[i].action),
                            children[i].visits, children[i].value);
    }
    return out;
  }

  std::optional<SearchReport> LastSearch() const override {
    return SearchReport{mcts_->RootValue(), mcts_->RootVisits(), mcts_->RootChildren()};
  }

 private:
  MctsPlayer(std::unique_ptr<search::Mcts<G>> mcts, std::unique_ptr<search::Evaluator<G>> evaluator,
             int batch_size, int simulations)
      : mcts_(std::move(mcts)),
        evaluator_(std::move(evaluator)),
        batch_size_(batch_size),
        simulations_(simulations) {}

  std::unique_ptr<search::Mcts<G>> mcts_;
  std::unique_ptr<search::Evaluator<G>> evaluator_;
  int batch_size_;
  int simulations_;
  std::vector<float> ownership_;  // of the analysed root, when asked for
};

}  // namespace zf::players
