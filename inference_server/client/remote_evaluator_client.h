// RemoteEvaluatorClient: the actor's side of the Evaluate stream (zerofleet.v1.Inference).
//
// One long-lived bidirectional stream carries many requests at once: Submit queues a leaf batch
// and returns at once; its callback runs when the answer (matched by request_id) arrives. When
// the stream breaks (server restarted, network gone) the client reconnects with jittered
// exponential backoff and re-sends every request not yet answered, so a restarted server delays
// answers but loses none. Answers with a retryable error_code (RESOURCE_EXHAUSTED: the server's
// queue is full; CANCELLED or UNAVAILABLE: it is shutting down) are re-sent too, after a backoff.
// Other errors (INVALID_ARGUMENT, ...) complete the request with that status.
//
// Planes: once a stream's server has said in its initial metadata that it accepts DTYPE_BITS
// (every server since it existed; plane_bits.h), requests whose values are all 0 or 1 are sent
// packed eight to a byte; before that (the stream's first requests) and to older servers they go
// as DTYPE_UINT8. Both kinds of server can be mixed and swapped under a running client.
//
// Threads: the client owns two: a connection thread that (re)opens the stream and writes
// requests, and a reader per stream that reads answers and runs the callbacks.
//
// Backoff: a new stream waits for the channel to connect (wait_for_ready; the channel reconnects
// on WireSettings' reconnect backoff). After a stream ends without having delivered an answer, the
// k-th consecutive retry waits min(max_backoff, initial_backoff * 2^k) * (1 + jitter * u), u
// uniform in [-1, 1).
//
// Thread-safety: thread-safe. Callbacks run on the client's reader thread (or on the thread
// calling Close, with Cancelled), with no client lock held; they may call Submit, not Close.
// Lifetime: the destructor calls Close.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/grpc/channel.h"
#include "common/thread.h"
#include "proto/zerofleet/v1/inference.grpc.pb.h"

namespace zf::inference {

class RemoteEvaluatorClient {
 public:
  // The answer to one request.
  struct Result {
    int rows = 0;
    int64_t model_version = 0;
    std::vector<float> policy_logits;  // rows * num_actions
    std::vector<float> wdl;            // rows * 3: P(win), P(draw), P(loss)
    // rows expected final margins (points / sqrt(H * W)) for the player to move, when the
    // server's model has a score head; empty otherwise.
    std::vector<float> score;
  };
  // Runs exactly once per accepted Submit: the Result, or the request's non-retryable error
  // (InvalidArgument, Internal for a malformed answer, ...), or Cancelled when the client is
  // closed first.
  using Callback = absl::AnyInvocable<void(absl::StatusOr<Result>)>;

  struct Options {
    // "HOST:PORT" of the inference server. Required.
    std::string target;
    // Planes are [rows, C, H, W] uint8 with these C, H, W (see GetModelInfo). Required, >= 1.
    int input_channels = 0;
    int board_height = 0;
    int board_width = 0;
    grpc_util::WireSettings wire;
    absl::Duration initial_backoff = absl::Milliseconds(50);
    absl::Duration max_backoff = absl::Seconds(5);
    double jitter = 0.2;  // 0..1
    uint64_t seed = 1;    // of the jitter

    // Returns: InvalidArgument naming the bad field.
    absl::Status Validate() const;
  };

  // Starts connecting (does not wait for the server).
  // Returns the client, or InvalidArgument (see Options::Validate).
  static absl::StatusOr<std::unique_ptr<RemoteEvaluatorClient>> Create(Options options);

  ~RemoteEvaluatorClient();
  RemoteEvaluatorClient(const RemoteEvaluatorClient&) = delete;
  RemoteEvaluatorClient& operator=(const RemoteEvaluatorClient&) = delete;

  // Queues `rows` positions (`planes`: rows * C * H * W bytes) for evaluation; never blocks on
  // the network. On OK, `done` runs exactly once later.
  // Returns: OK; InvalidArgument for rows < 1 or a wrong planes size; Cancelled after Close.
  absl::Status Submit(std::span<const uint8_t> planes, int rows, Callback done)
      ABSL_LOCKS_EXCLUDED(mu_);

  // The server's model description. Blocks for at most `timeout`.
  // Returns: the info; DeadlineExceeded; Unavailable when the server cannot be reached.
  absl::StatusOr<zerofleet::v1::ModelInfo> GetModelInfo(absl::Duration timeout) const;

  // Stops the stream, joins the threads and completes every unanswered request with Cancelled.
  // Idempotent; must not be called from a callback.
  void Close() ABSL_LOCKS_EXCLUDED(mu_);

  // Requests submitted and not yet completed.
  int64_t pending() const ABSL_LOCKS_EXCLUDED(mu_);
  // Streams opened so far (1 + reconnections).
  int64_t streams_opened() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  using Stream =
      grpc::ClientReaderWriter<zerofleet::v1::EvaluateRequest, zerofleet::v1::EvaluateResponse>;
  struct Pending {
    // Shared with the writer, which sends it (or a bit-packed copy) without copying it here.
    std::shared_ptr<const zerofleet::v1::EvaluateRequest> request;
    Callback done;
  };

  explicit RemoteEvaluatorClient(Options options);

  void ConnectionLoop() ABSL_LOCKS_EXCLUDED(mu_);
  // Writes queued requests to `stream` until it breaks or the client closes.
  void WriteLoop(Stream* stream) ABSL_LOCKS_EXCLUDED(mu_);
  // Reads answers until the stream ends, then marks it broken.
  void ReadLoop(Stream* stream, grpc::ClientContext* context) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Duration Backoff(int attempt) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<zerofleet::v1::Inference::Stub> stub_;

  mutable absl::Mutex mu_;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<uint64_t, Pending> pending_ ABSL_GUARDED_BY(mu_);  // by request id (= send order)
  std::deque<uint64_t> ready_ ABSL_GUARDED_BY(mu_);           // ids to write now
  std::multimap<absl::Time, uint64_t> delayed_ ABSL_GUARDED_BY(mu_);  // ids to write later
  grpc::ClientContext* context_ ABSL_GUARDED_BY(mu_) = nullptr;       // of the open stream
  bool stream_broken_ ABSL_GUARDED_BY(mu_) = false;
  bool answered_on_stream_ ABSL_GUARDED_BY(mu_) = false;
  // This stream's server accepts DTYPE_BITS (from its initial metadata, known after its first
  // answer).
  bool stream_accepts_bits_ ABSL_GUARDED_BY(mu_) = false;
  int64_t streams_opened_ ABSL_GUARDED_BY(mu_) = 0;
  std::mt19937_64 rng_ ABSL_GUARDED_BY(mu_);

  absl::Mutex join_mu_;
  std::unique_ptr<Thread> connection_ ABSL_GUARDED_BY(join_mu_);
};

}  // namespace zf::inference
