// Dots and Boxes on a board of R x C boxes (1 <= R, C <= 10; 3 x 3 by default).
//
// Rules: A (player 0) moves first. A move draws one undrawn line between two neighbouring dots.
// A player who completes the fourth side of one or two boxes owns them and moves again;
// otherwise the turn passes. The game ends when every line is drawn; more boxes wins, equal
// counts draw. A game lasts exactly NumActions() = 2RC + R + C plies.
//
// Actions (fixed; used verbatim by the command line), with H = (R + 1) * C horizontal lines:
//   horizontal line (r, c), r in 0..R, c in 0..C-1, joining dots (r, c) and (r, c+1): r * C + c
//   vertical line (r, c),   r in 0..R-1, c in 0..C, joining dots (r, c) and (r+1, c):
//                                                                H + r * (C + 1) + c
// Dots are (row, col) with row 0 at the top. Box (r, c) has sides horizontal (r, c) and
// (r+1, c), vertical (r, c) and (r, c+1).
// Text form: "h<r>-<c>" or "v<r>-<c>" (e.g. "h0-1", "v2-3"); ParseAction also accepts the plain
// number.
//
// Encoding: 4 planes on a (2R+1) x (2C+1) grid where dot (r, c) is cell (2r, 2c), horizontal
// line (r, c) is (2r, 2c+1), vertical line (r, c) is (2r+1, 2c) and box (r, c) is (2r+1, 2c+1):
// [lines drawn, boxes owned by the player to move, boxes owned by the opponent, all ones].
// Dot cells are 0 in the first three planes.
// Symmetries: grid permutations identity, mirror (left-right), flip (top-bottom), rot180, and
// when R == C also transpose, antitranspose, rot90, rot270 (games/grid_symmetry.h).
//
// Representation: fixed-size bitsets sized for the largest board (no heap), so the value is
// trivially copyable (about 80 bytes) and a copy is a memcpy. The Zobrist hash covers lines,
// box owners and the player to move.
//
// Thread-compatibility: thread-compatible as games/game.h says.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "games/game.h"

namespace zf::games {

class DotsAndBoxes {
 public:
  static constexpr int kMinSize = 1;
  static constexpr int kMaxSize = 10;
  static constexpr int kMaxLines = 2 * kMaxSize * kMaxSize + 2 * kMaxSize;  // 220
  static constexpr int kMaxBoxes = kMaxSize * kMaxSize;                     // 100

  // The empty 3 x 3 board, A to move.
  DotsAndBoxes();

  // The empty board of `rows` x `cols` boxes, A to move.
  // Returns: InvalidArgument unless 1 <= rows, cols <= 10 (the message names both values).
  static absl::StatusOr<DotsAndBoxes> Create(int rows, int cols);

  // Registration (games/game.h, RegistrableGame).
  static constexpr absl::string_view kFamily = "dotsboxes";
  static constexpr absl::string_view kSyntax = "dotsboxes[:RxC]";
  static constexpr absl::string_view kDescription =
      "Dots and Boxes with R x C boxes, 1 <= R,C <= 10 (default 3x3)";
  static absl::StatusOr<DotsAndBoxes> FromParameters(std::optional<absl::string_view> params);

  std::string Name() const;  // "dotsboxes:RxC"
  int NumActions() const { return num_lines_; }
  int MaxGameLength() const { return num_lines_; }
  int ToPlay() const { return to_play_; }
  bool IsTerminal() const { return lines_drawn_ == num_lines_; }
  // Requires IsTerminal().
  games::Returns Returns() const;
  // False outside [0, NumActions()), for drawn lines, and (hence) for a finished game.
  bool IsLegal(int action) const {
    return static_cast<unsigned>(action) < static_cast<unsigned>(num_lines_) &&
           !TestBit(lines_, action);
  }
  // Empty when IsTerminal().
  void LegalActions(std::vector<int>* out) const;
  // Requires IsLegal(action) (ZF_DCHECK).
  void Apply(int action);
  uint64_t Hash() const { return hash_; }
  PlaneShape Shape() const { return {4, 2 * rows_ + 1, 2 * cols_ + 1}; }
  void Encode(uint8_t* planes) const;
  std::vector<Symmetry> Symmetries() const;
  // Dots ('+'), drawn lines ("---" and '|'), box owners ('A' or 'B'), then the score and who is
  // to move or how the game ended.
  std::string ToString() const;
  std::string ActionToString(int action) const;
  // "h<r>-<c>", "v<r>-<c>" or the plain number; InvalidArgument (naming the text) when it is
  // none of those or out of range for this board.
  absl::StatusOr<int> ParseAction(absl::string_view text) const;

  int rows() const { return rows_; }
  int cols() const { return cols_; }
  int NumHorizontalLines() const { return (rows_ + 1) * cols_; }
  // Action numbers of lines; require the coordinates to be in range (ZF_DCHECK).
  int HorizontalLine(int r, int c) const;
  int VerticalLine(int r, int c) const;
  bool IsDrawn(int action) const { return IsLegalIndex(action) && TestBit(lines_, action); }
  // Owner of box (r, c): 0 (A), 1 (B) or -1 (not completed).
  int BoxOwner(int r, int c) const;
  // Boxes owned by `player` (0 or 1).
  int Score(int player) const { return scores_[player]; }

 private:
  DotsAndBoxes(int rows, int cols);

  template <size_t N>
  static bool TestBit(const std::array<uint64_t, N>& bits, int i) {
    return (bits[i >> 6] >> (i & 63)) & 1;
  }
  bool IsLegalIndex(int action) const {
    return static_cast<unsigned>(action) < static_cast<unsigned>(num_lines_);
  }
  // Gives box (r, c) to the player to move if all four of its sides are drawn; returns 1 if so.
  int ClaimIfComplete(int r, int c);
  // The grid cell (row, col) of a line on the (2R+1) x (2C+1) encoding grid, and back.
  std::pair<int, int> LineCell(int action) const;
  int LineAtCell(int row, int col) const;

  std::array<uint64_t, (kMaxLines + 63) / 64> lines_{};
  std::array<std::array<uint64_t, (kMaxBoxes + 63) / 64>, 2> boxes_{};  // [player][word]
  uint64_t hash_ = 0;
  int16_t num_lines_ = 0;
  int16_t lines_drawn_ = 0;
  int8_t rows_ = 0;
  int8_t cols_ = 0;
  uint8_t to_play_ = 0;
  std::array<uint8_t, 2> scores_{};
};

static_assert(RegistrableGame<DotsAndBoxes>);
static_assert(std::is_trivially_copyable_v<DotsAndBoxes>);

}  // namespace zf::games
