// A fixed set of owned worker threads running submitted jobs from a bounded queue.
//
// The replay service runs Shard::Insert and Shard::Sample (which block on the rate limiter and on
// fsync) here, so that no gRPC callback thread ever blocks. Back-pressure is explicit: Submit on a
// full queue fails at once with ResourceExhausted instead of growing memory.
//
// Thread-safe. The pool owns its threads; Close() (and the destructor) runs every job already
// queued, then joins them.
#pragma once

#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "common/bounded_queue.h"
#include "common/thread.h"

namespace zf::replay {

struct WorkerPoolOptions {
  int num_threads = 8;       // 1..256
  int queue_capacity = 256;  // jobs waiting for a thread, 1..1'000'000

  // Returns: OK; InvalidArgument naming the bad field.
  absl::Status Validate() const;
};

class WorkerPool {
 public:
  // Starts the threads. `options` must be valid (checked: a bad one is a bug).
  explicit WorkerPool(const WorkerPoolOptions& options);
  ~WorkerPool();  // Close()

  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Queues `job` to run on a worker thread. Never blocks. On failure `job` is not run (and is
  // destroyed before Submit returns).
  // Returns: OK; ResourceExhausted (the queue is full); Unavailable (closed).
  absl::Status Submit(std::function<void()> job);

  // Refuses new jobs, runs the queued ones, joins the threads. Blocks until the running jobs
  // return. Idempotent; call from one thread, never from a job.
  void Close();

  size_t queued() const { return queue_.size(); }

 private:
  void Loop();

  BoundedQueue<std::function<void()>> queue_;
  std::vector<Thread> threads_;
  bool closed_ = false;  // only touched by Close(), which is called from one thread
};

}  // namespace zf::replay
