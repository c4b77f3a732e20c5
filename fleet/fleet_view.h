// The fleet view behind `zf top` (and the live view inside `zf run`): rates, batch fill, queue
// quantiles, model staleness and the current bottleneck, computed from two rounds of metric
// scrapes taken `elapsed_seconds` apart.
//
//   FleetScrape before = ScrapeFleet(addresses, timeout);          // fleet/scrape.h, or
//   FleetScrape before = {TargetFromRegistry("actor", *registry)};  // in-process registries
//   ... wait ...
//   FleetScrape after = ...;
//   FleetView view = ComputeFleetView(before, after, elapsed_seconds);
//   std::cout << RenderFleetView(view);        // or FleetViewJson(view)
//
// Roles. A target is an actor if it exports zf_actor_games_total, an inference server if
// zf_inference_evaluations_total, a replay shard if zf_replay_positions_stored, a learner if
// zf_learner_steps_total (one process, e.g. `zf run`, may be several). Counters are differenced
// per target and per series between the two rounds (a value that went down is a restart: its new
// value counts, as in PromQL's rate()); targets are matched by name, and one that failed in
// either round contributes no rates. Gauges come from the second round.
//
// Quantities (NaN where the metrics needed are absent or there is nothing to divide by):
//   games/s, moves/s          rate of zf_actor_games_total, zf_actor_moves_total
//   leaf evaluations/s        rate of zf_actor_leaf_evaluations_total (the inference servers'
//                             zf_inference_evaluations_total when no actor is scraped)
//   actor eval wait share     rate of zf_actor_evaluation_wait_seconds_total / zf_actor_workers
//                             (1 worker per actor when the gauge is absent): the fraction of worker
//                             time blocked waiting for evaluations
//   mean batch, batch fill    delta _sum / delta _count of zf_inference_batch_rows; fill = rows /
//                             (batches x zf_inference_max_batch_rows), per server then summed
//   queue wait p50/p99        histogram_quantile over the deltas of
//                             zf_inference_queue_wait_seconds buckets, merged across servers
//   duty cycle                rate of zf_inference_compute_seconds_sum per inference server:
//                             forward-pass seconds per wall second (the Grafana panel's number;
//                             above 1 when several batcher workers overlap their passes)
//   model versions            zf_learner_published_version (max), zf_inference_model_version and
//                             zf_actor_model_version (min); staleness = learner - the others
//   replay                    zf_replay_positions_stored, _games_stored and
//                             _min_size_to_sample summed; insert and
//                             sample rates of zf_replay_inserted_positions_total and
//                             zf_replay_sampled_positions_total; sample/insert = their ratio;
//                             limiter wait = rate of zf_replay_rate_limiter_wait_seconds_total
//                             {operation=...} per shard (callers blocked, on average)
//   learner                   rates of zf_learner_steps_total, _samples_total; data-wait share =
//                             rate of zf_learner_data_wait_seconds_total per learner
//
// The bottleneck rule (first match wins; thresholds are the k* constants below):
//   1. A learner is scraped and its data-wait share >= kStarvedShare (it waits for batches):
//      0. the shards hold fewer positions than their zf_replay_min_size_to_sample together ->
//         "warming up" (a run's first seconds; nothing is slow);
//      a. replay's sample-side limiter wait >= kRateLimitedWait (replay holds samples back
//         because too few new positions arrive): the producers are slow -> rule 3 decides
//         between actors and inference;
//      b. replay is scraped and its sample-side wait is lower: the learner waits although the
//         limiter lets it sample -> "replay" (the shards or the path to them are slow);
//      c. no replay is scraped -> rule 3.
//   2. A learner is scraped and its data-wait share < kStarvedShare -> "learner" (it trains
//      flat out; replay's insert-side wait, when >= kRateLimitedWait, shows actors being held).
//   3. Self-play (also when no learner is scraped), with actors scraped:
//      0. no leaf evaluation and no game finished over the interval -> "actors" (stalled);
//      a. actor eval-wait share >= kActorWaitShare and inference duty >= kBusyDuty -> "inference"
//         (actors wait for a saturated server);
//      b. actor eval-wait share >= kActorWaitShare, duty < kBusyDuty and batch fill < kLowFill ->
//         "actors" (the server idles on small batches: too few leaves in flight; more games per
//         worker or more workers);
//      c. actor eval-wait share >= kActorWaitShare otherwise -> "inference" (latency-bound);
//      d. actor eval-wait share < kActorWaitShare -> "actors" (CPU-bound search).
//      Without actors: an inference server with duty >= kBusyDuty -> "inference"; else unknown.
//   Otherwise "unknown", with what is missing.
//
// Thread-safe (free functions over values).
#pragma once

#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/metric_family.h"
#include "prometheus/registry.h"

namespace zf::fleet {

// kStarvedShare matches the ZfLearnerStarved alert (deploy/prometheus/alerts.yml).
inline constexpr double kStarvedShare = 0.2;
inline constexpr double kRateLimitedWait = 0.1;
inline constexpr double kActorWaitShare = 0.5;
inline constexpr double kBusyDuty = 0.8;
inline constexpr double kLowFill = 0.5;

// One scrape of one target.
struct TargetScrape {
  std::string target;   // "HOST:PORT", or a name for an in-process registry
  absl::Status status;  // not OK: the scrape failed, `families` is empty
  std::vector<prometheus::MetricFamily> families;
};

// One round of scrapes, one entry per target, taken at about the same time.
using FleetScrape = std::vector<TargetScrape>;

// A target from exposition text (a /metrics body). A parse error becomes the target's status.
TargetScrape TargetFromText(std::string target, absl::string_view exposition);
// A target from in-process registries (merged as the /metrics endpoint merges them).
TargetScrape TargetFromRegistries(
    std::string target, absl::Span<const std::shared_ptr<prometheus::Registry>> registries);
TargetScrape TargetFromRegistry(std::string target, const prometheus::Registry& registry);

inline constexpr double kUnknown = std::numeric_limits<double>::quiet_NaN();

struct TargetStatus {
  std::string target;
  std::string roles;  // "actor", "replay", "actor+inference", ... ("" when down or none)
  bool up = false;
  std::string error;  // when down
};

struct Bottleneck {
  // "actors", "inference", "replay", "learner", "warming up" or "unknown"
  std::string component = "unknown";
  std::string reason;  // the numbers that show it
};

struct FleetView {
  double elapsed_seconds = 0.0;
  std::vector<TargetStatus> targets;

  int actors = 0;  // actor processes (targets)
  double actor_workers = kUnknown;
  double games_per_second = kUnknown;
  double moves_per_second = kUnknown;
  double leaf_evaluations_per_second = kUnknown;
  double actor_wait_share = kUnknown;

  int inference_servers = 0;
  double inference_evaluations_per_second = kUnknown;
  double batches_per_second = kUnknown;
  double mean_batch_rows = kUnknown;
  double max_batch_rows = kUnknown;  // the largest max_batch among the servers
  double batch_fill = kUnknown;
  double queue_wait_p50_seconds = kUnknown;
  double queue_wait_p99_seconds = kUnknown;
  double duty_cycle = kUnknown;
  double inference_errors_per_second = kUnknown;  // zf_inference_requests_total{code!="ok"}

  double learner_version = kUnknown;
  double inference_version = kUnknown;
  double actor_version = kUnknown;
  double inference_staleness = kUnknown;  // versions behind the learner
  double actor_staleness = kUnknown;

  int replay_shards = 0;
  double replay_positions = kUnknown;
  double replay_min_size_to_sample = kUnknown;  // summed over shards
  double replay_games = kUnknown;
  double insert_positions_per_second = kUnknown;
  double sample_positions_per_second = kUnknown;
  double sample_insert_ratio = kUnknown;
  double replay_insert_wait = kUnknown;  // limiter wait seconds per second per shard
  double replay_sample_wait = kUnknown;
  double replay_rejections_per_second = kUnknown;

  int learners = 0;
  double learner_steps_per_second = kUnknown;
  double learner_samples_per_second = kUnknown;
  double learner_data_wait_share = kUnknown;
  double learner_loss = kUnknown;  // zf_learner_loss{head="total"}

  Bottleneck bottleneck;
};

// Computes the view from two rounds taken `elapsed_seconds` (> 0) apart. Targets are listed in
// `after`'s order.
FleetView ComputeFleetView(const FleetScrape& before, const FleetScrape& after,
                           double elapsed_seconds);

// A few lines of text, one per component, then the bottleneck and the targets; ends in "\n".
std::string RenderFleetView(const FleetView& view);
// One JSON object (unknown numbers are null), no trailing newline.
std::string FleetViewJson(const FleetView& view);

// Prometheus' histogram_quantile over cumulative buckets (ascending bounds, the last +Inf):
// linear interpolation inside the bucket holding rank q * total, the first bucket starting at 0;
// a rank in the +Inf bucket answers the highest finite bound. NaN when there are no observations.
double HistogramQuantile(double q, const std::vector<prometheus::ClientMetric::Bucket>& buckets);

}  // namespace zf::fleet
