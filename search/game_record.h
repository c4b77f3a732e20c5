// One finished self-play game as training data: plain C++, game-agnostic (planes and policy
// vectors, no game type), ready for the actor to put on the wire.
//
// Position i (0 <= i < NumPositions()) is the position before move i. Its training targets are
// policy_targets[i] (the search's visit distribution; use it as a policy target only where
// full_search[i] is 1, as playout cap randomization asks) and ValueTarget(i) = returns[to_play[i]].
//
// Thread-compatibility: a plain value; thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "games/game.h"

namespace zf::search {

struct GameRecord {
  // |final_score| is at most this many points per cell (Go: the board plus a komi of at most
  // the board; the wire and the replay service check the same bound).
  static constexpr int kMaxScorePerCell = 4;

  std::string game;         // the game's Name(), e.g. "connect4"
  games::PlaneShape shape;  // of one position: channels, height, width
  int num_actions = 0;

  // One entry per recorded position (= per move played), in order.
  std::vector<uint8_t> planes;        // [n, C, H, W], Encode() of each position
  std::vector<float> policy_targets;  // [n, num_actions], each row sums to 1
  std::vector<int8_t> to_play;        // [n], 0 or 1
  std::vector<uint8_t> full_search;   // [n], 1 = full search (policy target usable)
  std::vector<int32_t> actions;       // [n], the move played from the position
  std::vector<float> root_values;     // [n], the search's value for to_play[i]

  // Final outcome for players 0 and 1 (+1 win, 0 draw, -1 loss), resignation and truncation
  // included.
  games::Returns returns = {0.0f, 0.0f};
  // The targets of the network's ownership and score heads, from player 0's side
  // (games::GameWithFinalOwnership): who owns each of the H*W cells at the end (+1 player 0,
  // -1 player 1, 0 neither) and player 0's margin. Only for games of such a game that ended by
  // their rules: empty (and no score) after a resignation or the move cap.
  std::vector<int8_t> final_ownership;  // [H * W] or empty
  std::optional<float> final_score;     // present exactly when final_ownership is
  int num_moves = 0;                    // plies played (= n)
  bool resigned = false;                // the game ended by resignation
  int resigning_player = -1;            // who resigned, when resigned
  bool truncated = false;               // max_moves reached: scored as a draw

  // Resignation false-positive measurement: in a playthrough game resignation is disabled; if a
  // player would have resigned, the game records who and at which move, and whether that would
  // have been a false positive (that player did not lose in the end).
  bool resignation_disabled = false;
  bool would_have_resigned = false;
  int would_resign_player = -1;
  int would_resign_move = -1;
  bool resign_false_positive = false;

  // Reanalysis (search/self_play.h, SelfPlayGame::CreateReanalysis): the moves and outcome are
  // those of an earlier game; every position was searched again, fully, by a newer network.
  bool reanalysis = false;

  int NumPositions() const { return static_cast<int>(to_play.size()); }
  float ValueTarget(int i) const { return returns[to_play[i]]; }

  // Checks the invariants above: array sizes, policy rows summing to 1 (within 1e-3) with no
  // negative entry, players in {0, 1}, outcomes in [-1, 1] and zero-sum, and flags that agree.
  // Returns: OK; InvalidArgument naming the first violation.
  absl::Status Validate() const;
};

// What reanalysis needs of a finished game: its moves and how it ended (no planes or policies,
// so an actor can keep hundreds of them cheaply).
struct PlayedGame {
  std::vector<int32_t> actions;
  games::Returns returns = {0.0f, 0.0f};
  bool resigned = false;
  int resigning_player = -1;
  bool truncated = false;
  std::vector<int8_t> final_ownership;
  std::optional<float> final_score;

  static PlayedGame Of(const GameRecord& record) {
    return PlayedGame{.actions = record.actions,
                      .returns = record.returns,
                      .resigned = record.resigned,
                      .resigning_player = record.resigning_player,
                      .truncated = record.truncated,
                      .final_ownership = record.final_ownership,
                      .final_score = record.final_score};
  }
};

}  // namespace zf::search
