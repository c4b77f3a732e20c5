#include "replay/client/replay_sampler.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace zf::replay {

using zerofleet::v1::GetInfoRequest;
using zerofleet::v1::ReplayInfo;
using zerofleet::v1::SampleBatch;
using zerofleet::v1::SampleRequest;

absl::Status ReplaySamplerOptions::Validate() const {
  if (shards.empty()) return absl::InvalidArgumentError("shards: at least one address is needed");
  if (batch_size < 1)
    return absl::InvalidArgumentError(absl::StrCat("batch_size must be >= 1, got ", batch_size));
  if (prefetch < 1)
    return absl::InvalidArgumentError(absl::StrCat("prefetch must be >= 1, got ", prefetch));
  if (sample_timeout <= absl::ZeroDuration() || initial_backoff <= absl::ZeroDuration() ||
      max_backoff < initial_backoff || info_refresh < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "sample_timeout and initial_backoff must be > 0, max_backoff >= initial_backoff, "
        "info_refresh >= 0");
  }
  return absl::OkStatus();
}

ReplaySampler::ReplaySampler(ReplaySamplerOptions options)
    : options_(std::move(options)),
      ready_(static_cast<size_t>(options_.prefetch)),
      rng_(options_.seed != 0 ? options_.seed
                              : static_cast<uint64_t>(absl::ToUnixNanos(absl::Now()))) {
  stats_.batches_per_shard.assign(options_.shards.size(), 0);
}

absl::StatusOr<std::unique_ptr<ReplaySampler>> ReplaySampler::Create(ReplaySamplerOptions options) {
  if (absl::Status valid = options.Validate(); !valid.ok()) return valid;
  std::unique_ptr<ReplaySampler> sampler(new ReplaySampler(std::move(options)));
  for (const std::string& address : sampler->options_.shards) {
    sampler->stubs_.push_back(
        zerofleet::v1::Replay::NewStub(grpc_util::CreateChannel(address, sampler->options_.wire)));
  }
  sampler->thread_ = std::make_unique<Thread>("replay-sampler", [s = sampler.get()] { s->Loop(); });
  return sampler;
}

ReplaySampler::~ReplaySampler() { Close(); }

void ReplaySampler::Close() {
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return;
    closed_ = true;
    if (in_flight_ != nullptr) in_flight_->TryCancel();
  }
  ready_.Close();
  if (thread_ != nullptr) thread_->Join();
}

absl::StatusOr<SampleBatch> ReplaySampler::Next(absl::Time deadline) {
  {
    // Batches prefetched before Close stay in the (closed) queue, which would still hand them
    // out; the contract is Cancelled once closed.
    absl::MutexLock lock(&mu_);
    if (closed_) return absl::CancelledError("replay sampler closed");
  }
  absl::Time start = absl::Now();
  absl::StatusOr<SampleBatch> batch = ready_.Pop(deadline);
  absl::MutexLock lock(&mu_);
  stats_.waited += absl::Now() - start;
  if (batch.ok()) ++stats_.batches;
  if (absl::IsCancelled(batch.status())) return absl::CancelledError("replay sampler closed");
  return batch;
}

ReplaySamplerStats ReplaySampler::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

void ReplaySampler::RefreshSizes(std::vector<int64_t>* sizes) {
  sizes->assign(stubs_.size(), 0);
  for (size_t i = 0; i < stubs_.size(); ++i) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
    {
      absl::MutexLock lock(&mu_);
      if (closed_) return;
      in_flight_ = &context;
    }
    ReplayInfo info;
    grpc::Status status = stubs_[i]->GetInfo(&context, GetInfoRequest(), &info);
    {
      absl::MutexLock lock(&mu_);
      in_flight_ = nullptr;
    }
    // Only shards able to sample count: below min_size_to_sample a shard would just block.
    if (status.ok() && info.positions() >= std::max<int64_t>(1, info.min_size_to_sample())) {
      (*sizes)[i] = info.positions();
    }
  }
}

bool ReplaySampler::Backoff(int failures) {
  double cap = std::min(absl::ToDoubleSeconds(options_.max_backoff),
                        absl::ToDoubleSeconds(options_.initial_backoff) *
                            static_cast<double>(uint64_t{1} << std::min(failures, 30)));
  absl::Duration wait = absl::Seconds(std::uniform_real_distribution<double>(0.0, cap)(rng_));
  absl::MutexLock lock(&mu_);
  auto closed = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return closed_; };
  return !mu_.AwaitWithTimeout(absl::Condition(&closed), wait);
}

void ReplaySampler::Loop() {
  std::vector<int64_t> sizes;
  std::vector<bool> held(stubs_.size(), false);
  absl::Time next_refresh = absl::InfinitePast();
  int failures = 0;
  while (true) {
    if (absl::Now() >= next_refresh) {
      RefreshSizes(&sizes);
      next_refresh = absl::Now() + options_.info_refresh;
    }
    int64_t total = 0;
    for (int64_t s : sizes) total += s;
    if (total == 0) {
      next_refresh = absl::InfinitePast();  // nothing to sample yet: ask again after the backoff
      if (!Backoff(failures++)) return;
      continue;
    }
    // Shards whose rate limiter held the last try (DEADLINE_EXCEEDED within shard_wait) are
    // left out until a sample succeeds, so one shard short of inserts does not hold up the others.
    int64_t eligible_total = 0;
    int eligible_shards = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (!held[i] && sizes[i] > 0) {
        eligible_total += sizes[i];
        ++eligible_shards;
      }
    }
    if (eligible_total == 0) {
      std::fill(held.begin(), held.end(), false);
      if (!Backoff(failures++)) return;
      continue;
    }
    int64_t pick = std::uniform_int_distribution<int64_t>(0, eligible_total - 1)(rng_);
    size_t shard = 0;
    while (held[shard] || pick >= sizes[shard]) {
      if (!held[shard]) pick -= sizes[shard];
      ++shard;
    }

    grpc::ClientContext context;
    // With other shards to turn to, wait on this one only shard_wait.
    const absl::Duration wait = eligible_shards > 1
                                    ? std::min(options_.sample_timeout, options_.shard_wait)
                                    : options_.sample_timeout;
    context.set_deadline(absl::ToChronoTime(absl::Now() + wait));
    {
      absl::MutexLock lock(&mu_);
      if (closed_) return;
      in_flight_ = &context;
    }
    SampleRequest request;
    request.set_batch_size(options_.batch_size);
    SampleBatch batch;
    grpc::Status status = stubs_[shard]->Sample(&context, request, &batch);
    {
      absl::MutexLock lock(&mu_);
      in_flight_ = nullptr;
      if (status.ok()) {
        ++stats_.batches_per_shard[shard];
      } else {
        ++stats_.failed_samples;
      }
    }
    if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED && eligible_shards > 1) {
      held[shard] = true;  // its rate limiter holds samples back: try another shard at once
      continue;
    }
    if (!status.ok()) {
      next_refresh = absl::InfinitePast();
      if (!Backoff(failures++)) return;
      continue;
    }
    failures = 0;
    std::fill(held.begin(), held.end(), false);
    if (!ready_.Push(std::move(batch)).ok()) return;  // closed
  }
}

}  // namespace zf::replay
