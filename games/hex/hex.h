// Hex on an N x N rhombus, N = 3..13 (11 is the classic board), with the swap rule as an option.
//
// Rules: Black (player 0, "X") moves first; players alternately put a stone on an empty cell.
// Black wins by connecting the top and bottom edges with a chain of its stones, White (player 1,
// "O") by connecting the left and right edges. Cell (r, c) touches (r-1, c), (r-1, c+1),
// (r, c-1), (r, c+1), (r+1, c-1) and (r+1, c). A full board always has exactly one winner, so
// there are no draws. With the swap rule ("hex:N:swap"), White's first move may instead be the
// swap: Black's stone on (r, c) is taken off and a White stone put on (c, r) (its mirror image
// across the long diagonal, which serves White's edges as the original served Black's); then
// Black moves. Without it the first player wins with perfect play (Nash's strategy stealing).
//
// Actions: the cell, row * N + col with row 0 the top row and col 0 column "a", then the swap,
// N * N (legal only as White's first move, and only with the swap rule). Text form: the column
// letter then the row number counted from the top ("c2" = N + 2), and "swap". ParseAction also
// accepts the plain number.
//
// Encoding: 5 planes of N x N: [stones of the player to move, stones of the opponent, all ones
// when the player to move is Black (who connects top and bottom), all ones when the swap is
// legal, all ones]. The goals differ by colour, so the network is told whose they are.
// Symmetries: identity and rot180 (both keep each colour's edges; the mirror images would swap
// them).
//
// Representation: one 192-bit set per colour, a union-find over the cells and four virtual edge
// nodes (merged as stones are placed, so a win is found in near-constant time per move), and
// an incremental Zobrist hash. Trivially copyable, about 240 bytes.
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
#include "games/game.h"

namespace zf::games {

class Hex {
 public:
  static constexpr int kMinSize = 3;
  static constexpr int kMaxSize = 13;
  static constexpr int kDefaultSize = 11;

  // The empty N x N board, Black to move.
  // Returns: InvalidArgument unless kMinSize <= N <= kMaxSize.
  static absl::StatusOr<Hex> Create(int size = kDefaultSize, bool swap_rule = false);

  // Registration (games/game.h, RegistrableGame).
  static constexpr absl::string_view kFamily = "hex";
  static constexpr absl::string_view kSyntax = "hex[:N[:swap]]";
  static constexpr absl::string_view kDescription =
      "Hex on N x N, 3 <= N <= 13 (default 11), optionally with the swap rule";
  static absl::StatusOr<Hex> FromParameters(std::optional<absl::string_view> params);
  // Self-play: alpha scaled as for Go (0.03 on 361 points) with the board's area, at least
  // 0.1; temperature 1 for the first sixth of the cells.
  SelfPlayHints SelfPlayDefaults() const;

  // "hex:N", and "hex:N:swap" with the swap rule.
  std::string Name() const;
  int Size() const { return size_; }
  bool SwapRule() const { return swap_rule_; }
  int NumActions() const { return size_ * size_ + 1; }
  int SwapAction() const { return size_ * size_; }
  int MaxGameLength() const { return size_ * size_ + (swap_rule_ ? 1 : 0); }
  int ToPlay() const { return to_play_; }
  bool IsTerminal() const { return winner_ >= 0; }
  // Requires IsTerminal().
  games::Returns Returns() const;
  bool IsLegal(int action) const;
  void LegalActions(std::vector<int>* out) const;
  // Requires IsLegal(action) (ZF_DCHECK).
  void Apply(int action);
  uint64_t Hash() const { return hash_; }
  PlaneShape Shape() const { return {5, size_, size_}; }
  void Encode(uint8_t* planes) const;
  std::vector<Symmetry> Symmetries() const;
  std::string ToString() const;
  std::string ActionToString(int action) const;
  // "a1".."m13" (up to the board's size), "swap", or "0"..N*N; InvalidArgument otherwise.
  absl::StatusOr<int> ParseAction(absl::string_view text) const;

  // The owner of a cell: 0 (Black), 1 (White) or -1 (empty). Requires 0 <= cell < N * N.
  int CellOwner(int cell) const;
  // The player who connected their edges, or -1.
  int Winner() const { return winner_; }

 private:
  static constexpr int kMaxCells = kMaxSize * kMaxSize;  // 169
  static constexpr int kWords = (kMaxCells + 63) / 64;   // 3
  // Union-find nodes: the cells, then top, bottom, left, right.
  static constexpr int kTop = kMaxCells;
  static constexpr int kBottom = kMaxCells + 1;
  static constexpr int kLeft = kMaxCells + 2;
  static constexpr int kRight = kMaxCells + 3;

  Hex(int size, bool swap_rule);
  bool Occupied(int cell) const;
  void Place(int player, int cell);
  void Remove(int player, int cell);
  int Find(int node);
  void Union(int a, int b);

  std::array<std::array<uint64_t, kWords>, 2> stones_ = {};
  std::array<uint8_t, kMaxCells + 4> parent_ = {};  // union-find; node i starts as its own root
  uint64_t hash_ = 0;
  uint8_t size_ = kDefaultSize;
  uint8_t to_play_ = 0;
  uint8_t moves_ = 0;
  int8_t winner_ = -1;
  bool swap_rule_ = false;
};

static_assert(RegistrableGame<Hex>);
static_assert(std::is_trivially_copyable_v<Hex>);

}  // namespace zf::games
