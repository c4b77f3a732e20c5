// The Replay gRPC service (proto/zerofleet/v1/replay.proto): a thin adapter over one Shard.
//
// Callback API. Insert and Sample block inside the shard (rate limiter, fsync), so each one runs
// as a job on a bounded WorkerPool; a gRPC callback thread never blocks. A full pool answers
// RESOURCE_EXHAUSTED. Inserts and samples have separate pools: samples blocked by the rate limiter
// (waiting for inserts) must never occupy the threads the inserts need. GetInfo only reads counters
// and answers on the callback thread.
//
// Lifecycle: the service is registered (and the server started) before the shard exists, so that
// health can report NOT_SERVING during recovery; until SetShard() every call answers UNAVAILABLE.
// StartDraining() makes new calls answer UNAVAILABLE; calls already accepted run to completion.
//
// Status mapping (common/grpc/status.h): the shard's codes pass through, except Cancelled (the
// shard closed while the call waited), which becomes UNAVAILABLE so clients retry elsewhere or
// later. Every INVALID_ARGUMENT answer is counted in zf_replay_service_invalid_requests_total{rpc}
// (the shard also counts rejected records by reason), every RESOURCE_EXHAUSTED answer from a full
// pool in zf_replay_service_overloaded_total{rpc}.
//
// Thread-safe. The shard and the pools are not owned and must outlive every call that the service
// accepted (the owner closes the pools, which runs the accepted jobs, before destroying them).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "proto/zerofleet/v1/replay.grpc.pb.h"
#include "replay/service/worker_pool.h"
#include "replay/shard.h"

namespace zf::replay {

// Most games one Insert request may carry.
inline constexpr int kMaxGamesPerInsert = 64;

class ReplayService final : public zerofleet::v1::Replay::CallbackService {
 public:
  // The pools and `metrics` (may be null) are not owned and must outlive the service.
  ReplayService(WorkerPool* insert_pool, WorkerPool* sample_pool, prometheus::Registry* metrics);

  // What GetInfo reports besides the shard's counters.
  struct ShardInfo {
    int64_t recovered_games = 0;
    double samples_per_insert = 0;
    int64_t min_size_to_sample = 0;
    int64_t max_sample_positions = 0;  // the largest batch_size Sample accepts
  };
  // The shard is ready: calls are served from now on. `shard` is not owned.
  void SetShard(Shard* shard, const ShardInfo& info) ABSL_LOCKS_EXCLUDED(mu_);
  // New calls answer UNAVAILABLE from now on.
  void StartDraining() ABSL_LOCKS_EXCLUDED(mu_);
  // Calls accepted and not yet answered (Insert and Sample).
  int64_t in_flight() const ABSL_LOCKS_EXCLUDED(mu_);
  // Blocks until no accepted Insert is unanswered, or until `deadline`. Returns whether none is.
  bool AwaitInsertsDone(absl::Time deadline) const ABSL_LOCKS_EXCLUDED(mu_);

  grpc::ServerUnaryReactor* Insert(grpc::CallbackServerContext* context,
                                   const zerofleet::v1::InsertRequest* request,
                                   zerofleet::v1::InsertResponse* response) override;
  grpc::ServerUnaryReactor* Sample(grpc::CallbackServerContext* context,
                                   const zerofleet::v1::SampleRequest* request,
                                   zerofleet::v1::SampleBatch* response) override;
  grpc::ServerUnaryReactor* GetInfo(grpc::CallbackServerContext* context,
                                    const zerofleet::v1::GetInfoRequest* request,
                                    zerofleet::v1::ReplayInfo* response) override;

 private:
  enum Rpc { kInsert = 0, kSample = 1, kGetInfo = 2, kNumRpcs = 3 };
  struct InsertCall;

  // The shard if calls are served now (counting the call as in flight), else null with *status
  // set.
  Shard* Admit(Rpc rpc, absl::Status* status) ABSL_LOCKS_EXCLUDED(mu_);
  // Answers an Insert once every game has a result.
  void FinishInsert(InsertCall& call, const std::vector<absl::Status>& results)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Answers a call and, for admitted ones, ends its in-flight count.
  void Finish(Rpc rpc, grpc::ServerUnaryReactor* reactor, absl::Status status, bool admitted)
      ABSL_LOCKS_EXCLUDED(mu_);

  WorkerPool* const insert_pool_;
  WorkerPool* const sample_pool_;
  prometheus::Registry* const metrics_;
  std::array<prometheus::Counter*, kNumRpcs> invalid_{};     // null without a registry
  std::array<prometheus::Counter*, kNumRpcs> overloaded_{};  // null without a registry

  mutable absl::Mutex mu_;
  Shard* shard_ ABSL_GUARDED_BY(mu_) = nullptr;
  ShardInfo info_ ABSL_GUARDED_BY(mu_);
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
  int64_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t inserts_in_flight_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace zf::replay
