// The engine side of GTP (Go Text Protocol version 2) for `zf gtp`: one line in, one response
// out, no I/O, so every command and error is testable without processes.
//
//   auto engine = *GtpEngine<games::Go>::Create({.start = go, .make_player = factory});
//   std::cout << engine->Handle("1 genmove black");  // "=1 D4\n\n"
//
// Commands: protocol_version, name, version, known_command, list_commands, boardsize,
// clear_board, komi, play, genmove, undo, final_score, showboard, quit.
// Input lines are preprocessed as GTP says: control characters other than tab and newline are
// dropped, tabs become spaces, everything after '#' is a comment, and blank lines are ignored.
// A command may start with a numeric id, which the response repeats ("=7 D4", "?7 ...").
// Responses: "= text\n\n" on success, "? message\n\n" on failure. Failures (the engine state
// is unchanged by any of them):
//   unknown command                      a command not in the list above
//   syntax error: ...                    missing or malformed arguments
//   invalid color "x"                    a colour that is not b, black, w or white
//   invalid vertex "Z9"                  text that is no vertex of this board (gtp/vertex.h)
//   illegal move: ...                    a vertex that is not legal now: occupied, suicide,
//                                        superko, a full column, the game over, or a colour
//                                        whose turn it is not (play and genmove alternate)
//   unacceptable size                    boardsize outside 5..19 (go), 4..8 even (othello),
//                                        3..13 (hex; HexGui's "N N" form too) or not the
//                                        game's own size (tictactoe, connect4)
//   cannot undo                          undo at the start
//   engine error: ...                    the player failed (e.g. GNU Go died)
// Game semantics: boardsize N turns go:M into go:N (same komi), othello:M into othello:N and
// hex:M into hex:N (same swap rule) and clears the board; for
// tictactoe and connect4 only their own size (3, 7) is acceptable. komi changes go's komi (the
// moves so far are kept); other games accept and ignore it. genmove in a finished Go game
// answers "pass" without playing; in other finished games it fails. final_score: Go's area score
// ("B+3.5", "W+0.5", "0"); other games, once finished: "B+1", "W+1" (the winner) or "0".
// genmove answers "resign" when the player resigns (gnugo:LEVEL); the position is unchanged.
//
// Thread-compatibility: thread-compatible; one thread feeds one engine.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "common/status_macros.h"
#include "games/game.h"
#include "games/go/go.h"
#include "games/hex/hex.h"
#include "gtp/vertex.h"
#include "players/player_spec.h"

namespace zf::cli {

inline constexpr char kGtpEngineName[] = "zerofleet";
inline constexpr char kGtpEngineVersion[] = "0.1";

template <games::Game G>
class GtpEngine {
 public:
  static_assert(gtp::kSupportsGtp<G>, "this game has no GTP vertex notation (gtp/vertex.h)");

  // Builds the player for games starting at `start`; called at Create and whenever boardsize
  // or komi changes the start.
  using PlayerFactory =
      std::function<absl::StatusOr<std::unique_ptr<players::Player<G>>>(const G& start)>;

  struct Options {
    G start;                    // the empty board (for go: its size and komi)
    PlayerFactory make_player;  // required
    // Returns: InvalidArgument without make_player.
    absl::Status Validate() const {
      if (!make_player) return absl::InvalidArgumentError("GtpEngine: make_player is required");
      return absl::OkStatus();
    }
  };

  // Returns: the engine; InvalidArgument for bad options; the factory's error.
  static absl::StatusOr<std::unique_ptr<GtpEngine>> Create(Options options) {
    ZF_RETURN_IF_ERROR(options.Validate());
    ZF_ASSIGN_OR_RETURN(std::unique_ptr<players::Player<G>> player,
                        options.make_player(options.start));
    return std::unique_ptr<GtpEngine>(new GtpEngine(std::move(options), std::move(player)));
  }

  // Handles one line of input (without or with its newline) and returns the whole response,
  // ending with the empty line ("= D4\n\n"), or "" for a blank or comment-only line. Blocks
  // while the player thinks (genmove). Never fails: errors are "?" responses.
  std::string Handle(absl::string_view line) {
    std::string clean;
    for (char c : line) {
      if (c == '#') break;
      if (c == '\t') c = ' ';
      if (static_cast<unsigned char>(c) < 32 || c == 127) continue;
      clean.push_back(c);
    }
    std::vector<std::string> words = absl::StrSplit(clean, ' ', absl::SkipEmpty());
    if (words.empty()) return "";
    std::string id;
    int id_value = 0;
    if (absl::SimpleAtoi(words[0], &id_value) && id_value >= 0 &&
        absl::ascii_isdigit(words[0][0])) {
      id = words[0];
      words.erase(words.begin());
      if (words.empty()) return absl::StrCat("?", id, " syntax error: no command\n\n");
    }
    const std::string command = words[0];
    words.erase(words.begin());
    absl::StatusOr<std::string> reply = Dispatch(command, words);
    if (!reply.ok()) return absl::StrCat("?", id, " ", reply.status().message(), "\n\n");
    if (reply->empty()) return absl::StrCat("=", id, "\n\n");
    return absl::StrCat("=", id, reply->front() == '\n' ? "" : " ", *reply, "\n\n");
  }

  // Whether "quit" has been handled: the caller stops reading.
  bool quit_requested() const { return quit_; }
  // The current position.
  const G& position() const { return game_; }
  // The player's thoughts on its last genmove (for stderr), or "".
  std::string LastThinking() const { return thinking_; }

  static std::vector<std::string> CommandNames() {
    return {"protocol_version", "name", "version", "known_command", "list_commands", "boardsize",
            "clear_board",      "komi", "play",    "genmove",       "undo",          "final_score",
            "showboard",        "quit"};
  }

 private:
  GtpEngine(Options options, std::unique_ptr<players::Player<G>> player)
      : start_(options.start),
        game_(options.start),
        make_player_(std::move(options.make_player)),
        player_(std::move(player)) {}

  static absl::Status Error(absl::string_view message) {
    return absl::InvalidArgumentError(message);
  }

  absl::Status NeedArgs(const std::vector<std::string>& args, size_t n, absl::string_view usage) {
    if (args.size() == n) return absl::OkStatus();
    return Error(absl::StrCat("syntax error: usage: ", usage));
  }

  absl::StatusOr<int> ParseColor(absl::string_view text) {
    const std::string lower = absl::AsciiStrToLower(text);
    if (lower == "b" || lower == "black") return 0;
    if (lower == "w" || lower == "white") return 1;
    return Error(absl::StrCat("invalid color \"", text, "\""));
  }

  static const char* ColorName(int player) { return player == 0 ? "black" : "white"; }

  // Replaces the start position (boardsize, komi), replaying `moves` on it; the state is kept
  // unless everything succeeds.
  absl::Status Restart(const G& start, const std::vector<int>& moves) {
    G game = start;
    for (int action : moves) {
      if (!game.IsLegal(action)) return Error("illegal move: the moves so far do not replay");
      game.Apply(action);
    }
    absl::StatusOr<std::unique_ptr<players::Player<G>>> player = make_player_(start);
    if (!player.ok()) return Error(absl::StrCat("engine error: ", player.status().message()));
    start_ = start;
    game_ = game;
    moves_ = moves;
    player_ = std::move(*player);
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> Dispatch(const std::string& command,
                                       const std::vector<std::string>& args) {
    if (command == "protocol_version") return std::string("2");
    if (command == "name") return std::string(kGtpEngineName);
    if (command == "version") return std::string(kGtpEngineVersion);
    if (command == "known_command") {
      ZF_RETURN_IF_ERROR(NeedArgs(args, 1, "known_command COMMAND"));
      const std::vector<std::string> names = CommandNames();
      return std::string(std::find(names.begin(), names.end(), args[0]) != names.end() ? "true"
                                                                                       : "false");
    }
    if (command == "list_commands") return absl::StrJoin(CommandNames(), "\n");
    if (command == "quit") {
      quit_ = true;
      return std::string();
    }
    if (command == "boardsize") return BoardSize(args);
    if (command == "clear_board") {
      game_ = start_;
      moves_.clear();
      return std::string();
    }
    if (command == "komi") return Komi(args);
    if (command == "play") return Play(args);
    if (command == "genmove") return GenMove(args);
    if (command == "undo") {
      if (moves_.empty()) return Error("cannot undo");
      std::vector<int> moves = moves_;
      moves.pop_back();
      game_ = start_;
      for (int action : moves) game_.Apply(action);
      moves_ = moves;
      return std::string();
    }
    if (command == "final_score") return FinalScore();
    if (command == "showboard") {
      std::string board;
      for (absl::string_view row : absl::StrSplit(game_.ToString(), '\n', absl::SkipWhitespace())) {
        absl::StrAppend(&board, "\n", row);
      }
      return board;
    }
    return Error("unknown command");
  }

  absl::StatusOr<std::string> BoardSize(const std::vector<std::string>& args) {
    // HexGui sends "boardsize N N" (width and height); Hex boards here are N x N.
    constexpr bool kHex = std::is_same_v<G, games::Hex>;
    if (!(args.size() == 1 || (kHex && args.size() == 2))) {
      return Error(kHex ? "syntax error: usage: boardsize SIZE [SIZE]"
                        : "syntax error: usage: boardsize SIZE");
    }
    int size = 0;
    if (!absl::SimpleAtoi(args[0], &size)) return Error("syntax error: boardsize SIZE");
    if (args.size() == 2 && args[1] != args[0]) return Error("unacceptable size");
    if constexpr (std::is_same_v<G, games::Go>) {
      absl::StatusOr<games::Go> start = games::Go::Create(size, start_.Komi());
      if (!start.ok()) return Error("unacceptable size");
      ZF_RETURN_IF_ERROR(Restart(*start, {}));
    } else if constexpr (std::is_same_v<G, games::Othello>) {
      absl::StatusOr<games::Othello> start = games::Othello::Create(size);
      if (!start.ok()) return Error("unacceptable size");
      ZF_RETURN_IF_ERROR(Restart(*start, {}));
    } else if constexpr (kHex) {
      absl::StatusOr<games::Hex> start = games::Hex::Create(size, start_.SwapRule());
      if (!start.ok()) return Error("unacceptable size");
      ZF_RETURN_IF_ERROR(Restart(*start, {}));
    } else {
      if (size != gtp::BoardSize(start_)) return Error("unacceptable size");
      game_ = start_;
      moves_.clear();
    }
    return std::string();
  }

  absl::StatusOr<std::string> Komi(const std::vector<std::string>& args) {
    ZF_RETURN_IF_ERROR(NeedArgs(args, 1, "komi VALUE"));
    float komi = 0.0f;
    if (!absl::SimpleAtof(args[0], &komi)) return Error("syntax error: komi VALUE");
    if constexpr (std::is_same_v<G, games::Go>) {
      if (komi == start_.Komi()) return std::string();
      absl::StatusOr<games::Go> start = games::Go::Create(start_.Size(), komi);
      if (!start.ok()) return Error(absl::StrCat("syntax error: ", start.status().message()));
      ZF_RETURN_IF_ERROR(Restart(*start, moves_));
    }
    return std::string();
  }

  // The action `args` = {COLOR, VERTEX} names, legal now.
  absl::StatusOr<int> ParseMove(const std::vector<std::string>& args) {
    ZF_RETURN_IF_ERROR(NeedArgs(args, 2, "play COLOR VERTEX"));
    ZF_ASSIGN_OR_RETURN(int color, ParseColor(args[0]));
    absl::StatusOr<int> action = gtp::ParseVertex(game_, args[1]);
    if (!action.ok()) return Error(action.status().message());
    if (game_.IsTerminal()) return Error("illegal move: the game is over");
    if (color != game_.ToPlay()) {
      return Error(absl::StrCat("illegal move: it is ", ColorName(game_.ToPlay()), "'s turn"));
    }
    if (!game_.IsLegal(*action)) return Error("illegal move");
    return *action;
  }

  absl::StatusOr<std::string> Play(const std::vector<std::string>& args) {
    ZF_ASSIGN_OR_RETURN(int action, ParseMove(args));
    game_.Apply(action);
    moves_.push_back(action);
    return std::string();
  }

  absl::StatusOr<std::string> GenMove(const std::vector<std::string>& args) {
    ZF_RETURN_IF_ERROR(NeedArgs(args, 1, "genmove COLOR"));
    ZF_ASSIGN_OR_RETURN(int color, ParseColor(args[0]));
    if (game_.IsTerminal()) {
      if constexpr (std::is_same_v<G, games::Go>) return std::string("pass");
      return Error("illegal move: the game is over");
    }
    if (color != game_.ToPlay()) {
      return Error(absl::StrCat("illegal move: it is ", ColorName(game_.ToPlay()), "'s turn"));
    }
    absl::StatusOr<int> action = player_->ChooseAction(game_);
    if (!action.ok()) return Error(absl::StrCat("engine error: ", action.status().message()));
    thinking_ = player_->Thinking(game_);
    if (*action == players::kResignAction) return std::string("resign");
    if (!game_.IsLegal(*action)) {
      return Error(absl::StrCat("engine error: the player chose illegal action ", *action));
    }
    std::string vertex = gtp::VertexOf(game_, *action);
    game_.Apply(*action);
    moves_.push_back(*action);
    return vertex;
  }

  absl::StatusOr<std::string> FinalScore() {
    if constexpr (std::is_same_v<G, games::Go>) {
      const float score = game_.ScoreForBlack();
      if (score == 0.0f) return std::string("0");
      return absl::StrFormat("%s+%g", score > 0 ? "B" : "W", score > 0 ? score : -score);
    } else {
      if (!game_.IsTerminal()) return Error("cannot score: the game is not over");
      const games::Returns r = game_.Returns();
      if constexpr (std::is_same_v<G, games::Othello>) {
        // The margin in discs, as Othello scores a game.
        const int margin = game_.Discs(0) - game_.Discs(1);
        if (margin == 0) return std::string("0");
        return absl::StrCat(margin > 0 ? "B+" : "W+", margin > 0 ? margin : -margin);
      }
      return std::string(r[0] > 0 ? "B+1" : r[0] < 0 ? "W+1" : "0");
    }
  }

  G start_;
  G game_;
  std::vector<int> moves_;  // played since start_, for undo and komi
  PlayerFactory make_player_;
  std::unique_ptr<players::Player<G>> player_;
  std::string thinking_;
  bool quit_ = false;
};

}  // namespace zf::cli
