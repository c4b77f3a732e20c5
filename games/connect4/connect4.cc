#include "games/connect4/connect4.h"

#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace zf::games {
namespace {

constexpr char kMarks[] = {'X', 'O'};

std::vector<Symmetry> BuildSymmetries() {
  std::vector<Symmetry> out(2);
  out[0].name = "identity";
  out[1].name = "mirror";
  for (int col = 0; col < ConnectFour::kColumns; ++col) {
    out[0].action_map.push_back(col);
    out[1].action_map.push_back(ConnectFour::kColumns - 1 - col);
  }
  for (int row = 0; row < ConnectFour::kRows; ++row) {
    for (int col = 0; col < ConnectFour::kColumns; ++col) {
      out[0].cell_map.push_back(row * ConnectFour::kColumns + col);
      out[1].cell_map.push_back(row * ConnectFour::kColumns + ConnectFour::kColumns - 1 - col);
    }
  }
  return out;
}

}  // namespace

games::Returns ConnectFour::Returns() const {
  ZF_DCHECK(IsTerminal());
  if (winner_ < 0) return {0.0f, 0.0f};
  return winner_ == 0 ? games::Returns{1.0f, -1.0f} : games::Returns{-1.0f, 1.0f};
}

void ConnectFour::LegalActions(std::vector<int>* out) const {
  out->clear();
  if (IsTerminal()) return;
  for (int col = 0; col < kColumns; ++col) {
    if (heights_[col] < kRows) out->push_back(col);
  }
}

int ConnectFour::CellOwner(int row, int col) const {
  ZF_DCHECK(row >= 0 && row < kRows && col >= 0 && col < kColumns) << row << "," << col;
  const int bit = col * kBitsPerColumn + (kRows - 1 - row);
  if ((stones_[0] >> bit) & 1) return 0;
  if ((stones_[1] >> bit) & 1) return 1;
  return -1;
}

void ConnectFour::Encode(uint8_t* planes) const {
  const uint64_t mine = stones_[ToPlay()];
  const uint64_t theirs = stones_[ToPlay() ^ 1];
  std::memset(planes + 2 * kCells, 1, kCells);
  for (int row = 0; row < kRows; ++row) {
    for (int col = 0; col < kColumns; ++col) {
      const int bit = col * kBitsPerColumn + (kRows - 1 - row);
      const int cell = row * kColumns + col;
      planes[cell] = (mine >> bit) & 1;
      planes[kCells + cell] = (theirs >> bit) & 1;
    }
  }
}

std::vector<Symmetry> ConnectFour::Symmetries() const {
  static const std::vector<Symmetry>* const kSymmetries =
      new std::vector<Symmetry>(BuildSymmetries());
  return *kSymmetries;
}

std::string ConnectFour::ToString() const {
  std::string out;
  for (int row = 0; row < kRows; ++row) {
    for (int col = 0; col < kColumns; ++col) {
      const int owner = CellOwner(row, col);
      out.push_back(owner < 0 ? '.' : kMarks[owner]);
      out.push_back(col + 1 < kColumns ? ' ' : '\n');
    }
  }
  for (int col = 0; col < kColumns; ++col) {
    absl::StrAppend(&out, col, col + 1 < kColumns ? " " : "\n");
  }
  if (winner_ >= 0) {
    absl::StrAppend(&out, std::string(1, kMarks[winner_]), " wins\n");
  } else if (IsTerminal()) {
    out += "draw\n";
  } else {
    absl::StrAppend(&out, std::string(1, kMarks[ToPlay()]), " to move\n");
  }
  return out;
}

std::string ConnectFour::ActionToString(int action) const {
  ZF_DCHECK(action >= 0 && action < kColumns) << action;
  return absl::StrCat(action);
}

absl::StatusOr<int> ConnectFour::ParseAction(absl::string_view text) const {
  int action = -1;
  if (absl::SimpleAtoi(text, &action) && action >= 0 && action < kColumns) return action;
  return absl::InvalidArgumentError(
      absl::StrCat("invalid connect4 action \"", text, "\": expected a column number in 0..6"));
}

absl::StatusOr<ConnectFour> ConnectFour::FromParameters(std::optional<absl::string_view> params) {
  if (params.has_value()) return absl::InvalidArgumentError("connect4 takes no parameters");
  return ConnectFour();
}

}  // namespace zf::games
