#include "games/tictactoe/tictactoe.h"

#include <array>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "games/grid_symmetry.h"
#include "games/zobrist.h"

namespace zf::games {
namespace {

// kStoneKeys[player * 9 + cell], then the side-to-move key.
constexpr auto kKeys = internal::MakeZobristKeys<2 * TicTacToe::kNumCells + 1>(0x7454'7454'0001ULL);
constexpr uint64_t kSideKey = kKeys[2 * TicTacToe::kNumCells];

constexpr std::array<uint16_t, 8> kLines = {
    0b000'000'111, 0b000'111'000, 0b111'000'000,  // rows
    0b001'001'001, 0b010'010'010, 0b100'100'100,  // columns
    0b100'010'001, 0b001'010'100,                 // diagonals
};

bool HasLine(uint16_t stones) {
  for (uint16_t line : kLines) {
    if ((stones & line) == line) return true;
  }
  return false;
}

std::vector<Symmetry> BuildSymmetries() {
  std::vector<Symmetry> out;
  for (GridTransform t : GridTransformsFor(TicTacToe::kSize, TicTacToe::kSize)) {
    Symmetry s;
    s.name = GridTransformName(t);
    s.cell_map = GridCellMap(t, TicTacToe::kSize, TicTacToe::kSize);
    s.action_map = s.cell_map;  // an action is its cell
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

games::Returns TicTacToe::Returns() const {
  ZF_DCHECK(IsTerminal());
  if (winner_ < 0) return {0.0f, 0.0f};
  return winner_ == 0 ? games::Returns{1.0f, -1.0f} : games::Returns{-1.0f, 1.0f};
}

bool TicTacToe::IsLegal(int action) const {
  if (action < 0 || action >= kNumCells || IsTerminal()) return false;
  return (((stones_[0] | stones_[1]) >> action) & 1) == 0;
}

void TicTacToe::LegalActions(std::vector<int>* out) const {
  out->clear();
  if (IsTerminal()) return;
  const uint16_t occupied = stones_[0] | stones_[1];
  for (int cell = 0; cell < kNumCells; ++cell) {
    if (((occupied >> cell) & 1) == 0) out->push_back(cell);
  }
}

void TicTacToe::Apply(int action) {
  ZF_DCHECK(IsLegal(action)) << "illegal tictactoe action " << action;
  const int player = to_play_;
  stones_[player] |= static_cast<uint16_t>(1u << action);
  hash_ ^= kKeys[player * kNumCells + action] ^ kSideKey;
  ++num_moves_;
  if (HasLine(stones_[player])) winner_ = static_cast<int8_t>(player);
  to_play_ ^= 1;
}

int TicTacToe::CellOwner(int cell) const {
  ZF_DCHECK(cell >= 0 && cell < kNumCells) << cell;
  if ((stones_[0] >> cell) & 1) return 0;
  if ((stones_[1] >> cell) & 1) return 1;
  return -1;
}

void TicTacToe::Encode(uint8_t* planes) const {
  const uint16_t mine = stones_[to_play_];
  const uint16_t theirs = stones_[to_play_ ^ 1];
  for (int cell = 0; cell < kNumCells; ++cell) {
    planes[cell] = (mine >> cell) & 1;
    planes[kNumCells + cell] = (theirs >> cell) & 1;
    planes[2 * kNumCells + cell] = 1;
  }
}

std::vector<Symmetry> TicTacToe::Symmetries() const {
  static const std::vector<Symmetry>* const kSymmetries =
      new std::vector<Symmetry>(BuildSymmetries());
  return *kSymmetries;
}

std::string TicTacToe::ToString() const {
  static constexpr char kMarks[] = {'X', 'O'};
  std::string out;
  for (int row = 0; row < kSize; ++row) {
    absl::StrAppend(&out, row + 1, " ");
    for (int col = 0; col < kSize; ++col) {
      const int owner = CellOwner(row * kSize + col);
      out.push_back(owner < 0 ? '.' : kMarks[owner]);
      if (col + 1 < kSize) out.push_back(' ');
    }
    out.push_back('\n');
  }
  out += "  a b c\n";
  if (winner_ >= 0) {
    absl::StrAppend(&out, std::string(1, kMarks[winner_]), " wins\n");
  } else if (IsTerminal()) {
    out += "draw\n";
  } else {
    absl::StrAppend(&out, std::string(1, kMarks[to_play_]), " to move\n");
  }
  return out;
}

std::string TicTacToe::ActionToString(int action) const {
  ZF_DCHECK(action >= 0 && action < kNumCells) << action;
  const char text[] = {static_cast<char>('a' + action % kSize),
                       static_cast<char>('1' + action / kSize), '\0'};
  return text;
}

absl::StatusOr<int> TicTacToe::ParseAction(absl::string_view text) const {
  if (text.size() == 2 && text[0] >= 'a' && text[0] < 'a' + kSize && text[1] >= '1' &&
      text[1] < '1' + kSize) {
    return (text[1] - '1') * kSize + (text[0] - 'a');
  }
  int action = -1;
  if (absl::SimpleAtoi(text, &action) && action >= 0 && action < kNumCells) return action;
  return absl::InvalidArgumentError(
      absl::StrCat("invalid tictactoe action \"", text,
                   "\": expected a column a-c and a row 1-3 (e.g. \"b2\") or a number in 0..8"));
}

absl::StatusOr<TicTacToe> TicTacToe::FromParameters(std::optional<absl::string_view> params) {
  if (params.has_value()) return absl::InvalidArgumentError("tictactoe takes no parameters");
  return TicTacToe();
}

}  // namespace zf::games
