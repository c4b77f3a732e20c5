#include "games/go/go.h"

#include <cmath>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "games/grid_symmetry.h"
#include "games/name_parameters.h"
#include "games/zobrist.h"

namespace zf::games {
namespace {

constexpr char kColumnLetters[] = "ABCDEFGHJKLMNOPQRST";  // GTP skips I
constexpr char kMarks[] = {'X', 'O'};

// Stone keys indexed [color * kMaxPadded + padded point]; the padded numbering depends on the
// board size, which is fine: hashes are only compared within one board size.
inline constexpr auto kStoneKeys = internal::MakeZobristKeys<2 * Go::kMaxPadded>(0x60'0000'0001ULL);
inline constexpr auto kMiscKeys = internal::MakeZobristKeys<2>(0x60'0000'0002ULL);
constexpr uint64_t kWhiteToMoveKey = 0;  // index into kMiscKeys
constexpr uint64_t kTerminalKey = 1;

// A bijective 64-bit mixer (SplitMix64's finalizer) so history hashes do not cancel.
uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

bool KomiIsValid(int size, float komi) {
  const float doubled = komi * 2.0f;
  return std::isfinite(komi) && std::fabs(komi) <= static_cast<float>(size * size) &&
         doubled == std::floor(doubled);
}

}  // namespace

Go::Go() : Go(kDefaultSize, kDefaultKomi) {}

Go::Go(int size, float komi) : size_(size), stride_(size + 2), cells_(size * size), komi_(komi) {
  for (int p = 0; p < stride_ * stride_; ++p) points_[p] = Point();
  for (int cell = 0; cell < cells_; ++cell) {
    Point& point = points_[Padded(cell)];
    point.color = kEmpty;
  }
  seen_[0] = 0;  // the empty board
  num_seen_ = 1;
  bloom_[0] |= 1;
}

absl::StatusOr<Go> Go::Create(int size, float komi) {
  if (size < kMinSize || size > kMaxSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("go board size ", size, " must be in ", kMinSize, "..", kMaxSize));
  }
  if (!KomiIsValid(size, komi)) {
    return absl::InvalidArgumentError(
        absl::StrCat("go komi ", komi, " must be a multiple of 0.5 with |komi| <= ", size * size));
  }
  return Go(size, komi);
}

void Go::CopyFrom(const Go& other) {
  size_ = other.size_;
  stride_ = other.stride_;
  cells_ = other.cells_;
  komi_ = other.komi_;
  num_moves_ = other.num_moves_;
  passes_ = other.passes_;
  restrict_pass_ = other.restrict_pass_;
  captures_[0] = other.captures_[0];
  captures_[1] = other.captures_[1];
  board_hash_ = other.board_hash_;
  history_head_ = other.history_head_;
  num_seen_ = other.num_seen_;
  bloom_ = other.bloom_;
  history_ = other.history_;
  std::memcpy(points_.data(), other.points_.data(), sizeof(Point) * stride_ * stride_);
  std::memcpy(seen_.data(), other.seen_.data(), sizeof(uint64_t) * num_seen_);
}

std::string Go::Name() const {
  if (komi_ == kDefaultKomi) return absl::StrCat("go:", size_);
  return absl::StrCat("go:", size_, ":komi=", komi_);
}

bool Go::SeenBefore(uint64_t board_hash) const {
  const uint64_t bit = board_hash & 1023;
  if (((bloom_[bit >> 6] >> (bit & 63)) & 1) == 0) return false;
  for (int i = 0; i < num_seen_; ++i) {
    if (seen_[i] == board_hash) return true;
  }
  return false;
}

bool Go::IsLegalMove(int p, int player) const {
  const int opponent = player ^ 1;
  const int neighbors[4] = {p - stride_, p - 1, p + 1, p + stride_};
  bool has_liberty = false;
  // Hash after the move: the stone, minus the captured groups (each counted once).
  uint64_t hash = board_hash_ ^ kStoneKeys[player * kMaxPadded + p];
  int captured_roots[4];
  int num_captured = 0;
  for (int q : neighbors) {
    const Point& point = points_[q];
    if (point.color == kEmpty) {
      has_liberty = true;
    } else if (point.color == player) {
      const Point& root = points_[point.root];
      if (!InAtari(root)) has_liberty = true;  // it keeps a liberty other than p
    } else if (point.color == opponent) {
      const Point& root = points_[point.root];
      if (InAtari(root)) {
        bool counted = false;
        for (int i = 0; i < num_captured; ++i) counted |= captured_roots[i] == point.root;
        if (!counted) {
          captured_roots[num_captured++] = point.root;
          has_liberty = true;
          int s = point.root;
          do {
            hash ^= kStoneKeys[opponent * kMaxPadded + s];
            s = points_[s].next;
          } while (s != point.root);
        }
      }
    }
  }
  if (!has_liberty) return false;  // suicide
  return !SeenBefore(hash);
}

bool Go::FillsOwnEye(int cell, int player) const {
  const int p = Padded(cell);
  if (points_[p].color != kEmpty) return false;
  for (int q : {p - stride_, p + stride_, p - 1, p + 1}) {
    const uint8_t c = points_[q].color;
    if (c != player && c != kBorder) return false;
  }
  int opponent = 0;
  bool edge = false;
  for (int q : {p - stride_ - 1, p - stride_ + 1, p + stride_ - 1, p + stride_ + 1}) {
    const uint8_t c = points_[q].color;
    if (c == kBorder) edge = true;
    if (c == 1 - player) ++opponent;
  }
  return opponent == 0 || (!edge && opponent == 1);
}

bool Go::IsLegal(int action) const {
  if (static_cast<unsigned>(action) > static_cast<unsigned>(cells_) || IsTerminal()) return false;
  if (action == cells_) {
    if (!restrict_pass_ || passes_ > 0) return true;
    const int player = ToPlay();
    for (int cell = 0; cell < cells_; ++cell) {
      const int p = Padded(cell);
      if (points_[p].color == kEmpty && !FillsOwnEye(cell, player) && IsLegalMove(p, player)) {
        return false;
      }
    }
    return true;
  }
  const int p = Padded(action);
  return points_[p].color == kEmpty && IsLegalMove(p, ToPlay());
}

void Go::LegalActions(std::vector<int>* out) const {
  out->clear();
  if (IsTerminal()) return;
  const int player = ToPlay();
  bool pass_legal = !restrict_pass_ || passes_ > 0;  // else: only eye fills are left
  bool only_eye_fills = true;
  for (int cell = 0; cell < cells_; ++cell) {
    const int p = Padded(cell);
    if (points_[p].color == kEmpty && IsLegalMove(p, player)) {
      out->push_back(cell);
      if (!pass_legal && only_eye_fills && !FillsOwnEye(cell, player)) only_eye_fills = false;
    }
  }
  if (pass_legal || only_eye_fills) out->push_back(cells_);
}

void Go::AddLiberty(int root, int p) {
  Point& r = points_[root];
  ++r.libs;
  r.lib_sum += p;
  r.lib_sum_sq += static_cast<uint32_t>(p * p);
}

void Go::RemoveLiberty(int root, int p) {
  Point& r = points_[root];
  --r.libs;
  r.lib_sum -= p;
  r.lib_sum_sq -= static_cast<uint32_t>(p * p);
}

void Go::Capture(int root) {
  const int color = points_[root].color;
  const int capturer = color ^ 1;
  int s = root;
  do {
    const int next = points_[s].next;
    points_[s].color = kEmpty;
    board_hash_ ^= kStoneKeys[color * kMaxPadded + s];
    const int cell = Cell(s);
    history_[history_head_].stones[color][cell >> 6] &= ~(uint64_t{1} << (cell & 63));
    s = next;
  } while (s != root);
  // Second pass: the freed points become liberties of the capturer's adjacent groups (one
  // pseudo-liberty per adjacency).
  s = root;
  do {
    const int neighbors[4] = {s - stride_, s - 1, s + 1, s + stride_};
    for (int q : neighbors) {
      if (points_[q].color == capturer) AddLiberty(points_[q].root, s);
    }
    s = points_[s].next;
  } while (s != root);
  captures_[capturer] += points_[root].size;
}

void Go::Apply(int action) {
  ZF_DCHECK(IsLegal(action)) << "illegal go action " << action << "\n" << ToString();
  const int player = ToPlay();
  ++num_moves_;
  // The new position enters the history ring as a copy of the current one.
  const Snapshot current = history_[history_head_];
  history_head_ = (history_head_ + 1) % kHistory;
  history_[history_head_] = current;
  if (action == cells_) {
    ++passes_;
    return;
  }
  passes_ = 0;
  const int opponent = player ^ 1;
  const int p = Padded(action);
  Point& stone = points_[p];
  stone.color = static_cast<uint8_t>(player);
  stone.next = static_cast<uint16_t>(p);
  stone.root = static_cast<uint16_t>(p);
  stone.size = 1;
  stone.libs = 0;
  stone.lib_sum = 0;
  stone.lib_sum_sq = 0;
  board_hash_ ^= kStoneKeys[player * kMaxPadded + p];
  history_[history_head_].stones[player][action >> 6] |= uint64_t{1} << (action & 63);

  const int neighbors[4] = {p - stride_, p - 1, p + 1, p + stride_};
  for (int q : neighbors) {
    const int color = points_[q].color;
    if (color == kEmpty) {
      AddLiberty(p, q);
    } else if (color < 2) {
      RemoveLiberty(points_[q].root, p);
    }
  }
  // Merge with friendly neighbours, the smaller group into the larger.
  for (int q : neighbors) {
    if (points_[q].color != player) continue;
    int big = points_[q].root;
    int small = points_[p].root;
    if (big == small) continue;
    if (points_[big].size < points_[small].size) std::swap(big, small);
    int s = small;
    do {
      points_[s].root = static_cast<uint16_t>(big);
      s = points_[s].next;
    } while (s != small);
    std::swap(points_[big].next, points_[small].next);  // splice the two circular lists
    Point& b = points_[big];
    const Point& sm = points_[small];
    b.size += sm.size;
    b.libs += sm.libs;
    b.lib_sum += sm.lib_sum;
    b.lib_sum_sq += sm.lib_sum_sq;
  }
  for (int q : neighbors) {
    if (points_[q].color == opponent && points_[points_[q].root].libs == 0) {
      Capture(points_[q].root);
    }
  }
  history_[history_head_].board_hash = board_hash_;
  ZF_DCHECK(num_seen_ < static_cast<int>(seen_.size()));
  seen_[num_seen_++] = board_hash_;
  const uint64_t bit = board_hash_ & 1023;
  bloom_[bit >> 6] |= uint64_t{1} << (bit & 63);
}

uint64_t Go::Hash() const {
  const uint64_t to_move = ToPlay() == 1 ? kMiscKeys[kWhiteToMoveKey] : 0;
  if (IsTerminal()) return Mix(board_hash_ ^ to_move ^ kMiscKeys[kTerminalKey]);
  uint64_t hash = board_hash_ ^ to_move;
  for (int k = 1; k < kHistory; ++k) {
    hash += Mix(History(k).board_hash + static_cast<uint64_t>(k) * 0x9E3779B97F4A7C15ULL);
  }
  return hash;
}

void Go::Ownership(int8_t* cells) const {
  std::array<bool, kMaxPadded> visited{};
  std::array<uint16_t, kMaxPadded> stack;
  std::array<uint16_t, kMaxPadded> region;  // the cells of the region being filled
  for (int cell = 0; cell < cells_; ++cell) {
    const int p = Padded(cell);
    const int color = points_[p].color;
    if (color < 2) {
      cells[cell] = color == 0 ? 1 : -1;
      continue;
    }
    if (visited[p]) continue;
    // Flood-fill the empty region, noting which colours border it.
    int size = 0;
    bool borders[2] = {false, false};
    int top = 0;
    stack[top++] = static_cast<uint16_t>(p);
    visited[p] = true;
    while (top > 0) {
      const int s = stack[--top];
      region[size++] = static_cast<uint16_t>(s);
      const int neighbors[4] = {s - stride_, s - 1, s + 1, s + stride_};
      for (int q : neighbors) {
        const int c = points_[q].color;
        if (c < 2) {
          borders[c] = true;
        } else if (c == kEmpty && !visited[q]) {
          visited[q] = true;
          stack[top++] = static_cast<uint16_t>(q);
        }
      }
    }
    const int8_t owner = borders[0] == borders[1] ? 0 : (borders[0] ? 1 : -1);
    for (int k = 0; k < size; ++k) {
      cells[Cell(region[k])] = owner;
    }
  }
}

std::array<int, 2> Go::AreaScores() const {
  std::array<int8_t, kMaxSize * kMaxSize> owner;
  Ownership(owner.data());
  std::array<int, 2> scores = {0, 0};
  for (int cell = 0; cell < cells_; ++cell) {
    if (owner[cell] != 0) ++scores[owner[cell] > 0 ? 0 : 1];
  }
  return scores;
}

float Go::ScoreForBlack() const {
  const std::array<int, 2> scores = AreaScores();
  return static_cast<float>(scores[0] - scores[1]) - komi_;
}

games::Returns Go::Returns() const {
  ZF_DCHECK(IsTerminal());
  const float score = ScoreForBlack();
  if (score > 0) return {1.0f, -1.0f};
  if (score < 0) return {-1.0f, 1.0f};
  return {0.0f, 0.0f};
}

void Go::Encode(uint8_t* planes) const {
  const int player = ToPlay();
  const int cells = cells_;
  std::memset(planes, 0, static_cast<size_t>(2 * kHistory) * cells);
  const int steps = IsTerminal() ? 1 : kHistory;
  for (int k = 0; k < steps; ++k) {
    const Snapshot& snapshot = History(k);
    uint8_t* mine = planes + (2 * k) * cells;
    uint8_t* theirs = mine + cells;
    for (int w = 0; w < (cells + 63) / 64; ++w) {
      for (int color = 0; color < 2; ++color) {
        uint64_t bits = snapshot.stones[color][w];
        uint8_t* out = color == player ? mine : theirs;
        while (bits != 0) {
          out[w * 64 + __builtin_ctzll(bits)] = 1;
          bits &= bits - 1;
        }
      }
    }
  }
  std::memset(planes + 2 * kHistory * cells, player == 0 ? 1 : 0, cells);
  std::memset(planes + (2 * kHistory + 1) * cells, 1, cells);
}

std::vector<Symmetry> Go::Symmetries() const {
  std::vector<Symmetry> out;
  for (GridTransform t : GridTransformsFor(size_, size_)) {
    Symmetry s;
    s.name = GridTransformName(t);
    s.cell_map = GridCellMap(t, size_, size_);
    s.action_map = s.cell_map;
    s.action_map.push_back(cells_);
    out.push_back(std::move(s));
  }
  return out;
}

std::string Go::ToString() const {
  std::string letters = "   ";
  for (int col = 0; col < size_; ++col) {
    absl::StrAppend(&letters, std::string(1, kColumnLetters[col]), col + 1 < size_ ? " " : "\n");
  }
  std::string out = letters;
  for (int row = 0; row < size_; ++row) {
    const int number = size_ - row;
    absl::StrAppend(&out, number < 10 ? " " : "", number, " ");
    for (int col = 0; col < size_; ++col) {
      const int stone = StoneAt(row, col);
      out.push_back(stone < 0 ? '.' : kMarks[stone]);
      out.push_back(' ');
    }
    absl::StrAppend(&out, number, "\n");
  }
  out += letters;
  absl::StrAppend(&out, "captures: X ", captures_[0], ", O ", captures_[1], "; komi ", komi_,
                  "; move ", num_moves_, "\n");
  if (IsTerminal()) {
    const std::array<int, 2> scores = AreaScores();
    const float score = ScoreForBlack();
    absl::StrAppend(&out, "area X ", scores[0], ", O ", scores[1], ": ",
                    score > 0   ? absl::StrCat("X wins by ", score)
                    : score < 0 ? absl::StrCat("O wins by ", -score)
                                : std::string("draw"),
                    "\n");
  } else {
    absl::StrAppend(&out, std::string(1, kMarks[ToPlay()]), " to move",
                    passes_ > 0 ? " (the last move was a pass)" : "", "\n");
  }
  return out;
}

std::string Go::ActionToString(int action) const {
  ZF_DCHECK(action >= 0 && action <= cells_) << action;
  if (action == cells_) return "pass";
  return absl::StrCat(std::string(1, kColumnLetters[action % size_]), size_ - action / size_);
}

absl::StatusOr<int> Go::ParseAction(absl::string_view text) const {
  const std::string lower = absl::AsciiStrToLower(text);
  if (lower == "pass") return cells_;
  int number = -1;
  if (absl::SimpleAtoi(text, &number) && number >= 0 && number <= cells_) return number;
  if (lower.size() >= 2 && lower.size() <= 3) {
    int col = -1;
    for (int c = 0; c < size_; ++c) {
      if (absl::ascii_tolower(kColumnLetters[c]) == lower[0]) col = c;
    }
    int row_number = 0;
    const absl::string_view digits = absl::string_view(lower).substr(1);
    bool all_digits = true;
    for (char ch : digits) all_digits &= absl::ascii_isdigit(static_cast<unsigned char>(ch));
    if (col >= 0 && all_digits && digits[0] != '0' && absl::SimpleAtoi(digits, &row_number) &&
        row_number >= 1 && row_number <= size_) {
      return (size_ - row_number) * size_ + col;
    }
  }
  return absl::InvalidArgumentError(absl::StrCat("invalid go action \"", text,
                                                 "\": expected a vertex like D4, \"pass\" or a "
                                                 "number in 0..",
                                                 cells_));
}

absl::StatusOr<Go> Go::FromParameters(std::optional<absl::string_view> params) {
  int size = kDefaultSize;
  float komi = kDefaultKomi;
  if (params.has_value()) {
    const size_t colon = params->find(':');
    if (!ParseSmallInt(params->substr(0, colon), &size)) {
      return absl::InvalidArgumentError("expected go:N or go:N:komi=K, e.g. go:9 or go:9:komi=6.5");
    }
    if (colon != absl::string_view::npos) {
      absl::string_view rest = params->substr(colon + 1);
      double value = 0;
      if (!absl::ConsumePrefix(&rest, "komi=")) {
        return absl::InvalidArgumentError("expected go:N:komi=K, e.g. go:9:komi=6.5");
      }
      if (!absl::SimpleAtod(rest, &value)) {
        return absl::InvalidArgumentError("komi must be a number");
      }
      komi = static_cast<float>(value);
    }
  }
  return Create(size, komi);
}

}  // namespace zf::games
