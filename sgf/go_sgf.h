// Go games as SGF (FF[4], GM[1]) and back: what `zf games export --sgf`, `zf match --sgf`,
// `zf analyze --sgf`, `zf position --sgf` and GTP's `loadsgf` use.
//
// Writing: the root node holds FF[4] GM[1] CA[UTF-8] AP[zerofleet] SZ KM RU[Chinese] (area
// scoring, positional superko, no suicide: games/go/go.h) RE PB PW and optionally DT, GN and a
// game comment C; then one node per move, B[..] or W[..] ("" = pass, as FF[4] writes it), with
// an optional comment (the search's value and top moves). Points are two letters, column then
// row, "a" the left column and the top row (so zerofleet's action row * N + col is
// letters[col] letters[row]).
//
// Reading (the first game tree's main line): SZ (a square board 5..19; 19 when absent), KM
// (0 when absent, as FF[4] says; a multiple of 0.5), GM (1 if present), then the moves B/W.
// Passes are "" and, on boards up to 19, "tt". Not read: setup stones (AB, AW, AE) and PL:
// zerofleet's Go starts from the empty board with Black to move, so these are errors, as are
// two moves of one colour in a row, moves that are illegal (occupied, suicide, superko), and
// moves after the game ended (two passes). Every error names the property, its value and the
// move number (1 = the first move) or "the root node", with the SGF line.
//
// Thread-safety: free functions over values; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "games/go/go.h"

namespace zf::sgf {

struct GoGameRecord {
  games::Go start;                    // the empty board: size and komi
  std::vector<int> moves;             // actions, in order
  std::vector<std::string> comments;  // empty, or one per move ("" = none): written as C[]
  std::string black, white;           // PB, PW
  std::string result;                 // RE: "B+3.5", "W+R", "0" (a draw), "Void", "" unknown
  std::string date;                   // DT, e.g. "2026-12-05"; "" to leave out
  std::string name;                   // GN; "" to leave out
  std::string game_comment;           // C on the root; "" to leave out
};

// The result text of a finished Go game: "B+R"/"W+R" for a resignation by `resigning_player`,
// "Void" for a game cut at the move cap, else the area score ("B+3.5", "W+0.5", "0").
std::string GoResult(const games::Go& final_position, bool resigned, int resigning_player,
                     bool truncated);

// The SGF point of a Go action ("" for pass).
std::string GoPoint(const games::Go& game, int action);

// One game as an SGF collection of one game tree, ending in a newline.
std::string WriteGoGame(const GoGameRecord& game);

// Writes WriteGoGame(game) to `path` through a temporary file renamed over it (a reader never
// sees half a game). Returns: OK; Internal naming the file on an I/O error.
absl::Status WriteGoGameFile(const std::string& path, const GoGameRecord& game);

// `text` as a file name: characters other than letters, digits, '.', '-' and '_' become '_'
// ("v12" stays, "mcts:200" becomes "mcts_200"); "game" for an empty text.
std::string FileNameOf(absl::string_view text);

// The first game tree of `text` as a game (see above).
// Returns: the game (comments, PB, PW, RE, DT, GN read where present); InvalidArgument for bad
// SGF or a game zerofleet cannot replay, naming the property and position.
absl::StatusOr<GoGameRecord> ReadGoGame(absl::string_view text);

// The position after the first `moves` moves of `game` (all of them when moves < 0).
// Returns: the position; InvalidArgument when `moves` is more than the game has.
absl::StatusOr<games::Go> GoPositionAfter(const GoGameRecord& game, int moves);

}  // namespace zf::sgf
