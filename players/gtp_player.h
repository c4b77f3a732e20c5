// Any GTP engine as a Go player (the specs gtp:COMMAND and gnugo:LEVEL, players/player_spec.h):
// GNU Go, `zf gtp` itself, Leela Zero, KataGo... run as a subprocess.
//
// Thread-compatible: one player per thread.
#pragma once

#include <memory>
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
#include "games/go/go.h"
#include "gtp/gtp_client.h"
#include "gtp/vertex.h"
#include "players/player.h"

namespace zf::players {

// A GTP engine as a player: a subprocess told every move. The player follows one game at a time,
// played move by move from the empty board: at each ChooseAction it finds the opponent's move
// since its own last one, tells the engine (play), and asks genmove. A position that is not one
// move on (a new game, or one begun with moves the player did not see, like an evaluation's random
// opening) is rebuilt from the empty board: an order of its stones' placements and of passes
// that reaches the same board with the same player to move, found by a bounded search (a stone
// captured on the way becomes a pass; area scoring does not count prisoners).
class GtpPlayer final : public Player<games::Go> {
 public:
  // Starts the engine `argv` (argv[0] a path, or a name looked up on PATH) for games like
  // `start`: boardsize, clear_board and komi are sent. The engine's own flags set everything
  // else (its rules, playouts, threads); zerofleet scores by area with positional superko, so
  // an engine should play those rules (docs/gtp.md). `name` labels its moves ("gnugo:10").
  // Returns: the player; InvalidArgument for an empty command; NotFound for a name not on
  // PATH; Internal if it cannot start (a path that is not an executable); Unavailable or
  // FailedPrecondition if it rejects the board size or komi (a GTP error names the command).
  static absl::StatusOr<std::unique_ptr<GtpPlayer>> Create(const games::Go& start,
                                                           std::vector<std::string> argv,
                                                           std::string name) {
    if (argv.empty() || argv[0].empty()) {
      return absl::InvalidArgumentError("gtp player: the command is empty");
    }
    if (!absl::StrContains(argv[0], '/')) {
      ZF_ASSIGN_OR_RETURN(argv[0], gtp::FindOnPath(argv[0]));
    }
    ZF_ASSIGN_OR_RETURN(std::unique_ptr<gtp::GtpClient> client,
                        gtp::GtpClient::Create({.argv = std::move(argv)}));
    ZF_RETURN_IF_ERROR(client->Send(absl::StrCat("boardsize ", start.Size())).status());
    ZF_RETURN_IF_ERROR(client->Send("clear_board").status());
    ZF_RETURN_IF_ERROR(client->Send(absl::StrCat("komi ", start.Komi())).status());
    return std::unique_ptr<GtpPlayer>(new GtpPlayer(start, std::move(client), std::move(name)));
  }

  // GNU Go at `level` (0..10) with zerofleet's rules: --chinese-rules --positional-superko
  // --forbid-suicide, and --capture-all-dead (it removes dead stones before passing, as area
  // scoring of the board as it stands needs).
  // Returns: as Create; InvalidArgument for a bad level; NotFound without GNU Go.
  static absl::StatusOr<std::unique_ptr<GtpPlayer>> CreateGnuGo(const games::Go& start, int level) {
    if (level < 0 || level > 10) {
      return absl::InvalidArgumentError(absl::StrCat("gnugo level must be in 0..10, got ", level));
    }
    ZF_ASSIGN_OR_RETURN(std::string binary, gtp::FindGnuGo());
    return Create(start,
                  {binary, "--mode", "gtp", "--level", absl::StrCat(level), "--chinese-rules",
                   "--positional-superko", "--forbid-suicide", "--capture-all-dead", "--komi",
                   absl::StrCat(start.Komi()), "--boardsize", absl::StrCat(start.Size())},
                  absl::StrCat("gnugo:", level));
  }

  // Returns: the engine's move or kResignAction; FailedPrecondition for a position neither one
  // move on from the previous one nor rebuildable from the empty board; Internal if the engine
  // plays what these rules call illegal; Unavailable if it died.
  absl::StatusOr<int> ChooseAction(const games::Go& game) override {
    ZF_RETURN_IF_ERROR(CatchUp(game));
    const char* color = game.ToPlay() == 0 ? "black" : "white";
    ZF_ASSIGN_OR_RETURN(std::string reply, client_->Send(absl::StrCat("genmove ", color)));
    last_reply_ = reply;
    if (absl::EqualsIgnoreCase(reply, "resign")) return kResignAction;
    absl::StatusOr<int> action = gtp::ParseVertex(game, reply);
    if (!action.ok() || !game.IsLegal(*action)) {
      return absl::InternalError(
          absl::StrCat(name_, " played \"", reply, "\", which is illegal here"));
    }
    known_ = game;
    known_.Apply(*action);
    return *action;
  }

  std::string Thinking(const games::Go& game) const override {
    return absl::StrCat(name_, " says ", last_reply_);
  }

 private:
  GtpPlayer(const games::Go& start, std::unique_ptr<gtp::GtpClient> client, std::string name)
      : empty_(start), known_(start), client_(std::move(client)), name_(std::move(name)) {}

  static bool SamePosition(const games::Go& a, const games::Go& b) {
    return a.NumMoves() == b.NumMoves() && a.BoardHash() == b.BoardHash() &&
           a.ConsecutivePasses() == b.ConsecutivePasses();
  }

  // Brings the engine to `game`: from known_ by one move, else from the empty board.
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
            absl::StrCat(name_, ": cannot rebuild the position after move ", game.NumMoves(),
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
  games::Go known_;  // the position the engine has
  std::unique_ptr<gtp::GtpClient> client_;
  std::string name_;
  std::vector<int> legal_;
  std::string last_reply_;
};

}  // namespace zf::players
