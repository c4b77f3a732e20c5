// The game of Go on an N x N board, 5 <= N <= 19 (default 9 x 9, komi 7.5).
//
// Rules (as GNU Go plays them with --chinese-rules --positional-superko --forbid-suicide):
//  - Black (player 0) moves first; a move places a stone on an empty point or passes.
//  - A move captures the opponent's groups it leaves without liberties. A move that leaves its
//    own group without liberties and captures nothing (suicide) is illegal.
//  - Positional superko: a stone move may not recreate any earlier whole-board position (the
//    stones only, whoever is to move). A pass is always legal.
//  - The game ends after two passes in a row, or after MaxGameLength() = 2 * N * N plies (long
//    enough for any sensible game, short enough to bound random self-play; such a game is scored
//    as it stands).
//  - Area scoring: a player's score is their stones plus the empty points of every empty region
//    bordered only by their stones. White adds komi. The higher score wins; with an integral komi
//    equal scores are a draw (a fractional komi makes a draw impossible). Komi is a multiple of
//    0.5 with |komi| <= N * N.
//
// Actions: row * N + col for the point in row `row` (0 = the top row as printed) and column
// `col` (0 = the column 'A'), and N * N for pass. Text form: GTP vertices, the column letter
// A..T without I and the row number counted from the bottom (row 0 prints as N), e.g. "D4", and
// "pass". ParseAction accepts those in any case and the plain action number.
//
// Encoding: C = 2 * kHistory + 2 = 18 planes of N x N, row 0 the top row:
//   planes 2k and 2k + 1 (k = 0..7): the stones of the player to move and of the opponent in the
//     position k plies ago (k = 0 the current one; positions before the start are empty boards);
//   plane 16: all ones when Black is to move, zeros when White is (komi favours White);
//   plane 17: all ones (marks the board inside the network's zero padding).
// A finished game shows only its final position (planes 2..15 are zero): nothing is evaluated
// at a terminal position, and its outcome depends on the final board alone.
//
// Hash: exactly what Encode shows, plus the player to move and whether the game is over:
//   non-terminal: (BoardHash(now) ^ ToMoveKey) + sum over k = 1..7 of
//                 Mix(BoardHash(k plies ago) + k * 0x9E3779B97F4A7C15)   (mod 2^64),
//   terminal:     Mix(BoardHash(now) ^ ToMoveKey ^ TerminalKey),
// where BoardHash is the XOR of the Zobrist keys of the stones (the key positional superko
// uses; boards before the start are empty, BoardHash 0) and Mix is SplitMix64's finalizer (a
// bijection, so equal past boards at different distances do not cancel). The window shows the
// previous position, so simple ko is covered, and so is a pass (two equal consecutive boards).
// Superko constraints from positions more than 7 plies back are NOT in Hash: the conformance
// suite requires positions with equal encodings to hash equally, and evaluation caches key on
// what the network sees. Superko itself is exact: Apply and IsLegal check the complete list of
// earlier board hashes (64-bit Zobrist; a collision is vanishingly unlikely).
// Because the encoding of a non-terminal position includes its history, two move orders never
// give equal non-terminal encodings; terminal positions (final board only) do transpose.

// Symmetries: the 8 symmetries of the square (games/grid_symmetry.h) on board actions and plane
// cells; pass maps to pass.
//
// Representation (built for MCTS speed): a padded (N + 2)^2 board with a border ring; groups as
// circular stone lists with a root per stone; per root the pseudo-liberty count with the sum
// and sum of squares of the liberty points, so "in atari" (one distinct liberty) is the O(1)
// test count * sum_sq == sum^2. Captures walk the captured lists. The Zobrist board hash is
// updated incrementally; the last 8 positions are kept as stone bitsets in a ring for Encode;
// superko keeps the board hash of every distinct earlier position in a fixed-capacity array (a
// pass adds none: the board is unchanged), with a 1024-bit Bloom filter so most candidate moves
// skip the scan. Apply allocates nothing, LegalActions nothing beyond growing *out.
// Copy cost: the object has fixed capacity for 19 x 19 (15.6 KB), but copying copies only
// what is in use: the (N + 2)^2 points of this board size (20 bytes each: 2.4 KB for 9 x 9), the
// history ring (0.8 KB) and the superko hashes recorded so far (8 bytes per stone move).
//
// Thread-compatibility: thread-compatible as games/game.h says.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/logging.h"
#include "games/game.h"

namespace zf::games {

class Go {
 public:
  static constexpr int kMinSize = 5;
  static constexpr int kMaxSize = 19;
  static constexpr int kDefaultSize = 9;
  static constexpr float kDefaultKomi = 7.5f;
  static constexpr int kHistory = 8;  // positions in the encoding, the current one included
  static constexpr int kMaxPadded = (kMaxSize + 2) * (kMaxSize + 2);  // 441
  static constexpr int kMaxGameLengthCap = 2 * kMaxSize * kMaxSize;   // 722
  static constexpr int kWords = (kMaxSize * kMaxSize + 63) / 64;      // 6 words per bitset

  // The empty 9 x 9 board with komi 7.5, Black to move.
  Go();

  // The empty `size` x `size` board, Black to move.
  // Returns: InvalidArgument unless 5 <= size <= 19 and komi is a multiple of 0.5 with
  // |komi| <= size * size.
  static absl::StatusOr<Go> Create(int size, float komi = kDefaultKomi);

  Go(const Go& other) { CopyFrom(other); }
  Go& operator=(const Go& other) {
    if (this != &other) CopyFrom(other);
    return *this;
  }

  // Registration (games/game.h, RegistrableGame).
  static constexpr absl::string_view kFamily = "go";
  static constexpr absl::string_view kSyntax = "go[:N[:komi=K]]";
  static constexpr absl::string_view kDescription =
      "Go on N x N, 5 <= N <= 19 (default 9), area scoring, komi K (default 7.5)";
  static absl::StatusOr<Go> FromParameters(std::optional<absl::string_view> params);
  // Self-play: 30 plies at temperature 1; alpha 0.03 on 19 x 19 (AlphaGo Zero), scaled by the
  // board's area; the pass rule (SetSelfPlayPassRule).
  SelfPlayHints SelfPlayDefaults() const {
    return {.dirichlet_alpha = 0.03f * 361 / static_cast<float>(size_ * size_),
            .temperature_moves = 30,
            .restrict_pass = true};
  }

  // "go:9", or "go:9:komi=6.5" when the komi is not 7.5.
  std::string Name() const;
  int NumActions() const { return cells_ + 1; }
  int MaxGameLength() const { return 2 * cells_; }
  int ToPlay() const { return num_moves_ & 1; }
  bool IsTerminal() const { return passes_ >= 2 || num_moves_ >= 2 * cells_; }
  // Requires IsTerminal().
  games::Returns Returns() const;
  // False outside [0, NumActions()), for occupied points, suicide, superko, and for every
  // action of a finished game.
  bool IsLegal(int action) const;
  // Empty when IsTerminal().
  void LegalActions(std::vector<int>* out) const;
  // Requires IsLegal(action) (ZF_DCHECK).
  void Apply(int action);
  uint64_t Hash() const;
  PlaneShape Shape() const { return {2 * kHistory + 2, size_, size_}; }
  void Encode(uint8_t* planes) const;
  std::vector<Symmetry> Symmetries() const;
  // The board with GTP coordinates (X Black, O White, '.' empty), then the captures and who is
  // to move, or the area score and the result.
  std::string ToString() const;
  std::string ActionToString(int action) const;
  // A GTP vertex ("D4", "d4"), "pass" (any case) or the action number; InvalidArgument
  // otherwise.
  absl::StatusOr<int> ParseAction(absl::string_view text) const;

  int Size() const { return size_; }
  float Komi() const { return komi_; }
  int PassAction() const { return cells_; }
  // The stone at `row` (0 = top) and `col`: 0 (Black), 1 (White) or -1 (empty).
  int StoneAt(int row, int col) const {
    const int c = points_[Padded(row * size_ + col)].color;
    return c == kEmpty ? -1 : c;
  }
  // Area scores (stones + empty regions bordered only by that colour), without komi.
  std::array<int, 2> AreaScores() const;
  // Who owns each point by area scoring, from Black's (player 0's) side: +1 a Black stone or an
  // empty point of a region bordered only by Black, -1 the same for White, 0 an empty region
  // that borders both colours or neither. Writes N*N values, row-major (the cells of Encode's
  // planes and of Symmetries' cell maps). AreaScores counts its +1s and -1s.
  void Ownership(int8_t* cells) const;
  // The optional games::Game "final outcome" part (games/game.h): in a finished game, the
  // ownership above and Black's margin (ScoreForBlack), the targets of the network's ownership
  // and score heads.
  void FinalOwnership(int8_t* cells) const { Ownership(cells); }
  float FinalScore() const { return ScoreForBlack(); }
  // Black's area score minus White's, minus komi.
  float ScoreForBlack() const;
  int NumMoves() const { return num_moves_; }
  // Passes in a row at the end of the game so far.
  int ConsecutivePasses() const { return passes_; }

  // The self-play pass rule (off by default; search::SelfPlayOptions::restrict_pass turns it
  // on for self-play only). While on, passing is legal only in reply to a pass or when every
  // legal board move of the player to move fills one of its own eyes. An eye here is the
  // Monte-Carlo-Go "eye-like" point: empty, every orthogonal neighbour the player's stone or
  // the edge, and at most one diagonal neighbour the opponent's (none on the edge). Without it a
  // young network learns from komi that Black loses, Black's search finds every move equally
  // lost, and self-play collapses into Black passing from move one (measured: docs/
  // benchmarks.md). Copies keep the setting; Hash, Encode and Name ignore it.
  void SetSelfPlayPassRule(bool on) { restrict_pass_ = on; }
  bool SelfPlayPassRule() const { return restrict_pass_; }
  // Whether the board move at `cell` (0 <= cell < N*N) would fill an eye of `player`.
  bool FillsOwnEye(int cell, int player) const;
  // The Zobrist hash of the stones alone (the key of positional superko).
  uint64_t BoardHash() const { return board_hash_; }

 private:
  static constexpr uint8_t kEmpty = 2;
  static constexpr uint8_t kBorder = 3;

  struct Point {
    uint8_t color = kBorder;  // 0 Black, 1 White, kEmpty, kBorder
    uint8_t unused = 0;
    uint16_t next = 0;  // next stone of the group (circular)
    uint16_t root = 0;  // the group's representative stone
    uint16_t size = 0;  // at the root: stones in the group
    uint16_t libs = 0;  // at the root: pseudo-liberties (adjacencies to empty points)
    uint16_t unused2 = 0;
    uint32_t lib_sum = 0;     // at the root: sum of the pseudo-liberty points
    uint32_t lib_sum_sq = 0;  // at the root: sum of their squares
  };
  static_assert(sizeof(Point) == 20);

  struct Snapshot {
    std::array<uint64_t, kWords> stones[2] = {};
    uint64_t board_hash = 0;
  };

  Go(int size, float komi);
  void CopyFrom(const Go& other);

  int Padded(int cell) const { return (cell / size_ + 1) * stride_ + cell % size_ + 1; }
  int Cell(int p) const { return (p / stride_ - 1) * size_ + p % stride_ - 1; }
  bool InAtari(const Point& root) const {
    return uint64_t{root.libs} * root.lib_sum_sq == uint64_t{root.lib_sum} * root.lib_sum;
  }
  // Whether placing `player`'s stone at padded point p (empty) is legal: not suicide and no
  // superko repetition.
  bool IsLegalMove(int p, int player) const;
  bool SeenBefore(uint64_t board_hash) const;
  void AddLiberty(int root, int p);
  void RemoveLiberty(int root, int p);
  void Capture(int root);
  const Snapshot& History(int plies_ago) const {
    return history_[(history_head_ + kHistory - plies_ago) % kHistory];
  }

  int size_ = kDefaultSize;
  int stride_ = kDefaultSize + 2;
  int cells_ = kDefaultSize * kDefaultSize;
  float komi_ = kDefaultKomi;
  int num_moves_ = 0;
  int passes_ = 0;
  bool restrict_pass_ = false;
  int captures_[2] = {0, 0};  // stones captured by each player
  uint64_t board_hash_ = 0;
  int history_head_ = 0;  // history_[history_head_] is the current position
  int num_seen_ = 0;      // entries of seen_ in use
  std::array<uint64_t, 16> bloom_ = {};
  std::array<Snapshot, kHistory> history_ = {};
  std::array<Point, kMaxPadded> points_;
  std::array<uint64_t, kMaxGameLengthCap + 1> seen_;  // board hashes of earlier positions
};

static_assert(RegistrableGame<Go>);

}  // namespace zf::games
