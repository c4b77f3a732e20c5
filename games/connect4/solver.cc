#include "games/connect4/solver.h"

#include <algorithm>
#include <array>
#include <bit>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace zf::games {
namespace {

constexpr int kWidth = ConnectFour::kColumns;
constexpr int kHeight = ConnectFour::kRows;
constexpr int kCells = ConnectFour::kCells;
constexpr int kStride = ConnectFour::kBitsPerColumn;

constexpr uint64_t BottomMask() {
  uint64_t m = 0;
  for (int col = 0; col < kWidth; ++col) m |= uint64_t{1} << (col * kStride);
  return m;
}
constexpr uint64_t kBottom = BottomMask();
constexpr uint64_t kBoard = kBottom * ((uint64_t{1} << kHeight) - 1);

constexpr uint64_t ColumnMask(int col) { return ((uint64_t{1} << kHeight) - 1) << (col * kStride); }
// Centre first: the order ties are searched in.
constexpr std::array<int, kWidth> kColumnOrder = {3, 2, 4, 1, 5, 0, 6};

// The empty cells where `stones` would complete four in a row (whether or not reachable now).
uint64_t WinningCells(uint64_t stones, uint64_t mask) {
  // Vertical: three stones below.
  uint64_t r = (stones << 1) & (stones << 2) & (stones << 3);
  // Horizontal and both diagonals: for a direction shift d, the cell completes a line when three
  // of its neighbours along d (on one side or split 2+1 / 1+2) are the player's.
  for (int d : {kStride, kStride - 1, kStride + 1}) {
    uint64_t p = (stones << d) & (stones << 2 * d);
    r |= p & (stones << 3 * d);
    r |= p & (stones >> d);
    p = (stones >> d) & (stones >> 2 * d);
    r |= p & (stones << d);
    r |= p & (stones >> 3 * d);
  }
  return r & (kBoard ^ mask);
}

uint64_t Playable(uint64_t mask) { return (mask + kBottom) & kBoard; }

// Table entry: (key << 8) | bound, bound = (lower ? 0x80 : 0) | (score + 32); never 0.
constexpr uint64_t kLowerBit = 0x80;
uint64_t PackEntry(uint64_t key, int score, bool lower) {
  return (key << 8) | (lower ? kLowerBit : 0) | static_cast<uint64_t>(score + 32);
}

bool IsPrime(int64_t n) {
  if (n < 2) return false;
  for (int64_t d = 2; d * d <= n; ++d) {
    if (n % d == 0) return false;
  }
  return true;
}

}  // namespace

absl::Status ConnectFourSolver::Options::Validate() const {
  if (table_entries < 1024 || table_entries > (int64_t{1} << 32)) {
    return absl::InvalidArgumentError(
        absl::StrCat("connect4 solver: table_entries must be in 1024..2^32, got ", table_entries));
  }
  if (max_nodes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("connect4 solver: max_nodes must be >= 0 (0 = no limit), got ", max_nodes));
  }
  return absl::OkStatus();
}

absl::StatusOr<ConnectFourSolver> ConnectFourSolver::Create(const Options& options) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  return ConnectFourSolver(options);
}

ConnectFourSolver::ConnectFourSolver() : ConnectFourSolver(Options()) {}

ConnectFourSolver::ConnectFourSolver(const Options& options) : options_(options) {
  int64_t size = options.table_entries;
  while (!IsPrime(size)) ++size;
  table_.assign(static_cast<size_t>(size), 0);
}

ConnectFourSolver::Position ConnectFourSolver::FromGame(const ConnectFour& game) {
  Position p;
  p.current = game.Stones(game.ToPlay());
  p.mask = game.Stones(0) | game.Stones(1);
  p.plies = game.NumMoves();
  return p;
}

namespace {

bool CanWinNext(uint64_t current, uint64_t mask) {
  return (WinningCells(current, mask) & Playable(mask)) != 0;
}

// The moves (one bit each) that do not hand the opponent an immediate win; 0 when every move
// loses at once (the opponent has two threats, or a threat above our only block).
uint64_t NonLosingMoves(uint64_t current, uint64_t mask) {
  uint64_t playable = Playable(mask);
  const uint64_t opponent_wins = WinningCells(current ^ mask, mask);
  const uint64_t forced = playable & opponent_wins;
  if (forced != 0) {
    if (forced & (forced - 1)) return 0;  // two threats to block
    playable = forced;
  }
  return playable & ~(opponent_wins >> 1);  // never play under the opponent's winning cell
}

int WinScore(int plies_before_winning_move) { return (kCells + 1 - plies_before_winning_move) / 2; }

}  // namespace

int ConnectFourSolver::Negamax(const Position& p, int alpha, int beta) {
  ++nodes_;
  if (options_.max_nodes > 0 && nodes_ - call_start_nodes_ > options_.max_nodes) {
    budget_exceeded_ = true;
    return 0;
  }
  const uint64_t next = NonLosingMoves(p.current, p.mask);
  if (next == 0) return -(kCells - p.plies) / 2;  // the opponent wins with its next stone
  if (p.plies >= kCells - 2) return 0;            // no one can win in the last two plies
  const int min = -(kCells - 2 - p.plies) / 2;    // the opponent cannot win with its next stone
  if (alpha < min) {
    alpha = min;
    if (alpha >= beta) return alpha;
  }
  int max = (kCells - 1 - p.plies) / 2;  // we cannot win with this stone
  const uint64_t key = p.current + p.mask;
  const uint64_t entry = table_[key % table_.size()];
  if (entry != 0 && (entry >> 8) == key) {
    const int score = static_cast<int>(entry & 0x7f) - 32;
    if (entry & kLowerBit) {
      if (alpha < score) {
        alpha = score;
        if (alpha >= beta) return alpha;
      }
    } else if (max > score) {
      max = score;
    }
  }
  if (beta > max) {
    beta = max;
    if (alpha >= beta) return beta;
  }

  // Order: more winning cells created first, ties centre first.
  std::array<std::pair<int, uint64_t>, kWidth> moves;
  int n = 0;
  for (int i = 0; i < kWidth; ++i) {
    const uint64_t move = next & ColumnMask(kColumnOrder[i]);
    if (move == 0) continue;
    const int score = std::popcount(WinningCells(p.current | move, p.mask));
    int j = n++;
    for (; j > 0 && moves[j - 1].first < score; --j) moves[j] = moves[j - 1];
    moves[j] = {score, move};
  }
  for (int i = 0; i < n; ++i) {
    const Position child{p.current ^ p.mask, p.mask | moves[i].second, p.plies + 1};
    const int score = -Negamax(child, -beta, -alpha);
    if (budget_exceeded_) return 0;  // store nothing from a search cut short
    if (score >= beta) {
      table_[key % table_.size()] = PackEntry(key, score, /*lower=*/true);
      return score;
    }
    if (score > alpha) alpha = score;
  }
  table_[key % table_.size()] = PackEntry(key, alpha, /*lower=*/false);
  return alpha;
}

int ConnectFourSolver::SolveExact(const Position& p) {
  int min = -(kCells - p.plies) / 2;
  int max = (kCells + 1 - p.plies) / 2;
  while (min < max && !budget_exceeded_) {
    int med = min + (max - min) / 2;
    if (med <= 0 && min / 2 < med) {
      med = min / 2;
    } else if (med >= 0 && max / 2 > med) {
      med = max / 2;
    }
    const int r = Negamax(p, med, med + 1);
    if (r <= med) {
      max = r;
    } else {
      min = r;
    }
  }
  return min;
}

bool ConnectFourSolver::MoverScoresAtLeast(const Position& after, int score) {
  // The mover's score is minus the score of `after` for the opponent.
  if (after.plies == kCells) return 0 >= score;  // the board filled up without a win
  if (CanWinNext(after.current, after.mask)) return -WinScore(after.plies) >= score;
  // score(after) <= -score  <=>  the null-window search (-score, -score + 1) fails low.
  return Negamax(after, -score, -score + 1) <= -score;
}

absl::Status ConnectFourSolver::BudgetError(const ConnectFour& game) const {
  return absl::ResourceExhaustedError(absl::StrCat(
      "connect4 solver: the position at ply ", game.NumMoves(), " was not solved within ",
      options_.max_nodes,
      " positions (max_nodes); positions this early can take minutes (docs/benchmarks.md, "
      "\"Connect Four solver\")"));
}

absl::StatusOr<ConnectFourSolver::Position> ConnectFourSolver::BeginCall(const ConnectFour& game) {
  if (game.IsTerminal()) {
    return absl::InvalidArgumentError("connect4 solver: the game is over; nothing to solve");
  }
  call_start_nodes_ = nodes_;
  budget_exceeded_ = false;
  return FromGame(game);
}

absl::StatusOr<int> ConnectFourSolver::Score(const ConnectFour& game) {
  ZF_ASSIGN_OR_RETURN(const Position p, BeginCall(game));
  if (CanWinNext(p.current, p.mask)) return WinScore(p.plies);
  const int score = SolveExact(p);
  if (budget_exceeded_) return BudgetError(game);
  return score;
}

absl::StatusOr<std::vector<int>> ConnectFourSolver::OptimalActions(const ConnectFour& game) {
  absl::StatusOr<int> score = Score(game);
  if (!score.ok()) return score.status();
  const Position p = FromGame(game);
  const uint64_t wins = WinningCells(p.current, p.mask) & Playable(p.mask);
  std::vector<int> best;
  for (int col = 0; col < kWidth; ++col) {
    const uint64_t move = Playable(p.mask) & ColumnMask(col);
    if (move == 0) continue;
    if (wins != 0) {
      if (move & wins) best.push_back(col);
      continue;
    }
    const Position after{p.current ^ p.mask, p.mask | move, p.plies + 1};
    if (MoverScoresAtLeast(after, *score)) best.push_back(col);
    if (budget_exceeded_) return BudgetError(game);
  }
  return best;
}

absl::StatusOr<std::vector<ConnectFourSolver::Outcome>> ConnectFourSolver::MoveOutcomes(
    const ConnectFour& game) {
  ZF_ASSIGN_OR_RETURN(const Position p, BeginCall(game));
  const uint64_t wins = WinningCells(p.current, p.mask) & Playable(p.mask);
  std::vector<Outcome> out(kWidth, Outcome::kLoss);
  for (int col = 0; col < kWidth; ++col) {
    const uint64_t move = Playable(p.mask) & ColumnMask(col);
    if (move == 0) continue;
    if (move & wins) {
      out[col] = Outcome::kWin;
      continue;
    }
    const Position after{p.current ^ p.mask, p.mask | move, p.plies + 1};
    if (MoverScoresAtLeast(after, 1)) {
      out[col] = Outcome::kWin;
    } else if (MoverScoresAtLeast(after, 0)) {
      out[col] = Outcome::kDraw;
    }
    if (budget_exceeded_) return BudgetError(game);
  }
  return out;
}

}  // namespace zf::games
