// GTP vertices for the games whose moves are points on a board.
//
// GTP writes a point as a column letter (A..T, skipping I) and a row number counted from the
// bottom ("D4"), plus "pass". Which games speak GTP, and how (see docs/gtp.md):
//   go:N        the N x N board; actions as games/go/go.h numbers them; "pass" (A1 = bottom left).
//   tictactoe   a 3 x 3 board, A..C and 1..3 from the bottom: A3 is the top-left cell (the
//               game's own text "a1", action 0), C1 the bottom-right one ("c3", action 8).
//               There is no pass.
//   connect4    a 7 x 7 GTP board whose letters A..G are the columns (the game's "0".."6"); a
//               disc falls, so the row of a played vertex is ignored and a bare letter ("D") is
//               accepted too; VertexOf names the point where the disc lands (rows 1..6 from the
//               bottom), so a GUI draws it where it is. There is no pass.
//   othello:N   the N x N board, A..H and 1..N from the bottom (A8 on 8 x 8 is the game's own
//               "a1", action 0: the game counts rows from the top, GTP from the bottom);
//               "pass" when the player must pass.
//   hex:N       HexGui's and Benzene's (MoHex's) notation, the game's own: a lower-case column
//               letter a..m (i included) and the row counted from the TOP ("a1" is the top-left
//               cell, action 0; "c2" = N + 2); the swap is "swap-pieces" ("swap" is accepted
//               too). There is no pass. boardsize takes "N" or HexGui's "N N".
//   dotsboxes   not supported: its moves are edges, not points.
// Colours: GTP's black is player 0 (who moves first: Black, X), white is player 1.
//
// Thread-safety: free functions over values; thread-safe.
#pragma once

#include <string>
#include <type_traits>

#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "games/connect4/connect4.h"
#include "games/go/go.h"
#include "games/hex/hex.h"
#include "games/othello/othello.h"
#include "games/tictactoe/tictactoe.h"

namespace zf::gtp {

// Whether game type G speaks GTP.
template <typename G>
inline constexpr bool kSupportsGtp =
    std::is_same_v<G, games::Go> || std::is_same_v<G, games::TicTacToe> ||
    std::is_same_v<G, games::ConnectFour> || std::is_same_v<G, games::Othello> ||
    std::is_same_v<G, games::Hex>;

// Hex's swap as HexGui and Benzene write it.
inline constexpr char kHexSwapVertex[] = "swap-pieces";

// Whether game type G has a pass action (G::PassAction()).
template <typename G>
inline constexpr bool kHasPass = requires(const G& g) {
  g.PassAction();
};

// The GTP board size of the game: N for go:N, othello:N and hex:N, 3 for tictactoe, 7 for connect4.
template <typename G>
int BoardSize(const G& game) {
  static_assert(kSupportsGtp<G>);
  if constexpr (requires { game.Size(); }) {
    return game.Size();
  } else if constexpr (std::is_same_v<G, games::TicTacToe>) {
    return 3;
  } else {
    return games::ConnectFour::kColumns;
  }
}

namespace internal {

// GTP's column letters, I skipped.
inline char ColumnLetter(int col) { return static_cast<char>('A' + col + (col >= 8 ? 1 : 0)); }

// Parses "D4"-like text on an n x n board into (col, row from the bottom, 1-based); row 0 when
// `allow_bare_column` and the text is a letter only.
inline absl::StatusOr<std::pair<int, int>> ParsePoint(absl::string_view text, int n,
                                                      bool allow_bare_column) {
  const auto bad = [&] {
    return absl::InvalidArgumentError(absl::StrCat("invalid vertex \"", text, "\""));
  };
  if (text.empty() || !absl::ascii_isalpha(text[0])) return bad();
  const char letter = absl::ascii_toupper(text[0]);
  if (letter == 'I') return bad();
  const int col = letter - 'A' - (letter > 'I' ? 1 : 0);
  if (col < 0 || col >= n) return bad();
  if (text.size() == 1 && allow_bare_column) return std::make_pair(col, 0);
  int row = 0;
  if (text.size() < 2 || text.size() > 3 || !absl::ascii_isdigit(text[1]) ||
      !absl::SimpleAtoi(text.substr(1), &row) || row < 1 || row > n) {
    return bad();
  }
  return std::make_pair(col, row);
}

}  // namespace internal

// The action a vertex names in `game` (legality is not checked; the caller asks IsLegal).
// Returns: the action; InvalidArgument "invalid vertex \"Z9\"" for text that is no vertex of
// this board, or "pass" in a game without passes.
template <typename G>
absl::StatusOr<int> ParseVertex(const G& game, absl::string_view text) {
  static_assert(kSupportsGtp<G>);
  const int n = BoardSize(game);
  if (absl::EqualsIgnoreCase(text, "pass")) {
    if constexpr (kHasPass<G>) {
      return game.PassAction();
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("invalid vertex \"", text, "\": ", game.Name(), " has no pass"));
    }
  }
  if constexpr (std::is_same_v<G, games::Hex>) {
    // The game's own notation, which HexGui's is; only cells and the swap, not its numbers.
    if (absl::EqualsIgnoreCase(text, kHexSwapVertex) || absl::EqualsIgnoreCase(text, "swap")) {
      return game.SwapAction();
    }
    absl::StatusOr<int> cell = game.ParseAction(text);
    if (!cell.ok() || !absl::ascii_isalpha(text[0])) {
      return absl::InvalidArgumentError(absl::StrCat("invalid vertex \"", text, "\""));
    }
    return *cell;
  }
  const bool bare = std::is_same_v<G, games::ConnectFour>;
  absl::StatusOr<std::pair<int, int>> point = internal::ParsePoint(text, n, bare);
  if (!point.ok()) return point.status();
  const auto [col, row] = *point;
  if constexpr (std::is_same_v<G, games::ConnectFour>) {
    return col;
  } else {
    return (n - row) * n + col;  // row 0 of the action numbering is the top row
  }
}

// The vertex of `action` (a legal action of `game` for connect4, whose vertex depends on the
// column's height): "D4", "pass".
template <typename G>
std::string VertexOf(const G& game, int action) {
  static_assert(kSupportsGtp<G>);
  const int n = BoardSize(game);
  if constexpr (kHasPass<G>) {
    if (action == game.PassAction()) return "pass";
  }
  if constexpr (std::is_same_v<G, games::Hex>) {
    if (action == game.SwapAction()) return kHexSwapVertex;
    return game.ActionToString(action);
  } else if constexpr (std::is_same_v<G, games::ConnectFour>) {
    return absl::StrCat(std::string(1, internal::ColumnLetter(action)), game.Height(action) + 1);
  } else {
    return absl::StrCat(std::string(1, internal::ColumnLetter(action % n)), n - action / n);
  }
}

}  // namespace zf::gtp
