#include "games/othello/othello.h"

#include <array>
#include <bit>
#include <cctype>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "games/grid_symmetry.h"
#include "games/name_parameters.h"
#include "games/zobrist.h"

namespace zf::games {
namespace {

constexpr int kMaxCells = Othello::kMaxSize * Othello::kMaxSize;
// kKeys[player * 64 + cell], then the side-to-move key.
constexpr auto kKeys = internal::MakeZobristKeys<2 * kMaxCells + 1>(0x07E1'1000'0001ULL);
constexpr uint64_t kSideKey = kKeys[2 * kMaxCells];

// The 8 directions as (row step, column step).
constexpr std::array<std::array<int, 2>, 8> kDirections = {
    {{-1, -1}, {-1, 0}, {-1, 1}, {0, -1}, {0, 1}, {1, -1}, {1, 0}, {1, 1}}};

// Per board size: the board's cells, and every cell but the first or the last column (a shift
// that moves a disc one column right or left must not wrap it into the neighbouring row).
struct Geometry {
  uint64_t board = 0;
  uint64_t not_first_column = 0;
  uint64_t not_last_column = 0;
};

constexpr Geometry MakeGeometry(int n) {
  Geometry g;
  for (int row = 0; row < n; ++row) {
    for (int col = 0; col < n; ++col) {
      const uint64_t bit = uint64_t{1} << (row * n + col);
      g.board |= bit;
      if (col != 0) g.not_first_column |= bit;
      if (col != n - 1) g.not_last_column |= bit;
    }
  }
  return g;
}

constexpr std::array<Geometry, Othello::kMaxSize + 1> kGeometry = {
    Geometry{}, Geometry{},      Geometry{}, Geometry{},     MakeGeometry(4),
    Geometry{}, MakeGeometry(6), Geometry{}, MakeGeometry(8)};

std::vector<Symmetry> BuildSymmetries(int n) {
  std::vector<Symmetry> out;
  for (GridTransform t : {GridTransform::kIdentity, GridTransform::kRot180,
                          GridTransform::kTranspose, GridTransform::kAntiTranspose}) {
    Symmetry s;
    s.name = GridTransformName(t);
    s.cell_map = GridCellMap(t, n, n);
    s.action_map = s.cell_map;
    s.action_map.push_back(n * n);  // the pass is its own image
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

absl::StatusOr<Othello> Othello::Create(int size) {
  if (size != 4 && size != 6 && size != 8) {
    return absl::InvalidArgumentError(
        absl::StrCat("othello board size ", size, ": expected 4, 6 or 8"));
  }
  return Othello(size);
}

Othello::Othello(int size) : size_(static_cast<uint8_t>(size)) {
  const int h = size / 2;
  auto place = [this](int player, int row, int col) {
    const int cell = row * size_ + col;
    discs_[player] |= uint64_t{1} << cell;
    hash_ ^= kKeys[player * kMaxCells + cell];
  };
  place(1, h - 1, h - 1);  // White d4
  place(1, h, h);          // White e5
  place(0, h, h - 1);      // Black d5
  place(0, h - 1, h);      // Black e4
  legal_ = Moves(0);
}

std::string Othello::Name() const {
  return size_ == kDefaultSize ? "othello" : absl::StrCat("othello:", size_);
}

games::Returns Othello::Returns() const {
  ZF_DCHECK(IsTerminal());
  const int black = Discs(0);
  const int white = Discs(1);
  if (black == white) return {0.0f, 0.0f};
  return black > white ? games::Returns{1.0f, -1.0f} : games::Returns{-1.0f, 1.0f};
}

bool Othello::IsLegal(int action) const {
  if (action < 0 || action >= NumActions() || terminal_) return false;
  if (action == PassAction()) return legal_ == 0;
  return ((legal_ >> action) & 1) != 0;
}

void Othello::LegalActions(std::vector<int>* out) const {
  out->clear();
  if (terminal_) return;
  if (legal_ == 0) {
    out->push_back(PassAction());
    return;
  }
  for (uint64_t m = legal_; m != 0; m &= m - 1) out->push_back(std::countr_zero(m));
}

uint64_t Othello::Shift(uint64_t mask, int d) const {
  const Geometry& g = kGeometry[size_];
  const int dr = kDirections[d][0];
  const int dc = kDirections[d][1];
  const int s = dr * size_ + dc;
  uint64_t out = s > 0 ? mask << s : mask >> -s;
  if (dc == 1) out &= g.not_first_column;
  if (dc == -1) out &= g.not_last_column;
  return out & g.board;
}

uint64_t Othello::Moves(int player) const {
  const uint64_t own = discs_[player];
  const uint64_t opponent = discs_[player ^ 1];
  const uint64_t empty = kGeometry[size_].board & ~(own | opponent);
  uint64_t moves = 0;
  for (int d = 0; d < 8; ++d) {
    // Opponent discs reachable from one of ours along d: runs of up to size - 2.
    uint64_t run = Shift(own, d) & opponent;
    for (int i = 0; i < size_ - 3; ++i) run |= Shift(run, d) & opponent;
    moves |= Shift(run, d) & empty;
  }
  return moves;
}

uint64_t Othello::Flips(int player, int cell) const {
  const uint64_t own = discs_[player];
  const uint64_t opponent = discs_[player ^ 1];
  uint64_t flips = 0;
  for (int d = 0; d < 8; ++d) {
    uint64_t line = 0;
    uint64_t x = Shift(uint64_t{1} << cell, d);
    while ((x & opponent) != 0) {
      line |= x;
      x = Shift(x, d);
    }
    if ((x & own) != 0) flips |= line;
  }
  return flips;
}

void Othello::Apply(int action) {
  ZF_DCHECK(IsLegal(action)) << "illegal othello action " << action;
  const int player = to_play_;
  if (action != PassAction()) {
    const uint64_t flips = Flips(player, action);
    discs_[player] |= flips | (uint64_t{1} << action);
    discs_[player ^ 1] &= ~flips;
    hash_ ^= kKeys[player * kMaxCells + action];
    for (uint64_t m = flips; m != 0; m &= m - 1) {
      const int cell = std::countr_zero(m);
      hash_ ^= kKeys[player * kMaxCells + cell] ^ kKeys[(player ^ 1) * kMaxCells + cell];
    }
  }
  to_play_ ^= 1;
  hash_ ^= kSideKey;
  Settle();
}

void Othello::Settle() {
  legal_ = Moves(to_play_);
  // The player to move must pass, unless the opponent cannot move either: then the game is over.
  if (legal_ == 0 && Moves(to_play_ ^ 1) == 0) terminal_ = true;
}

int Othello::CellOwner(int cell) const {
  ZF_DCHECK(cell >= 0 && cell < size_ * size_) << cell;
  if ((discs_[0] >> cell) & 1) return 0;
  if ((discs_[1] >> cell) & 1) return 1;
  return -1;
}

int Othello::Discs(int player) const { return std::popcount(discs_[player]); }

void Othello::Encode(uint8_t* planes) const {
  const int cells = size_ * size_;
  const uint64_t mine = discs_[to_play_];
  const uint64_t theirs = discs_[to_play_ ^ 1];
  for (int cell = 0; cell < cells; ++cell) {
    planes[cell] = (mine >> cell) & 1;
    planes[cells + cell] = (theirs >> cell) & 1;
    planes[2 * cells + cell] = (legal_ >> cell) & 1;
    planes[3 * cells + cell] = 1;
  }
}

std::vector<Symmetry> Othello::Symmetries() const {
  static const std::array<const std::vector<Symmetry>*, 3> kSymmetries = {
      new std::vector<Symmetry>(BuildSymmetries(4)), new std::vector<Symmetry>(BuildSymmetries(6)),
      new std::vector<Symmetry>(BuildSymmetries(8))};
  return *kSymmetries[size_ / 2 - 2];
}

std::string Othello::ToString() const {
  static constexpr char kMarks[] = {'X', 'O'};
  std::string out = "  ";
  for (int col = 0; col < size_; ++col) absl::StrAppend(&out, " ", std::string(1, 'a' + col));
  out.push_back('\n');
  for (int row = 0; row < size_; ++row) {
    absl::StrAppend(&out, row + 1 < 10 ? " " : "", row + 1);
    for (int col = 0; col < size_; ++col) {
      const int owner = CellOwner(row * size_ + col);
      out.push_back(' ');
      out.push_back(owner < 0 ? '.' : kMarks[owner]);
    }
    out.push_back('\n');
  }
  const int black = Discs(0);
  const int white = Discs(1);
  if (terminal_) {
    absl::StrAppend(&out,
                    black == white  ? "draw"
                    : black > white ? "X wins"
                                    : "O wins",
                    " ", black, "-", white, "\n");
  } else {
    absl::StrAppend(&out, std::string(1, kMarks[to_play_]), legal_ == 0 ? " must pass" : " to move",
                    " (X ", black, ", O ", white, ")\n");
  }
  return out;
}

std::string Othello::ActionToString(int action) const {
  ZF_DCHECK(action >= 0 && action < NumActions()) << action;
  if (action == PassAction()) return "pass";
  return absl::StrCat(std::string(1, 'a' + action % size_), action / size_ + 1);
}

absl::StatusOr<int> Othello::ParseAction(absl::string_view text) const {
  if (absl::EqualsIgnoreCase(text, "pass")) return PassAction();
  if (text.size() == 2) {
    const char letter = absl::ascii_tolower(static_cast<unsigned char>(text[0]));
    const int col = letter - 'a';
    const int row = text[1] - '1';
    if (col >= 0 && col < size_ && row >= 0 && row < size_) return row * size_ + col;
  }
  int action = -1;
  if (absl::SimpleAtoi(text, &action) && action >= 0 && action < NumActions()) return action;
  const char last_column = static_cast<char>('a' + size_ - 1);
  return absl::InvalidArgumentError(
      absl::StrCat("invalid ", Name(), " action \"", text, "\": expected a column a-",
                   std::string(1, last_column), " and a row 1-", static_cast<int>(size_),
                   " (e.g. \"d3\"), \"pass\", or a number in 0..", NumActions() - 1));
}

absl::StatusOr<Othello> Othello::FromParameters(std::optional<absl::string_view> params) {
  int size = kDefaultSize;
  if (params.has_value() && !ParseSmallInt(*params, &size)) {
    return absl::InvalidArgumentError("expected othello:N with N = 4, 6 or 8, e.g. othello:6");
  }
  return Create(size);
}

}  // namespace zf::games
