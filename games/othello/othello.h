// Othello (Reversi) on an N x N board, N = 4, 6 or 8 (8 is the standard game; 6 x 6 is solved:
// the second player wins 16-20 with perfect play, Feinstein 1993).
//
// Rules: Black (player 0, "X") moves first from the standard start: White on d4 and e5, Black on
// d5 and e4 (the four centre cells, row 1 the top row). A move puts a disc of the mover's colour
// on an empty cell such that, along at least one of the 8 directions, a contiguous line of the
// opponent's discs ends in one of the mover's; every such line is flipped to the mover's colour.
// A player with no such move must pass; a player with one may not. The game ends when neither
// player can move (full board included); the one with more discs wins, equal counts draw.
//
// Actions: the cell, row * N + col with row 0 the top row and col 0 column "a", then the pass,
// N * N. Text form: the column letter then the row number counted from the top ("d3" = 2 * N + 3),
// and "pass". ParseAction also accepts the plain number.
// A pass is legal exactly when the player to move has no other move and the game is not over.
//
// Encoding: 4 planes of N x N: [discs of the player to move, discs of the opponent, the cells
// where the player to move may put a disc, all ones].
// Symmetries: the 4 of the square that keep the start position: identity, rot180, transpose,
// antitranspose (the mirror images swap the colours of the centre).
//
// Representation: one 64-bit mask per colour (bit row * N + col), the legal placements of the
// player to move (cached by Apply, so IsTerminal and IsLegal are O(1)), and an incremental
// Zobrist hash. Move generation and flips go by shifting whole masks along the 8 directions
// with masks against wrapping around a row. Trivially copyable, 40 bytes.
//
// Thread-compatibility: thread-compatible as games/game.h says.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "games/game.h"

namespace zf::games {

class Othello {
 public:
  static constexpr int kMinSize = 4;
  static constexpr int kMaxSize = 8;
  static constexpr int kDefaultSize = 8;

  // The start position on an N x N board, Black to move.
  // Returns: InvalidArgument unless N is 4, 6 or 8.
  static absl::StatusOr<Othello> Create(int size = kDefaultSize);

  // Registration (games/game.h, RegistrableGame).
  static constexpr absl::string_view kFamily = "othello";
  static constexpr absl::string_view kSyntax = "othello[:N]";
  static constexpr absl::string_view kDescription =
      "Othello (Reversi) on N x N, N = 4, 6 or 8 (default 8)";
  static absl::StatusOr<Othello> FromParameters(std::optional<absl::string_view> params);
  // Self-play: alpha 1 for about 10 moves a position; temperature 1 for the first quarter of
  // the cells (16 plies on 8 x 8, 9 on 6 x 6).
  SelfPlayHints SelfPlayDefaults() const {
    return {.dirichlet_alpha = 1.0f, .temperature_moves = size_ * size_ / 4};
  }

  // "othello" for 8 x 8, else "othello:N".
  std::string Name() const;
  int Size() const { return size_; }
  int NumActions() const { return size_ * size_ + 1; }
  int PassAction() const { return size_ * size_; }
  // Every ply either fills a cell or is a pass followed by a placement: at most twice the cells
  // empty at the start.
  int MaxGameLength() const { return 2 * (size_ * size_ - 4); }
  int ToPlay() const { return to_play_; }
  bool IsTerminal() const { return terminal_; }
  // Requires IsTerminal().
  games::Returns Returns() const;
  // False for values outside [0, NumActions()), and every action of a finished game.
  bool IsLegal(int action) const;
  // The placements in increasing order, or the pass alone; empty when IsTerminal().
  void LegalActions(std::vector<int>* out) const;
  // Requires IsLegal(action) (ZF_DCHECK).
  void Apply(int action);
  uint64_t Hash() const { return hash_; }
  PlaneShape Shape() const { return {4, size_, size_}; }
  void Encode(uint8_t* planes) const;
  std::vector<Symmetry> Symmetries() const;
  std::string ToString() const;
  std::string ActionToString(int action) const;
  // "a1".."h8" (up to the board's size), "pass", or "0"..N*N; InvalidArgument otherwise.
  absl::StatusOr<int> ParseAction(absl::string_view text) const;

  // The owner of a cell: 0 (Black), 1 (White) or -1 (empty). Requires 0 <= cell < N * N.
  int CellOwner(int cell) const;
  // Discs of `player` (0 or 1) on the board.
  int Discs(int player) const;

 private:
  explicit Othello(int size);
  // Placements of `player` on the current board.
  uint64_t Moves(int player) const;
  // The discs a disc of `player` on `cell` flips.
  uint64_t Flips(int player, int cell) const;
  // Shifts every disc of `mask` one step in direction d (0..7), dropping those that leave the
  // board.
  uint64_t Shift(uint64_t mask, int d) const;
  // After a move: the next player's placements, a forced pass, or the end.
  void Settle();

  uint64_t discs_[2] = {0, 0};
  uint64_t legal_ = 0;  // placements of to_play_
  uint64_t hash_ = 0;
  uint8_t size_ = kDefaultSize;
  uint8_t to_play_ = 0;
  bool terminal_ = false;
};

static_assert(RegistrableGame<Othello>);
static_assert(std::is_trivially_copyable_v<Othello>);

}  // namespace zf::games
