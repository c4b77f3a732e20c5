// Google Benchmark micro-benchmarks of the game rules: the cost of the operations MCTS calls
// per simulation (copy, legal moves, apply, terminal test, hash, encode).
//
//   build/bench/games_bench --benchmark_min_time=0.2
#include <random>
#include <vector>

#include "benchmark/benchmark.h"
#include "games/connect4/connect4.h"
#include "games/dotsboxes/dotsboxes.h"
#include "games/game.h"
#include "games/tictactoe/tictactoe.h"

namespace zf::games {
namespace {

// One random playout from the start per iteration; reports plies per second.
template <Game G>
void BM_RandomPlayout(benchmark::State& state, G start) {
  std::mt19937 rng(1);
  std::vector<int> legal;
  int64_t plies = 0;
  for (auto _ : state) {
    G game = start;
    while (!game.IsTerminal()) {
      game.LegalActions(&legal);
      game.Apply(legal[rng() % legal.size()]);
      ++plies;
    }
    benchmark::DoNotOptimize(game.Hash());
  }
  state.counters["plies/s"] = benchmark::Counter(static_cast<double>(plies), benchmark::Counter::kIsRate);
}

template <Game G>
void BM_Encode(benchmark::State& state, G game) {
  std::vector<uint8_t> planes(game.Shape().Size());
  for (auto _ : state) {
    game.Encode(planes.data());
    benchmark::DoNotOptimize(planes.data());
  }
}

BENCHMARK_CAPTURE(BM_RandomPlayout, tictactoe, TicTacToe());
BENCHMARK_CAPTURE(BM_RandomPlayout, connect4, ConnectFour());
BENCHMARK_CAPTURE(BM_RandomPlayout, dotsboxes_3x3, DotsAndBoxes());
BENCHMARK_CAPTURE(BM_RandomPlayout, dotsboxes_5x5, *DotsAndBoxes::Create(5, 5));
BENCHMARK_CAPTURE(BM_Encode, connect4, ConnectFour());
BENCHMARK_CAPTURE(BM_Encode, dotsboxes_5x5, *DotsAndBoxes::Create(5, 5));

}  // namespace
}  // namespace zf::games

BENCHMARK_MAIN();
