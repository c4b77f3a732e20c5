// The engine side of GTP (Go Text Protocol version 2) for `zf gtp`: one line in, one response
// out, no I/O, so every command and error is testable without processes.
//
//   auto engine = *GtpEngine<games::Go>::Create({.start = go, .make_player = factory});
//   std::cout << engine->Handle("1 genmove black");  // "=1 D4\n\n"
//
// Commands: protocol_version, name, version, known_command, list_commands, boardsize,
// clear_board, komi, play, genmove, undo, final_score, showboard, quit; the live analysis of
// Leela Zero and KataGo (lz-analyze, kata-analyze, lz-genmove_analyze, kata-genmove_analyze:
// see StreamAnalysis and docs/gtp.md) for players that search; for Go, loadsgf FILE [MOVE]
// (reads the file: the one command that touches the disk).
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

#include <algorithm>
#include <cmath>
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
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/status_macros.h"
#include "games/game.h"
#include "games/go/go.h"
#include "games/hex/hex.h"
#include "gtp/vertex.h"
#include "players/player_spec.h"
#include "sgf/go_sgf.h"
#include "sgf/sgf.h"

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
  // while the player thinks (genmove). Never fails: errors are "?" responses. An analysis
  // command answers only its first line ("=ID\n"): StreamAnalysis writes the rest.
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
    if (pending_) return absl::StrCat("=", id, "\n");  // the analysis: StreamAnalysis goes on
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
    std::vector<std::string> names = {"protocol_version",
                                      "name",
                                      "version",
                                      "known_command",
                                      "list_commands",
                                      "boardsize",
                                      "clear_board",
                                      "komi",
                                      "play",
                                      "genmove",
                                      "undo",
                                      "final_score",
                                      "showboard",
                                      "quit",
                                      "lz-analyze",
                                      "kata-analyze",
                                      "lz-genmove_analyze",
                                      "kata-genmove_analyze"};
    if constexpr (std::is_same_v<G, games::Go>) names.push_back("loadsgf");
    return names;
  }

  // Live analysis. An analysis command (lz-analyze, kata-analyze, lz-genmove_analyze,
  // kata-genmove_analyze) that Handle accepts answers only its first line ("=7\n") and leaves
  // the analysis pending; the caller then calls StreamAnalysis, which searches, hands `emit`
  // one "info ..." line (with its newline) about every interval, and returns the response's
  // end. The analyze commands run until `input_waiting` says the next command has arrived (at
  // least one line is emitted first when the interval is not 0); the genmove ones until the
  // player's simulations per move are searched, then end with "play D4" and play it.
  // `input_waiting(timeout)` may block up to `timeout`; true when input is waiting.
  using InputWaiting = std::function<bool(absl::Duration timeout)>;
  bool analysis_pending() const { return pending_.has_value(); }
  std::string StreamAnalysis(const InputWaiting& input_waiting,
                             const std::function<void(const std::string&)>& emit) {
    if (!pending_) return "";
    const PendingAnalysis a = *pending_;
    pending_.reset();
    const bool timed = a.interval > absl::ZeroDuration();
    absl::Time next_emit = absl::Now() + a.interval;
    int emitted = 0;
    bool can_grow = true;
    absl::Status error;
    // genmove searches exactly what genmove would; an analysis up to max_visits_.
    const int max_visits = a.genmove ? player_->SimulationsPerMove() : max_visits_;
    const auto emit_info = [&] {
      const std::string line = InfoLine(a);
      if (!line.empty()) emit(line);  // never an empty line: it would end the response
      ++emitted;
    };
    while (true) {
      if (can_grow) {
        absl::StatusOr<bool> grew = player_->ContinueAnalysis(kAnalysisChunk, max_visits);
        if (!grew.ok()) {
          error = grew.status();
          break;
        }
        can_grow = *grew;
        if (!can_grow && a.genmove) break;
      }
      const absl::Time now = absl::Now();
      if (timed && now >= next_emit) {
        emit_info();
        next_emit = now + a.interval;
      }
      if (a.genmove) continue;
      const absl::Duration wait = can_grow ? absl::ZeroDuration()
                                  : timed  ? std::max(absl::ZeroDuration(), next_emit - now)
                                           : absl::Milliseconds(100);
      if (input_waiting(wait)) break;  // the next command (or the end of the input)
    }
    // Leela Zero's rule: an analysis with an interval reports at least once.
    if (timed && emitted == 0 && error.ok()) emit_info();
    if (!a.genmove) return "\n";
    if (!error.ok()) return absl::StrCat("play resign\n\n");  // the search failed: no move
    const int action = player_->AnalysisBestAction();
    if (action == players::kResignAction || !game_.IsLegal(action)) return "play resign\n\n";
    const std::string vertex = gtp::VertexOf(game_, action);
    game_.Apply(action);
    moves_.push_back(action);
    return absl::StrCat("play ", vertex, "\n\n");
  }

  // Root visits at which an analysis stops searching (and goes on reporting); bounds the tree
  // (a visit expands at most one node: 36 bytes and 28 a legal move, about 2.3 KB on 9 x 9).
  void set_max_analysis_visits(int visits) { max_visits_ = std::max(1, visits); }

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

  static constexpr int kAnalysisChunk = 16;  // simulations between looks at the clock and input

  struct PendingAnalysis {
    bool kata = false;     // kata-analyze's fields (floats) instead of lz-analyze's (x 10000)
    bool genmove = false;  // *-genmove_analyze: search a move, then play it
    absl::Duration interval = absl::ZeroDuration();
    int min_moves = 0;
    int max_moves = 1000;
    bool ownership = false;
  };

  // Parses "[COLOR] [INTERVAL] [KEY VALUE]..." (lz-analyze, kata-analyze and their genmove forms)
  // and starts the player's analysis of the position.
  absl::StatusOr<std::string> StartAnalysis(const std::vector<std::string>& args, bool kata,
                                            bool genmove) {
    PendingAnalysis a{.kata = kata, .genmove = genmove};
    size_t i = 0;
    if (i < args.size() && ParseColor(args[i]).ok()) {
      const int color = *ParseColor(args[i]);
      ++i;
      if (color != game_.ToPlay()) {
        return Error(absl::StrCat("illegal move: it is ", ColorName(game_.ToPlay()), "'s turn"));
      }
    } else if (genmove) {
      return Error("syntax error: usage: lz-genmove_analyze COLOR [INTERVAL] [KEY VALUE]...");
    }
    const auto centiseconds = [&](const std::string& text) -> absl::Status {
      int cs = 0;
      if (!absl::SimpleAtoi(text, &cs) || cs < 0 || cs > 360000) {
        return Error(
            absl::StrCat("syntax error: interval \"", text, "\" is not 0..360000 centiseconds"));
      }
      a.interval = absl::Milliseconds(10 * cs);
      return absl::OkStatus();
    };
    if (i < args.size() && absl::ascii_isdigit(args[i][0]))
      ZF_RETURN_IF_ERROR(centiseconds(args[i++]));
    for (; i < args.size(); i += 2) {
      const std::string& key = args[i];
      if (i + 1 >= args.size()) return Error(absl::StrCat("syntax error: ", key, " needs a value"));
      const std::string& value = args[i + 1];
      if (key == "interval") {
        ZF_RETURN_IF_ERROR(centiseconds(value));
      } else if (key == "minmoves" || key == "maxmoves") {
        int n = 0;
        if (!absl::SimpleAtoi(value, &n) || n < 0) {
          return Error(absl::StrCat("syntax error: ", key, " \"", value, "\""));
        }
        (key == "minmoves" ? a.min_moves : a.max_moves) = n;
      } else if (key == "ownership" || key == "rootInfo" || key == "pvVisits" ||
                 key == "ownershipStdev" || key == "movesOwnership") {
        if (value != "true" && value != "false") {
          return Error(absl::StrCat("syntax error: ", key, " takes true or false"));
        }
        if (key == "ownership") a.ownership = value == "true";
        if (value == "true" && key != "ownership") {
          return Error(absl::StrCat("syntax error: ", key, " is not supported"));
        }
      } else if (key == "avoid" || key == "allow") {
        return Error(absl::StrCat("syntax error: ", key, " is not supported"));
      } else {
        return Error(absl::StrCat("syntax error: unknown analysis key \"", key, "\""));
      }
    }
    if (game_.IsTerminal()) return Error("illegal move: the game is over");
    absl::Status begun = player_->BeginAnalysis(game_, a.ownership && kata);
    if (!begun.ok()) return Error(absl::StrCat("engine error: ", begun.message()));
    pending_ = a;  // Handle answers "=ID\n" and StreamAnalysis goes on
    return std::string();
  }

  // One "info move ..." entry per visited move (at least min_moves, at most max_moves), then
  // kata-analyze's ownership, as one line ending in a newline; "" when there is nothing to say
  // (no visited move, maxmoves 0 and no ownership).
  std::string InfoLine(const PendingAnalysis& a) const {
    const players::Analysis report = player_->AnalysisReport(/*max_pv_length=*/20);
    std::string line;
    int order = 0;
    for (const players::AnalysisMove& m : report.moves) {
      if (order >= a.max_moves) break;
      absl::StrAppend(&line, line.empty() ? "" : " ", "info move ", gtp::VertexOf(game_, m.action),
                      " visits ", m.visits);
      if (a.kata) {
        absl::StrAppendFormat(&line, " edgeVisits %d utility %.6f winrate %.6f", m.visits,
                              2.0f * m.winrate - 1.0f, m.winrate);
        if (std::isfinite(m.score_lead)) {
          absl::StrAppendFormat(&line, " scoreMean %.6f scoreLead %.6f", m.score_lead,
                                m.score_lead);
        }
        absl::StrAppendFormat(&line, " prior %.6f lcb %.6f order %d pv", m.prior, m.lcb, order);
      } else {
        absl::StrAppend(&line, " winrate ", static_cast<int>(10000.0f * m.winrate), " prior ",
                        static_cast<int>(10000.0f * m.prior), " lcb ",
                        static_cast<int>(10000.0f * m.lcb), " order ", order, " pv");
      }
      G position = game_;
      for (int action : m.pv) {
        if (position.IsTerminal() || !position.IsLegal(action)) break;
        absl::StrAppend(&line, " ", gtp::VertexOf(position, action));
        position.Apply(action);
      }
      ++order;
    }
    if (a.kata && a.ownership && !report.ownership.empty()) {
      absl::StrAppend(&line, line.empty() ? "" : " ", "ownership");
      for (float v : report.ownership) absl::StrAppendFormat(&line, " %.4f", v);
    }
    (void)a.min_moves;  // moves without visits are never listed: min_moves is met when it can be
    return line.empty() ? line : line + "\n";
  }

  // loadsgf FILE [MOVE]: the game of an SGF file up to (not including) move MOVE, as GTP 2 says.
  absl::StatusOr<std::string> LoadSgf(const std::vector<std::string>& args) {
    if (args.empty() || args.size() > 2) return Error("syntax error: usage: loadsgf FILE [MOVE]");
    int before = -1;
    if (args.size() == 2 && (!absl::SimpleAtoi(args[1], &before) || before < 1)) {
      return Error(absl::StrCat("syntax error: move number \"", args[1], "\""));
    }
    absl::StatusOr<std::string> text = sgf::ReadFile(args[0]);
    if (!text.ok()) return Error(absl::StrCat("cannot load file: ", text.status().message()));
    absl::StatusOr<sgf::GoGameRecord> record = sgf::ReadGoGame(*text);
    if (!record.ok()) return Error(absl::StrCat("cannot load file: ", record.status().message()));
    std::vector<int> moves = record->moves;
    if (before >= 1 && static_cast<size_t>(before - 1) < moves.size()) moves.resize(before - 1);
    ZF_RETURN_IF_ERROR(Restart(record->start, moves));
    return std::string();
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
    if (command == "lz-analyze") return StartAnalysis(args, /*kata=*/false, /*genmove=*/false);
    if (command == "kata-analyze") return StartAnalysis(args, /*kata=*/true, /*genmove=*/false);
    if (command == "lz-genmove_analyze") return StartAnalysis(args, false, /*genmove=*/true);
    if (command == "kata-genmove_analyze") return StartAnalysis(args, true, /*genmove=*/true);
    if constexpr (std::is_same_v<G, games::Go>) {
      if (command == "loadsgf") return LoadSgf(args);
    }
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

  std::optional<PendingAnalysis> pending_;
  int max_visits_ = 100000;
  G start_;
  G game_;
  std::vector<int> moves_;  // played since start_, for undo and komi
  PlayerFactory make_player_;
  std::unique_ptr<players::Player<G>> player_;
  std::string thinking_;
  bool quit_ = false;
};

}  // namespace zf::cli
