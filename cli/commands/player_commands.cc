// `zf match`, `zf play` and `zf accuracy`.
#include "cli/commands/player_commands.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cli/common_flags.h"
#include "cli/sgf_files.h"
#include "common/json.h"
#include "common/status_macros.h"
#include "evaluator/accuracy.h"
#include "games/connect4/solver.h"
#include "games/registry.h"
#include "players/player_spec.h"

ABSL_FLAG(std::string, p1, "",
          "match: the first player's spec (random, mcts:SIMS, uniform:SIMS, "
          "net:CHECKPOINT:SIMS[:score_utility=L][:lcb=Z][:c_puct=C][:fpu=F][:leaves=B], perfect, "
          "gnugo:LEVEL, gtp:COMMAND)");
ABSL_FLAG(std::string, p2, "", "match: the second player's spec");
ABSL_FLAG(int, games, 10, "match: number of games, colours alternating (1..100000)");
ABSL_FLAG(bool, verbose, false, "match: print every move, the board and the players' thinking");
ABSL_FLAG(std::string, vs, "mcts:1000", "play: the engine's player spec");
ABSL_FLAG(bool, engine_first, false, "play: the engine moves first");
ABSL_FLAG(std::string, positions, "",
          "accuracy: a position set file (evaluator/accuracy.h; default: the standard connect4 "
          "set compiled in); accuracy make: the file to write");
ABSL_FLAG(int, count, 400, "accuracy make: positions to keep (1..100000)");
ABSL_FLAG(int, min_ply, 8, "accuracy make: the fewest plies on the board of a kept position");
ABSL_FLAG(int, per_game, 3, "accuracy make: at most this many positions from one game");
ABSL_DECLARE_FLAG(std::string, player);

namespace zf::cli {
namespace {

uint64_t SeedFromFlag() {
  uint64_t seed = absl::GetFlag(FLAGS_seed);
  return seed != 0 ? seed : static_cast<uint64_t>(absl::ToUnixNanos(absl::Now()));
}

absl::Status NoArgs(const std::vector<std::string>& args) {
  if (args.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("unexpected argument \"", args[0], "\""));
}

// A whole text file; InvalidArgument naming it when it cannot be read (it is user input).
absl::StatusOr<std::string> ReadTextFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("cannot read ", path));
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

absl::Status WriteTextFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  if (!out.flush()) return absl::InvalidArgumentError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

std::string ResultText(games::Returns r, int player) {
  return r[player] > 0 ? "win" : r[player] < 0 ? "loss" : "draw";
}

absl::Status RunMatch(const std::vector<std::string>& args) {
  ZF_RETURN_IF_ERROR(NoArgs(args));
  ZF_ASSIGN_OR_RETURN(games::GameConfig config, games::ParseGameName(absl::GetFlag(FLAGS_game)));
  std::string p1_spec = absl::GetFlag(FLAGS_p1), p2_spec = absl::GetFlag(FLAGS_p2);
  if (p1_spec.empty() || p2_spec.empty()) {
    return absl::InvalidArgumentError(
        "--p1 and --p2 are required (players: " + std::string(players::kPlayerSpecHelp) + ")");
  }
  int num_games = absl::GetFlag(FLAGS_games);
  if (num_games < 1 || num_games > 100000) {
    return absl::InvalidArgumentError(
        absl::StrCat("--games must be in 1..100000, got ", num_games));
  }
  const uint64_t seed = SeedFromFlag();
  ZF_ASSIGN_OR_RETURN(const int opening_plies,
                      OpeningMovesFromFlag(players::DefaultOpeningMoves(config.name)));
  const bool json = absl::GetFlag(FLAGS_json), verbose = absl::GetFlag(FLAGS_verbose);
  const std::string sgf_dir = absl::GetFlag(FLAGS_sgf);
  if (!sgf_dir.empty()) {
    if (!config.Is<games::Go>()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--sgf writes Go games; ", config.name, " is not Go"));
    }
    ZF_RETURN_IF_ERROR(MakeSgfDir(sgf_dir));
  }
  return games::VisitGame(config, [&](const auto& start) -> absl::Status {
    using G = std::decay_t<decltype(start)>;
    ZF_ASSIGN_OR_RETURN(std::unique_ptr<players::Player<G>> p1,
                        players::MakePlayer<G>(p1_spec, start, seed));
    ZF_ASSIGN_OR_RETURN(std::unique_ptr<players::Player<G>> p2,
                        players::MakePlayer<G>(p2_spec, start, seed + 1));
    int wins = 0, draws = 0, losses = 0;
    absl::Time t0 = absl::Now();
    for (int i = 0; i < num_games; ++i) {
      // p1 plays first in even games, second in odd ones.
      const int p1_seat = i % 2;
      players::Player<G>* seats[2] = {p1_seat == 0 ? p1.get() : p2.get(),
                                      p1_seat == 0 ? p2.get() : p1.get()};
      G game = start;
      std::vector<std::string> moves;
      std::vector<int> actions;           // for --sgf
      std::vector<std::string> comments;  // for --sgf: each move's search
      // Games 2k and 2k+1 open with the same random plies, colours swapped: deterministic players
      // still play varied games, and no opening favours either player.
      std::mt19937_64 opening_rng(seed ^
                                  (0x9e3779b97f4a7c15ull * static_cast<uint64_t>(i / 2 + 1)));
      std::vector<int> opening;
      {
        G before = game;
        players::PlayRandomOpening(game, opening_plies, opening_rng, &opening);
        for (int action : opening) {
          moves.push_back(before.ActionToString(action));
          actions.push_back(action);
          comments.push_back("random opening move");
          before.Apply(action);
        }
      }
      if (verbose && !json && !opening.empty()) {
        std::cout << "opening (random): " << absl::StrJoin(moves, ",") << "\n"
                  << game.ToString() << std::endl;
      }
      int resigned = -1;  // the seat that resigned, if one did
      while (!game.IsTerminal()) {
        ZF_ASSIGN_OR_RETURN(int action, seats[game.ToPlay()]->ChooseAction(game));
        if (action == players::kResignAction) {
          resigned = game.ToPlay();
          moves.push_back("resign");
          break;
        }
        if (!game.IsLegal(action)) {
          return absl::InternalError(absl::StrCat("player chose illegal action ", action));
        }
        moves.push_back(game.ActionToString(action));
        actions.push_back(action);
        if (!sgf_dir.empty())
          comments.push_back(players::SearchSummary(game, *seats[game.ToPlay()]));
        const int mover = game.ToPlay();
        if (verbose && !json) {
          std::cout << "move " << moves.size() << ": " << (mover == p1_seat ? "p1 " : "p2 ")
                    << (mover == p1_seat ? p1_spec : p2_spec) << " plays " << moves.back()
                    << "\n  (" << seats[mover]->Thinking(game) << ")\n";
        }
        game.Apply(action);
        if (verbose && !json) std::cout << game.ToString() << std::endl;
      }
      games::Returns r = {0.0f, 0.0f};
      if (resigned >= 0) {
        r[resigned] = -1.0f;
        r[1 - resigned] = 1.0f;
      } else {
        r = game.Returns();
      }
      float p1_return = r[p1_seat];
      if (p1_return > 0)
        ++wins;
      else if (p1_return < 0)
        ++losses;
      else
        ++draws;
      if constexpr (std::is_same_v<G, games::Go>) {
        if (!sgf_dir.empty()) {
          const std::string p1_name = absl::StrCat("p1 ", p1_spec),
                            p2_name = absl::StrCat("p2 ", p2_spec);
          sgf::GoGameRecord record{
              .start = start,
              .moves = actions,
              .comments = comments,
              .black = p1_seat == 0 ? p1_name : p2_name,
              .white = p1_seat == 0 ? p2_name : p1_name,
              .result = sgf::GoResult(game, resigned >= 0, resigned, false),
              .date = absl::FormatTime("%Y-%m-%d", absl::Now(), absl::UTCTimeZone()),
              .name = absl::StrCat("zf match game ", i + 1, " of ", num_games)};
          ZF_RETURN_IF_ERROR(
              sgf::WriteGoGameFile(absl::StrFormat("%s/match-%06d.sgf", sgf_dir, i + 1), record));
        }
      }
      if (!json) {
        std::cout << absl::StrFormat("game %d: p1 plays %s, %s for p1 in %d moves", i + 1,
                                     p1_seat == 0 ? "first" : "second", ResultText(r, p1_seat),
                                     moves.size());
        std::cout << ": " << absl::StrJoin(moves, ",");
        std::cout << std::endl;
      }
    }
    double seconds = absl::ToDoubleSeconds(absl::Now() - t0);
    if (json) {
      std::cout << "{\"wins\": " << wins << ", \"draws\": " << draws << ", \"losses\": " << losses
                << "}\n";
    } else {
      std::cout << absl::StrFormat(
          "%s: p1 %s vs p2 %s over %d games: %d wins, %d draws, %d losses for p1 "
          "(score %.1f%%) in %.1f s (%d random opening plies a game, each opening played with "
          "both colours)\n",
          start.Name(), p1_spec, p2_spec, num_games, wins, draws, losses,
          100.0 * (wins + 0.5 * draws) / num_games, seconds, opening_plies);
    }
    return absl::OkStatus();
  });
}

absl::Status RunPlay(const std::vector<std::string>& args) {
  ZF_RETURN_IF_ERROR(NoArgs(args));
  ZF_ASSIGN_OR_RETURN(games::GameConfig config, games::ParseGameName(absl::GetFlag(FLAGS_game)));
  const std::string spec = absl::GetFlag(FLAGS_vs);
  const bool engine_first = absl::GetFlag(FLAGS_engine_first);
  const uint64_t seed = SeedFromFlag();
  return games::VisitGame(config, [&](const auto& start) -> absl::Status {
    using G = std::decay_t<decltype(start)>;
    ZF_ASSIGN_OR_RETURN(std::unique_ptr<players::Player<G>> engine,
                        players::MakePlayer<G>(spec, start, seed));
    const int engine_seat = engine_first ? 0 : 1;
    G game = start;
    std::cout << "You play " << (engine_seat == 0 ? "second" : "first") << " against " << spec
              << ". Type a move (number or text form), 'legal' to list moves, 'quit' to stop.\n\n"
              << game.ToString() << "\n";
    std::vector<int> legal;
    while (!game.IsTerminal()) {
      int action = -1;
      if (game.ToPlay() == engine_seat) {
        ZF_ASSIGN_OR_RETURN(action, engine->ChooseAction(game));
        if (action == players::kResignAction) {
          std::cout << "engine resigns. You win.\n";
          return absl::OkStatus();
        }
        std::string thinking = engine->Thinking(game);
        std::cout << "engine plays " << game.ActionToString(action) << "\n";
        if (!thinking.empty()) std::cout << "  (" << thinking << ")\n";
      } else {
        std::cout << "your move> " << std::flush;
        std::string line;
        if (!std::getline(std::cin, line)) {
          std::cout << "\n(end of input: game abandoned)\n";
          return absl::OkStatus();
        }
        std::string text(absl::StripAsciiWhitespace(line));
        if (text.empty()) continue;
        if (text == "quit" || text == "q") return absl::OkStatus();
        if (text == "legal") {
          game.LegalActions(&legal);
          std::vector<std::string> names;
          for (int a : legal) names.push_back(game.ActionToString(a));
          std::cout << "legal moves: " << absl::StrJoin(names, " ") << "\n";
          continue;
        }
        absl::StatusOr<int> parsed = game.ParseAction(text);
        if (!parsed.ok()) {
          std::cout << "not a move: " << parsed.status().message() << "\n";
          continue;
        }
        if (!game.IsLegal(*parsed)) {
          std::cout << "illegal move " << text << " (type 'legal' to list moves)\n";
          continue;
        }
        action = *parsed;
      }
      game.Apply(action);
      std::cout << "\n" << game.ToString() << "\n";
    }
    games::Returns r = game.Returns();
    int human_seat = 1 - engine_seat;
    std::cout << (r[human_seat] > 0   ? "You win."
                  : r[human_seat] < 0 ? "The engine wins."
                                      : "Draw.")
              << "\n";
    return absl::OkStatus();
  });
}

absl::Status RunAccuracyMake(uint64_t seed) {
  const std::string out = absl::GetFlag(FLAGS_positions);
  const std::string p1_spec = absl::GetFlag(FLAGS_p1), p2_spec = absl::GetFlag(FLAGS_p2);
  if (out.empty() || p1_spec.empty() || p2_spec.empty()) {
    return absl::InvalidArgumentError("accuracy make needs --p1, --p2 and --positions (the file)");
  }
  evaluator::MakePositionsOptions options;
  options.positions = absl::GetFlag(FLAGS_count);
  options.min_ply = absl::GetFlag(FLAGS_min_ply);
  options.per_game = absl::GetFlag(FLAGS_per_game);
  options.seed = seed;
  ZF_ASSIGN_OR_RETURN(options.opening_moves,
                      OpeningMovesFromFlag(players::DefaultOpeningMoves("connect4")));
  ZF_RETURN_IF_ERROR(options.Validate());
  const games::ConnectFour start;
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<players::Player<games::ConnectFour>> p1,
                      players::MakePlayer<games::ConnectFour>(p1_spec, start, seed));
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<players::Player<games::ConnectFour>> p2,
                      players::MakePlayer<games::ConnectFour>(p2_spec, start, seed + 1));
  games::ConnectFourSolver solver;
  const absl::Time t0 = absl::Now();
  ZF_ASSIGN_OR_RETURN(std::vector<evaluator::AccuracyPosition> positions,
                      evaluator::MakeConnectFourAccuracyPositions(*p1, *p2, solver, options));
  const std::string text = evaluator::FormatAccuracyPositions(
      positions,
      {"zerofleet accuracy positions (evaluator/accuracy.h): connect4",
       absl::StrFormat("made by: zf accuracy make --p1 %s --p2 %s --count %d --min_ply %d "
                       "--per_game %d --opening_moves %d --seed %d",
                       p1_spec, p2_spec, options.positions, options.min_ply, options.per_game,
                       options.opening_moves, seed),
       "MOVES (columns from the empty board) OUTCOMES (columns 0..6 for the player to move: W "
       "win, D draw, L loss, - full)"});
  ZF_RETURN_IF_ERROR(WriteTextFile(out, text));
  std::cout << absl::StrFormat("%d positions written to %s in %.1f s (solver: %d positions)\n",
                               positions.size(), out, absl::ToDoubleSeconds(absl::Now() - t0),
                               solver.nodes());
  return absl::OkStatus();
}

absl::Status RunAccuracy(const std::vector<std::string>& args) {
  const uint64_t seed = SeedFromFlag();
  if (args.size() == 1 && args[0] == "make") return RunAccuracyMake(seed);
  ZF_RETURN_IF_ERROR(NoArgs(args));
  ZF_ASSIGN_OR_RETURN(games::GameConfig config, games::ParseGameName(absl::GetFlag(FLAGS_game)));
  if (config.name != "connect4") {
    return absl::InvalidArgumentError(absl::StrCat(
        "accuracy against perfect play needs an exact solver: only connect4 has one, not ",
        config.name));
  }
  const std::string spec = absl::GetFlag(FLAGS_player);
  std::vector<evaluator::AccuracyPosition> positions;
  std::string source = "the standard set";
  if (const std::string file = absl::GetFlag(FLAGS_positions); !file.empty()) {
    ZF_ASSIGN_OR_RETURN(const std::string text, ReadTextFile(file));
    ZF_ASSIGN_OR_RETURN(positions,
                        evaluator::ParseAccuracyPositions(text, games::ConnectFour::kColumns));
    source = file;
  } else {
    positions = evaluator::ConnectFourAccuracyPositions();
  }
  const games::ConnectFour start;
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<players::Player<games::ConnectFour>> player,
                      players::MakePlayer<games::ConnectFour>(spec, start, seed));
  ZF_ASSIGN_OR_RETURN(const evaluator::AccuracyResult r,
                      evaluator::MeasureAccuracy(*player, start, positions));
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << evaluator::AccuracyJson(
                     r,
                     absl::StrCat("\"game\": \"connect4\", \"player\": ", JsonString(spec), ", "))
              << "\n";
  } else {
    std::cout << absl::StrFormat("connect4: %s keeps the best outcome in %s (%s; %.1f s)\n", spec,
                                 evaluator::AccuracyText(r), source, r.seconds);
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<Command> PlayerCommands() {
  return {
      {"match",
       "play N games between two players, colours alternating; prints p1's wins/draws/losses",
       "zf match --game G --p1 SPEC --p2 SPEC --games N [--opening_moves N] [--sgf DIR (go)] "
       "[--json] [--seed S] [--verbose]",
       {"game", "p1", "p2", "games", "opening_moves", "sgf", "json", "seed", "verbose"},
       RunMatch,
       [](const std::vector<std::string>&) {
         return players::IsNetworkPlayerSpec(absl::GetFlag(FLAGS_p1)) ||
                players::IsNetworkPlayerSpec(absl::GetFlag(FLAGS_p2));
       }},
      {"play",
       "play against an engine in the terminal, with its thinking shown",
       "zf play --game G --vs SPEC [--engine_first] [--seed S]",
       {"game", "vs", "engine_first", "seed"},
       RunPlay,
       [](const std::vector<std::string>&) {
         return players::IsNetworkPlayerSpec(absl::GetFlag(FLAGS_vs));
       }},
      {"accuracy",
       "accuracy against perfect play: the share of decisive positions (from real games) where "
       "a player keeps the best outcome, with its 95% interval (connect4); `make` draws a set",
       "zf accuracy --game connect4 --player SPEC [--positions FILE] [--json] [--seed S]\n"
       "       zf accuracy make --p1 SPEC --p2 SPEC --positions FILE [--count N] [--min_ply P] "
       "[--per_game K] [--opening_moves N] [--seed S]",
       {"game", "player", "positions", "json", "seed", "p1", "p2", "count", "min_ply", "per_game",
        "opening_moves"},
       RunAccuracy,
       [](const std::vector<std::string>&) {
         return players::IsNetworkPlayerSpec(absl::GetFlag(FLAGS_player)) ||
                players::IsNetworkPlayerSpec(absl::GetFlag(FLAGS_p1)) ||
                players::IsNetworkPlayerSpec(absl::GetFlag(FLAGS_p2));
       }},
  };
}

}  // namespace zf::cli
