#include "replay/service/replay_service.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/grpc/status.h"
#include "prometheus/family.h"

namespace zf::replay {
namespace {

using zerofleet::v1::InsertResponse;

constexpr const char* kRpcNames[] = {"insert", "sample", "get_info"};

// The call's deadline; a call without one gets a day (a client bug, but not ours to crash on).
absl::Time Deadline(const grpc::CallbackServerContext* context) {
  auto deadline = context->deadline();
  if (deadline >= std::chrono::system_clock::time_point::max() - std::chrono::hours(24 * 365)) {
    return absl::Now() + absl::Hours(24);
  }
  return absl::FromChrono(deadline);
}

absl::Status ForClient(absl::Status status) {
  if (absl::IsCancelled(status)) {
    return absl::UnavailableError(absl::StrCat("the shard is shutting down: ", status.message()));
  }
  return status;
}

}  // namespace

// One Insert call: its games run as separate jobs (so one fsync covers them all); the last one to
// finish answers.
struct ReplayService::InsertCall {
  grpc::ServerUnaryReactor* reactor = nullptr;
  const zerofleet::v1::InsertRequest* request = nullptr;
  InsertResponse* response = nullptr;
  absl::Time deadline;
  absl::Mutex mu;
  int remaining ABSL_GUARDED_BY(mu) = 0;
  std::vector<absl::Status> results ABSL_GUARDED_BY(mu);
};

ReplayService::ReplayService(WorkerPool* insert_pool, WorkerPool* sample_pool,
                             prometheus::Registry* metrics)
    : insert_pool_(insert_pool), sample_pool_(sample_pool), metrics_(metrics) {
  if (metrics_ == nullptr) return;
  auto& invalid = prometheus::BuildCounter()
                      .Name("zf_replay_service_invalid_requests_total")
                      .Help("Replay calls answered INVALID_ARGUMENT, by RPC.")
                      .Register(*metrics_);
  auto& overloaded = prometheus::BuildCounter()
                         .Name("zf_replay_service_overloaded_total")
                         .Help(
                             "Replay calls refused with RESOURCE_EXHAUSTED because the worker "
                             "pool's queue was full, by RPC.")
                         .Register(*metrics_);
  for (int rpc = 0; rpc < kNumRpcs; ++rpc) {
    invalid_[rpc] = &invalid.Add({{"rpc", kRpcNames[rpc]}});
    overloaded_[rpc] = &overloaded.Add({{"rpc", kRpcNames[rpc]}});
  }
}

void ReplayService::SetShard(Shard* shard, const ShardInfo& info) {
  absl::MutexLock lock(&mu_);
  shard_ = shard;
  info_ = info;
}

void ReplayService::StartDraining() {
  absl::MutexLock lock(&mu_);
  draining_ = true;
}

int64_t ReplayService::in_flight() const {
  absl::MutexLock lock(&mu_);
  return in_flight_;
}

bool ReplayService::AwaitInsertsDone(absl::Time deadline) const {
  absl::MutexLock lock(&mu_);
  auto done = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return inserts_in_flight_ == 0; };
  mu_.AwaitWithDeadline(absl::Condition(&done), deadline);
  return done();
}

Shard* ReplayService::Admit(Rpc rpc, absl::Status* status) {
  absl::MutexLock lock(&mu_);
  if (draining_) {
    *status = absl::UnavailableError("the shard is draining for shutdown");
    return nullptr;
  }
  if (shard_ == nullptr) {
    *status = absl::UnavailableError("the shard is still recovering its log");
    return nullptr;
  }
  ++in_flight_;
  if (rpc == kInsert) ++inserts_in_flight_;
  return shard_;
}

void ReplayService::Finish(Rpc rpc, grpc::ServerUnaryReactor* reactor, absl::Status status,
                           bool admitted) {
  if (absl::IsInvalidArgument(status) && invalid_[rpc] != nullptr) invalid_[rpc]->Increment();
  reactor->Finish(grpc_util::ToGrpcStatus(status));
  if (admitted) {
    absl::MutexLock lock(&mu_);
    --in_flight_;
    if (rpc == kInsert) --inserts_in_flight_;
  }
}

grpc::ServerUnaryReactor* ReplayService::Insert(grpc::CallbackServerContext* context,
                                                const zerofleet::v1::InsertRequest* request,
                                                InsertResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  const int n = request->games_size();
  if (n < 1 || n > kMaxGamesPerInsert) {
    Finish(kInsert, reactor,
           absl::InvalidArgumentError(
               absl::StrCat("an insert carries 1..", kMaxGamesPerInsert, " games, got ", n)),
           /*admitted=*/false);
    return reactor;
  }
  absl::Status status;
  Shard* shard = Admit(kInsert, &status);
  if (shard == nullptr) {
    Finish(kInsert, reactor, status, /*admitted=*/false);
    return reactor;
  }
  auto call = std::make_shared<InsertCall>();
  call->reactor = reactor;
  call->request = request;
  call->response = response;
  call->deadline = Deadline(context);
  {
    absl::MutexLock lock(&call->mu);
    call->remaining = n;
    call->results.assign(static_cast<size_t>(n), absl::OkStatus());
  }
  for (int j = 0; j < n; ++j) response->add_outcomes(InsertResponse::OUTCOME_UNSPECIFIED);
  for (int i = 0; i < n; ++i) {
    auto job = [this, shard, call, i] {
      absl::StatusOr<InsertOutcome> outcome =
          shard->Insert(call->request->games(i), call->deadline);
      std::vector<absl::Status> results;
      {
        absl::MutexLock lock(&call->mu);
        call->results[static_cast<size_t>(i)] = outcome.status();
        if (outcome.ok()) {
          call->response->set_outcomes(i, *outcome == InsertOutcome::kStored
                                              ? InsertResponse::STORED
                                              : InsertResponse::DUPLICATE);
        }
        if (--call->remaining > 0) return;
        results = std::move(call->results);
      }
      FinishInsert(*call, results);
    };
    absl::Status submitted = insert_pool_->Submit(std::move(job));
    if (!submitted.ok()) {
      if (absl::IsResourceExhausted(submitted) && overloaded_[kInsert] != nullptr) {
        overloaded_[kInsert]->Increment();
      }
      // This game and the ones after it are not tried; answer for them here.
      std::vector<absl::Status> results;
      {
        absl::MutexLock lock(&call->mu);
        for (int j = i; j < n; ++j) call->results[static_cast<size_t>(j)] = submitted;
        call->remaining -= n - i;
        if (call->remaining == 0) results = std::move(call->results);
      }
      if (!results.empty()) FinishInsert(*call, results);
      break;
    }
  }
  return reactor;
}

void ReplayService::FinishInsert(InsertCall& call, const std::vector<absl::Status>& results) {
  // The request's status: the first bad record, else the first other error, else OK.
  absl::Status answer;
  for (size_t j = 0; j < results.size() && answer.ok(); ++j) {
    if (absl::IsInvalidArgument(results[j])) {
      answer = absl::InvalidArgumentError(absl::StrCat("game ", j, ": ", results[j].message()));
    }
  }
  for (size_t j = 0; j < results.size() && answer.ok(); ++j) {
    if (!results[j].ok()) {
      answer =
          absl::Status(results[j].code(), absl::StrCat("game ", j, ": ", results[j].message()));
    }
  }
  if (!answer.ok()) call.response->clear_outcomes();
  Finish(kInsert, call.reactor, ForClient(answer), /*admitted=*/true);
}

grpc::ServerUnaryReactor* ReplayService::Sample(grpc::CallbackServerContext* context,
                                                const zerofleet::v1::SampleRequest* request,
                                                zerofleet::v1::SampleBatch* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  absl::Status status;
  Shard* shard = Admit(kSample, &status);
  if (shard == nullptr) {
    Finish(kSample, reactor, status, /*admitted=*/false);
    return reactor;
  }
  int64_t max_batch = 0;
  {
    absl::MutexLock lock(&mu_);
    max_batch = info_.max_sample_positions;
  }
  if (request->batch_size() < 1 || request->batch_size() > max_batch) {
    Finish(kSample, reactor,
           absl::InvalidArgumentError(absl::StrCat("batch_size must be in 1..", max_batch, ", got ",
                                                   request->batch_size())),
           /*admitted=*/true);
    return reactor;
  }
  absl::Time deadline = Deadline(context);
  int batch_size = request->batch_size();
  absl::Status submitted =
      sample_pool_->Submit([this, shard, reactor, response, deadline, batch_size] {
        absl::Status sampled = shard->Sample(batch_size, deadline, response);
        if (!sampled.ok()) response->Clear();
        Finish(kSample, reactor, ForClient(sampled), /*admitted=*/true);
      });
  if (!submitted.ok()) {
    if (absl::IsResourceExhausted(submitted) && overloaded_[kSample] != nullptr) {
      overloaded_[kSample]->Increment();
    }
    Finish(kSample, reactor, ForClient(submitted), /*admitted=*/true);
  }
  return reactor;
}

grpc::ServerUnaryReactor* ReplayService::GetInfo(grpc::CallbackServerContext* context,
                                                 const zerofleet::v1::GetInfoRequest* request,
                                                 zerofleet::v1::ReplayInfo* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  Shard* shard = nullptr;
  ShardInfo info;
  {
    absl::MutexLock lock(&mu_);
    shard = draining_ ? nullptr : shard_;
    info = info_;
  }
  if (shard == nullptr) {
    Finish(kGetInfo, reactor, absl::UnavailableError("the shard is recovering or draining"),
           /*admitted=*/false);
    return reactor;
  }
  // stats() takes the shard's locks only briefly: safe on a callback thread. The shard stays
  // alive: it is destroyed only after the server has shut down.
  ShardStats stats = shard->stats();
  response->set_positions(stats.positions);
  response->set_games(stats.games);
  response->set_capacity(shard->table().options().capacity_positions);
  response->set_inserts(stats.inserted_games);
  response->set_duplicates(stats.duplicates);
  response->set_sampled_positions(stats.sampled_positions);
  response->set_samples_per_insert(info.samples_per_insert);
  response->set_min_size_to_sample(info.min_size_to_sample);
  int64_t inserted = stats.rate_limiter.inserted - stats.rate_limiter.reserved;
  response->set_observed_samples_per_insert(
      inserted > 0 ? static_cast<double>(stats.rate_limiter.sampled) / static_cast<double>(inserted)
                   : 0.0);
  response->set_recovered_games(info.recovered_games);
  Finish(kGetInfo, reactor, absl::OkStatus(), /*admitted=*/false);
  return reactor;
}

}  // namespace zf::replay
