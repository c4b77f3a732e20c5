// `zf gtp` and `zf analyze`.
#include "cli/commands/gtp_commands.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cli/common_flags.h"
#include "cli/gtp/gtp_engine.h"
#include "cli/move_list.h"
#include "cli/sgf_files.h"
#include "common/json.h"
#include "common/status_macros.h"
#include "games/registry.h"
#include "gtp/vertex.h"
#include "players/player_spec.h"

ABSL_FLAG(std::string, player, "mcts:800",
          "gtp, analyze, accuracy: the player's spec (random, mcts:SIMS, uniform:SIMS, "
          "net:CHECKPOINT:SIMS[:score_utility=L][:lcb=Z][:c_puct=C][:fpu=F][:leaves=B], perfect, "
          "gnugo:LEVEL, gtp:COMMAND)");
// Defined in game_commands.cc (`zf position`, `zf perft`).
ABSL_DECLARE_FLAG(std::string, moves);

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

// Lines of standard input read with read(2), so that a live analysis can ask whether the next
// command has arrived (poll) without a stdio buffer hiding it.
class StdinLines {
 public:
  // The next line (without its newline); false at the end of the input.
  bool Next(std::string* line) {
    while (true) {
      const size_t newline = buffer_.find('\n');
      if (newline != std::string::npos) {
        *line = buffer_.substr(0, newline);
        buffer_.erase(0, newline + 1);
        return true;
      }
      if (eof_) {
        if (buffer_.empty()) return false;
        *line = std::move(buffer_);
        buffer_.clear();
        return true;
      }
      Fill(-1);
    }
  }
  // Whether input (a line, or the end) is waiting, after waiting up to `timeout`.
  bool Waiting(absl::Duration timeout) {
    if (eof_ || buffer_.find('\n') != std::string::npos) return true;
    Fill(static_cast<int>(absl::ToInt64Milliseconds(timeout)));
    return eof_ || buffer_.find('\n') != std::string::npos;
  }

 private:
  // Reads what is there, waiting up to timeout_ms (-1: until something comes).
  void Fill(int timeout_ms) {
    pollfd fd{.fd = 0, .events = POLLIN, .revents = 0};
    const int ready = ::poll(&fd, 1, timeout_ms);
    if (ready < 0 && errno == EINTR) return;
    if (ready <= 0) {
      if (ready < 0) eof_ = true;
      return;
    }
    char chunk[4096];
    const ssize_t n = ::read(0, chunk, sizeof(chunk));
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
    if (n <= 0) {
      eof_ = true;
      return;
    }
    buffer_.append(chunk, static_cast<size_t>(n));
  }

  std::string buffer_;
  bool eof_ = false;
};

absl::Status RunGtp(const std::vector<std::string>& args) {
  ZF_RETURN_IF_ERROR(NoArgs(args));
  ZF_ASSIGN_OR_RETURN(games::GameConfig config, games::ParseGameName(absl::GetFlag(FLAGS_game)));
  const std::string spec = absl::GetFlag(FLAGS_player);
  const uint64_t seed = SeedFromFlag();
  return games::VisitGame(config, [&](const auto& start) -> absl::Status {
    using G = std::decay_t<decltype(start)>;
    if constexpr (!gtp::kSupportsGtp<G>) {
      return absl::InvalidArgumentError(absl::StrCat(
          "GTP needs moves written as board vertices; ", start.Name(),
          " has none (GTP games: go[:N], tictactoe, connect4, othello[:N], hex[:N[:swap]])"));
    } else {
      ZF_ASSIGN_OR_RETURN(std::unique_ptr<GtpEngine<G>> engine,
                          GtpEngine<G>::Create({.start = start, .make_player = [&](const G& s) {
                                                  return players::MakePlayer<G>(spec, s, seed);
                                                }}));
      StdinLines input;
      std::string line;
      while (!engine->quit_requested() && input.Next(&line)) {
        const std::string response = engine->Handle(line);
        if (response.empty()) continue;
        std::cout << response << std::flush;
        if (engine->analysis_pending()) {
          std::cout << engine->StreamAnalysis(
                           [&](absl::Duration timeout) { return input.Waiting(timeout); },
                           [](const std::string& info) { std::cout << info << std::flush; })
                    << std::flush;
          continue;
        }
        // GUIs show an engine's stderr as its log: the player's thoughts go there.
        if (absl::StartsWith(line, "genmove") || absl::StrContains(line, " genmove")) {
          const std::string thinking = engine->LastThinking();
          if (!thinking.empty()) std::cerr << thinking << std::endl;
        }
      }
      return absl::OkStatus();
    }
  });
}

absl::Status RunAnalyze(const std::vector<std::string>& args) {
  ZF_RETURN_IF_ERROR(NoArgs(args));
  const std::string spec = absl::GetFlag(FLAGS_player);
  const std::string moves = absl::GetFlag(FLAGS_moves);
  const uint64_t seed = SeedFromFlag();
  const bool json = absl::GetFlag(FLAGS_json);
  const auto analyze = [&](const auto& start, const auto& game, int moves_played,
                           absl::string_view source) -> absl::Status {
    using G = std::decay_t<decltype(start)>;
    if (game.IsTerminal()) {
      return absl::InvalidArgumentError(
          absl::StrCat("the game is over after ", source, ": nothing to analyze"));
    }
    ZF_ASSIGN_OR_RETURN(std::unique_ptr<players::Player<G>> player,
                        players::MakePlayer<G>(spec, start, seed));
    ZF_ASSIGN_OR_RETURN(int action, player->ChooseAction(game));
    const std::string move =
        action == players::kResignAction ? "resign" : game.ActionToString(action);
    const std::optional<players::SearchReport> report = player->LastSearch();
    std::vector<search::ChildStats> children;
    if (report) children = report->children;
    if (json) {
      std::string visits, values, priors;
      for (const search::ChildStats& c : children) {
        const std::string name = JsonString(game.ActionToString(c.action));
        const char* sep = visits.empty() ? "" : ", ";
        absl::StrAppend(&visits, sep, name, ": ", c.visits);
        absl::StrAppend(&values, sep, name, ": ", absl::StrFormat("%.4f", c.value));
        absl::StrAppend(&priors, sep, name, ": ", absl::StrFormat("%.4f", c.prior));
      }
      std::cout << "{\"game\": " << JsonString(start.Name()) << ", \"to_play\": " << game.ToPlay()
                << ", \"player\": " << JsonString(spec) << ", \"move\": " << JsonString(move)
                << ", \"value\": "
                << (report ? absl::StrFormat("%.4f", report->value) : std::string("null"))
                << ", \"root_visits\": " << (report ? report->root_visits : 0) << ", \"visits\": {"
                << visits << "}, \"values\": {" << values << "}, \"priors\": {" << priors << "}}\n";
      return absl::OkStatus();
    }
    std::cout << game.ToString() << "\n";
    std::cout << absl::StrFormat("%s after %d moves, player %d to move: %s plays %s\n",
                                 start.Name(), moves_played, game.ToPlay(), spec, move);
    if (!report) {
      std::cout << "(" << spec << " does not search: no statistics)\n";
      return absl::OkStatus();
    }
    std::cout << absl::StrFormat("value %+.3f for the player to move, %d root visits\n",
                                 report->value, report->root_visits);
    std::sort(children.begin(), children.end(), [](const auto& a, const auto& b) {
      return a.visits != b.visits ? a.visits > b.visits : a.action < b.action;
    });
    std::cout << absl::StrFormat("%-8s %8s %8s %8s\n", "move", "visits", "value", "prior");
    int shown = 0;
    for (const search::ChildStats& c : children) {
      if (shown++ == 20) {
        std::cout << absl::StrFormat("... %d more moves\n", children.size() - 20);
        break;
      }
      std::cout << absl::StrFormat("%-8s %8d %+8.3f %8.3f\n", game.ActionToString(c.action),
                                   c.visits, c.value, c.prior);
    }
    return absl::OkStatus();
  };
  const std::string sgf_path = absl::GetFlag(FLAGS_sgf);
  if (!sgf_path.empty()) {
    if (!moves.empty()) {
      return absl::InvalidArgumentError("--sgf and --moves both name a position: give one");
    }
    ZF_ASSIGN_OR_RETURN(SgfPosition position, ReadSgfPosition(sgf_path, absl::GetFlag(FLAGS_move)));
    return analyze(position.game.start, position.position, position.moves_played, "--sgf/--move");
  }
  ZF_ASSIGN_OR_RETURN(games::GameConfig config, games::ParseGameName(absl::GetFlag(FLAGS_game)));
  return games::VisitGame(config, [&](const auto& start) -> absl::Status {
    auto game = start;
    ZF_RETURN_IF_ERROR(ApplyMoveList(game, moves));
    const int played = moves.empty() ? 0 : std::count(moves.begin(), moves.end(), ',') + 1;
    return analyze(start, game, played, "--moves");
  });
}

bool PlayerRunsNetwork(const std::vector<std::string>&) {
  return players::IsNetworkPlayerSpec(absl::GetFlag(FLAGS_player));
}

}  // namespace

std::vector<Command> GtpCommands() {
  return {
      {"gtp",
       "a GTP version 2 engine on stdin/stdout for GUIs and other engines (docs/gtp.md)",
       "zf gtp --game go:N|tictactoe|connect4 --player SPEC [--seed S]",
       {"game", "player", "seed"},
       RunGtp,
       PlayerRunsNetwork},
      {"analyze",
       "what a player would play in a position, with its search statistics",
       "zf analyze (--game G [--moves a,b,c] | --sgf FILE [--move N]) --player SPEC [--json] "
       "[--seed S]",
       {"game", "moves", "sgf", "move", "player", "json", "seed"},
       RunAnalyze,
       PlayerRunsNetwork},
  };
}

}  // namespace zf::cli
