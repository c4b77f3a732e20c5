#include "games/connect4/solver.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "games/connect4/connect4.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zf::games {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// An independent exact score by brute force: full-width negamax over the ConnectFour rules with
// a memo keyed by the position's hash, no pruning and no bitboard tricks. Scores as the solver
// defines them: a win with the mover's k-th stone is 22 - k, i.e. (43 - plies before it) / 2.
class BruteForce {
 public:
  int Score(const ConnectFour& game) {
    if (auto it = memo_.find(game.Hash()); it != memo_.end()) return it->second;
    std::vector<int> legal;
    game.LegalActions(&legal);
    int best = -100;
    for (int a : legal) best = std::max(best, MoveScore(game, a));
    memo_[game.Hash()] = best;
    return best;
  }
  // The mover's score after playing `a` in `game`.
  int MoveScore(const ConnectFour& game, int a) {
    ConnectFour next = game;
    next.Apply(a);
    if (next.Winner() == game.ToPlay()) return (43 - game.NumMoves()) / 2;
    if (next.IsTerminal()) return 0;
    return -Score(next);
  }

 private:
  absl::flat_hash_map<uint64_t, int> memo_;
};

// Positions from random games, `plies` plies in, that are not over.
std::vector<ConnectFour> RandomPositions(int count, int plies, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<ConnectFour> out;
  std::vector<int> legal;
  while (static_cast<int>(out.size()) < count) {
    ConnectFour g;
    for (int k = 0; k < plies && !g.IsTerminal(); ++k) {
      g.LegalActions(&legal);
      g.Apply(legal[std::uniform_int_distribution<size_t>(0, legal.size() - 1)(rng)]);
    }
    if (!g.IsTerminal()) out.push_back(g);
  }
  return out;
}

ConnectFour Play(const std::string& columns) {
  ConnectFour g;
  for (char c : columns) g.Apply(c - '0');
  return g;
}

TEST(ConnectFourSolverTest, ExactScoresMatchBruteForceOnLatePositions) {
  ConnectFourSolver solver;
  BruteForce brute;
  int wins = 0, losses = 0, draws = 0;
  for (const ConnectFour& g : RandomPositions(/*count=*/60, /*plies=*/27, /*seed=*/7)) {
    const int expected = brute.Score(g);
    absl::StatusOr<int> score = solver.Score(g);
    ASSERT_TRUE(score.ok()) << score.status();
    ASSERT_EQ(*score, expected) << g.ToString();
    wins += expected > 0;
    losses += expected < 0;
    draws += expected == 0;

    std::vector<int> legal, optimal;
    g.LegalActions(&legal);
    for (int a : legal) {
      if (brute.MoveScore(g, a) == expected) optimal.push_back(a);
    }
    absl::StatusOr<std::vector<int>> actions = solver.OptimalActions(g);
    ASSERT_TRUE(actions.ok()) << actions.status();
    EXPECT_EQ(*actions, optimal) << g.ToString();

    absl::StatusOr<std::vector<ConnectFourSolver::Outcome>> outcomes = solver.MoveOutcomes(g);
    ASSERT_TRUE(outcomes.ok()) << outcomes.status();
    for (int a : legal) {
      const int s = brute.MoveScore(g, a);
      EXPECT_EQ(static_cast<int>((*outcomes)[a]), (s > 0) - (s < 0)) << "move " << a << "\n"
                                                                     << g.ToString();
    }
  }
  // The sample covers every kind of result.
  EXPECT_GT(wins, 0);
  EXPECT_GT(losses, 0);
  EXPECT_GT(draws, 0);
}

TEST(ConnectFourSolverTest, MidgamePositionsAgreeWithASolverWithAFreshTable) {
  // The table carried between calls must not change answers: a solver that has seen many
  // positions and one that has seen none agree, at plies where brute force is out of reach.
  ConnectFourSolver shared;
  for (const ConnectFour& g : RandomPositions(/*count=*/12, /*plies=*/16, /*seed=*/11)) {
    ConnectFourSolver::Options options;
    options.table_entries = 1 << 16;  // small: many collisions and replacements
    absl::StatusOr<ConnectFourSolver> fresh = ConnectFourSolver::Create(options);
    ASSERT_TRUE(fresh.ok());
    absl::StatusOr<std::vector<int>> a = shared.OptimalActions(g);
    absl::StatusOr<std::vector<int>> b = fresh->OptimalActions(g);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(*a, *b) << g.ToString();
    EXPECT_EQ(*shared.Score(g), *fresh->Score(g)) << g.ToString();
  }
}

TEST(ConnectFourSolverTest, TakesTheQuickestWinAndBlocks) {
  // X has three in the bottom row (columns 0..2) and O has stones on 0..2 above: X wins at
  // once in column 3 (its 4th stone: 22 - 4 = 18).
  ConnectFourSolver solver;
  const ConnectFour g = Play("001122");
  EXPECT_EQ(*solver.Score(g), 18);
  EXPECT_THAT(*solver.OptimalActions(g), ElementsAre(3));
  // O to move facing X's three in column 0 (columns 1 and 2 full first, so the position is
  // late enough to solve at once): blocking is the only move that does not lose at once.
  const ConnectFour must_block = Play("12211221122106060");
  ASSERT_EQ(must_block.ToPlay(), 1);
  ASSERT_FALSE(must_block.IsTerminal());
  EXPECT_THAT(*solver.OptimalActions(must_block), ElementsAre(0));
  std::vector<ConnectFourSolver::Outcome> outcomes = *solver.MoveOutcomes(must_block);
  for (int col = 1; col < ConnectFour::kColumns; ++col) {
    EXPECT_EQ(outcomes[col], ConnectFourSolver::Outcome::kLoss) << col;
  }
}

TEST(ConnectFourSolverTest, RefusesTerminalPositionsAndRunsOutOfBudgetClearly) {
  ConnectFourSolver solver;
  const ConnectFour won = Play("0101010");
  ASSERT_TRUE(won.IsTerminal());
  EXPECT_EQ(solver.Score(won).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(solver.OptimalActions(won).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(solver.MoveOutcomes(won).status().code(), absl::StatusCode::kInvalidArgument);

  ConnectFourSolver::Options options;
  options.max_nodes = 1000;
  absl::StatusOr<ConnectFourSolver> small = ConnectFourSolver::Create(options);
  ASSERT_TRUE(small.ok());
  absl::StatusOr<int> score = small->Score(ConnectFour());
  EXPECT_EQ(score.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(score.status().message()), HasSubstr("ply 0"));
  // A cut-short search leaves nothing wrong in the table: a late position is still exact.
  BruteForce brute;
  for (const ConnectFour& g : RandomPositions(/*count=*/10, /*plies=*/30, /*seed=*/3)) {
    absl::StatusOr<int> s = small->Score(g);
    if (s.ok()) {
      EXPECT_EQ(*s, brute.Score(g)) << g.ToString();
    }
  }
}

TEST(ConnectFourSolverTest, OptionsAreValidated) {
  ConnectFourSolver::Options options;
  options.table_entries = 10;
  EXPECT_EQ(ConnectFourSolver::Create(options).status().code(), absl::StatusCode::kInvalidArgument);
  options = {};
  options.max_nodes = -1;
  EXPECT_EQ(ConnectFourSolver::Create(options).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace zf::games
