// MCTS simulations per second on one core with the UniformEvaluator (tree work only).
//
//   build/search/mcts_bench --benchmark_min_time=2
//
// Each iteration is one search of `sims` simulations from a fresh tree, collecting `batch`
// leaves per Evaluate call, at positions along a game (the first from the start position, then
// after a move sampled from the visit counts; a finished game starts again), exactly as
// MeasureSimulationsPerSecond (search/throughput.h) counts. The sims/s counter is the number.
#include <cstdint>
#include <memory>
#include <random>

#include "absl/status/status.h"
#include "benchmark/benchmark.h"
#include "common/logging.h"
#include "games/connect4/connect4.h"
#include "games/dotsboxes/dotsboxes.h"
#include "games/game.h"
#include "games/tictactoe/tictactoe.h"
#include "search/mcts.h"
#include "search/uniform_evaluator.h"

namespace zf::search {
namespace {

template <games::Game G>
void BM_Search(benchmark::State& state, G start) {
  const int sims = static_cast<int>(state.range(0));
  const int batch = static_cast<int>(state.range(1));
  MctsOptions options;
  options.num_simulations = sims;
  auto mcts = Mcts<G>::Create(start, options);
  ZF_CHECK(mcts.ok()) << mcts.status();
  UniformEvaluator<G> evaluator;
  std::mt19937_64 rng(12345);
  G game = start;
  int64_t simulations = 0;
  for (auto _ : state) {
    (*mcts)->SetRoot(game);
    const absl::Status status = (*mcts)->Run(evaluator, batch);
    ZF_CHECK(status.ok()) << status;
    simulations += (*mcts)->RootVisits();
    game.Apply((*mcts)->SelectAction(/*temperature=*/1.0f, rng));
    if (game.IsTerminal()) game = start;
  }
  state.counters["sims/s"] =
      benchmark::Counter(static_cast<double>(simulations), benchmark::Counter::kIsRate);
  state.counters["nodes"] = (*mcts)->NumNodes();
}

// Searches the start position only (the widest tree of a game).
template <games::Game G>
void BM_SearchStart(benchmark::State& state, G start) {
  const int sims = static_cast<int>(state.range(0));
  const int batch = static_cast<int>(state.range(1));
  MctsOptions options;
  options.num_simulations = sims;
  auto mcts = Mcts<G>::Create(start, options);
  ZF_CHECK(mcts.ok()) << mcts.status();
  UniformEvaluator<G> evaluator;
  int64_t simulations = 0;
  for (auto _ : state) {
    (*mcts)->SetRoot(start);
    const absl::Status status = (*mcts)->Run(evaluator, batch);
    ZF_CHECK(status.ok()) << status;
    simulations += (*mcts)->RootVisits();
  }
  state.counters["sims/s"] =
      benchmark::Counter(static_cast<double>(simulations), benchmark::Counter::kIsRate);
}

games::DotsAndBoxes DotsAndBoxes(int rows, int cols) {
  auto game = games::DotsAndBoxes::Create(rows, cols);
  ZF_CHECK(game.ok()) << game.status();
  return *game;
}

BENCHMARK_CAPTURE(BM_Search, connect4, games::ConnectFour())
    ->Args({800, 16})
    ->Args({800, 1})
    ->Args({800, 64})
    ->Args({200, 16});
BENCHMARK_CAPTURE(BM_SearchStart, connect4, games::ConnectFour())->Args({800, 16});
BENCHMARK_CAPTURE(BM_Search, tictactoe, games::TicTacToe())->Args({800, 16});
BENCHMARK_CAPTURE(BM_Search, dotsboxes_3x3, DotsAndBoxes(3, 3))->Args({800, 16});
BENCHMARK_CAPTURE(BM_Search, dotsboxes_5x5, DotsAndBoxes(5, 5))->Args({800, 16});

}  // namespace
}  // namespace zf::search

BENCHMARK_MAIN();
