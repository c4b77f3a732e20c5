// What Connect Four's exact solver (games/connect4/solver.h) costs by ply: for each ply asked,
// positions reached by games between two MCTS players (mcts:100, random rollouts) after two
// random plies, each solved as the `perfect` player does (the exact score, then the optimal
// moves) by a solver with a fresh table (the worst case: a perfect player in a game reuses its
// table from the ply before). Prints a table and one JSON line.
//
//   connect4_solver_bench [--plies 8,10,12] [--positions N] [--max_nodes M] [--seed S]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "games/connect4/connect4.h"
#include "games/connect4/solver.h"
#include "players/player_spec.h"

namespace {

using zf::games::ConnectFour;
using zf::games::ConnectFourSolver;

struct Row {
  int ply = 0, positions = 0, solved = 0;
  double median_s = 0, max_s = 0, median_nodes = 0, max_nodes = 0, nodes_per_s = 0;
};

// The position at `ply` of a game between two mcts:100 players opened with two random plies;
// nullopt when the game ended before it.
std::optional<ConnectFour> PositionAt(int ply, uint64_t seed) {
  ConnectFour start;
  auto a = zf::players::MakePlayer<ConnectFour>("mcts:100", start, seed);
  auto b = zf::players::MakePlayer<ConnectFour>("mcts:100", start, seed + 1);
  if (!a.ok() || !b.ok()) return std::nullopt;
  ConnectFour g;
  std::mt19937_64 rng(seed);
  zf::players::PlayRandomOpening(g, std::min(2, ply), rng);
  while (g.NumMoves() < ply && !g.IsTerminal()) {
    absl::StatusOr<int> action = (g.ToPlay() == 0 ? *a : *b)->ChooseAction(g);
    if (!action.ok()) return std::nullopt;
    g.Apply(*action);
  }
  if (g.IsTerminal()) return std::nullopt;
  return g;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> plies = {6, 8, 10, 12, 14, 16, 20, 24};
  int per_ply = 10;
  int64_t max_nodes = ConnectFourSolver::Options().max_nodes;
  uint64_t seed = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    bool ok = true;
    if (flag == "--plies") {
      plies.clear();
      for (absl::string_view p : absl::StrSplit(value, ',')) {
        int x = 0;
        ok = ok && absl::SimpleAtoi(p, &x) && x >= 0 && x < 42;
        plies.push_back(x);
      }
    } else if (flag == "--positions") {
      ok = absl::SimpleAtoi(value, &per_ply) && per_ply > 0;
    } else if (flag == "--max_nodes") {
      ok = absl::SimpleAtoi(value, &max_nodes) && max_nodes >= 0;
    } else if (flag == "--seed") {
      ok = absl::SimpleAtoi(value, &seed);
    } else {
      ok = false;
    }
    if (!ok) {
      std::fprintf(stderr, "connect4_solver_bench: bad flag %s %s\n", flag.c_str(), value.c_str());
      return 2;
    }
  }
  std::vector<Row> rows;
  std::printf("%5s %9s %7s %10s %10s %14s %14s %12s\n", "ply", "positions", "solved", "median s",
              "max s", "median nodes", "max nodes", "nodes/s");
  for (int ply : plies) {
    Row row;
    row.ply = ply;
    std::vector<double> seconds, nodes;
    double total_s = 0, total_nodes = 0;
    for (uint64_t k = 0; row.positions < per_ply && k < 50ull * per_ply; ++k) {
      std::optional<ConnectFour> g = PositionAt(ply, seed * 1000003 + ply * 7919 + k);
      if (!g.has_value()) continue;
      ConnectFourSolver::Options options;
      options.max_nodes = max_nodes;
      absl::StatusOr<ConnectFourSolver> solver = ConnectFourSolver::Create(options);
      if (!solver.ok()) return 2;
      const auto t0 = std::chrono::steady_clock::now();
      absl::StatusOr<std::vector<int>> best = solver->OptimalActions(*g);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      ++row.positions;
      row.solved += best.ok();
      seconds.push_back(s);
      nodes.push_back(static_cast<double>(solver->nodes()));
      total_s += s;
      total_nodes += static_cast<double>(solver->nodes());
    }
    if (row.positions == 0) continue;
    std::sort(seconds.begin(), seconds.end());
    std::sort(nodes.begin(), nodes.end());
    row.median_s = seconds[seconds.size() / 2];
    row.max_s = seconds.back();
    row.median_nodes = nodes[nodes.size() / 2];
    row.max_nodes = nodes.back();
    row.nodes_per_s = total_s > 0 ? total_nodes / total_s : 0;
    std::printf("%5d %9d %7d %10.4f %10.4f %14.0f %14.0f %12.0f\n", row.ply, row.positions,
                row.solved, row.median_s, row.max_s, row.median_nodes, row.max_nodes,
                row.nodes_per_s);
    std::fflush(stdout);
    rows.push_back(row);
  }
  std::vector<std::string> json;
  for (const Row& r : rows) {
    json.push_back(absl::StrCat("{\"ply\": ", r.ply, ", \"positions\": ", r.positions,
                                ", \"solved\": ", r.solved, ", \"median_s\": ", r.median_s,
                                ", \"max_s\": ", r.max_s, ", \"median_nodes\": ", r.median_nodes,
                                ", \"max_nodes\": ", r.max_nodes,
                                ", \"nodes_per_s\": ", r.nodes_per_s, "}"));
  }
  std::printf("{\"benchmark\": \"connect4_solver\", \"max_nodes\": %lld, \"rows\": [%s]}\n",
              static_cast<long long>(max_nodes), absl::StrJoin(json, ", ").c_str());
  return 0;
}
