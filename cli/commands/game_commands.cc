// `zf perft`, `zf position` and `zf random`: the game rules from the command line.
#include "cli/commands/game_commands.h"

#include <cstdint>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cli/common_flags.h"
#include "cli/move_list.h"
#include "cli/sgf_files.h"
#include "common/json.h"
#include "common/status_macros.h"
#include "games/game.h"
#include "games/perft.h"
#include "games/registry.h"

ABSL_FLAG(int, depth, 4, "perft: plies to count, 0..20");
ABSL_FLAG(std::string, moves, "", "comma-separated moves from the start, e.g. 3,3,4");
ABSL_FLAG(int, delay_ms, 0, "random: pause after each move, in milliseconds (0..10000)");

namespace zf::cli {
namespace {

constexpr int kMaxPerftDepth = 20;

absl::Status NoPositional(const std::vector<std::string>& args) {
  if (args.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("unexpected argument \"", args[0], "\""));
}

template <games::Game G>
std::string ReturnsJson(const G& game) {
  if (!game.IsTerminal()) return "null";
  games::Returns r = game.Returns();
  return absl::StrCat("[", static_cast<int>(r[0]), ", ", static_cast<int>(r[1]), "]");
}

absl::Status RunPerft(const std::vector<std::string>& args) {
  ZF_RETURN_IF_ERROR(NoPositional(args));
  ZF_ASSIGN_OR_RETURN(games::GameConfig config, games::ParseGameName(absl::GetFlag(FLAGS_game)));
  int depth = absl::GetFlag(FLAGS_depth);
  if (depth < 0 || depth > kMaxPerftDepth) {
    return absl::InvalidArgumentError(
        absl::StrCat("--depth must be in 0..", kMaxPerftDepth, ", got ", depth));
  }
  return games::VisitGame(config, [&](auto game) -> absl::Status {
    absl::Time start = absl::Now();
    std::vector<uint64_t> counts = games::Perft(game, depth);
    double seconds = absl::ToDoubleSeconds(absl::Now() - start);
    if (absl::GetFlag(FLAGS_json)) {
      std::cout << "{\"game\": " << JsonString(game.Name()) << ", \"counts\": ["
                << absl::StrJoin(counts, ", ") << "]}\n";
    } else {
      std::cout << "perft " << game.Name() << "\n";
      for (size_t d = 0; d < counts.size(); ++d)
        std::cout << "  depth " << d << ": " << counts[d] << "\n";
      std::cout << "  (" << absl::StrFormat("%.3f", seconds) << " s)\n";
    }
    return absl::OkStatus();
  });
}

absl::Status RunPosition(const std::vector<std::string>& args) {
  ZF_RETURN_IF_ERROR(NoPositional(args));
  const auto print = [&](const auto& game) -> absl::Status {
    std::vector<int> legal;
    if (!game.IsTerminal()) game.LegalActions(&legal);
    if (absl::GetFlag(FLAGS_json)) {
      std::cout << "{\"to_play\": " << game.ToPlay()
                << ", \"terminal\": " << (game.IsTerminal() ? "true" : "false")
                << ", \"returns\": " << ReturnsJson(game) << ", \"legal\": ["
                << absl::StrJoin(legal, ", ") << "]}\n";
      return absl::OkStatus();
    }
    std::cout << game.ToString() << "\n";
    if (game.IsTerminal()) {
      games::Returns r = game.Returns();
      std::cout << "game over: "
                << (r[0] > 0   ? "player 0 wins"
                    : r[0] < 0 ? "player 1 wins"
                               : "draw")
                << "\n";
    } else {
      std::vector<std::string> names;
      for (int a : legal) {
        std::string text = game.ActionToString(a);
        std::string number = absl::StrCat(a);
        names.push_back(text == number ? text : absl::StrCat(text, "=", number));
      }
      std::cout << "player " << game.ToPlay() << " to play; legal: " << absl::StrJoin(names, " ")
                << "\n";
    }
    return absl::OkStatus();
  };
  const std::string sgf_path = absl::GetFlag(FLAGS_sgf);
  if (!sgf_path.empty()) {
    if (!absl::GetFlag(FLAGS_moves).empty()) {
      return absl::InvalidArgumentError("--sgf and --moves both name a position: give one");
    }
    ZF_ASSIGN_OR_RETURN(SgfPosition position, ReadSgfPosition(sgf_path, absl::GetFlag(FLAGS_move)));
    if (!absl::GetFlag(FLAGS_json)) {
      std::cout << position.position.Name() << " after " << position.moves_played << " of "
                << position.game.moves.size() << " moves of " << sgf_path << "\n";
    }
    return print(position.position);
  }
  ZF_ASSIGN_OR_RETURN(games::GameConfig config, games::ParseGameName(absl::GetFlag(FLAGS_game)));
  return games::VisitGame(config, [&](auto game) -> absl::Status {
    ZF_RETURN_IF_ERROR(ApplyMoveList(game, absl::GetFlag(FLAGS_moves)));
    return print(game);
  });
}

absl::Status RunRandom(const std::vector<std::string>& args) {
  ZF_RETURN_IF_ERROR(NoPositional(args));
  ZF_ASSIGN_OR_RETURN(games::GameConfig config, games::ParseGameName(absl::GetFlag(FLAGS_game)));
  int delay_ms = absl::GetFlag(FLAGS_delay_ms);
  if (delay_ms < 0 || delay_ms > 10000) {
    return absl::InvalidArgumentError(
        absl::StrCat("--delay_ms must be in 0..10000, got ", delay_ms));
  }
  uint64_t seed = absl::GetFlag(FLAGS_seed);
  if (seed == 0) seed = static_cast<uint64_t>(absl::ToUnixNanos(absl::Now()));
  std::mt19937_64 rng(seed);
  return games::VisitGame(config, [&](auto game) -> absl::Status {
    std::cout << "a random game of " << game.Name() << " (seed " << seed << ")\n\n"
              << game.ToString() << "\n";
    std::vector<int> legal;
    std::vector<std::string> played;
    while (!game.IsTerminal()) {
      game.LegalActions(&legal);
      int action = legal[std::uniform_int_distribution<size_t>(0, legal.size() - 1)(rng)];
      int mover = game.ToPlay();
      played.push_back(game.ActionToString(action));
      game.Apply(action);
      std::cout << "move " << played.size() << ": player " << mover << " plays " << played.back()
                << "\n"
                << game.ToString() << "\n";
      std::cout.flush();
      if (delay_ms > 0) absl::SleepFor(absl::Milliseconds(delay_ms));
    }
    games::Returns r = game.Returns();
    std::cout << "result: "
              << (r[0] > 0   ? "player 0 wins"
                  : r[0] < 0 ? "player 1 wins"
                             : "draw")
              << " after " << played.size() << " moves\n";
    return absl::OkStatus();
  });
}

}  // namespace

std::vector<Command> GameCommands() {
  return {
      {"perft",
       "count move sequences of exactly d plies from the start (terminal positions are not "
       "expanded)",
       "zf perft --game G --depth D [--json]",
       {"game", "depth", "json"},
       RunPerft},
      {"position",
       "apply moves from the start and print the position, its result and legal moves",
       "zf position (--game G --moves a,b,c | --sgf FILE [--move N]) [--json]",
       {"game", "moves", "sgf", "move", "json"},
       RunPosition},
      {"random",
       "play one game of uniformly random moves, printing every position",
       "zf random --game G [--seed S] [--delay_ms MS]",
       {"game", "seed", "delay_ms"},
       RunRandom},
  };
}

}  // namespace zf::cli
