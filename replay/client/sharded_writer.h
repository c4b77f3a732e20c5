// ShardedReplayWriter: the actor side of replay. Spreads finished games over N replay shards and
// makes sure every game is eventually acknowledged by one.
//
// Routing: consistent hashing of the game id onto a ring of `virtual_nodes` points per shard, so a
// game goes to its home shard (ShardFor) and adding a shard moves only about 1/N of the ids. A new
// game whose home shard is down (its channel is in TRANSIENT_FAILURE, or its last Insert failed)
// goes to the next shard clockwise on the ring that is up, so one shard down does not stall the
// actors once their memory fills: a game that was never sent cannot be stored at its home shard,
// so this keeps "stored once". Once queued, a game is sent and retried only at that one shard (its
// retries deduplicate there); games already queued for a shard wait for it. Only without a spool:
// a spooled game is resent by the next run, which would not know where it went, so with a spool
// every game goes home.
//
// Delivery: Write() queues the game for its shard; one owned sender thread per shard sends up to
// `max_games_per_request` queued games per Insert and forgets them once acknowledged (STORED or
// DUPLICATE); each Insert waits up to rpc_timeout for the shard's channel to connect
// (wait_for_ready), so a shard that comes back gets its games as soon as the channel reconnects.
// On a retryable error (UNAVAILABLE, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, ...) the
// shard is marked down and the sender retries the same games after a jittered exponential backoff
// (full jitter: a uniform wait in [0, min(max_backoff, initial_backoff * 2^failures)]): games are
// resent on reconnect, never lost, and duplicates are harmless. A game refused with
// INVALID_ARGUMENT is dropped and counted (retrying cannot help).
//
// Bounded memory: at most `max_unacked_games` games are held in memory. When that many are
// waiting and every shard is down, Write() spills the game to the spool file (`spool_path`,
// length-prefixed records, flushed per game) instead; the spool is read back into the shards'
// queues once a shard is up again and memory has room. Close() spills what is still unacknowledged
// to the spool, and Create() resends a spool left by a previous run. Without a spool, Write()
// blocks instead.
//
// Thread-safe. Owns its sender threads and spool thread; Close() / the destructor joins them.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/grpc/channel.h"
#include "common/thread.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "proto/zerofleet/v1/replay.grpc.pb.h"

namespace zf::replay {

struct ShardedReplayWriterOptions {
  std::vector<std::string> shards;   // "host:port" of each shard; at least one, distinct
  int virtual_nodes = 64;            // ring points per shard, 1..4096
  int64_t max_unacked_games = 1024;  // games held in memory, >= 1
  int max_games_per_request = 16;    // 1..64
  std::string spool_path;            // "" = no spool (Write blocks when full)
  absl::Duration rpc_timeout = absl::Seconds(10);
  absl::Duration initial_backoff = absl::Milliseconds(50);
  absl::Duration max_backoff = absl::Seconds(5);
  uint64_t seed = 0;  // backoff jitter; 0 = from the clock
  grpc_util::WireSettings wire;
  // Called on a sender thread with the ids of each acknowledged Insert (stored or duplicate),
  // before the games stop counting as unacknowledged; must be thread-safe and quick. May be
  // empty. (`zf actor --acked_log` writes them to a file for the chaos tests.)
  std::function<void(const std::vector<std::string>& game_ids)> on_acked;
  // Not owned; may be null. Exports zf_replay_writer_acked_games_total{outcome="stored"|
  // "duplicate"}, zf_replay_writer_insert_retries_total (failed Insert calls that will be retried),
  // zf_replay_writer_rejected_games_total (dropped after INVALID_ARGUMENT) and
  // zf_replay_writer_unacknowledged_games (games held in memory or in the spool and not yet
  // acknowledged: the backlog a down shard builds and its return drains) beside
  // zf_replay_writer_unacknowledged_games_limit (max_unacked_games). Must stay alive until
  // Close() has returned (sender threads count acknowledgements until Close() joins them, and
  // Close() sets the gauge as it spools what is left).
  prometheus::Registry* metrics = nullptr;

  // Returns: OK; InvalidArgument naming the bad field.
  absl::Status Validate() const;
};

struct ShardedReplayWriterStats {
  int64_t written = 0;        // Write() calls accepted
  int64_t acked = 0;          // games acknowledged (stored or duplicate)
  int64_t duplicates = 0;     // of which duplicates
  int64_t rejected = 0;       // dropped after INVALID_ARGUMENT
  int64_t retries = 0;        // failed Insert calls retried
  int64_t spooled = 0;        // games written to the spool file
  int64_t unacked = 0;        // games in memory now, not yet acknowledged
  int64_t spool_pending = 0;  // games in the spool file not yet read back
  int64_t rerouted = 0;       // new games sent to another shard than their home (it was down)
};

class ShardedReplayWriter {
 public:
  // Connects (lazily; shards may be down) and starts the threads; resends a leftover spool.
  // Returns: the writer; InvalidArgument (options); Internal (the spool cannot be opened).
  static absl::StatusOr<std::unique_ptr<ShardedReplayWriter>> Create(
      ShardedReplayWriterOptions options);
  ~ShardedReplayWriter();  // Close()

  ShardedReplayWriter(const ShardedReplayWriter&) = delete;
  ShardedReplayWriter& operator=(const ShardedReplayWriter&) = delete;

  // Queues `game` for delivery (see the class comment). Blocks while memory is full and no spool
  // takes the game, until `deadline`.
  // Returns: OK (accepted: it will be delivered, or spooled on Close); InvalidArgument (no game
  // id); DeadlineExceeded; Cancelled (closed); Internal (the spool could not be written).
  absl::Status Write(zerofleet::v1::GameRecord game, absl::Time deadline) ABSL_LOCKS_EXCLUDED(mu_);

  // Blocks until every accepted game is acknowledged (memory and spool empty), until `deadline`.
  // Returns: OK; DeadlineExceeded; Cancelled (closed).
  absl::Status Flush(absl::Time deadline) ABSL_LOCKS_EXCLUDED(mu_);

  // Stops the threads; unacknowledged games go to the spool (if any; else they are lost and
  // counted in the log). A spool with nothing left in it is removed. Idempotent.
  void Close() ABSL_LOCKS_EXCLUDED(mu_);

  // The home shard of `game_id` (where it goes while that shard is up).
  int ShardFor(const std::string& game_id) const;
  ShardedReplayWriterStats stats() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Shard {
    std::string address;
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<zerofleet::v1::Replay::Stub> stub;
    std::deque<zerofleet::v1::GameRecord> queue;  // guarded by the writer's mu_
    bool down = false;                            // guarded by the writer's mu_
  };

  explicit ShardedReplayWriter(ShardedReplayWriterOptions options);
  void SenderLoop(int shard) ABSL_LOCKS_EXCLUDED(mu_);
  void SpoolLoop() ABSL_LOCKS_EXCLUDED(mu_);
  // Up: not marked down by a failed Insert and its channel not in TRANSIENT_FAILURE.
  bool Available(const Shard& s) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool AllDown() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sets zf_replay_writer_unacknowledged_games from unacked_ and the spool's pending games; called
  // after each change of either.
  void PublishBacklog() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The shard a new game goes to: its home shard if that is up, else the next one up on the ring.
  int RouteNewGame(const std::string& game_id) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Appends `game` to the spool and counts it (in `written` too if `new_game`). Takes spool_mu_
  // then mu_.
  absl::Status Spool(const zerofleet::v1::GameRecord& game, bool new_game)
      ABSL_LOCKS_EXCLUDED(mu_, spool_mu_);
  // Sends `games` to shard `shard` until acknowledged, refused or closed; returns false if closed
  // first (the games are then back in the shard's queue).
  bool Deliver(int shard, std::vector<zerofleet::v1::GameRecord>& games) ABSL_LOCKS_EXCLUDED(mu_);

  const ShardedReplayWriterOptions options_;
  std::map<uint64_t, int> ring_;  // hash point -> shard index; immutable after construction
  std::vector<Shard> shards_;

  mutable absl::Mutex mu_;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  int64_t unacked_ ABSL_GUARDED_BY(mu_) = 0;  // in queues and in flight
  ShardedReplayWriterStats stats_ ABSL_GUARDED_BY(mu_);
  // The spool file's bytes [spool_read_offset_, spool_size_) are games not yet read back.
  int64_t spool_read_offset_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t spool_size_ ABSL_GUARDED_BY(mu_) = 0;

  // The spool file; its I/O happens under spool_mu_ only (lock order: spool_mu_, then mu_).
  absl::Mutex spool_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  int spool_fd_ ABSL_GUARDED_BY(spool_mu_) = -1;
  std::mt19937_64 rng_ ABSL_GUARDED_BY(mu_);

  prometheus::Counter* acked_stored_ = nullptr;  // null without options_.metrics
  prometheus::Counter* acked_duplicate_ = nullptr;
  prometheus::Counter* retries_ = nullptr;
  prometheus::Counter* rejected_ = nullptr;
  prometheus::Gauge* unacknowledged_ = nullptr;

  std::vector<Thread> threads_;
};

}  // namespace zf::replay
