// Players for `zf match`, `zf play` (and later `zf gtp`/`zf analyze`), built from a spec string:
//
//   random              uniformly random legal moves
//   mcts:SIMS           MCTS with SIMS simulations, random-rollout evaluator
//   uniform:SIMS        MCTS with SIMS simulations, uniform priors and value 0
//   net:CHECKPOINT:SIMS MCTS with SIMS simulations over a network checkpoint (LocalEvaluator,
//                       CPU, one LibTorch thread); CHECKPOINT may itself contain ':'. Only in
//                       zf-torch (cli/network_runtime.h): `zf` hands such commands over to it
//   net:CHECKPOINT:SIMS:score_utility=L
//                       the same search with score utility L (0..1, search::MctsOptions;
//                       `zf run --score_utility`): the checkpoint needs the score head
//   net:CHECKPOINT:SIMS:lcb=Z
//                       plays the root child with the best lower confidence bound, Z standard
//                       errors (0..10; search::MctsOptions::lcb_stdevs), instead of the most
//                       visited. Options follow SIMS as ":key=value", in any order (no ',':
//                       --eval_vs and --anchors split lists of specs on it)
//   perfect             tic-tac-toe only: an exact solver picking among optimal moves at random
//   gnugo:LEVEL         Go only: GNU Go (LEVEL 0..10) run as a GTP subprocess with the same
//                       rules (--chinese-rules --positional-superko --forbid-suicide) and the
//                       game's komi and board size, and --capture-all-dead (it removes dead
//                       stones before passing, as area scoring of the board as it stands
//                       needs); it may resign (kResignAction)
//
// SIMS is 1..1,000,000. Thread-compatible: one player per thread.
#pragma once

#include <cmath>
#include <cstdint>
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
#include "cli/network_runtime.h"
#include "common/status_macros.h"
#include "games/game.h"
#include "games/go/go.h"
#include "games/tictactoe/tictactoe.h"
#include "gtp/gtp_client.h"
#include "gtp/vertex.h"
#include "search/evaluator.h"
#include "search/mcts.h"
#include "search/minimax.h"
#include "search/random_rollout_evaluator.h"
#include "search/uniform_evaluator.h"

namespace zf::cli {

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

// MCTS over any evaluator: a fresh tree per move, the most visited move is played (with
// lcb_stdevs > 0 the one with the best lower confidence bound). With score_utility > 0 the
// evaluator's scores steer the search (search::MctsOptions).
template <games::Game G>
class MctsPlayer final : public Player<G> {
 public:
  static absl::StatusOr<std::unique_ptr<MctsPlayer>> Create(
      const G& start, int simulations, std::unique_ptr<search::Evaluator<G>> evaluator,
      uint64_t seed, int batch_size, float score_utility = 0.0f, float lcb_stdevs = 0.0f) {
    search::MctsOptions options;
    options.num_simulations = simulations;
    options.seed = seed;
    options.score_utility = score_utility;
    options.lcb_stdevs = lcb_stdevs;
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
             int batch_size)
      : mcts_(std::move(mcts)), evaluator_(std::move(evaluator)), batch_size_(batch_size) {}

  std::unique_ptr<search::Mcts<G>> mcts_;
  std::unique_ptr<search::Evaluator<G>> evaluator_;
  int batch_size_;
};

// GNU Go as a player: a GTP subprocess told every move. The player follows one game at a time,
// played move by move from the empty board: at each ChooseAction it finds the opponent's move
// since its own last one, tells GNU Go, and asks genmove. A position that is not one move on
// (a new game, or one begun with moves the player did not see, like an evaluation's random
// opening) is rebuilt from the empty board: an order of its stones' placements and of passes
// that reaches the same board with the same player to move, found by a bounded search (a stone
// captured on the way becomes a pass; area scoring does not count prisoners).
class GnuGoPlayer final : public Player<games::Go> {
 public:
  // Starts GNU Go at `level` (0..10) for games like `start` (its size and komi).
  // Returns: the player; InvalidArgument for a bad level; NotFound without GNU Go; Internal if
  // it cannot start; Unavailable or FailedPrecondition if it rejects the board size or komi.
  static absl::StatusOr<std::unique_ptr<GnuGoPlayer>> Create(const games::Go& start, int level) {
    if (level < 0 || level > 10) {
      return absl::InvalidArgumentError(absl::StrCat("gnugo level must be in 0..10, got ", level));
    }
    ZF_ASSIGN_OR_RETURN(std::string binary, gtp::FindGnuGo());
    ZF_ASSIGN_OR_RETURN(
        std::unique_ptr<gtp::GtpClient> client,
        gtp::GtpClient::Create(
            {.argv = {binary, "--mode", "gtp", "--level", absl::StrCat(level), "--chinese-rules",
                      "--positional-superko", "--forbid-suicide", "--capture-all-dead", "--komi",
                      absl::StrCat(start.Komi()), "--boardsize", absl::StrCat(start.Size())}}));
    ZF_RETURN_IF_ERROR(client->Send(absl::StrCat("boardsize ", start.Size())).status());
    ZF_RETURN_IF_ERROR(client->Send(absl::StrCat("komi ", start.Komi())).status());
    return std::unique_ptr<GnuGoPlayer>(new GnuGoPlayer(start, std::move(client)));
  }

  // Returns: GNU Go's move or kResignAction; FailedPrecondition for a position neither one
  // move on from the previous one nor rebuildable from the empty board; Internal if GNU Go
  // plays what these rules call illegal; Unavailable if GNU Go died.
  absl::StatusOr<int> ChooseAction(const games::Go& game) override {
    ZF_RETURN_IF_ERROR(CatchUp(game));
    const char* color = game.ToPlay() == 0 ? "black" : "white";
    ZF_ASSIGN_OR_RETURN(std::string reply, client_->Send(absl::StrCat("genmove ", color)));
    last_reply_ = reply;
    if (absl::EqualsIgnoreCase(reply, "resign")) return kResignAction;
    absl::StatusOr<int> action = gtp::ParseVertex(game, reply);
    if (!action.ok() || !game.IsLegal(*action)) {
      return absl::InternalError(
          absl::StrCat("GNU Go played \"", reply, "\", which is illegal here"));
    }
    known_ = game;
    known_.Apply(*action);
    return *action;
  }

  std::string Thinking(const games::Go& game) const override {
    return absl::StrCat("GNU Go says ", last_reply_);
  }

 private:
  GnuGoPlayer(const games::Go& start, std::unique_ptr<gtp::GtpClient> client)
      : empty_(start), known_(start), client_(std::move(client)) {}

  static bool SamePosition(const games::Go& a, const games::Go& b) {
    return a.NumMoves() == b.NumMoves() && a.BoardHash() == b.BoardHash() &&
           a.ConsecutivePasses() == b.ConsecutivePasses();
  }

  // Brings GNU Go to `game`: from known_ by one move, else from the empty board.
  absl::Status CatchUp(const games::Go& game) {
    std::vector<int> path;
    if (game.NumMoves() == known_.NumMoves() + 1) {  // the usual case; captures included
      known_.LegalActions(&legal_);
      for (int action : legal_) {
        games::Go next = known_;
        next.Apply(action);
        if (SamePosition(next, game)) {
          path.push_back(action);
          break;
        }
      }
    }
    if (path.empty() && !SamePosition(known_, game)) {
      ZF_RETURN_IF_ERROR(client_->Send("clear_board").status());
      known_ = empty_;
      int budget = kRebuildBudget;
      if (!FindPath(known_, game, game.NumMoves(), &path, &budget)) {
        return absl::FailedPreconditionError(
            absl::StrCat("gnugo: cannot rebuild the position after move ", game.NumMoves(),
                         " from the empty board by placing its stones"));
      }
    }
    for (int action : path) {
      const char* color = known_.ToPlay() == 0 ? "black" : "white";
      ZF_RETURN_IF_ERROR(
          client_->Send(absl::StrCat("play ", color, " ", gtp::VertexOf(known_, action))).status());
      known_.Apply(action);
    }
    return absl::OkStatus();
  }

  // Searches `plies` moves from `from` to `to` (same board, move number and passes in a row),
  // trying only passes and placements of stones `to` has, depth first.
  static bool FindPath(const games::Go& from, const games::Go& to, int plies,
                       std::vector<int>* path, int* budget) {
    if (SamePosition(from, to)) return true;
    if (plies <= 0 || from.NumMoves() >= to.NumMoves() || --*budget < 0) return false;
    int missing = 0;  // stones `to` has that `from` lacks
    for (int r = 0; r < from.Size(); ++r) {
      for (int c = 0; c < from.Size(); ++c) {
        const int want = to.StoneAt(r, c);
        const int have = from.StoneAt(r, c);
        if (have >= 0 && have != want) return false;  // a stone `to` does not have
        missing += (want >= 0 && have < 0) ? 1 : 0;
      }
    }
    if (missing > to.NumMoves() - from.NumMoves()) return false;
    std::vector<int> legal;
    from.LegalActions(&legal);
    for (int action : legal) {
      if (action != from.PassAction() &&
          to.StoneAt(action / from.Size(), action % from.Size()) != from.ToPlay()) {
        continue;
      }
      games::Go next = from;
      next.Apply(action);
      path->push_back(action);
      if (FindPath(next, to, plies - 1, path, budget)) return true;
      path->pop_back();
    }
    return false;
  }

  static constexpr int kRebuildBudget = 100000;  // positions visited per rebuild

  games::Go empty_;
  games::Go known_;  // the position GNU Go has
  std::unique_ptr<gtp::GtpClient> client_;
  std::vector<int> legal_;
  std::string last_reply_;
};

namespace internal {

// A net player's spec after "net:": the checkpoint, SIMS and the options.
struct NetPlayerSpec {
  absl::string_view checkpoint;
  absl::string_view simulations;
  std::optional<float> score_utility;  // ":score_utility=L", L in 0..1
  std::optional<float> lcb_stdevs;     // ":lcb=Z", Z in 0..10
};

// Splits "CHECKPOINT:SIMS[:key=value]..." (`rest`; CHECKPOINT may contain ':'): trailing
// segments with '=' are options, the segment before them SIMS.
inline absl::StatusOr<NetPlayerSpec> ParseNetPlayerSpec(absl::string_view spec,
                                                        absl::string_view rest) {
  NetPlayerSpec out;
  for (size_t last = rest.rfind(':'); last != absl::string_view::npos; last = rest.rfind(':')) {
    absl::string_view option = rest.substr(last + 1);
    if (!absl::StrContains(option, '=')) break;
    rest = rest.substr(0, last);
    const size_t eq = option.find('=');
    const absl::string_view key = option.substr(0, eq), value = option.substr(eq + 1);
    std::optional<float>* field = nullptr;
    float max = 0;
    if (key == "score_utility") {
      field = &out.score_utility;
      max = 1;
    } else if (key == "lcb") {
      field = &out.lcb_stdevs;
      max = 10;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("player \"", spec, "\": unknown option \"", option,
                       "\" (net players take score_utility=L and lcb=Z)"));
    }
    if (field->has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat("player \"", spec, "\": ", key, " is given twice"));
    }
    float x = 0;
    if (!absl::SimpleAtof(value, &x) || !(x >= 0.0f) || x > max) {
      return absl::InvalidArgumentError(absl::StrCat("player \"", spec, "\": ", key,
                                                     " must be a number in 0..", max, ", got \"",
                                                     value, "\""));
    }
    *field = x;
  }
  const size_t last = rest.rfind(':');
  if (last == absl::string_view::npos || last == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "player \"", spec, "\": expected net:CHECKPOINT:SIMS[:score_utility=L][:lcb=Z]"));
  }
  out.checkpoint = rest.substr(0, last);
  out.simulations = rest.substr(last + 1);
  return out;
}

// Whether `evaluator` gives scores (a network with the score head): one evaluation of `start`.
template <games::Game G>
absl::StatusOr<bool> GivesScores(search::Evaluator<G>& evaluator, const G& start) {
  std::vector<G> positions = {start};
  std::vector<float> policy(start.NumActions()), value(1), score(1);
  ZF_RETURN_IF_ERROR(evaluator.EvaluateWithScores(positions, policy, value, score));
  return std::isfinite(score[0]);
}

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
    "random, mcts:SIMS (random rollouts), uniform:SIMS, "
    "net:CHECKPOINT:SIMS[:score_utility=L][:lcb=Z], "
    "perfect (tictactoe), gnugo:LEVEL (go, LEVEL 0..10)";

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
  if (kind == "gnugo" && colon != absl::string_view::npos) {
    if constexpr (std::is_same_v<G, games::Go>) {
      int level = -1;
      if (!absl::SimpleAtoi(spec.substr(colon + 1), &level) || level < 0 || level > 10) {
        return absl::InvalidArgumentError(
            absl::StrCat("player \"", spec, "\": the level must be a number in 0..10"));
      }
      ZF_ASSIGN_OR_RETURN(std::unique_ptr<GnuGoPlayer> player, GnuGoPlayer::Create(start, level));
      return std::unique_ptr<Player<G>>(std::move(player));
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("player \"", spec, "\" is only available for go, not ", start.Name()));
    }
  }
  if (colon == absl::string_view::npos || (kind != "mcts" && kind != "uniform" && kind != "net")) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown player \"", spec, "\"; players: ", kPlayerSpecHelp));
  }
  std::unique_ptr<search::Evaluator<G>> evaluator;
  absl::string_view sims_text;
  int batch_size = 1;
  float score_utility = 0.0f, lcb_stdevs = 0.0f;
  if (kind == "net") {
    ZF_ASSIGN_OR_RETURN(const NetPlayerSpec net, ParseNetPlayerSpec(spec, spec.substr(colon + 1)));
    sims_text = net.simulations;
    score_utility = net.score_utility.value_or(0.0f);
    lcb_stdevs = net.lcb_stdevs.value_or(0.0f);
    ZF_RETURN_IF_ERROR(internal::ParseSimulations(spec, sims_text).status());
    ZF_ASSIGN_OR_RETURN(evaluator, MakeNetworkEvaluator<G>(std::string(net.checkpoint), start));
    batch_size = 8;  // a few leaves per forward pass: same search, fewer network calls
    if (score_utility > 0.0f) {
      ZF_ASSIGN_OR_RETURN(bool gives_scores, GivesScores(*evaluator, start));
      if (!gives_scores) {
        return absl::InvalidArgumentError(absl::StrCat(
            "player \"", spec,
            "\": score_utility needs a network with the score head; this "
            "checkpoint has none (trained with --noaux_heads, or a game without one)"));
      }
    }
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
                      MctsPlayer<G>::Create(start, sims, std::move(evaluator), seed, batch_size,
                                            score_utility, lcb_stdevs));
  return std::unique_ptr<Player<G>>(std::move(player));
}
}  // namespace internal

}  // namespace zf::cli
