#include "replay/shard.h"

#include <random>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/metrics/buckets.h"

namespace zf::replay {

using zerofleet::v1::GameRecord;
using zerofleet::v1::SampleBatch;

struct Shard::Metrics {
  explicit Metrics(prometheus::Registry& r, int64_t min_size_to_sample) {
    // Constant: with zf_replay_positions_stored it tells `zf top` a shard is still filling up.
    prometheus::BuildGauge()
        .Name("zf_replay_min_size_to_sample")
        .Help("Positions the shard must hold before it serves samples (rate limiter).")
        .Register(r)
        .Add({})
        .Set(static_cast<double>(min_size_to_sample));
    positions = &prometheus::BuildGauge()
                     .Name("zf_replay_positions_stored")
                     .Help("Positions in the replay window.")
                     .Register(r)
                     .Add({});
    games = &prometheus::BuildGauge()
                 .Name("zf_replay_games_stored")
                 .Help("Games in the replay window.")
                 .Register(r)
                 .Add({});
    distinct_positions =
        &prometheus::BuildGauge()
             .Name("zf_replay_distinct_positions_stored")
             .Help(
                 "Distinct positions in the replay window, what position averaging samples "
                 "from (0 without it).")
             .Register(r)
             .Add({});
    inserts = &prometheus::BuildCounter()
                   .Name("zf_replay_inserts_total")
                   .Help("Games stored by Insert.")
                   .Register(r)
                   .Add({});
    inserted_positions = &prometheus::BuildCounter()
                              .Name("zf_replay_inserted_positions_total")
                              .Help("Positions stored by Insert.")
                              .Register(r)
                              .Add({});
    duplicates = &prometheus::BuildCounter()
                      .Name("zf_replay_duplicates_total")
                      .Help("Inserts acknowledged without storing: the game id was known.")
                      .Register(r)
                      .Add({});
    auto& rejections_family = prometheus::BuildCounter()
                                  .Name("zf_replay_rejections_total")
                                  .Help("Game records refused as invalid, by reason.")
                                  .Register(r);
    for (int i = 0; i < kNumRejectReasons; ++i) {
      rejections[i] = &rejections_family.Add(
          {{"reason", std::string(RejectReasonName(static_cast<RejectReason>(i)))}});
    }
    sampled = &prometheus::BuildCounter()
                   .Name("zf_replay_sampled_positions_total")
                   .Help("Positions served in sample batches.")
                   .Register(r)
                   .Add({});
    auto& wait = prometheus::BuildCounter()
                     .Name("zf_replay_rate_limiter_wait_seconds_total")
                     .Help("Time callers spent blocked by the rate limiter, by operation.")
                     .Register(r);
    insert_wait = &wait.Add({{"operation", "insert"}});
    sample_wait = &wait.Add({{"operation", "sample"}});
    ack_seconds = &prometheus::BuildHistogram()
                       .Name("zf_replay_ack_seconds")
                       .Help("Time from an Insert call to its acknowledgement (stored games).")
                       .Register(r)
                       .Add({}, metrics::ExponentialBuckets(1e-4, 2.0, 20));
  }
  prometheus::Gauge* positions;
  prometheus::Gauge* games;
  prometheus::Gauge* distinct_positions;
  prometheus::Counter* inserts;
  prometheus::Counter* inserted_positions;
  prometheus::Counter* duplicates;
  prometheus::Counter* rejections[kNumRejectReasons];
  prometheus::Counter* sampled;
  prometheus::Counter* insert_wait;
  prometheus::Counter* sample_wait;
  prometheus::Histogram* ack_seconds;
};

absl::Status ShardOptions::Validate() const {
  if (dir.empty()) return absl::InvalidArgumentError("dir must be set");
  if (clock == nullptr) return absl::InvalidArgumentError("clock must not be null");
  if (absl::Status s = table.Validate(); !s.ok()) return s;
  RateLimiterOptions limiter = rate_limiter;
  limiter.clock = clock;
  if (absl::Status s = limiter.Validate(); !s.ok()) return s;
  if (limiter.max_insert_positions < table.max_positions_per_game) {
    return absl::InvalidArgumentError(absl::StrCat(
        "rate_limiter.max_insert_positions (", limiter.max_insert_positions,
        ") must be >= table.max_positions_per_game (", table.max_positions_per_game, ")"));
  }
  if (table.capacity_positions < limiter.min_size_to_sample + table.max_positions_per_game) {
    return absl::InvalidArgumentError(absl::StrCat(
        "capacity_positions (", table.capacity_positions,
        ") must be >= min_size_to_sample + max_positions_per_game (",
        limiter.min_size_to_sample + table.max_positions_per_game,
        "): evicting whole games could otherwise keep the window below min_size_to_sample, and "
        "samples would wait forever"));
  }
  LogOptions log;
  log.dir = dir;
  log.segment_bytes = segment_bytes;
  log.max_pending_bytes = max_pending_log_bytes;
  return log.Validate();
}

Shard::Shard(const ShardOptions& options) : options_(options) {}

Shard::~Shard() { Close(); }

absl::StatusOr<std::unique_ptr<Shard>> Shard::Create(const ShardOptions& options) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  std::unique_ptr<Shard> shard(new Shard(options));
  if (options.metrics != nullptr) {
    shard->metrics_ =
        std::make_unique<Metrics>(*options.metrics, options.rate_limiter.min_size_to_sample);
  }
  auto table = Table::Create(options.table);
  if (!table.ok()) return table.status();
  shard->table_ = std::move(*table);
  RateLimiterOptions limiter_options = options.rate_limiter;
  limiter_options.clock = options.clock;
  auto limiter = RateLimiter::Create(limiter_options);
  if (!limiter.ok()) return limiter.status();
  shard->limiter_ = std::move(*limiter);
  if (absl::Status s = shard->Recover(); !s.ok()) return s;
  return shard;
}

absl::Status Shard::Recover() {
  // Records that are not (or no longer) stored once the log is open: released afterwards, since
  // the log does not exist while its visitor runs.
  std::vector<SegmentId> to_release;
  int64_t bad = 0, duplicates = 0;
  auto visitor = [&](SegmentId segment, absl::string_view payload) -> absl::Status {
    GameRecord record;
    absl::Status valid;
    if (!record.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
      valid = absl::DataLossError("record does not parse as a GameRecord");
    } else {
      valid = ValidateGameRecord(record, options_.table, table_->shape());
    }
    if (!valid.ok()) {
      ++bad;
      ZF_LOG(WARNING) << "replay recovery: skipping a record in segment " << segment << ": "
                      << valid;
      to_release.push_back(segment);
      return absl::OkStatus();
    }
    InsertResult result = table_->Insert(record, segment);
    if (result.outcome == InsertOutcome::kDuplicate) {
      ++duplicates;
      to_release.push_back(segment);
    }
    for (const EvictedGame& e : result.evicted) to_release.push_back(e.location);
    return absl::OkStatus();
  };
  // What can still be said of each damaged record: the game it held, where its id survives.
  int64_t lost_ids = 0;
  auto damage = [&](const DamagedRegion& region, absl::string_view bytes) {
    const std::optional<std::string> id = LostGameId(region, bytes, options_.table.max_id_bytes);
    if (id.has_value()) ++lost_ids;
    ZF_LOG(WARNING) << "replay recovery: " << (region.torn_tail ? "torn tail" : "corrupt region")
                    << " in segment " << region.segment << " at offset " << region.offset << " ("
                    << region.bytes << " bytes): "
                    << (id.has_value() ? absl::StrCat("lost game ", absl::CHexEscape(*id))
                                       : std::string("no game id readable"));
  };
  LogOptions log_options;
  log_options.dir = options_.dir;
  log_options.segment_bytes = options_.segment_bytes;
  log_options.max_pending_bytes = options_.max_pending_log_bytes;
  log_options.metrics = options_.metrics;
  log_options.clock = options_.clock;
  auto log = Log::Open(log_options, visitor, damage);
  if (!log.ok()) return log.status();
  log_ = std::move(*log);
  for (SegmentId s : to_release) log_->Release(s);
  limiter_->Restore(table_->num_positions());
  const RecoveryReport& report = log_->recovery();
  ZF_LOG(INFO) << "replay shard " << options_.dir << ": recovered " << table_->num_games()
               << " games (" << table_->num_positions() << " positions) from " << report.records
               << " records in " << report.segments << " segments; " << duplicates
               << " duplicates, " << bad << " unreadable records"
               << (report.damage.empty()
                       ? std::string()
                       : absl::StrCat(
                             "; ", report.damage.size(), " damaged regions (", report.torn_bytes,
                             " bytes of torn tail, ", report.corrupt_bytes, " corrupt, ", lost_ids,
                             " lost game ids readable) moved to ", options_.dir, "/damaged"));
  UpdateGauges();
  return absl::OkStatus();
}

void Shard::Reject(RejectReason reason) {
  {
    absl::MutexLock lock(&mu_);
    ++rejected_;
  }
  if (metrics_ != nullptr) metrics_->rejections[static_cast<int>(reason)]->Increment();
}

void Shard::UpdateGauges() {
  if (metrics_ == nullptr) return;
  metrics_->positions->Set(static_cast<double>(table_->num_positions()));
  metrics_->games->Set(static_cast<double>(table_->num_games()));
  metrics_->distinct_positions->Set(static_cast<double>(table_->num_distinct_positions()));
}

void Shard::FinishInFlight(const std::string& id) {
  absl::MutexLock lock(&mu_);
  in_flight_.erase(id);
}

void Shard::ApplyEvictions(const InsertResult& result) {
  int64_t evicted_positions = 0;
  for (const EvictedGame& e : result.evicted) {
    evicted_positions += e.positions;
    log_->Release(e.location);
  }
  if (evicted_positions > 0) limiter_->Delete(evicted_positions);
}

absl::StatusOr<InsertOutcome> Shard::Insert(const GameRecord& record, absl::Time deadline) {
  const absl::Time start = options_.clock->Now();
  RejectReason reason;
  if (absl::Status s = ValidateGameRecord(record, options_.table, table_->shape(), &reason);
      !s.ok()) {
    Reject(reason);
    return s;
  }
  const std::string& id = record.game_id();
  {
    absl::MutexLock lock(&mu_);
    auto free = [this, &id]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return closed_ || !in_flight_.contains(id);
    };
    if (!free() && !options_.clock->AwaitWithDeadline(&mu_, absl::Condition(&free), deadline)) {
      return absl::DeadlineExceededError("an insert of the same game id is still in flight");
    }
    if (closed_) return absl::CancelledError("replay shard closed");
    if (table_->Contains(id)) {
      ++duplicates_;
      if (metrics_ != nullptr) metrics_->duplicates->Increment();
      return InsertOutcome::kDuplicate;
    }
    in_flight_.insert(id);
  }

  const int64_t n = record.num_positions();
  const absl::Time wait_start = options_.clock->Now();
  absl::Status admitted = limiter_->AwaitInsert(n, deadline);
  if (metrics_ != nullptr) {
    metrics_->insert_wait->Increment(absl::ToDoubleSeconds(options_.clock->Now() - wait_start));
  }
  if (!admitted.ok()) {
    FinishInFlight(id);
    return admitted;
  }
  absl::StatusOr<SegmentId> segment = log_->Append(record.SerializeAsString());
  if (!segment.ok()) {
    limiter_->AbortInsert(n);
    FinishInFlight(id);
    return segment.status();
  }
  InsertResult result = table_->Insert(record, *segment);
  // The in-flight guard makes a concurrent duplicate impossible here.
  ZF_CHECK(result.outcome == InsertOutcome::kStored) << "duplicate slipped past the in-flight set";
  ApplyEvictions(result);
  limiter_->CommitInsert(n);
  {
    absl::MutexLock lock(&mu_);
    in_flight_.erase(id);
    ++inserted_games_;
  }
  if (metrics_ != nullptr) {
    metrics_->inserts->Increment();
    metrics_->inserted_positions->Increment(static_cast<double>(n));
    metrics_->ack_seconds->Observe(absl::ToDoubleSeconds(options_.clock->Now() - start));
  }
  UpdateGauges();
  return InsertOutcome::kStored;
}

absl::Status Shard::Sample(int batch_size, absl::Time deadline, SampleBatch* batch) {
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return absl::CancelledError("replay shard closed");
  }
  const absl::Time wait_start = options_.clock->Now();
  absl::Status admitted = limiter_->AwaitSample(batch_size, deadline);
  if (metrics_ != nullptr) {
    metrics_->sample_wait->Increment(absl::ToDoubleSeconds(options_.clock->Now() - wait_start));
  }
  if (!admitted.ok()) return admitted;
  std::mt19937_64 rng(options_.seed + 0x9e3779b97f4a7c15ULL * (1 + sample_calls_.fetch_add(1)));
  if (absl::Status s = table_->Sample(batch_size, rng, batch); !s.ok()) {
    // The limiter admits samples only once min_size_to_sample >= 1 positions are committed, so an
    // empty table here is a bug.
    return absl::InternalError(absl::StrCat("sample admitted on an empty table: ", s.message()));
  }
  {
    absl::MutexLock lock(&mu_);
    sampled_positions_ += batch_size;
  }
  if (metrics_ != nullptr) metrics_->sampled->Increment(batch_size);
  return absl::OkStatus();
}

void Shard::Close() {
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return;
    closed_ = true;
  }
  if (limiter_ != nullptr) limiter_->Cancel();
  if (log_ != nullptr) log_->Close();
}

ShardStats Shard::stats() const {
  ShardStats s;
  s.games = table_->num_games();
  s.positions = table_->num_positions();
  s.distinct_positions = table_->num_distinct_positions();
  s.rate_limiter = limiter_->stats();
  absl::MutexLock lock(&mu_);
  s.inserted_games = inserted_games_;
  s.duplicates = duplicates_;
  s.rejected = rejected_;
  s.sampled_positions = sampled_positions_;
  return s;
}

}  // namespace zf::replay
