// Tic-tac-toe on a 3x3 board: the smallest complete game, for tests and quick demos.
//
// Rules: X (player 0) moves first; players alternately put a stone on an empty cell; three in a
// row, column or diagonal wins; a full board without a line is a draw.
//
// Actions: the cell, row * 3 + col with row 0 the top row, so 0..8 read like a book:
//     0 1 2
//     3 4 5
//     6 7 8
// Text form of an action: the column letter a-c then the row number 1-3 counted from the top
// ("a1" = 0, "b2" = 4, "c3" = 8). ParseAction also accepts the plain number ("4").
//
// Encoding: 3 planes of 3x3, [stones of the player to move, stones of the opponent, all ones].
// Symmetries: the 8 of the square (games/grid_symmetry.h), identity first.
//
// Thread-compatibility: a trivially copyable value type (two 9-bit masks and a hash);
// thread-compatible as games/game.h says.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "games/game.h"

namespace zf::games {

class TicTacToe {
 public:
  static constexpr int kSize = 3;
  static constexpr int kNumCells = kSize * kSize;

  // The empty board, X to move.
  TicTacToe() = default;

  // Registration (games/game.h, RegistrableGame).
  static constexpr absl::string_view kFamily = "tictactoe";
  static constexpr absl::string_view kSyntax = "tictactoe";
  static constexpr absl::string_view kDescription = "tic-tac-toe on 3x3 (tests and demos)";
  static absl::StatusOr<TicTacToe> FromParameters(std::optional<absl::string_view> params);
  // Self-play: the opening is 4 plies; alpha 1 for about 9 moves a position.
  SelfPlayHints SelfPlayDefaults() const {
    return {.dirichlet_alpha = 1.0f, .temperature_moves = 4};
  }

  std::string Name() const { return "tictactoe"; }
  int NumActions() const { return kNumCells; }
  int MaxGameLength() const { return kNumCells; }
  int ToPlay() const { return to_play_; }
  bool IsTerminal() const { return winner_ >= 0 || num_moves_ == kNumCells; }
  // Requires IsTerminal().
  games::Returns Returns() const;
  // False for values outside [0, 9), occupied cells, and every action of a finished game.
  bool IsLegal(int action) const;
  // Empty when IsTerminal().
  void LegalActions(std::vector<int>* out) const;
  // Requires IsLegal(action) (ZF_DCHECK).
  void Apply(int action);
  uint64_t Hash() const { return hash_; }
  PlaneShape Shape() const { return {3, kSize, kSize}; }
  void Encode(uint8_t* planes) const;
  std::vector<Symmetry> Symmetries() const;
  std::string ToString() const;
  std::string ActionToString(int action) const;
  // "a1".."c3" or "0".."8"; InvalidArgument otherwise.
  absl::StatusOr<int> ParseAction(absl::string_view text) const;

  // The owner of a cell: 0 (X), 1 (O) or -1 (empty). Requires 0 <= cell < 9.
  int CellOwner(int cell) const;
  // The player who completed a line, or -1 when there is none.
  int Winner() const { return winner_; }

 private:
  uint64_t hash_ = 0;
  uint16_t stones_[2] = {0, 0};  // bit i = cell i
  uint8_t to_play_ = 0;
  uint8_t num_moves_ = 0;
  int8_t winner_ = -1;
};

static_assert(RegistrableGame<TicTacToe>);

}  // namespace zf::games
