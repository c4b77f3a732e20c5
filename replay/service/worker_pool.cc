#include "replay/service/worker_pool.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/logging.h"

namespace zf::replay {

absl::Status WorkerPoolOptions::Validate() const {
  if (num_threads < 1 || num_threads > 256) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_threads must be in 1..256, got ", num_threads));
  }
  if (queue_capacity < 1 || queue_capacity > 1'000'000) {
    return absl::InvalidArgumentError(
        absl::StrCat("queue_capacity must be in 1..1000000, got ", queue_capacity));
  }
  return absl::OkStatus();
}

WorkerPool::WorkerPool(const WorkerPoolOptions& options)
    : queue_(static_cast<size_t>(options.queue_capacity)) {
  ZF_CHECK(options.Validate().ok()) << options.Validate();
  threads_.reserve(static_cast<size_t>(options.num_threads));
  for (int i = 0; i < options.num_threads; ++i) {
    threads_.emplace_back(absl::StrCat("replay-worker-", i), [this] { Loop(); });
  }
}

WorkerPool::~WorkerPool() { Close(); }

absl::Status WorkerPool::Submit(std::function<void()> job) {
  absl::Status status = queue_.TryPush(std::move(job));
  if (absl::IsCancelled(status)) return absl::UnavailableError("the worker pool is closed");
  if (absl::IsResourceExhausted(status)) {
    return absl::ResourceExhaustedError("the shard's request queue is full; retry later");
  }
  return status;
}

void WorkerPool::Close() {
  if (closed_) return;
  closed_ = true;
  queue_.Close();
  for (Thread& t : threads_) t.Join();
}

void WorkerPool::Loop() {
  while (true) {
    absl::StatusOr<std::function<void()>> job = queue_.Pop();
    if (!job.ok()) return;  // closed and drained
    (*job)();
  }
}

}  // namespace zf::replay
