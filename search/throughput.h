// MCTS speed: simulations per second on one core with the UniformEvaluator (tree work only),
// the "search speed" number of design.md. `zf bench mcts` and search/mcts_bench.cc call it.
//
// Method: search `start` with simulations_per_search simulations (a fresh tree each time, so
// every search does exactly that many), collecting batch_size leaves per Evaluate call, then
// play a move sampled from the visit counts (temperature 1, fixed seed) and search the next
// position, starting again from `start` when the game ends; repeat until min_time has passed.
// The rate is simulations (root visits, terminal shortcuts included) over wall time.
//
// Thread-safety: a function of its arguments; runs on the calling thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <random>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/logging.h"
#include "games/game.h"
#include "search/mcts.h"
#include "search/uniform_evaluator.h"

namespace zf::search {

// Result of one measurement.
struct ThroughputResult {
  int64_t simulations = 0;
  int64_t searches = 0;
  double seconds = 0.0;
  double SimulationsPerSecond() const { return seconds > 0 ? simulations / seconds : 0.0; }
};

// Requires simulations_per_search >= 1, batch_size >= 1 and a non-terminal start (ZF_CHECK;
// the caller validates user input).
template <games::Game G>
ThroughputResult MeasureThroughput(const G& start, int simulations_per_search,
                                   absl::Duration min_time, int batch_size = 16) {
  ZF_CHECK(simulations_per_search >= 1) << "simulations_per_search " << simulations_per_search;
  ZF_CHECK(batch_size >= 1) << "batch_size " << batch_size;
  ZF_CHECK(!start.IsTerminal()) << "throughput from a terminal position";
  MctsOptions options;
  options.num_simulations = simulations_per_search;
  absl::StatusOr<std::unique_ptr<Mcts<G>>> mcts = Mcts<G>::Create(start, options);
  ZF_CHECK(mcts.ok()) << mcts.status();
  UniformEvaluator<G> evaluator;
  std::mt19937_64 rng(12345);
  G game = start;
  ThroughputResult result;
  const auto begin = std::chrono::steady_clock::now();
  const double min_seconds = absl::ToDoubleSeconds(min_time);
  do {
    (*mcts)->SetRoot(game);
    const absl::Status status = (*mcts)->Run(evaluator, batch_size);
    ZF_CHECK(status.ok()) << status;  // the uniform evaluator cannot fail
    result.simulations += (*mcts)->RootVisits();
    ++result.searches;
    game.Apply((*mcts)->SelectAction(/*temperature=*/1.0f, rng));
    if (game.IsTerminal()) game = start;
    result.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  } while (result.seconds < min_seconds);
  return result;
}

// The simulations per second of MeasureThroughput. Same requirements.
template <games::Game G>
double MeasureSimulationsPerSecond(const G& start, int simulations_per_search,
                                   absl::Duration min_time, int batch_size = 16) {
  return MeasureThroughput(start, simulations_per_search, min_time, batch_size)
      .SimulationsPerSecond();
}

}  // namespace zf::search
