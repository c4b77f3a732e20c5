// One replay shard's gRPC-free core: a durable log, a window table and a rate limiter.
//
// Insert(record): validates the record (InvalidArgument, counted by reason; nothing stored),
// acknowledges a game id that is already stored as a duplicate without storing it again, waits for
// the rate limiter, appends the record to the log and waits until it is on disk (group commit),
// then adds it to the table, where it can be sampled, evicting the oldest games (whose log records
// are released, so segments with no live game are deleted). Only then does Insert return OK. Two
// concurrent inserts of one id are serialised: the second waits for the first and then is a
// duplicate (or, if the first failed, stores it).
//
// Sample(B): waits for the rate limiter, then draws B positions uniformly from the table into one
// SampleBatch (see Table).
//
// Create() recovers the table from the log in `dir` (see Log for torn tails and corruption) before
// it returns, so a shard that exists is ready to serve: the service reports NOT_SERVING until
// Create returns. Game ids recovered from the log stay deduplicated across the restart.
//
// Metrics (when Options::metrics is set): zf_replay_positions_stored, zf_replay_games_stored,
// zf_replay_distinct_positions_stored (position averaging's distinct positions; 0 without it),
// zf_replay_inserts_total (games stored), zf_replay_inserted_positions_total,
// zf_replay_duplicates_total, zf_replay_rejections_total{reason},
// zf_replay_sampled_positions_total,
// zf_replay_rate_limiter_wait_seconds_total{operation="insert"|"sample"}, zf_replay_ack_seconds
// (Insert call to acknowledgement, stored games only), and the log's zf_replay_fsync_seconds,
// zf_replay_log_bytes, zf_replay_log_written_bytes_total, zf_replay_log_segments.
//
// Thread-safe. Insert and Sample block (see each); Close() wakes them.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "proto/zerofleet/v1/replay.pb.h"
#include "replay/log.h"
#include "replay/rate_limiter.h"
#include "replay/table.h"
#include "replay/validate.h"

namespace zf::replay {

struct ShardOptions {
  std::string dir;  // the log's directory; created if missing
  TableOptions table;
  // Its clock is replaced by `clock` below; max_insert_positions must be >=
  // table.max_positions_per_game.
  RateLimiterOptions rate_limiter;
  int64_t segment_bytes = 64 << 20;
  int64_t max_pending_log_bytes = 256 << 20;
  prometheus::Registry* metrics = nullptr;  // not owned; may be null
  Clock* clock = RealClock();               // not owned
  uint64_t seed = 0x5eed;                   // sampling randomness

  // Also refuses a capacity that can never reach min_size_to_sample after evictions
  // (capacity_positions < min_size_to_sample + max_positions_per_game).
  // Returns: OK; InvalidArgument naming the problem.
  absl::Status Validate() const;
};

struct ShardStats {
  int64_t games = 0;
  int64_t positions = 0;
  int64_t distinct_positions = 0;  // with position averaging (TableOptions), else 0
  int64_t inserted_games = 0;      // stored by Insert since Create
  int64_t duplicates = 0;
  int64_t rejected = 0;
  int64_t sampled_positions = 0;
  RateLimiterStats rate_limiter;
};

class Shard {
 public:
  // Opens the log, recovers the window from it, and returns a ready shard. Blocks on disk I/O.
  // Returns: the shard; InvalidArgument (options); Internal (the log cannot be read or written).
  static absl::StatusOr<std::unique_ptr<Shard>> Create(const ShardOptions& options);
  ~Shard();  // Close()

  Shard(const Shard&) = delete;
  Shard& operator=(const Shard&) = delete;

  // Stores `record` durably and exactly once (see the class comment). Blocks while the rate
  // limiter refuses inserts, while an insert of the same id is in flight (both until `deadline`),
  // and until the record is on disk (not bounded by `deadline`: once written it is acknowledged).
  // Returns: kStored or kDuplicate (both acknowledgements: the game is durable and stored once);
  // InvalidArgument (bad record; nothing stored); DeadlineExceeded; Cancelled (closed);
  // ResourceExhausted (the log's queue is full: retry later); Unavailable (the log failed).
  absl::StatusOr<InsertOutcome> Insert(const zerofleet::v1::GameRecord& record, absl::Time deadline)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Samples `batch_size` positions into `batch`. Blocks while the rate limiter refuses, until
  // `deadline`.
  // Returns: OK; InvalidArgument (batch_size < 1 or > rate_limiter.max_sample_positions);
  // DeadlineExceeded; Cancelled (closed).
  absl::Status Sample(int batch_size, absl::Time deadline, zerofleet::v1::SampleBatch* batch)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Wakes blocked callers with Cancelled, refuses new calls, completes the log's queued appends and
  // joins its writer. Idempotent; must not race with the destructor.
  void Close() ABSL_LOCKS_EXCLUDED(mu_);

  ShardStats stats() const ABSL_LOCKS_EXCLUDED(mu_);
  const RecoveryReport& recovery() const { return log_->recovery(); }
  // For tests and the benchmark.
  const Table& table() const { return *table_; }
  const Log& log() const { return *log_; }

 private:
  struct Metrics;
  explicit Shard(const ShardOptions& options);
  absl::Status Recover();
  void FinishInFlight(const std::string& id) ABSL_LOCKS_EXCLUDED(mu_);
  void Reject(RejectReason reason);
  void ApplyEvictions(const InsertResult& result);
  void UpdateGauges();

  const ShardOptions options_;
  std::unique_ptr<Table> table_;
  std::unique_ptr<RateLimiter> limiter_;
  std::unique_ptr<Log> log_;
  std::unique_ptr<Metrics> metrics_;  // null without a registry
  std::atomic<uint64_t> sample_calls_{0};

  mutable absl::Mutex mu_;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  absl::flat_hash_set<std::string> in_flight_ ABSL_GUARDED_BY(mu_);
  int64_t inserted_games_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t duplicates_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t rejected_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t sampled_positions_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace zf::replay
