// ReplaySampler: the learner side of replay. Draws training batches from every shard in
// proportion to the shards' sizes, with a prefetch queue of ready batches.
//
// An owned thread keeps up to `prefetch` batches ready. For each batch it picks one shard with
// probability positions(shard) / sum of positions (sizes from GetInfo, refreshed every
// `info_refresh`; a shard that does not answer weighs 0 until the next refresh), so over many
// batches every stored position is equally likely whichever shard holds it. A failed Sample
// (shard down, rate limiter deadline) is retried on a fresh choice after a jittered backoff.
//
// Rate limiters are per shard, and games reach shards unevenly (by game id), so at any moment
// one shard may hold samples back (too few inserts of late) while another holds inserts back
// (too few samples). Waiting on the first would also starve the second of samples and, through
// the actors' bounded writer, of inserts: a cross-shard stall. So while several shards can
// sample, one Sample call waits at most `shard_wait`; a shard that runs out of it is left out of
// the choice (and the sampler turns to the others at once) until a batch succeeds. Sampling then
// follows each shard's insert credit, which is what the rate limiters ask for.
//
// Next() hands out the oldest ready batch and measures how long the caller waited for it: the
// learner's data wait (design.md: target under 5% of its wall time).
//
// Thread-safe. Close() / the destructor cancels the RPC in flight and joins the thread.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/bounded_queue.h"
#include "common/grpc/channel.h"
#include "common/thread.h"
#include "proto/zerofleet/v1/replay.grpc.pb.h"

namespace zf::replay {

struct ReplaySamplerOptions {
  std::vector<std::string> shards;  // "host:port" of each shard; at least one
  int batch_size = 256;             // positions per batch, >= 1
  int prefetch = 4;                 // ready batches kept, >= 1
  // Deadline of one Sample call (it may wait under the shard's rate limiter that long).
  absl::Duration sample_timeout = absl::Seconds(10);
  // With several shards able to sample, how long one Sample call may wait under a shard's rate
  // limiter before the sampler turns to another shard (see the class comment).
  absl::Duration shard_wait = absl::Milliseconds(250);
  absl::Duration info_refresh = absl::Seconds(1);
  absl::Duration initial_backoff = absl::Milliseconds(20);
  absl::Duration max_backoff = absl::Seconds(2);
  uint64_t seed = 0;  // 0 = from the clock
  grpc_util::WireSettings wire;

  // Returns: OK; InvalidArgument naming the bad field.
  absl::Status Validate() const;
};

struct ReplaySamplerStats {
  int64_t batches = 0;                           // handed out by Next()
  absl::Duration waited = absl::ZeroDuration();  // total time Next() callers waited
  std::vector<int64_t> batches_per_shard;        // fetched from each shard
  int64_t failed_samples = 0;                    // Sample calls that failed and were retried
};

class ReplaySampler {
 public:
  // Starts the prefetch thread. Returns: the sampler; InvalidArgument (options).
  static absl::StatusOr<std::unique_ptr<ReplaySampler>> Create(ReplaySamplerOptions options);
  ~ReplaySampler();  // Close()

  ReplaySampler(const ReplaySampler&) = delete;
  ReplaySampler& operator=(const ReplaySampler&) = delete;

  // The next batch. Blocks until one is ready or `deadline`.
  // Returns: the batch; DeadlineExceeded; Cancelled (closed).
  absl::StatusOr<zerofleet::v1::SampleBatch> Next(absl::Time deadline) ABSL_LOCKS_EXCLUDED(mu_);

  // Stops prefetching; Next() then returns Cancelled. Idempotent.
  void Close() ABSL_LOCKS_EXCLUDED(mu_);

  ReplaySamplerStats stats() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  explicit ReplaySampler(ReplaySamplerOptions options);
  void Loop() ABSL_LOCKS_EXCLUDED(mu_);
  void RefreshSizes(std::vector<int64_t>* sizes) ABSL_LOCKS_EXCLUDED(mu_);
  // Waits a jittered exponential backoff; false if closed meanwhile.
  bool Backoff(int failures) ABSL_LOCKS_EXCLUDED(mu_);

  const ReplaySamplerOptions options_;
  std::vector<std::unique_ptr<zerofleet::v1::Replay::Stub>> stubs_;
  BoundedQueue<zerofleet::v1::SampleBatch> ready_;
  std::mt19937_64 rng_;  // only the prefetch thread uses it

  mutable absl::Mutex mu_;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  grpc::ClientContext* in_flight_ ABSL_GUARDED_BY(mu_) = nullptr;
  ReplaySamplerStats stats_ ABSL_GUARDED_BY(mu_);

  std::unique_ptr<Thread> thread_;
};

}  // namespace zf::replay
