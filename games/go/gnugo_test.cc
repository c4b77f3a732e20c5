// Checks zerofleet's Go rules against GNU Go (Debian package `gnugo`), an engine nobody here
// wrote, run as a GTP subprocess with the same rules: area scoring, positional superko, suicide
// forbidden. Random games are replayed into it move by move; after every move the legal points
// (`all_legal`) and the stones (`list_stones`) must agree, and at the end zerofleet's area score
// must equal the area score counted here from GNU Go's stones (not GNU Go's final_score, which
// guesses dead stones).
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "games/go/go.h"
#include "gtest/gtest.h"
#include "gtp/gtp_client.h"

namespace zf::games {
namespace {

using GtpPipe = gtp::GtpClient;

// Vertices in a GTP reply, as action numbers of `game`.
std::set<int> ParseVertices(const Go& game, const std::string& text) {
  std::set<int> out;
  for (absl::string_view vertex : absl::StrSplit(text, absl::ByAnyChar(" \n"), absl::SkipEmpty())) {
    const absl::StatusOr<int> action = game.ParseAction(vertex);
    EXPECT_TRUE(action.ok()) << vertex;
    if (action.ok()) out.insert(*action);
  }
  return out;
}

// Area score (Black minus White, without komi) of a board given as the two stone sets.
int AreaScoreFromStones(int n, const std::set<int>& black, const std::set<int>& white) {
  std::vector<int> board(n * n, -1);
  for (int a : black) board[a] = 0;
  for (int a : white) board[a] = 1;
  int score = static_cast<int>(black.size()) - static_cast<int>(white.size());
  std::vector<bool> seen(n * n, false);
  for (int start = 0; start < n * n; ++start) {
    if (board[start] != -1 || seen[start]) continue;
    std::vector<int> stack = {start};
    seen[start] = true;
    int region = 0;
    bool borders[2] = {false, false};
    while (!stack.empty()) {
      const int cell = stack.back();
      stack.pop_back();
      ++region;
      const int r = cell / n;
      const int c = cell % n;
      const int neighbors[4][2] = {{r - 1, c}, {r + 1, c}, {r, c - 1}, {r, c + 1}};
      for (const auto& [rr, cc] : neighbors) {
        if (rr < 0 || rr >= n || cc < 0 || cc >= n) continue;
        const int q = rr * n + cc;
        if (board[q] >= 0) {
          borders[board[q]] = true;
        } else if (!seen[q]) {
          seen[q] = true;
          stack.push_back(q);
        }
      }
    }
    if (borders[0] && !borders[1]) score += region;
    if (borders[1] && !borders[0]) score -= region;
  }
  return score;
}

struct Totals {
  int games = 0;
  int moves = 0;
  int captures = 0;
};

// Plays `num_games` random games on n x n and checks every position against GNU Go.
void PlayAgainstGnuGo(GtpPipe* gtp, int n, float komi, int num_games, uint32_t seed,
                      Totals* totals) {
  std::mt19937 rng(seed);
  const char* const kColors[] = {"black", "white"};
  ASSERT_TRUE(gtp->Send(absl::StrCat("boardsize ", n)).ok());
  ASSERT_TRUE(gtp->Send(absl::StrCat("komi ", komi)).ok());
  std::vector<int> legal;
  for (int g = 0; g < num_games; ++g) {
    ASSERT_TRUE(gtp->Send("clear_board").ok());
    Go game = *Go::Create(n, komi);
    std::string moves;
    while (true) {
      const auto where = [&] { return absl::StrCat("moves:", moves, "\n", game.ToString()); };
      std::set<int> stones[2];
      for (int color = 0; color < 2; ++color) {
        const absl::StatusOr<std::string> reply =
            gtp->Send(absl::StrCat("list_stones ", kColors[color]));
        ASSERT_TRUE(reply.ok()) << reply.status();
        stones[color] = ParseVertices(game, *reply);
        std::set<int> ours;
        for (int cell = 0; cell < n * n; ++cell) {
          if (game.StoneAt(cell / n, cell % n) == color) ours.insert(cell);
        }
        ASSERT_EQ(ours, stones[color]) << kColors[color] << " stones differ; " << where();
      }
      if (game.IsTerminal()) {
        const int gnugo_area = AreaScoreFromStones(n, stones[0], stones[1]);
        EXPECT_EQ(game.ScoreForBlack(), static_cast<float>(gnugo_area) - komi) << where();
        break;
      }
      game.LegalActions(&legal);
      const absl::StatusOr<std::string> reply =
          gtp->Send(absl::StrCat("all_legal ", kColors[game.ToPlay()]));
      ASSERT_TRUE(reply.ok()) << reply.status();
      const std::set<int> theirs = ParseVertices(game, *reply);
      const std::set<int> ours(legal.begin(), legal.end() - 1);  // GNU Go does not list pass
      ASSERT_EQ(ours, theirs) << "legal points differ; " << where();
      ASSERT_EQ(legal.back(), game.PassAction());
      // Rare passes, so that games fill the board, capture and run into superko.
      int action = legal[std::uniform_int_distribution<size_t>(0, legal.size() - 1)(rng)];
      if (action == game.PassAction() && legal.size() > 1 && rng() % 4 != 0) action = legal[0];
      const int before = static_cast<int>(stones[0].size() + stones[1].size());
      const std::string vertex = game.ActionToString(action);
      const absl::StatusOr<std::string> played =
          gtp->Send(absl::StrCat("play ", game.ToPlay() == 0 ? "B " : "W ", vertex));
      ASSERT_TRUE(played.ok()) << played.status() << "; " << where();
      game.Apply(action);
      absl::StrAppend(&moves, " ", vertex);
      ++totals->moves;
      int after = 0;
      for (int cell = 0; cell < n * n; ++cell) after += game.StoneAt(cell / n, cell % n) >= 0;
      if (after < before + (action == game.PassAction() ? 0 : 1)) ++totals->captures;
    }
    ++totals->games;
  }
}

TEST(GnuGoTest, RandomGamesAgreeWithGnuGo) {
  const absl::StatusOr<std::string> gnugo = gtp::FindGnuGo();
  ASSERT_TRUE(gnugo.ok()) << gnugo.status() << " (scripts/bootstrap installs it)";
  absl::StatusOr<std::unique_ptr<GtpPipe>> gtp =
      GtpPipe::Create({.argv = {*gnugo, "--mode", "gtp", "--chinese-rules", "--positional-superko",
                                "--forbid-suicide"}});
  ASSERT_TRUE(gtp.ok()) << gtp.status();
  const absl::StatusOr<std::string> version = (*gtp)->Send("protocol_version");
  ASSERT_TRUE(version.ok()) << version.status();
  EXPECT_EQ(*version, "2");

  Totals totals;
  const auto start = std::chrono::steady_clock::now();
  PlayAgainstGnuGo(gtp->get(), 5, 7.5f, 20, /*seed=*/51, &totals);
  PlayAgainstGnuGo(gtp->get(), 9, 7.5f, 30, /*seed=*/91, &totals);
  PlayAgainstGnuGo(gtp->get(), 9, 6.0f, 5, /*seed=*/92, &totals);
  PlayAgainstGnuGo(gtp->get(), 13, 7.5f, 3, /*seed=*/131, &totals);
  PlayAgainstGnuGo(gtp->get(), 19, 7.5f, 1, /*seed=*/191, &totals);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("checked %d games, %d moves, %d capturing moves against GNU Go in %.1f s\n",
              totals.games, totals.moves, totals.captures, seconds);
  EXPECT_EQ(totals.games, 59);
  EXPECT_GT(totals.captures, 500);
}

}  // namespace
}  // namespace zf::games
