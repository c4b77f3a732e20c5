#include "games/go/go.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_split.h"
#include "games/perft.h"
#include "games/registry.h"
#include "games/testing/conformance.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zf::games {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

template <int N, int Playouts>
struct GoTraits {
  using GameType = Go;
  static Go Make() { return *Go::Create(N, Go::kDefaultKomi); }
  static constexpr int kNumPlayouts = Playouts;
};
using GoTraitsList = ::testing::Types<GoTraits<5, 200>, GoTraits<9, 40>, GoTraits<19, 20>>;
INSTANTIATE_TYPED_TEST_SUITE_P(Go, GameConformanceTest, GoTraitsList);

// An independent, deliberately naive Go: a plain 2D array, flood fills for groups and
// liberties, and the set of every earlier board as a string for positional superko. The
// incremental implementation is checked against it.
class NaiveGo {
 public:
  explicit NaiveGo(int n, float komi = 7.5f) : n_(n), komi_(komi), board_(n * n, -1) {
    seen_.insert(Key(board_));
  }

  int ToPlay() const { return moves_ % 2; }
  bool IsTerminal() const { return passes_ >= 2 || moves_ >= 2 * n_ * n_; }
  int At(int cell) const { return board_[cell]; }

  // The board after `player` plays `cell`, or false if suicide or superko forbid it.
  bool TryMove(int cell, std::vector<int>* out, bool* superko = nullptr) const {
    if (superko != nullptr) *superko = false;
    if (board_[cell] != -1) return false;
    std::vector<int> b = board_;
    const int player = ToPlay();
    b[cell] = player;
    for (int q : Neighbors(cell)) {
      if (b[q] == 1 - player && Liberties(b, q) == 0) RemoveGroup(&b, q);
    }
    if (Liberties(b, cell) == 0) return false;
    if (seen_.count(Key(b)) != 0) {
      if (superko != nullptr) *superko = true;
      // Not simple ko: the repeated board is older than the one before the last move.
      if (b != previous_) ++long_cycles_;
      return false;
    }
    *out = b;
    return true;
  }

  std::vector<int> Legal(int* superko_forbidden = nullptr) const {
    std::vector<int> out;
    if (IsTerminal()) return out;
    std::vector<int> b;
    for (int cell = 0; cell < n_ * n_; ++cell) {
      bool superko = false;
      if (TryMove(cell, &b, &superko)) out.push_back(cell);
      if (superko && superko_forbidden != nullptr) ++*superko_forbidden;
    }
    out.push_back(n_ * n_);
    return out;
  }

  void Apply(int action) {
    ++moves_;
    if (action == n_ * n_) {
      ++passes_;
      return;
    }
    passes_ = 0;
    std::vector<int> b;
    --moves_;
    ZF_CHECK(TryMove(action, &b)) << action;
    ++moves_;
    previous_ = board_;
    board_ = b;
    seen_.insert(Key(board_));
  }

  // Superko refusals so far (counted by Legal) that simple ko would not have made.
  int LongCycles() const { return long_cycles_; }

  float ScoreForBlack() const {
    int score[2] = {0, 0};
    std::vector<bool> visited(n_ * n_, false);
    for (int cell = 0; cell < n_ * n_; ++cell) {
      if (board_[cell] >= 0) {
        ++score[board_[cell]];
        continue;
      }
      if (visited[cell]) continue;
      std::vector<int> stack = {cell};
      visited[cell] = true;
      int region = 0;
      bool borders[2] = {false, false};
      while (!stack.empty()) {
        const int s = stack.back();
        stack.pop_back();
        ++region;
        for (int q : Neighbors(s)) {
          if (board_[q] >= 0) {
            borders[board_[q]] = true;
          } else if (!visited[q]) {
            visited[q] = true;
            stack.push_back(q);
          }
        }
      }
      if (borders[0] && !borders[1]) score[0] += region;
      if (borders[1] && !borders[0]) score[1] += region;
    }
    return static_cast<float>(score[0] - score[1]) - komi_;
  }

 private:
  static std::string Key(const std::vector<int>& b) {
    std::string key;
    for (int v : b) key.push_back(static_cast<char>('1' + v));
    return key;
  }
  std::vector<int> Neighbors(int cell) const {
    std::vector<int> out;
    const int r = cell / n_;
    const int c = cell % n_;
    if (r > 0) out.push_back(cell - n_);
    if (r + 1 < n_) out.push_back(cell + n_);
    if (c > 0) out.push_back(cell - 1);
    if (c + 1 < n_) out.push_back(cell + 1);
    return out;
  }
  std::vector<int> Group(const std::vector<int>& b, int cell) const {
    std::vector<int> group = {cell};
    std::vector<bool> in(n_ * n_, false);
    in[cell] = true;
    for (size_t i = 0; i < group.size(); ++i) {
      for (int q : Neighbors(group[i])) {
        if (!in[q] && b[q] == b[cell]) {
          in[q] = true;
          group.push_back(q);
        }
      }
    }
    return group;
  }
  int Liberties(const std::vector<int>& b, int cell) const {
    std::set<int> libs;
    for (int s : Group(b, cell)) {
      for (int q : Neighbors(s)) {
        if (b[q] == -1) libs.insert(q);
      }
    }
    return static_cast<int>(libs.size());
  }
  void RemoveGroup(std::vector<int>* b, int cell) const {
    for (int s : Group(*b, cell)) (*b)[s] = -1;
  }

  int n_;
  float komi_;
  std::vector<int> board_;
  std::vector<int> previous_;  // the board before the last move
  std::set<std::string> seen_;
  int moves_ = 0;
  int passes_ = 0;
  mutable int long_cycles_ = 0;
};

void NaivePerft(const NaiveGo& game, int ply, std::vector<uint64_t>* counts) {
  ++(*counts)[ply];
  if (ply + 1 >= static_cast<int>(counts->size()) || game.IsTerminal()) return;
  for (int action : game.Legal()) {
    NaiveGo child = game;
    child.Apply(action);
    NaivePerft(child, ply + 1, counts);
  }
}

Go Make(int n, float komi = 7.5f) { return *Go::Create(n, komi); }

// Plays space-separated GTP moves, expecting each to be legal.
Go Play(Go game, const std::string& moves) {
  for (absl::string_view text : absl::StrSplit(moves, ' ', absl::SkipEmpty())) {
    const absl::StatusOr<int> action = game.ParseAction(text);
    EXPECT_TRUE(action.ok()) << text;
    if (!action.ok()) return game;
    EXPECT_TRUE(game.IsLegal(*action)) << text << "\n" << game.ToString();
    if (!game.IsLegal(*action)) return game;
    game.Apply(*action);
  }
  return game;
}

int Action(const Go& game, const std::string& text) { return *game.ParseAction(text); }

std::vector<int> Legal(const Go& game) {
  std::vector<int> out;
  game.LegalActions(&out);
  return out;
}

TEST(GoTest, PerftFromTheEmptyFiveByFive) {
  // Depth 2: 25 * (24 + pass) + (25 + pass) = 651 (a pass leaves all 25 points to White).
  // Depth 3: after (move, move) 23 points + pass; after (move, pass) and (pass, move) 24 + pass;
  // (pass, pass) has ended: 600 * 24 + 25 * 25 + 25 * 25 = 15650. Nothing can be captured,
  // be suicide or repeat a position in three plies.
  const std::vector<uint64_t> counts = Perft(Make(5), 3);
  EXPECT_THAT(counts, ElementsAre(1u, 26u, 651u, 15650u));
}

TEST(GoTest, PerftMatchesNaiveReference) {
  constexpr int kDepth = 4;
  std::vector<uint64_t> naive(kDepth + 1, 0);
  NaivePerft(NaiveGo(5), 0, &naive);
  EXPECT_EQ(Perft(Make(5), kDepth), naive);
}

void CompareRandomGames(int n, int num_games, uint32_t seed, int* superko_forbidden,
                        int* long_cycles, int* captures) {
  std::mt19937 rng(seed);
  std::vector<int> legal;
  for (int g = 0; g < num_games; ++g) {
    Go game = Make(n);
    NaiveGo naive(n);
    while (true) {
      ASSERT_EQ(game.IsTerminal(), naive.IsTerminal()) << game.ToString();
      game.LegalActions(&legal);
      ASSERT_EQ(legal, naive.Legal(superko_forbidden)) << game.ToString();
      int stones = 0;
      for (int cell = 0; cell < n * n; ++cell) {
        ASSERT_EQ(game.StoneAt(cell / n, cell % n), naive.At(cell)) << cell << game.ToString();
        stones += naive.At(cell) >= 0;
      }
      if (game.IsTerminal()) break;
      ASSERT_EQ(game.ToPlay(), naive.ToPlay());
      // Passes are rarer than uniform so that games fill the board and fight.
      int action = legal[std::uniform_int_distribution<size_t>(0, legal.size() - 1)(rng)];
      if (action == game.PassAction() && legal.size() > 1 && rng() % 4 != 0) action = legal[0];
      game.Apply(action);
      naive.Apply(action);
      int after = 0;
      for (int cell = 0; cell < n * n; ++cell) after += naive.At(cell) >= 0;
      if (after < stones) ++*captures;
    }
    EXPECT_EQ(game.ScoreForBlack(), naive.ScoreForBlack()) << game.ToString();
    *long_cycles += naive.LongCycles();
  }
}

TEST(GoTest, RandomGamesMatchNaiveReference) {
  int superko_forbidden = 0;
  int long_cycles = 0;
  int captures = 0;
  CompareRandomGames(5, 300, 1, &superko_forbidden, &long_cycles, &captures);
  CompareRandomGames(7, 40, 2, &superko_forbidden, &long_cycles, &captures);
  CompareRandomGames(9, 15, 3, &superko_forbidden, &long_cycles, &captures);
  CompareRandomGames(13, 2, 4, &superko_forbidden, &long_cycles, &captures);
  std::printf("captures %d, superko refusals %d (beyond simple ko: %d)\n", captures,
              superko_forbidden, long_cycles);
  // The comparison covered captures and superko, not just quiet moves.
  EXPECT_GT(captures, 1000);
  EXPECT_GT(superko_forbidden, 10);
  EXPECT_GT(long_cycles, 0) << "no superko cycle longer than simple ko was exercised";
}

TEST(GoTest, StartPosition) {
  const Go game;
  EXPECT_EQ(game.Name(), "go:9");
  EXPECT_EQ(game.Size(), 9);
  EXPECT_EQ(game.Komi(), 7.5f);
  EXPECT_EQ(game.NumActions(), 82);
  EXPECT_EQ(game.MaxGameLength(), 162);
  EXPECT_EQ(game.Shape(), (PlaneShape{18, 9, 9}));
  EXPECT_EQ(Legal(game).size(), 82u);
  EXPECT_EQ(Make(19).NumActions(), 362);
  EXPECT_EQ(Make(9, 6.5f).Name(), "go:9:komi=6.5");
  EXPECT_EQ(Make(13, 7.0f).Name(), "go:13:komi=7");
}

TEST(GoTest, CreateValidatesSizeAndKomi) {
  for (int size : {4, 20, 0, -1}) {
    EXPECT_EQ(Go::Create(size, 7.5f).status().code(), absl::StatusCode::kInvalidArgument) << size;
  }
  EXPECT_EQ(Go::Create(9, 6.3f).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Go::Create(9, 82.0f).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Go::Create(9, -3.5f).ok());
  EXPECT_TRUE(Go::Create(5, 0.0f).ok());
}

TEST(GoTest, RegistryNames) {
  const auto name_of = [](const std::string& text) {
    absl::StatusOr<GameConfig> config = ParseGameName(text);
    EXPECT_TRUE(config.ok()) << text << ": " << config.status();
    if (!config.ok()) return std::string();
    return VisitGame(*config, [](const auto& game) { return game.Name(); }) + "|" + config->name;
  };
  EXPECT_EQ(name_of("go"), "go:9|go:9");
  EXPECT_EQ(name_of("go:9"), "go:9|go:9");
  EXPECT_EQ(name_of("go:13"), "go:13|go:13");
  EXPECT_EQ(name_of("go:19"), "go:19|go:19");
  EXPECT_EQ(name_of("go:5:komi=0"), "go:5:komi=0|go:5:komi=0");
  EXPECT_EQ(name_of("go:9:komi=6.5"), "go:9:komi=6.5|go:9:komi=6.5");
  EXPECT_EQ(name_of("go:9:komi=7.5"), "go:9|go:9");
  for (const char* bad : {"go:4", "go:20", "go:9x9", "go:", "go:9:komi=6.3", "go:9:komi=x",
                          "go:9:handicap=2", "go:9:komi="}) {
    const absl::StatusOr<GameConfig> config = ParseGameName(bad);
    ASSERT_FALSE(config.ok()) << bad;
    EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(config.status().message()), ::testing::HasSubstr(bad));
  }
  EXPECT_THAT(KnownGameNames(), ::testing::HasSubstr("go[:N[:komi=K]]"));
}

TEST(GoTest, ActionTextIsGtp) {
  const Go game;
  EXPECT_EQ(game.ActionToString(0), "A9");
  EXPECT_EQ(game.ActionToString(8), "J9");  // no I
  EXPECT_EQ(game.ActionToString(80), "J1");
  EXPECT_EQ(game.ActionToString(81), "pass");
  EXPECT_EQ(Action(game, "d4"), 5 * 9 + 3);
  EXPECT_EQ(Action(game, "D4"), 5 * 9 + 3);
  EXPECT_EQ(Action(game, "PASS"), 81);
  EXPECT_EQ(Action(game, "17"), 17);
  EXPECT_EQ(Make(19).ActionToString(0), "A19");
  EXPECT_EQ(Action(Make(19), "T1"), 360);
  for (const char* bad : {"I5", "K1", "A10", "A0", "A05", "82", "", "D", "4D", "pas"}) {
    const absl::StatusOr<int> parsed = game.ParseAction(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  }
}

TEST(GoTest, CaptureRemovesStonesAndGivesLiberties) {
  // White A1 is captured by Black B1 and A2.
  const Go game = Play(Make(5), "B1 A1 A2");
  EXPECT_EQ(game.StoneAt(4, 0), -1);
  EXPECT_EQ(game.StoneAt(4, 1), 0);
  EXPECT_EQ(game.StoneAt(3, 0), 0);
  // A1 is now an eye of Black's: suicide for White, legal for Black (no capture either way).
  EXPECT_FALSE(game.IsLegal(Action(game, "A1")));
  Go black = Play(game, "E5");
  EXPECT_TRUE(black.IsLegal(Action(black, "A1")));
}

TEST(GoTest, SuicideIsIllegalUnlessItCaptures) {
  // White A2 and B1 surround A1: Black A1 is suicide.
  const Go game = Play(Make(5), "E5 A2 E4 B1");
  EXPECT_FALSE(game.IsLegal(Action(game, "A1")));
  EXPECT_THAT(Legal(game), ::testing::Not(::testing::Contains(Action(game, "A1"))));
  // A multi-stone suicide: Black B2 A3 C1 surround White A2 B1, so White A1 would leave A1 A2
  // B1 without liberties (illegal), while Black A1 captures A2 and B1 (legal).
  const Go trap = Play(Make(5), "E5 A2 E4 B1 B2 E3 A3 E2 C1");
  EXPECT_FALSE(trap.IsLegal(Action(trap, "A1")));
  Go black = Play(trap, "D5");
  ASSERT_TRUE(black.IsLegal(Action(black, "A1")));
  black.Apply(Action(black, "A1"));
  EXPECT_EQ(black.StoneAt(3, 0), -1);  // A2 captured
  EXPECT_EQ(black.StoneAt(4, 1), -1);  // B1 captured
}

TEST(GoTest, KoCannotBeRetakenAtOnce) {
  // Black B3 C4 C2 around White C3; White D4 D2 E3 around D3; Black D3 takes C3.
  const Go game = Play(Make(5), "B3 D4 C4 D2 C2 E3 A1 C3 D3");
  EXPECT_EQ(game.StoneAt(2, 2), -1);
  const int retake = Action(game, "C3");
  EXPECT_FALSE(game.IsLegal(retake)) << game.ToString();
  // After a ko threat elsewhere and an answer, the position is new and the retake is legal.
  const Go later = Play(game, "E1 A2");
  EXPECT_TRUE(later.IsLegal(retake));
  // A White pass and a Black move elsewhere make it legal too (a new board).
  const Go passed = Play(game, "pass A2");
  EXPECT_TRUE(passed.IsLegal(retake));
}

TEST(GoTest, TwoPassesEndTheGameAndAreaScoringUsesKomi) {
  // Black fills column C, White column D: Black's area is A..C (15), White's D..E (10).
  const std::string moves = "C1 D1 C2 D2 C3 D3 C4 D4 C5 D5";
  for (const auto& [komi, expected] :
       std::vector<std::pair<float, float>>{{7.5f, -1.0f}, {4.5f, 1.0f}, {5.0f, 0.0f}}) {
    Go game = Play(Make(5, komi), moves);
    EXPECT_EQ(game.AreaScores(), (std::array<int, 2>{15, 10}));
    EXPECT_EQ(game.ScoreForBlack(), 5.0f - komi);
    game = Play(game, "pass");
    EXPECT_FALSE(game.IsTerminal());
    game = Play(game, "pass");
    EXPECT_TRUE(game.IsTerminal());
    EXPECT_THAT(Legal(game), IsEmpty());
    EXPECT_FALSE(game.IsLegal(game.PassAction()));
    EXPECT_EQ(game.Returns()[0], expected) << komi;
    EXPECT_EQ(game.Returns()[1], -expected);
  }
  // A pass, a move and a pass do not end the game.
  EXPECT_FALSE(Play(Make(5), "pass C3 pass").IsTerminal());
  // An empty board belongs to nobody: White wins by komi.
  const Go empty = Play(Make(9), "pass pass");
  EXPECT_TRUE(empty.IsTerminal());
  EXPECT_EQ(empty.Returns(), (Returns{-1.0f, 1.0f}));
  // D5, bordered by both colours, counts for neither: White has D1..D4, E5 and E1..E4.
  const Go seki = Play(Make(5, 0.0f), "C1 D1 C2 D2 C3 D3 C4 D4 C5 E5 pass pass");
  EXPECT_EQ(seki.AreaScores(), (std::array<int, 2>{15, 9}));
}

TEST(GoTest, OwnershipIsAreaScoringPointByPoint) {
  static_assert(GameWithFinalOwnership<Go>);
  // Black holds columns A..C; White D1..D4, E5 and the empty E1..E4; D5 touches both.
  const Go seki = Play(Make(5, 0.0f), "C1 D1 C2 D2 C3 D3 C4 D4 C5 E5 pass pass");
  std::array<int8_t, 25> owner;
  owner.fill(7);
  seki.FinalOwnership(owner.data());
  for (int row = 0; row < 5; ++row) {  // row 0 is the top line (5)
    for (int col = 0; col < 5; ++col) {
      const int expected = col < 3 ? 1 : (row == 0 && col == 3 ? 0 : -1);
      EXPECT_EQ(owner[row * 5 + col], expected) << "row " << row << " col " << col;
    }
  }
  EXPECT_EQ(seki.FinalScore(), 6.0f);  // 15 - 9, komi 0
  // With komi the margin moves and the owners do not.
  const Go komi = Play(Make(5, 7.5f), "C1 D1 C2 D2 C3 D3 C4 D4 C5 E5 pass pass");
  EXPECT_EQ(komi.FinalScore(), -1.5f);
  EXPECT_EQ(komi.Returns()[0], -1.0f);
  // The empty board: nobody's.
  const Go empty = Play(Make(9), "pass pass");
  std::array<int8_t, 81> none;
  empty.FinalOwnership(none.data());
  EXPECT_EQ(std::count(none.begin(), none.end(), 0), 81);
  EXPECT_EQ(empty.FinalScore(), -7.5f);
}

TEST(GoTest, SelfPlayPassRuleAllowsPassingOnlyWhenNeeded) {
  Go start = Make(5);
  start.SetSelfPlayPassRule(true);
  // At the start every move is a real move: no pass.
  EXPECT_FALSE(start.IsLegal(start.PassAction()));
  EXPECT_THAT(Legal(start), ::testing::Not(::testing::Contains(start.PassAction())));
  EXPECT_EQ(Legal(start).size(), 25u);
  // A reply to a pass may pass (and so end the game).
  Go after_pass = Play(Make(5), "pass");
  after_pass.SetSelfPlayPassRule(true);
  EXPECT_TRUE(after_pass.IsLegal(after_pass.PassAction()));
  // Black owns every point but the eyes A1 and C3; White has no legal board move (both are
  // suicide), so White may pass.
  Go board = Play(
      Make(5),
      "B1 pass C1 pass D1 pass E1 pass A2 pass B2 pass C2 pass D2 pass E2 pass A3 pass B3 pass D3 "
      "pass E3 pass A4 pass B4 pass C4 pass D4 pass E4 pass A5 pass B5 pass C5 pass D5 pass E5");
  board.SetSelfPlayPassRule(true);
  ASSERT_EQ(board.ToPlay(), 1);
  EXPECT_THAT(Legal(board), ElementsAre(board.PassAction()));
  EXPECT_TRUE(board.IsLegal(board.PassAction()));
  // For Black, A1 and C3 are eyes.
  EXPECT_TRUE(board.FillsOwnEye(Action(board, "A1"), 0));
  EXPECT_TRUE(board.FillsOwnEye(Action(board, "C3"), 0));
  EXPECT_FALSE(board.FillsOwnEye(Action(board, "A1"), 1));
  // Copies keep the rule; a game without it may pass any time.
  const Go copy = board;
  EXPECT_TRUE(copy.SelfPlayPassRule());
  EXPECT_TRUE(Make(5).IsLegal(Make(5).PassAction()));
}

TEST(GoTest, EyeNeedsItsDiagonals) {
  // Black A2 B1 around A1 (a corner point: no opponent diagonal allowed), and B2 White.
  const Go corner = Play(Make(5), "A2 B2 B1");
  EXPECT_FALSE(corner.FillsOwnEye(Action(corner, "A1"), 0)) << "White B2 breaks the corner eye";
  const Go solid = Play(Make(5), "A2 E5 B1 E4 B2");
  EXPECT_TRUE(solid.FillsOwnEye(Action(solid, "A1"), 0));
  // In the middle one opponent diagonal is tolerated, two are not.
  const Go one = Play(Make(5), "B3 B2 D3 E5 C2 E4 C4 E3");
  EXPECT_TRUE(one.FillsOwnEye(Action(one, "C3"), 0));
  const Go two = Play(Make(5), "B3 B2 D3 D2 C2 E4 C4 E3");
  EXPECT_FALSE(two.FillsOwnEye(Action(two, "C3"), 0));
}

TEST(GoTest, SelfPlayPassRuleKeepsLegalActionsAndIsLegalInAgreement) {
  std::mt19937 rng(7);
  for (int g = 0; g < 20; ++g) {
    Go game = Make(5);
    game.SetSelfPlayPassRule(true);
    std::vector<int> legal;
    while (!game.IsTerminal()) {
      game.LegalActions(&legal);
      ASSERT_FALSE(legal.empty()) << game.ToString();
      for (int a = 0; a < game.NumActions(); ++a) {
        const bool listed = std::find(legal.begin(), legal.end(), a) != legal.end();
        ASSERT_EQ(game.IsLegal(a), listed) << "action " << a << "\n" << game.ToString();
      }
      game.Apply(legal[rng() % legal.size()]);
    }
  }
}

TEST(GoTest, MaxGameLengthEndsTheGame) {
  Go game = Make(5);
  std::vector<int> legal;
  std::mt19937 rng(7);
  int plies = 0;
  while (!game.IsTerminal()) {
    game.LegalActions(&legal);
    legal.pop_back();  // never pass
    if (legal.empty()) legal.push_back(game.PassAction());
    game.Apply(legal[rng() % legal.size()]);
    ++plies;
  }
  EXPECT_LE(plies, 50);
}

TEST(GoTest, EncodeShowsHistoryFromTheMoversView) {
  const Go game = Play(Make(5), "A5 B5");  // Black A5 (cell 0), White B5 (cell 1); Black to move
  std::vector<uint8_t> planes(18 * 25);
  game.Encode(planes.data());
  const auto at = [&](int plane, int cell) { return planes[plane * 25 + cell]; };
  EXPECT_EQ(at(0, 0), 1);  // now: Black (to move) on A5
  EXPECT_EQ(at(1, 1), 1);  // now: White on B5
  EXPECT_EQ(at(2, 0), 1);  // one ply ago: A5 only
  EXPECT_EQ(at(3, 1), 0);
  EXPECT_EQ(at(4, 0), 0);   // two plies ago: empty
  EXPECT_EQ(at(16, 7), 1);  // Black to move
  EXPECT_EQ(at(17, 24), 1);
  int ones = 0;
  for (int i = 0; i < 16 * 25; ++i) ones += planes[i];
  EXPECT_EQ(ones, 3);
  const Go white = Play(game, "C5");
  white.Encode(planes.data());
  EXPECT_EQ(at(0, 1), 1);  // White to move: its stone B5 is "mine"
  EXPECT_EQ(at(1, 0), 1);
  EXPECT_EQ(at(1, 2), 1);
  EXPECT_EQ(at(16, 7), 0);
}

TEST(GoTest, HashSeesHistoryAndTransposesAtTheEnd) {
  // The same board reached in different orders: different history, different hash.
  EXPECT_NE(Play(Make(9), "C3 D4 E5").Hash(), Play(Make(9), "E5 D4 C3").Hash());
  EXPECT_EQ(Play(Make(9), "C3 D4 E5").BoardHash(), Play(Make(9), "E5 D4 C3").BoardHash());
  // Once the history window has moved past the difference the hashes agree.
  const std::string tail = " pass pass";
  EXPECT_EQ(Play(Make(9), "C3 D4 E5" + tail).Hash(), Play(Make(9), "E5 D4 C3" + tail).Hash());
  EXPECT_NE(Play(Make(9), "C3").Hash(), Play(Make(9), "C3 pass").Hash());
}

TEST(GoTest, ToStringUsesGtpCoordinates) {
  EXPECT_EQ(Play(Make(5), "A1 E5").ToString(),
            "   A B C D E\n"
            " 5 . . . . O 5\n"
            " 4 . . . . . 4\n"
            " 3 . . . . . 3\n"
            " 2 . . . . . 2\n"
            " 1 X . . . . 1\n"
            "   A B C D E\n"
            "captures: X 0, O 0; komi 7.5; move 2\n"
            "X to move\n");
}

TEST(GoTest, SymmetriesKeepPass) {
  const std::vector<Symmetry> symmetries = Make(9).Symmetries();
  ASSERT_EQ(symmetries.size(), 8u);
  for (const Symmetry& s : symmetries) {
    EXPECT_EQ(s.action_map[81], 81) << s.name;
    EXPECT_EQ(s.action_map.size(), 82u);
  }
}

TEST(GoTest, CopiesAreCheapAndIndependent) {
  Go game = Play(Make(19), "D4 Q16 D16 Q4");
  const Go copy = game;
  game.Apply(Action(game, "K10"));
  EXPECT_EQ(copy.StoneAt(9, 9), -1);
  EXPECT_EQ(game.StoneAt(9, 9), 0);
  Go assigned = Make(5);
  assigned = copy;
  EXPECT_EQ(assigned.Hash(), copy.Hash());
  EXPECT_EQ(assigned.ToString(), copy.ToString());
  EXPECT_EQ(Legal(assigned), Legal(copy));
}

}  // namespace
}  // namespace zf::games
