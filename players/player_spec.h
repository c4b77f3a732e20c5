// Player specs: the strings `zf match`, `zf play`, `zf gtp`, `zf analyze` and the evaluator build
// players from (MakePlayer):
//
//   random              uniformly random legal moves
//   mcts:SIMS           MCTS with SIMS simulations, random-rollout evaluator
//   uniform:SIMS        MCTS with SIMS simulations, uniform priors and value 0
//   net:CHECKPOINT:SIMS MCTS with SIMS simulations over a network checkpoint (LocalEvaluator,
//                       CPU, one LibTorch thread); CHECKPOINT may itself contain ':'. Only in
//                       zf-torch (players/network_evaluator.h): `zf` hands such commands over to it
//   net:CHECKPOINT:SIMS:score_utility=L
//                       the same search with score utility L (0..1, search::MctsOptions;
//                       `zf run --score_utility`): the checkpoint needs the score head
//   net:CHECKPOINT:SIMS:lcb=Z
//                       plays the root child with the best lower confidence bound, Z standard
//                       errors (0..10; search::MctsOptions::lcb_stdevs), instead of the most
//                       visited.
//   net:CHECKPOINT:SIMS:c_puct=C:fpu=F
//                       the search's exploration constant C (0.01..100, default 1.5) and first
//                       play urgency reduction F (-2..2, default 0.25; search::MctsOptions), to
//                       tune a search against a fixed network (`zf accuracy`).
//   net:CHECKPOINT:SIMS:leaves=B
//                       B leaves (1..64, default 8) collected under virtual loss for each
//                       network call: fewer, larger calls, a slightly different search.
//                       Options follow SIMS as ":key=value", in any order (no ',':
//                       --eval_vs and --anchors split lists of specs on it)
//   perfect             tic-tac-toe and connect4: an exact solver picking at random among the
//                       moves that keep the position's value (Connect Four: the quickest win or
//                       the slowest loss; a position its node budget cannot solve (about four
//                       minutes here; from ply 8 on a position takes about a second, at ply 4
//                       ten seconds or more) is an error (ResourceExhausted), never a guess)
//   gnugo:LEVEL         Go only: GNU Go (LEVEL 0..10) run as a GTP subprocess with the same
//                       rules (--chinese-rules --positional-superko --forbid-suicide) and the
//                       game's komi and board size, and --capture-all-dead (it removes dead
//                       stones before passing, as area scoring of the board as it stands
//                       needs); it may resign (kResignAction). The same as gtp:COMMAND with
//                       GNU Go's command line
//   gtp:COMMAND         Go only: any GTP engine, COMMAND its command line split at spaces (no
//                       shell quoting; quote the whole spec for the shell), its first word a
//                       path or a name on PATH; its own flags set its rules and strength
//                       (players/gtp_player.h). No ',' inside (lists of specs split on it)
//
// SIMS is 1..1,000,000. Thread-compatible: one player per thread.
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "games/connect4/connect4.h"
#include "games/game.h"
#include "games/go/go.h"
#include "games/tictactoe/tictactoe.h"
#include "players/gtp_player.h"
#include "players/network_evaluator.h"
#include "players/player.h"
#include "search/evaluator.h"
#include "search/random_rollout_evaluator.h"
#include "search/uniform_evaluator.h"

namespace zf::players {

namespace internal {

// A net player's spec after "net:": the checkpoint, SIMS and the options.
struct NetPlayerSpec {
  absl::string_view checkpoint;
  absl::string_view simulations;
  std::optional<float> score_utility;  // ":score_utility=L", L in 0..1
  std::optional<float> lcb_stdevs;     // ":lcb=Z", Z in 0..10
  std::optional<float> c_puct;         // ":c_puct=C", C in 0.01..100
  std::optional<float> fpu_reduction;  // ":fpu=F", F in -2..2
  std::optional<float> leaves;         // ":leaves=B", B in 1..64 (whole): leaves a network call

  // The search options these give (search::MctsOptions' defaults where not given).
  search::MctsOptions SearchOptions() const {
    search::MctsOptions options;
    options.score_utility = score_utility.value_or(options.score_utility);
    options.lcb_stdevs = lcb_stdevs.value_or(options.lcb_stdevs);
    options.c_puct = c_puct.value_or(options.c_puct);
    options.fpu_reduction = fpu_reduction.value_or(options.fpu_reduction);
    return options;
  }
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
    struct Option {
      absl::string_view key;
      std::optional<float> NetPlayerSpec::*field;
      float min, max;
      bool whole = false;
    };
    static constexpr Option kOptions[] = {
        {"score_utility", &NetPlayerSpec::score_utility, 0.0f, 1.0f},
        {"lcb", &NetPlayerSpec::lcb_stdevs, 0.0f, 10.0f},
        {"c_puct", &NetPlayerSpec::c_puct, 0.01f, 100.0f},
        {"fpu", &NetPlayerSpec::fpu_reduction, -2.0f, 2.0f},
        {"leaves", &NetPlayerSpec::leaves, 1.0f, 64.0f, /*whole=*/true},
    };
    const Option* known = nullptr;
    for (const Option& o : kOptions) {
      if (o.key == key) known = &o;
    }
    if (known == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "player \"", spec, "\": unknown option \"", option,
          "\" (net players take score_utility=L, lcb=Z, c_puct=C, fpu=F and leaves=B)"));
    }
    std::optional<float>& field = out.*(known->field);
    if (field.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat("player \"", spec, "\": ", key, " is given twice"));
    }
    float x = 0;
    if (!absl::SimpleAtof(value, &x) || !(x >= known->min) || x > known->max ||
        (known->whole && x != std::floor(x))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "player \"", spec, "\": ", key, " must be a ", known->whole ? "whole number" : "number",
          " in ", known->min, "..", known->max, ", got \"", value, "\""));
    }
    field = x;
  }
  const size_t last = rest.rfind(':');
  if (last == absl::string_view::npos || last == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "player \"", spec,
        "\": expected net:CHECKPOINT:SIMS[:key=value]... (keys: score_utility, lcb, c_puct, "
        "fpu, leaves)"));
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
    "net:CHECKPOINT:SIMS[:score_utility=L][:lcb=Z][:c_puct=C][:fpu=F][:leaves=B], "
    "perfect (tictactoe, connect4), gnugo:LEVEL (go, LEVEL 0..10), \"gtp:COMMAND\" (go: any GTP "
    "engine)";

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
    } else if constexpr (std::is_same_v<G, games::ConnectFour>) {
      return std::unique_ptr<Player<G>>(new PerfectPlayer<G, games::ConnectFourSolver>(seed));
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "player \"perfect\" is only available for tictactoe and connect4, not ", start.Name()));
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
      ZF_ASSIGN_OR_RETURN(std::unique_ptr<GtpPlayer> player, GtpPlayer::CreateGnuGo(start, level));
      return std::unique_ptr<Player<G>>(std::move(player));
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("player \"", spec, "\" is only available for go, not ", start.Name()));
    }
  }
  if (kind == "gtp" && colon != absl::string_view::npos) {
    if constexpr (std::is_same_v<G, games::Go>) {
      std::vector<std::string> argv =
          absl::StrSplit(spec.substr(colon + 1), ' ', absl::SkipWhitespace());
      if (argv.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("player \"", spec, "\": expected gtp:COMMAND, the engine's command line"));
      }
      ZF_ASSIGN_OR_RETURN(std::unique_ptr<GtpPlayer> player,
                          GtpPlayer::Create(start, std::move(argv), std::string(spec)));
      return std::unique_ptr<Player<G>>(std::move(player));
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("player \"", spec, "\": GTP engines play go only, not ", start.Name()));
    }
  }
  if (colon == absl::string_view::npos || (kind != "mcts" && kind != "uniform" && kind != "net")) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown player \"", spec, "\"; players: ", kPlayerSpecHelp));
  }
  std::unique_ptr<search::Evaluator<G>> evaluator;
  absl::string_view sims_text;
  int batch_size = 1;
  search::MctsOptions search_options;
  if (kind == "net") {
    ZF_ASSIGN_OR_RETURN(const NetPlayerSpec net, ParseNetPlayerSpec(spec, spec.substr(colon + 1)));
    sims_text = net.simulations;
    search_options = net.SearchOptions();
    ZF_RETURN_IF_ERROR(internal::ParseSimulations(spec, sims_text).status());
    ZF_ASSIGN_OR_RETURN(evaluator, MakeNetworkEvaluator<G>(std::string(net.checkpoint), start));
    // A few leaves per forward pass, fewer network calls; virtual loss keeps them apart.
    batch_size = static_cast<int>(net.leaves.value_or(8.0f));
    if (search_options.score_utility > 0.0f) {
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
  ZF_ASSIGN_OR_RETURN(
      std::unique_ptr<MctsPlayer<G>> player,
      MctsPlayer<G>::Create(start, sims, std::move(evaluator), seed, batch_size, search_options));
  return std::unique_ptr<Player<G>>(std::move(player));
}
}  // namespace internal

}  // namespace zf::players
