#include "games/dotsboxes/dotsboxes.h"

#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "games/grid_symmetry.h"
#include "games/name_parameters.h"
#include "games/zobrist.h"

namespace zf::games {
namespace {

// Keys are indexed by action number and box index; different board sizes share the table,
// which is fine because positions of different sizes are never compared.
constexpr int kLineKeyBase = 0;
constexpr int kBoxKeyBase = DotsAndBoxes::kMaxLines;                      // [player * 100 + box]
constexpr int kSideKeyIndex = kBoxKeyBase + 2 * DotsAndBoxes::kMaxBoxes;  // player 1 to move
constexpr auto kKeys = internal::MakeZobristKeys<kSideKeyIndex + 1>(0xD0D0'B0B0'0001ULL);

constexpr char kPlayerNames[] = {'A', 'B'};

// Parses "<r>-<c>" where both are 1-2 digit non-negative integers.
bool ParseCoordinates(absl::string_view text, int* r, int* c) {
  const size_t dash = text.find('-');
  if (dash == absl::string_view::npos || dash == 0 || dash + 1 == text.size()) return false;
  auto parse_digits = [](absl::string_view s, int* out) {
    if (s.empty() || s.size() > 2) return false;
    int value = 0;
    for (char ch : s) {
      if (ch < '0' || ch > '9') return false;
      value = value * 10 + (ch - '0');
    }
    *out = value;
    return true;
  };
  return parse_digits(text.substr(0, dash), r) && parse_digits(text.substr(dash + 1), c);
}

}  // namespace

DotsAndBoxes::DotsAndBoxes() : DotsAndBoxes(3, 3) {}

DotsAndBoxes::DotsAndBoxes(int rows, int cols)
    : num_lines_(static_cast<int16_t>(2 * rows * cols + rows + cols)),
      rows_(static_cast<int8_t>(rows)),
      cols_(static_cast<int8_t>(cols)) {
  ZF_CHECK(rows >= kMinSize && rows <= kMaxSize && cols >= kMinSize && cols <= kMaxSize)
      << rows << "x" << cols;
}

absl::StatusOr<DotsAndBoxes> DotsAndBoxes::Create(int rows, int cols) {
  if (rows < kMinSize || rows > kMaxSize || cols < kMinSize || cols > kMaxSize) {
    return absl::InvalidArgumentError(absl::StrCat("dots and boxes board of rows=", rows,
                                                   " x cols=", cols, " boxes: each must be in ",
                                                   kMinSize, "..", kMaxSize));
  }
  return DotsAndBoxes(rows, cols);
}

std::string DotsAndBoxes::Name() const { return absl::StrCat("dotsboxes:", rows(), "x", cols()); }

games::Returns DotsAndBoxes::Returns() const {
  ZF_DCHECK(IsTerminal());
  if (scores_[0] == scores_[1]) return {0.0f, 0.0f};
  return scores_[0] > scores_[1] ? games::Returns{1.0f, -1.0f} : games::Returns{-1.0f, 1.0f};
}

void DotsAndBoxes::LegalActions(std::vector<int>* out) const {
  out->clear();
  for (int word = 0; word * 64 < num_lines_; ++word) {
    uint64_t free = ~lines_[word];
    const int valid = num_lines_ - word * 64;
    if (valid < 64) free &= (uint64_t{1} << valid) - 1;
    while (free != 0) {
      out->push_back(word * 64 + __builtin_ctzll(free));
      free &= free - 1;
    }
  }
}

int DotsAndBoxes::HorizontalLine(int r, int c) const {
  ZF_DCHECK(r >= 0 && r <= rows_ && c >= 0 && c < cols_) << r << "," << c;
  return r * cols_ + c;
}

int DotsAndBoxes::VerticalLine(int r, int c) const {
  ZF_DCHECK(r >= 0 && r < rows_ && c >= 0 && c <= cols_) << r << "," << c;
  return NumHorizontalLines() + r * (cols_ + 1) + c;
}

int DotsAndBoxes::BoxOwner(int r, int c) const {
  ZF_DCHECK(r >= 0 && r < rows_ && c >= 0 && c < cols_) << r << "," << c;
  const int box = r * cols_ + c;
  if (TestBit(boxes_[0], box)) return 0;
  if (TestBit(boxes_[1], box)) return 1;
  return -1;
}

int DotsAndBoxes::ClaimIfComplete(int r, int c) {
  const int top = r * cols_ + c;
  const int left = NumHorizontalLines() + r * (cols_ + 1) + c;
  if (!TestBit(lines_, top) || !TestBit(lines_, top + cols_) || !TestBit(lines_, left) ||
      !TestBit(lines_, left + 1)) {
    return 0;
  }
  const int box = r * cols_ + c;
  boxes_[to_play_][box >> 6] |= uint64_t{1} << (box & 63);
  ++scores_[to_play_];
  hash_ ^= kKeys[kBoxKeyBase + to_play_ * kMaxBoxes + box];
  return 1;
}

void DotsAndBoxes::Apply(int action) {
  ZF_DCHECK(IsLegal(action)) << "illegal dotsboxes action " << action;
  lines_[action >> 6] |= uint64_t{1} << (action & 63);
  hash_ ^= kKeys[kLineKeyBase + action];
  ++lines_drawn_;
  // The new line is a side of at most two boxes; a box is complete exactly when its last side
  // is drawn, so only those two can change owner.
  int completed = 0;
  const int horizontal = NumHorizontalLines();
  if (action < horizontal) {
    const int r = action / cols_;
    const int c = action % cols_;
    if (r > 0) completed += ClaimIfComplete(r - 1, c);
    if (r < rows_) completed += ClaimIfComplete(r, c);
  } else {
    const int r = (action - horizontal) / (cols_ + 1);
    const int c = (action - horizontal) % (cols_ + 1);
    if (c > 0) completed += ClaimIfComplete(r, c - 1);
    if (c < cols_) completed += ClaimIfComplete(r, c);
  }
  if (completed == 0) {
    to_play_ ^= 1;
    hash_ ^= kKeys[kSideKeyIndex];
  }
}

std::pair<int, int> DotsAndBoxes::LineCell(int action) const {
  const int horizontal = NumHorizontalLines();
  if (action < horizontal) return {2 * (action / cols_), 2 * (action % cols_) + 1};
  const int v = action - horizontal;
  return {2 * (v / (cols_ + 1)) + 1, 2 * (v % (cols_ + 1))};
}

int DotsAndBoxes::LineAtCell(int row, int col) const {
  if (row % 2 == 0 && col % 2 == 1) return HorizontalLine(row / 2, col / 2);
  if (row % 2 == 1 && col % 2 == 0) return VerticalLine(row / 2, col / 2);
  ZF_CHECK(false) << "cell (" << row << ", " << col << ") is not a line";
  return -1;
}

void DotsAndBoxes::Encode(uint8_t* planes) const {
  const PlaneShape shape = Shape();
  const int width = shape.width;
  const int cells = shape.Cells();
  std::memset(planes, 0, 3 * cells);
  std::memset(planes + 3 * cells, 1, cells);
  for (int action = 0; action < num_lines_; ++action) {
    if (!TestBit(lines_, action)) continue;
    const auto [row, col] = LineCell(action);
    planes[row * width + col] = 1;
  }
  for (int r = 0; r < rows_; ++r) {
    for (int c = 0; c < cols_; ++c) {
      const int owner = BoxOwner(r, c);
      if (owner < 0) continue;
      const int plane = owner == to_play_ ? 1 : 2;
      planes[plane * cells + (2 * r + 1) * width + 2 * c + 1] = 1;
    }
  }
}

std::vector<Symmetry> DotsAndBoxes::Symmetries() const {
  const PlaneShape shape = Shape();
  std::vector<Symmetry> out;
  for (GridTransform t : GridTransformsFor(shape.height, shape.width)) {
    Symmetry s;
    s.name = GridTransformName(t);
    s.cell_map = GridCellMap(t, shape.height, shape.width);
    s.action_map.resize(num_lines_);
    for (int action = 0; action < num_lines_; ++action) {
      const auto [row, col] = LineCell(action);
      const auto [to_row, to_col] = TransformCell(t, shape.height, shape.width, row, col);
      s.action_map[action] = LineAtCell(to_row, to_col);
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::string DotsAndBoxes::ToString() const {
  std::string out;
  for (int r = 0; r <= rows_; ++r) {
    for (int c = 0; c < cols_; ++c) {
      out += TestBit(lines_, HorizontalLine(r, c)) ? "+---" : "+   ";
    }
    out += "+\n";
    if (r == rows_) break;
    for (int c = 0; c <= cols_; ++c) {
      out.push_back(TestBit(lines_, VerticalLine(r, c)) ? '|' : ' ');
      if (c == cols_) break;
      const int owner = BoxOwner(r, c);
      out += owner < 0 ? "   " : std::string{' ', kPlayerNames[owner], ' '};
    }
    out += "\n";
  }
  absl::StrAppend(&out, "A ", Score(0), " - B ", Score(1), ": ");
  if (!IsTerminal()) {
    absl::StrAppend(&out, std::string(1, kPlayerNames[to_play_]), " to move\n");
  } else if (scores_[0] == scores_[1]) {
    out += "draw\n";
  } else {
    absl::StrAppend(&out, std::string(1, kPlayerNames[scores_[0] > scores_[1] ? 0 : 1]), " wins\n");
  }
  return out;
}

std::string DotsAndBoxes::ActionToString(int action) const {
  ZF_DCHECK(IsLegalIndex(action)) << action;
  const int horizontal = NumHorizontalLines();
  if (action < horizontal) return absl::StrCat("h", action / cols_, "-", action % cols_);
  const int v = action - horizontal;
  return absl::StrCat("v", v / (cols_ + 1), "-", v % (cols_ + 1));
}

absl::StatusOr<int> DotsAndBoxes::ParseAction(absl::string_view text) const {
  int r = -1;
  int c = -1;
  if (!text.empty() && (text[0] == 'h' || text[0] == 'v') &&
      ParseCoordinates(text.substr(1), &r, &c)) {
    if (text[0] == 'h' && r <= rows_ && c < cols_) return HorizontalLine(r, c);
    if (text[0] == 'v' && r < rows_ && c <= cols_) return VerticalLine(r, c);
  } else {
    int action = -1;
    if (absl::SimpleAtoi(text, &action) && IsLegalIndex(action)) return action;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("invalid ", Name(), " action \"", text, "\": expected h<r>-<c> (r in 0..",
                   rows(), ", c in 0..", cols() - 1, "), v<r>-<c> (r in 0..", rows() - 1,
                   ", c in 0..", cols(), ") or a number in 0..", NumActions() - 1));
}

absl::StatusOr<DotsAndBoxes> DotsAndBoxes::FromParameters(std::optional<absl::string_view> params) {
  int rows = 3;
  int cols = 3;
  if (params.has_value()) {
    const size_t x = params->find('x');
    if (x == absl::string_view::npos || !ParseSmallInt(params->substr(0, x), &rows) ||
        !ParseSmallInt(params->substr(x + 1), &cols)) {
      return absl::InvalidArgumentError(
          "expected dotsboxes:RxC with R rows and C columns of boxes, e.g. dotsboxes:5x5");
    }
  }
  const auto out_of_range = [](int v) { return v < kMinSize || v > kMaxSize; };
  if (out_of_range(rows) || out_of_range(cols)) {
    return absl::InvalidArgumentError(absl::StrCat(out_of_range(rows) ? "rows" : "cols",
                                                   " must be in ", kMinSize, "..", kMaxSize));
  }
  return Create(rows, cols);
}

}  // namespace zf::games
