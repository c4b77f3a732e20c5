#include "games/template/my_game.h"

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "games/zobrist.h"

namespace zf::games {
namespace {

// Zobrist keys: one per (player, cell), then the side-to-move key. Pick a seed of your own.
constexpr auto kKeys = internal::MakeZobristKeys<2 * MyGame::kCells + 1>(0x7E37'0000'0001ULL);
constexpr uint64_t kSideKey = kKeys[2 * MyGame::kCells];

std::vector<Symmetry> BuildSymmetries() {
  std::vector<Symmetry> out(2);
  out[0].name = "identity";
  out[1].name = "mirror";
  for (int cell = 0; cell < MyGame::kCells; ++cell) {
    out[0].action_map.push_back(cell);
    out[0].cell_map.push_back(cell);
    out[1].action_map.push_back(MyGame::kCells - 1 - cell);
    out[1].cell_map.push_back(MyGame::kCells - 1 - cell);
  }
  return out;
}

}  // namespace

games::Returns MyGame::Returns() const {
  ZF_DCHECK(IsTerminal());
  // The player who filled the last cell (the one not to move now) wins.
  return to_play_ == 1 ? games::Returns{1.0f, -1.0f} : games::Returns{-1.0f, 1.0f};
}

bool MyGame::IsLegal(int action) const {
  if (action < 0 || action >= kCells || IsTerminal()) return false;
  return (((stones_[0] | stones_[1]) >> action) & 1) == 0;
}

void MyGame::LegalActions(std::vector<int>* out) const {
  out->clear();
  for (int cell = 0; cell < kCells; ++cell) {
    if (IsLegal(cell)) out->push_back(cell);
  }
}

void MyGame::Apply(int action) {
  ZF_DCHECK(IsLegal(action)) << "illegal mygame action " << action;
  stones_[to_play_] |= static_cast<uint8_t>(1u << action);
  hash_ ^= kKeys[to_play_ * kCells + action] ^ kSideKey;
  ++filled_;
  to_play_ ^= 1;
}

void MyGame::Encode(uint8_t* planes) const {
  for (int cell = 0; cell < kCells; ++cell) {
    planes[cell] = (stones_[to_play_] >> cell) & 1;
    planes[kCells + cell] = (stones_[to_play_ ^ 1] >> cell) & 1;
    planes[2 * kCells + cell] = 1;
  }
}

std::vector<Symmetry> MyGame::Symmetries() const {
  static const std::vector<Symmetry>* const kSymmetries =
      new std::vector<Symmetry>(BuildSymmetries());
  return *kSymmetries;
}

std::string MyGame::ToString() const {
  std::string out;
  for (int cell = 0; cell < kCells; ++cell) {
    const bool x = (stones_[0] >> cell) & 1;
    const bool o = (stones_[1] >> cell) & 1;
    out.push_back(x ? 'X' : o ? 'O' : '.');
  }
  absl::StrAppend(&out, "\n",
                  IsTerminal() ? (to_play_ == 1 ? "X wins" : "O wins")
                               : (to_play_ == 0 ? "X to move" : "O to move"),
                  "\n");
  return out;
}

std::string MyGame::ActionToString(int action) const { return absl::StrCat(action); }

absl::StatusOr<int> MyGame::ParseAction(absl::string_view text) const {
  int action = -1;
  if (absl::SimpleAtoi(text, &action) && action >= 0 && action < kCells) return action;
  return absl::InvalidArgumentError(absl::StrCat("invalid mygame action \"", text,
                                                 "\": expected a cell number in 0..", kCells - 1));
}

absl::StatusOr<MyGame> MyGame::FromParameters(std::optional<absl::string_view> params) {
  if (params.has_value()) return absl::InvalidArgumentError("mygame takes no parameters");
  return MyGame();
}

}  // namespace zf::games
