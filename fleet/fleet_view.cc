#include "fleet/fleet_view.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/json.h"
#include "common/metrics/exposition.h"
#include "common/metrics/text_parser.h"

namespace zf::fleet {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

// Which series of a family to use.
using SeriesFilter = std::function<bool(const ClientMetric&)>;

bool AnySeries(const ClientMetric&) { return true; }

SeriesFilter LabelIs(std::string name, std::string value) {
  return [name = std::move(name), value = std::move(value)](const ClientMetric& m) {
    for (const ClientMetric::Label& l : m.label) {
      if (l.name == name) return l.value == value;
    }
    return false;
  };
}

SeriesFilter LabelIsNot(std::string name, std::string value) {
  SeriesFilter is = LabelIs(std::move(name), std::move(value));
  return [is](const ClientMetric& m) { return !is(m); };
}

const MetricFamily* Find(const TargetScrape& scrape, absl::string_view name) {
  for (const MetricFamily& f : scrape.families) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

double ScalarValue(const MetricFamily& family, const ClientMetric& m) {
  switch (family.type) {
    case MetricType::Counter:
      return m.counter.value;
    case MetricType::Gauge:
      return m.gauge.value;
    default:
      return m.untyped.value;
  }
}

const ClientMetric* SameSeries(const MetricFamily& family, const ClientMetric& m) {
  for (const ClientMetric& other : family.metric) {
    if (other.label == m.label) return &other;
  }
  return nullptr;
}

// Pairs of (before, after) scrapes of the same target, both OK.
std::vector<std::pair<const TargetScrape*, const TargetScrape*>> Matched(const FleetScrape& before,
                                                                         const FleetScrape& after) {
  std::vector<std::pair<const TargetScrape*, const TargetScrape*>> pairs;
  for (const TargetScrape& a : after) {
    if (!a.status.ok()) continue;
    for (const TargetScrape& b : before) {
      if (b.target == a.target && b.status.ok()) {
        pairs.emplace_back(&b, &a);
        break;
      }
    }
  }
  return pairs;
}

// Counter increase over one target (restarts count their new value); NaN if the family is absent.
double Increase(const TargetScrape& before, const TargetScrape& after, absl::string_view name,
                const SeriesFilter& filter) {
  const MetricFamily* a = Find(after, name);
  if (a == nullptr) return kUnknown;
  const MetricFamily* b = Find(before, name);
  double total = 0.0;
  for (const ClientMetric& m : a->metric) {
    if (!filter(m)) continue;
    const double now = ScalarValue(*a, m);
    const ClientMetric* old = b != nullptr ? SameSeries(*b, m) : nullptr;
    const double then = old != nullptr ? ScalarValue(*b, *old) : 0.0;
    total += now >= then ? now - then : now;
  }
  return total;
}

double Sum(double a, double b) {
  if (std::isnan(a)) return b;
  if (std::isnan(b)) return a;
  return a + b;
}

double Ratio(double num, double den) {
  if (std::isnan(num) || std::isnan(den) || den <= 0) return kUnknown;
  return num / den;
}

// Counter increase summed over every matched target; NaN if no target has the family.
double FleetIncrease(const FleetScrape& before, const FleetScrape& after, absl::string_view name,
                     const SeriesFilter& filter = AnySeries) {
  double total = kUnknown;
  for (const auto& [b, a] : Matched(before, after))
    total = Sum(total, Increase(*b, *a, name, filter));
  return total;
}

// A gauge (all matching series summed per target) over the second round's targets, combined with
// `combine`; NaN if no target has it.
double FleetGauge(const FleetScrape& after, absl::string_view name,
                  const std::function<double(double, double)>& combine,
                  const SeriesFilter& filter = AnySeries) {
  double result = kUnknown;
  for (const TargetScrape& t : after) {
    const MetricFamily* f = t.status.ok() ? Find(t, name) : nullptr;
    if (f == nullptr) continue;
    double value = kUnknown;
    for (const ClientMetric& m : f->metric) {
      if (filter(m)) value = Sum(value, ScalarValue(*f, m));
    }
    if (std::isnan(value)) continue;
    result = std::isnan(result) ? value : combine(result, value);
  }
  return result;
}

double Add(double a, double b) { return a + b; }
double Min(double a, double b) { return std::min(a, b); }
double Max(double a, double b) { return std::max(a, b); }

// The increase of one histogram over one target (series summed): cumulative bucket deltas, and
// the deltas of _sum and _count.
struct HistogramDelta {
  std::vector<ClientMetric::Bucket> buckets;  // ascending, cumulative
  double sum = 0.0;
  double count = 0.0;
  bool present = false;
};

// Cumulative count of `buckets` at `bound`: the count of the largest bound <= `bound`.
double CumulativeAt(const std::vector<ClientMetric::Bucket>& buckets, double bound) {
  double c = 0.0;
  for (const ClientMetric::Bucket& b : buckets) {
    if (b.upper_bound <= bound) c = static_cast<double>(b.cumulative_count);
  }
  return c;
}

// Adds `add` into `into`, on the union of their bounds.
void MergeBuckets(const std::vector<ClientMetric::Bucket>& add,
                  std::vector<ClientMetric::Bucket>* into) {
  std::vector<double> bounds;
  for (const auto& b : *into) bounds.push_back(b.upper_bound);
  for (const auto& b : add) bounds.push_back(b.upper_bound);
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  std::vector<ClientMetric::Bucket> merged;
  for (double bound : bounds) {
    ClientMetric::Bucket b;
    b.upper_bound = bound;
    b.cumulative_count =
        static_cast<std::uint64_t>(CumulativeAt(*into, bound) + CumulativeAt(add, bound));
    merged.push_back(b);
  }
  *into = std::move(merged);
}

HistogramDelta HistogramIncrease(const TargetScrape& before, const TargetScrape& after,
                                 absl::string_view name) {
  HistogramDelta delta;
  const MetricFamily* a = Find(after, name);
  if (a == nullptr || a->type != MetricType::Histogram) return delta;
  delta.present = true;
  const MetricFamily* b = Find(before, name);
  for (const ClientMetric& m : a->metric) {
    const ClientMetric* old = b != nullptr ? SameSeries(*b, m) : nullptr;
    const bool reset = old == nullptr || old->histogram.sample_count > m.histogram.sample_count;
    std::vector<ClientMetric::Bucket> buckets = m.histogram.bucket;
    if (!reset) {
      for (ClientMetric::Bucket& bucket : buckets) {
        const double then = CumulativeAt(old->histogram.bucket, bucket.upper_bound);
        const double now = static_cast<double>(bucket.cumulative_count);
        bucket.cumulative_count = static_cast<std::uint64_t>(std::max(0.0, now - then));
      }
      delta.sum += m.histogram.sample_sum - old->histogram.sample_sum;
      delta.count += static_cast<double>(m.histogram.sample_count - old->histogram.sample_count);
    } else {
      delta.sum += m.histogram.sample_sum;
      delta.count += static_cast<double>(m.histogram.sample_count);
    }
    MergeBuckets(buckets, &delta.buckets);
  }
  return delta;
}

bool Has(const TargetScrape& t, absl::string_view name) {
  return t.status.ok() && Find(t, name) != nullptr;
}

std::string Percent(double share) {
  return std::isnan(share) ? "-" : absl::StrFormat("%.0f%%", 100 * share);
}

std::string Num(double v, int precision = 2) {
  if (std::isnan(v)) return "-";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  const double a = std::fabs(v);
  if (a >= 1e6) return absl::StrFormat("%.2fM", v / 1e6);
  if (a >= 1e4) return absl::StrFormat("%.1fk", v / 1e3);
  if (a >= 100 || v == std::floor(v)) return absl::StrFormat("%.0f", v);
  return absl::StrFormat("%.*f", precision, v);
}

std::string Millis(double seconds) {
  if (std::isnan(seconds)) return "-";
  return absl::StrFormat("%.2f ms", 1000 * seconds);
}

std::string Version(double v) { return std::isnan(v) || v < 0 ? "-" : absl::StrFormat("v%.0f", v); }

// Rule 3 of the header: self-play, actors against inference.
Bottleneck SelfPlay(const FleetView& v, const std::string& prefix) {
  Bottleneck b;
  const std::string inference_numbers =
      absl::StrCat("inference duty ", Percent(v.duty_cycle), ", batch fill ", Percent(v.batch_fill),
                   ", queue wait p99 ", Millis(v.queue_wait_p99_seconds));
  if (v.actors > 0 && v.leaf_evaluations_per_second == 0 && v.games_per_second == 0) {
    b.component = "actors";
    b.reason = absl::StrCat(prefix, "actors made no progress (0 leaf evaluations/s, 0 games/s, ",
                            "eval wait ", Percent(v.actor_wait_share),
                            "): check their inference and replay connections");
    return b;
  }
  if (v.actors > 0 && !std::isnan(v.actor_wait_share)) {
    const std::string wait = absl::StrCat("actors wait ", Percent(v.actor_wait_share),
                                          " of worker time for evaluations");
    if (v.actor_wait_share >= kActorWaitShare) {
      if (!std::isnan(v.duty_cycle) && v.duty_cycle >= kBusyDuty) {
        b.component = "inference";
        b.reason =
            absl::StrCat(prefix, wait, "; the server is saturated (", inference_numbers, ")");
      } else if (!std::isnan(v.batch_fill) && v.batch_fill < kLowFill) {
        b.component = "actors";
        b.reason = absl::StrCat(prefix, wait, ", yet ", inference_numbers,
                                ": too few leaves in flight (more games per worker or workers)");
      } else {
        b.component = "inference";
        b.reason = absl::StrCat(prefix, wait, " (", inference_numbers, "): latency-bound");
      }
    } else {
      b.component = "actors";
      b.reason =
          absl::StrCat(prefix, "actors are CPU-bound: they wait only ", Percent(v.actor_wait_share),
                       " for evaluations, ", Num(v.games_per_second), " games/s, ",
                       Num(v.leaf_evaluations_per_second), " leaf evaluations/s");
    }
    return b;
  }
  if (v.inference_servers > 0 && !std::isnan(v.duty_cycle) && v.duty_cycle >= kBusyDuty) {
    b.component = "inference";
    b.reason = absl::StrCat(prefix, inference_numbers, " (no actor scraped)");
    return b;
  }
  b.reason = absl::StrCat(prefix, "no actor metrics to tell actors from inference");
  return b;
}

Bottleneck Decide(const FleetView& v) {
  if (v.learners > 0 && !std::isnan(v.learner_data_wait_share)) {
    const std::string data_wait =
        absl::StrCat("learner waits ", Percent(v.learner_data_wait_share), " of its time for data");
    if (v.learner_data_wait_share >= kStarvedShare) {
      // A run's first seconds: the shards are still filling up to min_size_to_sample, and no
      // part of the fleet is slow.
      if (!std::isnan(v.replay_positions) && !std::isnan(v.replay_min_size_to_sample) &&
          v.replay_positions < v.replay_min_size_to_sample) {
        return {"warming up",
                absl::StrCat(data_wait, " while replay fills up: ", Num(v.replay_positions),
                             " of the ", Num(v.replay_min_size_to_sample),
                             " positions the shards need before they serve samples")};
      }
      if (!std::isnan(v.replay_sample_wait) && v.replay_sample_wait >= kRateLimitedWait) {
        return SelfPlay(v, absl::StrCat(data_wait, " and replay's rate limiter holds samples (",
                                        Num(v.replay_sample_wait), " s/s per shard; sample/insert ",
                                        Num(v.sample_insert_ratio), "): "));
      }
      if (v.replay_shards > 0) {
        return {"replay",
                absl::StrCat(data_wait, " while replay's rate limiter holds samples only ",
                             Num(v.replay_sample_wait),
                             " s/s per shard: the shards or the path to them are slow (",
                             Num(v.sample_positions_per_second), " positions/s sampled)")};
      }
      return SelfPlay(v, absl::StrCat(data_wait, " (no replay scraped): "));
    }
    std::string reason = absl::StrCat(data_wait, ", training flat out at ",
                                      Num(v.learner_steps_per_second), " steps/s");
    if (!std::isnan(v.replay_insert_wait) && v.replay_insert_wait >= kRateLimitedWait) {
      absl::StrAppend(&reason, "; replay holds inserts ", Num(v.replay_insert_wait),
                      " s/s per shard (actors wait for the learner)");
    }
    return {"learner", reason};
  }
  if (v.actors > 0 || v.inference_servers > 0) return SelfPlay(v, "");
  Bottleneck b;
  b.reason = "no actor, inference or learner rates yet";
  return b;
}

// Six significant digits, for a view people read (common/json.h's JsonNumber keeps every digit).
std::string ViewJsonNumber(double v) {
  if (std::isnan(v) || std::isinf(v)) return "null";
  return absl::StrFormat("%.6g", v);
}

}  // namespace

TargetScrape TargetFromText(std::string target, absl::string_view exposition) {
  TargetScrape scrape;
  scrape.target = std::move(target);
  absl::StatusOr<std::vector<MetricFamily>> families = metrics::ParseText(exposition);
  if (families.ok()) {
    scrape.families = *std::move(families);
  } else {
    scrape.status = families.status();
  }
  return scrape;
}

TargetScrape TargetFromRegistries(
    std::string target, absl::Span<const std::shared_ptr<prometheus::Registry>> registries) {
  TargetScrape scrape;
  scrape.target = std::move(target);
  scrape.families = metrics::CollectAll(registries);
  return scrape;
}

TargetScrape TargetFromRegistry(std::string target, const prometheus::Registry& registry) {
  TargetScrape scrape;
  scrape.target = std::move(target);
  scrape.families = registry.Collect();
  return scrape;
}

double HistogramQuantile(double q, const std::vector<ClientMetric::Bucket>& buckets) {
  if (buckets.empty() || std::isnan(q)) return kUnknown;
  const double total = static_cast<double>(buckets.back().cumulative_count);
  if (total <= 0) return kUnknown;
  const double rank = std::clamp(q, 0.0, 1.0) * total;
  size_t i = 0;
  while (i < buckets.size() && static_cast<double>(buckets[i].cumulative_count) < rank) ++i;
  if (i == buckets.size()) i = buckets.size() - 1;
  if (std::isinf(buckets[i].upper_bound)) {
    return i > 0 ? buckets[i - 1].upper_bound : kUnknown;
  }
  if (i == 0 && buckets[0].upper_bound <= 0) return buckets[0].upper_bound;
  const double lower = i == 0 ? 0.0 : buckets[i - 1].upper_bound;
  const double below = i == 0 ? 0.0 : static_cast<double>(buckets[i - 1].cumulative_count);
  const double in_bucket = static_cast<double>(buckets[i].cumulative_count) - below;
  if (in_bucket <= 0) return buckets[i].upper_bound;
  return lower + (buckets[i].upper_bound - lower) * (rank - below) / in_bucket;
}

FleetView ComputeFleetView(const FleetScrape& before, const FleetScrape& after,
                           double elapsed_seconds) {
  FleetView v;
  v.elapsed_seconds = elapsed_seconds;
  const double dt = elapsed_seconds > 0 ? elapsed_seconds : kUnknown;

  for (const TargetScrape& t : after) {
    TargetStatus s;
    s.target = t.target;
    s.up = t.status.ok();
    if (!s.up) s.error = std::string(t.status.message());
    std::vector<std::string> roles;
    if (Has(t, "zf_actor_games_total")) {
      roles.push_back("actor");
      ++v.actors;
    }
    if (Has(t, "zf_inference_evaluations_total")) {
      roles.push_back("inference");
      ++v.inference_servers;
    }
    if (Has(t, "zf_replay_positions_stored")) {
      roles.push_back("replay");
      ++v.replay_shards;
    }
    if (Has(t, "zf_learner_steps_total")) {
      roles.push_back("learner");
      ++v.learners;
    }
    s.roles = absl::StrJoin(roles, "+");
    v.targets.push_back(std::move(s));
  }

  auto rate = [&](absl::string_view name, const SeriesFilter& filter = AnySeries) {
    return Ratio(FleetIncrease(before, after, name, filter), dt);
  };

  // Actors.
  if (v.actors > 0) {
    v.games_per_second = rate("zf_actor_games_total");
    v.moves_per_second = rate("zf_actor_moves_total");
    v.leaf_evaluations_per_second = rate("zf_actor_leaf_evaluations_total");
    double workers = 0.0;
    for (const TargetScrape& t : after) {
      if (!Has(t, "zf_actor_games_total")) continue;
      FleetScrape one = {t};
      const double w = FleetGauge(one, "zf_actor_workers", Add);
      workers += std::isnan(w) ? 1.0 : w;
    }
    v.actor_workers = workers;
    v.actor_wait_share = Ratio(rate("zf_actor_evaluation_wait_seconds_total"), workers);
    v.actor_version = FleetGauge(after, "zf_actor_model_version", Min);
  }

  // Inference.
  if (v.inference_servers > 0) {
    v.inference_evaluations_per_second = rate("zf_inference_evaluations_total");
    if (std::isnan(v.leaf_evaluations_per_second)) {
      v.leaf_evaluations_per_second = v.inference_evaluations_per_second;
    }
    v.inference_errors_per_second = rate("zf_inference_requests_total", LabelIsNot("code", "ok"));
    v.max_batch_rows = FleetGauge(after, "zf_inference_max_batch_rows", Max);
    v.inference_version = FleetGauge(after, "zf_inference_model_version", Min);
    double rows = 0, batches = 0, capacity = 0, compute = 0;
    bool have_batches = false, have_capacity = false, have_compute = false;
    std::vector<ClientMetric::Bucket> queue_wait;
    for (const auto& [b, a] : Matched(before, after)) {
      const HistogramDelta batch = HistogramIncrease(*b, *a, "zf_inference_batch_rows");
      if (batch.present) {
        have_batches = true;
        rows += batch.sum;
        batches += batch.count;
        FleetScrape one = {*a};
        const double max_batch = FleetGauge(one, "zf_inference_max_batch_rows", Max);
        if (!std::isnan(max_batch)) {
          have_capacity = true;
          capacity += batch.count * max_batch;
        }
      }
      const HistogramDelta wait = HistogramIncrease(*b, *a, "zf_inference_queue_wait_seconds");
      if (wait.present) MergeBuckets(wait.buckets, &queue_wait);
      const HistogramDelta pass = HistogramIncrease(*b, *a, "zf_inference_compute_seconds");
      if (pass.present) {
        have_compute = true;
        compute += pass.sum;
      }
    }
    if (have_batches) {
      v.batches_per_second = Ratio(batches, dt);
      v.mean_batch_rows = Ratio(rows, batches);
      if (have_capacity) v.batch_fill = Ratio(rows, capacity);
    }
    v.queue_wait_p50_seconds = HistogramQuantile(0.5, queue_wait);
    v.queue_wait_p99_seconds = HistogramQuantile(0.99, queue_wait);
    if (have_compute) v.duty_cycle = Ratio(Ratio(compute, dt), v.inference_servers);
  }

  // Replay.
  if (v.replay_shards > 0) {
    v.replay_positions = FleetGauge(after, "zf_replay_positions_stored", Add);
    v.replay_games = FleetGauge(after, "zf_replay_games_stored", Add);
    v.replay_min_size_to_sample = FleetGauge(after, "zf_replay_min_size_to_sample", Add);
    v.insert_positions_per_second = rate("zf_replay_inserted_positions_total");
    v.sample_positions_per_second = rate("zf_replay_sampled_positions_total");
    v.sample_insert_ratio = Ratio(v.sample_positions_per_second, v.insert_positions_per_second);
    v.replay_insert_wait =
        Ratio(rate("zf_replay_rate_limiter_wait_seconds_total", LabelIs("operation", "insert")),
              v.replay_shards);
    v.replay_sample_wait =
        Ratio(rate("zf_replay_rate_limiter_wait_seconds_total", LabelIs("operation", "sample")),
              v.replay_shards);
    v.replay_rejections_per_second = rate("zf_replay_rejections_total");
  }

  // Learner.
  if (v.learners > 0) {
    v.learner_steps_per_second = rate("zf_learner_steps_total");
    v.learner_samples_per_second = rate("zf_learner_samples_total");
    v.learner_data_wait_share = Ratio(rate("zf_learner_data_wait_seconds_total"), v.learners);
    v.learner_version = FleetGauge(after, "zf_learner_published_version", Max);
    v.learner_loss = FleetGauge(after, "zf_learner_loss", Max, LabelIs("head", "total"));
  }

  // Staleness: how many versions the served and played models are behind the newest published.
  if (!std::isnan(v.learner_version)) {
    if (!std::isnan(v.inference_version) && v.inference_version >= 0) {
      v.inference_staleness = v.learner_version - v.inference_version;
    }
    if (!std::isnan(v.actor_version) && v.actor_version >= 0) {
      v.actor_staleness = v.learner_version - v.actor_version;
    }
  }

  if (std::isnan(dt)) {
    v.bottleneck.reason = "no interval between the two scrapes";
  } else {
    v.bottleneck = Decide(v);
  }
  return v;
}

std::string RenderFleetView(const FleetView& v) {
  int up = 0;
  for (const TargetStatus& t : v.targets) up += t.up ? 1 : 0;
  std::string out = absl::StrFormat("zf top   %d of %zu targets up, rates over %.1f s\n", up,
                                    v.targets.size(), v.elapsed_seconds);
  if (v.actors > 0) {
    absl::StrAppend(
        &out,
        absl::StrFormat(
            "actors     %d process(es), %s workers   games/s %s   moves/s %s   leaf evals/s %s   "
            "eval wait %s\n",
            v.actors, Num(v.actor_workers), Num(v.games_per_second), Num(v.moves_per_second),
            Num(v.leaf_evaluations_per_second), Percent(v.actor_wait_share)));
  } else {
    absl::StrAppend(&out, "actors     none scraped\n");
  }
  if (v.inference_servers > 0) {
    absl::StrAppend(
        &out,
        absl::StrFormat("inference  %d server(s)   evals/s %s   batch mean %s of %s (fill %s)   "
                        "queue wait p50 %s "
                        "p99 %s   duty %s   errors/s %s\n",
                        v.inference_servers, Num(v.inference_evaluations_per_second),
                        Num(v.mean_batch_rows, 1), Num(v.max_batch_rows), Percent(v.batch_fill),
                        Millis(v.queue_wait_p50_seconds), Millis(v.queue_wait_p99_seconds),
                        Percent(v.duty_cycle), Num(v.inference_errors_per_second)));
  } else {
    absl::StrAppend(&out, "inference  none scraped\n");
  }
  auto behind = [](double s) {
    return std::isnan(s) ? std::string() : absl::StrFormat(" (%.0f behind)", s);
  };
  absl::StrAppend(&out, "models     learner ", Version(v.learner_version), "   inference ",
                  Version(v.inference_version), behind(v.inference_staleness), "   actors ",
                  Version(v.actor_version), behind(v.actor_staleness), "\n");
  if (v.replay_shards > 0) {
    absl::StrAppend(
        &out, absl::StrFormat("replay     %d shard(s)   %s positions (%s games)   insert %s pos/s  "
                              " sample %s pos/s   "
                              "sample/insert %s   limiter wait insert %s s/s, sample %s s/s\n",
                              v.replay_shards, Num(v.replay_positions), Num(v.replay_games),
                              Num(v.insert_positions_per_second),
                              Num(v.sample_positions_per_second), Num(v.sample_insert_ratio),
                              Num(v.replay_insert_wait), Num(v.replay_sample_wait)));
  } else {
    absl::StrAppend(&out, "replay     none scraped\n");
  }
  if (v.learners > 0) {
    absl::StrAppend(
        &out, absl::StrFormat(
                  "learner    %d   steps/s %s   samples/s %s   data wait %s   loss %s\n",
                  v.learners, Num(v.learner_steps_per_second), Num(v.learner_samples_per_second),
                  Percent(v.learner_data_wait_share), Num(v.learner_loss, 3)));
  } else {
    absl::StrAppend(&out, "learner    none scraped\n");
  }
  absl::StrAppend(&out, "bottleneck ", v.bottleneck.component, ": ", v.bottleneck.reason, "\n");
  std::vector<std::string> targets;
  for (const TargetStatus& t : v.targets) {
    targets.push_back(t.up
                          ? absl::StrCat(t.target, " ", t.roles.empty() ? "(no zf roles)" : t.roles)
                          : absl::StrCat(t.target, " DOWN (", t.error, ")"));
  }
  absl::StrAppend(&out, "targets    ", absl::StrJoin(targets, "; "), "\n");
  return out;
}

std::string FleetViewJson(const FleetView& v) {
  using ::zf::JsonString;
  auto field = [](absl::string_view name, double value) {
    return absl::StrCat(JsonString(name), ": ", ViewJsonNumber(value));
  };
  std::vector<std::string> targets;
  for (const TargetStatus& t : v.targets) {
    targets.push_back(absl::StrCat(
        "{\"target\": ", JsonString(t.target), ", \"up\": ", t.up ? "true" : "false",
        ", \"roles\": ", JsonString(t.roles), ", \"error\": ", JsonString(t.error), "}"));
  }
  std::vector<std::string> parts = {
      field("elapsed_seconds", v.elapsed_seconds),
      absl::StrCat("\"targets\": [", absl::StrJoin(targets, ", "), "]"),
      absl::StrCat(
          "\"actors\": {",
          absl::StrJoin(
              {field("processes", v.actors), field("workers", v.actor_workers),
               field("games_per_second", v.games_per_second),
               field("moves_per_second", v.moves_per_second),
               field("leaf_evaluations_per_second", v.leaf_evaluations_per_second),
               field("eval_wait_share", v.actor_wait_share),
               field("model_version", v.actor_version), field("staleness", v.actor_staleness)},
              ", "),
          "}"),
      absl::StrCat(
          "\"inference\": {",
          absl::StrJoin(
              {field("servers", v.inference_servers),
               field("evaluations_per_second", v.inference_evaluations_per_second),
               field("batches_per_second", v.batches_per_second),
               field("mean_batch_rows", v.mean_batch_rows),
               field("max_batch_rows", v.max_batch_rows), field("batch_fill", v.batch_fill),
               field("queue_wait_p50_seconds", v.queue_wait_p50_seconds),
               field("queue_wait_p99_seconds", v.queue_wait_p99_seconds),
               field("duty_cycle", v.duty_cycle),
               field("errors_per_second", v.inference_errors_per_second),
               field("model_version", v.inference_version),
               field("staleness", v.inference_staleness)},
              ", "),
          "}"),
      absl::StrCat(
          "\"replay\": {",
          absl::StrJoin({field("shards", v.replay_shards), field("positions", v.replay_positions),
                         field("games", v.replay_games),
                         field("insert_positions_per_second", v.insert_positions_per_second),
                         field("sample_positions_per_second", v.sample_positions_per_second),
                         field("sample_insert_ratio", v.sample_insert_ratio),
                         field("insert_wait", v.replay_insert_wait),
                         field("sample_wait", v.replay_sample_wait),
                         field("rejections_per_second", v.replay_rejections_per_second)},
                        ", "),
          "}"),
      absl::StrCat(
          "\"learner\": {",
          absl::StrJoin(
              {field("learners", v.learners), field("steps_per_second", v.learner_steps_per_second),
               field("samples_per_second", v.learner_samples_per_second),
               field("data_wait_share", v.learner_data_wait_share), field("loss", v.learner_loss),
               field("published_version", v.learner_version)},
              ", "),
          "}"),
      absl::StrCat("\"bottleneck\": {\"component\": ", JsonString(v.bottleneck.component),
                   ", \"reason\": ", JsonString(v.bottleneck.reason), "}"),
  };
  return absl::StrCat("{", absl::StrJoin(parts, ", "), "}");
}

}  // namespace zf::fleet
