// Connect Four on the standard 7 columns x 6 rows board: the default game of `zf run`.
//
// Rules: X (player 0) moves first; a move drops a piece into a column that is not full, where it
// falls to the lowest empty row; four in a row horizontally, vertically or diagonally wins; a
// full board without one is a draw (42 plies at most).
//
// Actions: the column, 0 (left) to 6 (right). Text form: the column number "0".."6" (the only
// form, so ParseAction accepts exactly that).
//
// Encoding: 3 planes of 6 rows x 7 columns, row 0 the top row as printed, [pieces of the player
// to move, pieces of the opponent, all ones].
// Symmetries: identity and the left-right mirror (column c <-> 6 - c).
//
// Representation (built for MCTS speed): the classic bitboard, one 64-bit mask per player with
// 7 bits per column (bit col * 7 + row, row 0 the bottom; the 7th bit of each column is an
// always-empty sentinel, so the four-in-a-row test is four shift-and-AND pairs with no edge
// masks), a height per column, and a Zobrist hash updated incrementally. The value is trivially
// copyable and 40 bytes; Apply does no allocation and no loop.
//
// Thread-compatibility: thread-compatible as games/game.h says.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/logging.h"
#include "games/game.h"
#include "games/zobrist.h"

namespace zf::games {

class ConnectFour {
 public:
  static constexpr int kColumns = 7;
  static constexpr int kRows = 6;
  static constexpr int kCells = kColumns * kRows;
  static constexpr int kBitsPerColumn = kRows + 1;  // one sentinel bit on top of each column

  // The empty board, X to move.
  ConnectFour() = default;

  // Registration (games/game.h, RegistrableGame).
  static constexpr absl::string_view kFamily = "connect4";
  static constexpr absl::string_view kSyntax = "connect4";
  static constexpr absl::string_view kDescription =
      "Connect Four, 7 columns x 6 rows (the default)";
  static absl::StatusOr<ConnectFour> FromParameters(std::optional<absl::string_view> params);
  // Self-play: alpha 1 for at most 7 moves a position.
  SelfPlayHints SelfPlayDefaults() const { return {.dirichlet_alpha = 1.0f}; }

  std::string Name() const { return "connect4"; }
  int NumActions() const { return kColumns; }
  int MaxGameLength() const { return kCells; }
  int ToPlay() const { return num_moves_ & 1; }
  bool IsTerminal() const { return winner_ >= 0 || num_moves_ == kCells; }
  // Requires IsTerminal().
  games::Returns Returns() const;
  // False outside [0, 7), for full columns, and for every action of a finished game.
  bool IsLegal(int action) const {
    return static_cast<unsigned>(action) < static_cast<unsigned>(kColumns) && !IsTerminal() &&
           heights_[action] < kRows;
  }
  // Empty when IsTerminal().
  void LegalActions(std::vector<int>* out) const;
  // Requires IsLegal(action) (ZF_DCHECK).
  inline void Apply(int action);
  uint64_t Hash() const { return hash_; }
  PlaneShape Shape() const { return {3, kRows, kColumns}; }
  void Encode(uint8_t* planes) const;
  std::vector<Symmetry> Symmetries() const;
  // The board (row 0 at the top, X and O, '.' for empty), the column numbers underneath, and a
  // line saying who is to move or how the game ended.
  std::string ToString() const;
  std::string ActionToString(int action) const;
  // "0".."6"; InvalidArgument otherwise.
  absl::StatusOr<int> ParseAction(absl::string_view text) const;

  // The owner of the cell at `row` (0 = top, as printed) and `col`: 0 (X), 1 (O) or -1.
  int CellOwner(int row, int col) const;
  // Pieces in a column.
  int Height(int col) const { return heights_[col]; }
  // Plies played so far.
  int NumMoves() const { return num_moves_; }
  // The player with four in a row, or -1 when there is none.
  int Winner() const { return winner_; }
  // The stones of `player` (0 = X, 1 = O) as the bitboard described above: bit col * 7 + row,
  // row 0 at the bottom (for the solver, games/connect4/solver.h).
  uint64_t Stones(int player) const { return stones_[player]; }

 private:
  // True when the stones contain four in a row in any direction.
  static bool HasFour(uint64_t stones) {
    // Direction shifts: vertical 1, horizontal 7, diagonals 6 and 8.
    uint64_t m = stones & (stones >> 1);
    if (m & (m >> 2)) return true;
    m = stones & (stones >> kBitsPerColumn);
    if (m & (m >> (2 * kBitsPerColumn))) return true;
    m = stones & (stones >> (kBitsPerColumn - 1));
    if (m & (m >> (2 * (kBitsPerColumn - 1)))) return true;
    m = stones & (stones >> (kBitsPerColumn + 1));
    return (m & (m >> (2 * (kBitsPerColumn + 1)))) != 0;
  }

  uint64_t stones_[2] = {0, 0};
  uint64_t hash_ = 0;
  std::array<uint8_t, kColumns> heights_{};
  uint8_t num_moves_ = 0;
  int8_t winner_ = -1;
};

static_assert(RegistrableGame<ConnectFour>);
static_assert(std::is_trivially_copyable_v<ConnectFour>);
static_assert(sizeof(ConnectFour) <= 40);

namespace internal {
// Zobrist keys for Connect Four, indexed [player * 49 + bit]. The player to move follows from
// the number of pieces, so it needs no key of its own.
inline constexpr auto kConnectFourKeys =
    MakeZobristKeys<2 * ConnectFour::kColumns * ConnectFour::kBitsPerColumn>(0xC4C4'0000'0001ULL);
}  // namespace internal

inline void ConnectFour::Apply(int action) {
  ZF_DCHECK(IsLegal(action)) << "illegal connect4 action " << action;
  const int player = num_moves_ & 1;
  const int bit = action * kBitsPerColumn + heights_[action];
  stones_[player] |= uint64_t{1} << bit;
  hash_ ^= internal::kConnectFourKeys[player * kColumns * kBitsPerColumn + bit];
  ++heights_[action];
  ++num_moves_;
  if (HasFour(stones_[player])) winner_ = static_cast<int8_t>(player);
}

}  // namespace zf::games
