// Google Benchmark micro-benchmarks of the metric updates on the hot paths (prometheus-cpp 1.0.1):
//   the batcher   per batch a few histogram observations (queue wait and latency per request,
//                 compute time and rows per batch; 16 buckets) and a counter increment;
//   the actor     counter increments per move and per leaf batch (simulations, evaluations);
//   replay        per insert two counter increments and one 20-bucket histogram observation.
// Each is timed alone and with two threads updating the same series (the batcher's and the
// actors' threads share theirs). docs/benchmarks.md has the figures.
//
//   build/bench/metrics_bench --benchmark_min_time=0.5
#include <memory>

#include "benchmark/benchmark.h"
#include "common/metrics/buckets.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace zf::metrics {
namespace {

// One registry for the whole program: every thread of a multi-threaded run updates one series.
prometheus::Registry& SharedRegistry() {
  static prometheus::Registry* const registry = new prometheus::Registry();
  return *registry;
}

void BM_CounterIncrement(benchmark::State& state) {
  prometheus::Counter& counter = prometheus::BuildCounter()
                                     .Name("zf_bench_events_total")
                                     .Help("Events.")
                                     .Register(SharedRegistry())
                                     .Add({});
  for (auto _ : state) counter.Increment(2.0);
}
BENCHMARK(BM_CounterIncrement)->Threads(1)->Threads(2);

void BM_GaugeSet(benchmark::State& state) {
  prometheus::Gauge& gauge = prometheus::BuildGauge()
                                 .Name("zf_bench_rows")
                                 .Help("Rows.")
                                 .Register(SharedRegistry())
                                 .Add({});
  double v = 0;
  for (auto _ : state) gauge.Set(v += 1);
}
BENCHMARK(BM_GaugeSet)->Threads(1)->Threads(2);

// An observation spread over the buckets (a latency between 50 us and 1.6 s).
void BM_HistogramObserve(benchmark::State& state) {
  const int buckets = static_cast<int>(state.range(0));
  prometheus::Histogram& histogram =
      prometheus::BuildHistogram()
          .Name("zf_bench_seconds")
          .Help("Latency.")
          .Register(SharedRegistry())
          .Add({{"buckets", std::to_string(buckets)}}, ExponentialBuckets(0.00005, 2, buckets));
  double v = 0.00003;
  for (auto _ : state) {
    histogram.Observe(v);
    v = v < 1.6 ? v * 1.7 : 0.00003;
  }
}
BENCHMARK(BM_HistogramObserve)->Arg(16)->Arg(20)->Threads(1)->Threads(2);

}  // namespace
}  // namespace zf::metrics

BENCHMARK_MAIN();
