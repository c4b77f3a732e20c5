#include "games/hex/hex.h"

#include <algorithm>
#include <numeric>

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

constexpr int kKeyCells = Hex::kMaxSize * Hex::kMaxSize;
// kKeys[player * 169 + cell], then the side-to-move key.
constexpr auto kKeys = internal::MakeZobristKeys<2 * kKeyCells + 1>(0x4E70'0000'0001ULL);
constexpr uint64_t kSideKey = kKeys[2 * kKeyCells];

// The six neighbours of a cell on the rhombus, as (row step, column step).
constexpr int kNeighbours[6][2] = {{-1, 0}, {-1, 1}, {0, -1}, {0, 1}, {1, -1}, {1, 0}};

std::vector<Symmetry> BuildSymmetries(int n) {
  std::vector<Symmetry> out;
  for (GridTransform t : {GridTransform::kIdentity, GridTransform::kRot180}) {
    Symmetry s;
    s.name = GridTransformName(t);
    s.cell_map = GridCellMap(t, n, n);
    s.action_map = s.cell_map;
    s.action_map.push_back(n * n);  // the swap is its own image
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

absl::StatusOr<Hex> Hex::Create(int size, bool swap_rule) {
  if (size < kMinSize || size > kMaxSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("hex board size ", size, " must be in ", kMinSize, "..", kMaxSize));
  }
  return Hex(size, swap_rule);
}

absl::StatusOr<Hex> Hex::FromParameters(std::optional<absl::string_view> params) {
  int size = kDefaultSize;
  bool swap = false;
  if (params.has_value()) {
    const size_t colon = params->find(':');
    const bool size_ok = ParseSmallInt(params->substr(0, colon), &size);
    if (colon != absl::string_view::npos) swap = params->substr(colon + 1) == "swap";
    if (!size_ok || (colon != absl::string_view::npos && !swap)) {
      return absl::InvalidArgumentError("expected hex:N or hex:N:swap, e.g. hex:7:swap");
    }
  }
  return Create(size, swap);
}

Hex::Hex(int size, bool swap_rule) : size_(static_cast<uint8_t>(size)), swap_rule_(swap_rule) {
  std::iota(parent_.begin(), parent_.end(), uint8_t{0});
}

SelfPlayHints Hex::SelfPlayDefaults() const {
  const float cells = static_cast<float>(size_ * size_);
  return {.dirichlet_alpha = std::max(0.1f, 0.03f * 361 / cells),
          .temperature_moves = size_ * size_ / 6};
}

std::string Hex::Name() const { return absl::StrCat("hex:", size_, swap_rule_ ? ":swap" : ""); }

games::Returns Hex::Returns() const {
  ZF_DCHECK(IsTerminal());
  return winner_ == 0 ? games::Returns{1.0f, -1.0f} : games::Returns{-1.0f, 1.0f};
}

bool Hex::Occupied(int cell) const {
  const uint64_t bit = uint64_t{1} << (cell % 64);
  return ((stones_[0][cell / 64] | stones_[1][cell / 64]) & bit) != 0;
}

bool Hex::IsLegal(int action) const {
  if (action < 0 || action >= NumActions() || IsTerminal()) return false;
  if (action == SwapAction()) return swap_rule_ && moves_ == 1;
  return !Occupied(action);
}

void Hex::LegalActions(std::vector<int>* out) const {
  out->clear();
  if (IsTerminal()) return;
  for (int cell = 0; cell < size_ * size_; ++cell) {
    if (!Occupied(cell)) out->push_back(cell);
  }
  if (swap_rule_ && moves_ == 1) out->push_back(SwapAction());
}

int Hex::Find(int node) {
  while (parent_[node] != node) {
    parent_[node] = parent_[parent_[node]];  // path halving
    node = parent_[node];
  }
  return node;
}

void Hex::Union(int a, int b) {
  a = Find(a);
  b = Find(b);
  if (a != b) parent_[a] = static_cast<uint8_t>(b);
}

void Hex::Place(int player, int cell) {
  stones_[player][cell / 64] |= uint64_t{1} << (cell % 64);
  hash_ ^= kKeys[player * kKeyCells + cell];
  const int row = cell / size_;
  const int col = cell % size_;
  for (const auto& step : kNeighbours) {
    const int r = row + step[0];
    const int c = col + step[1];
    if (r < 0 || r >= size_ || c < 0 || c >= size_) continue;
    const int next = r * size_ + c;
    if ((stones_[player][next / 64] >> (next % 64)) & 1) Union(cell, next);
  }
  if (player == 0) {
    if (row == 0) Union(cell, kTop);
    if (row == size_ - 1) Union(cell, kBottom);
    if (Find(kTop) == Find(kBottom)) winner_ = 0;
  } else {
    if (col == 0) Union(cell, kLeft);
    if (col == size_ - 1) Union(cell, kRight);
    if (Find(kLeft) == Find(kRight)) winner_ = 1;
  }
}

void Hex::Apply(int action) {
  ZF_DCHECK(IsLegal(action)) << "illegal hex action " << action;
  if (action == SwapAction()) {
    // The one stone on the board is Black's first: White takes its mirror image instead.
    int first = 0;
    while (!Occupied(first)) ++first;
    stones_ = {};
    hash_ = 0;
    std::iota(parent_.begin(), parent_.end(), uint8_t{0});
    Place(1, (first % size_) * size_ + first / size_);
    // The reset hash lost the side key while White is still to move; the toggle below then
    // leaves it off for Black, as after any White move.
    hash_ ^= kSideKey;
  } else {
    Place(to_play_, action);
  }
  ++moves_;
  to_play_ ^= 1;
  hash_ ^= kSideKey;
}

int Hex::CellOwner(int cell) const {
  ZF_DCHECK(cell >= 0 && cell < size_ * size_) << cell;
  const uint64_t bit = uint64_t{1} << (cell % 64);
  if (stones_[0][cell / 64] & bit) return 0;
  if (stones_[1][cell / 64] & bit) return 1;
  return -1;
}

void Hex::Encode(uint8_t* planes) const {
  const int cells = size_ * size_;
  const uint8_t black_to_move = to_play_ == 0 ? 1 : 0;
  const uint8_t swap_legal = IsLegal(SwapAction()) ? 1 : 0;
  for (int cell = 0; cell < cells; ++cell) {
    const int owner = CellOwner(cell);
    planes[cell] = owner == to_play_ ? 1 : 0;
    planes[cells + cell] = owner == (to_play_ ^ 1) ? 1 : 0;
    planes[2 * cells + cell] = black_to_move;
    planes[3 * cells + cell] = swap_legal;
    planes[4 * cells + cell] = 1;
  }
}

std::vector<Symmetry> Hex::Symmetries() const {
  static const std::array<const std::vector<Symmetry>*, kMaxSize + 1> kSymmetries = [] {
    std::array<const std::vector<Symmetry>*, kMaxSize + 1> all = {};
    for (int n = kMinSize; n <= kMaxSize; ++n)
      all[n] = new std::vector<Symmetry>(BuildSymmetries(n));
    return all;
  }();
  return *kSymmetries[size_];
}

std::string Hex::ToString() const {
  static constexpr char kMarks[] = {'X', 'O'};
  std::string out = "   ";
  for (int col = 0; col < size_; ++col) absl::StrAppend(&out, " ", std::string(1, 'a' + col));
  out.push_back('\n');
  for (int row = 0; row < size_; ++row) {
    absl::StrAppend(&out, row + 1 < 10 ? " " : "", row + 1, std::string(row + 1, ' '));
    for (int col = 0; col < size_; ++col) {
      const int owner = CellOwner(row * size_ + col);
      out.push_back(' ');
      out.push_back(owner < 0 ? '.' : kMarks[owner]);
    }
    out.push_back('\n');
  }
  if (IsTerminal()) {
    absl::StrAppend(&out, winner_ == 0 ? "X wins (top to bottom)" : "O wins (left to right)", "\n");
  } else {
    absl::StrAppend(&out, std::string(1, kMarks[to_play_]), " to move",
                    IsLegal(SwapAction()) ? " (or swap)" : "", "\n");
  }
  return out;
}

std::string Hex::ActionToString(int action) const {
  ZF_DCHECK(action >= 0 && action < NumActions()) << action;
  if (action == SwapAction()) return "swap";
  return absl::StrCat(std::string(1, 'a' + action % size_), action / size_ + 1);
}

absl::StatusOr<int> Hex::ParseAction(absl::string_view text) const {
  if (absl::EqualsIgnoreCase(text, "swap")) return SwapAction();
  if (text.size() >= 2 && text.size() <= 3 && absl::ascii_isalpha(text[0])) {
    const int col = absl::ascii_tolower(static_cast<unsigned char>(text[0])) - 'a';
    int row = 0;
    if (col >= 0 && col < size_ && ParseSmallInt(text.substr(1), &row) && row >= 1 &&
        row <= size_) {
      return (row - 1) * size_ + col;
    }
  }
  int action = -1;
  if (absl::SimpleAtoi(text, &action) && action >= 0 && action < NumActions()) return action;
  return absl::InvalidArgumentError(absl::StrCat(
      "invalid ", Name(), " action \"", text, "\": expected a column a-",
      std::string(1, static_cast<char>('a' + size_ - 1)), " and a row 1-", static_cast<int>(size_),
      " (e.g. \"c2\"), \"swap\", or a number in 0..", NumActions() - 1));
}

}  // namespace zf::games
