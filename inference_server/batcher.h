// Batcher: the inference server's dynamic batcher (gRPC-free core).
//
// Requests (each a few positions' planes, from any thread or stream) are merged into batches for
// one Backend, so that many callers each asking about a handful of positions keep the network
// busy with large batches. The gRPC service is a thin adapter over it.
//
// The algorithm (close to Triton's dynamic batcher with one model instance per worker):
//   - Submit appends the request to one FIFO queue of rows (the request is validated and its
//     planes moved in; nothing is computed on the caller's thread).
//   - `num_workers` worker threads each loop: wait for a batch, take it, gather its rows into the
//     worker's own input buffer (the one copy of the planes; bit-packed ones are unpacked there),
//     Run the backend (no lock held), scatter the outputs back into the requests, complete the
//     requests whose rows are all done. While one worker computes batch k another gathers batch
//     k+1, so at least two batches can be in flight.
//   - An idle worker takes a batch as soon as
//         queued_rows >= max_batch                       (dispatch on size), or
//         now >= t_first + max_delay                     (dispatch on delay),
//     where t_first is the Submit time of the oldest row still queued. It takes whole requests
//     from the front of the queue, in submission order, while they fit in max_batch rows; it
//     stops at the first that does not fit (no overtaking), so a batch may hold fewer than
//     max_batch rows. A busy server batches adaptively: rows that arrive while every worker
//     computes are taken as soon as one frees.
//   - A request of at most max_batch rows is never split: one batch, one model computes it.
//     When tuning, that is the ceiling (Options::max_batch): a request larger than the tuned
//     max_batch but within the ceiling is a batch of its own (measured on a 2-core fleet, cutting
//     actors' 27-row requests to the tuned 4 to 16 cost 17-66% of games/s with 1-2 actors).
//     A request with more rows than max_batch is split: its rows go, in order, into as many
//     consecutive batches as needed (filling them, possibly sharing them with other requests),
//     and it completes once every part is done. Its `model_version` is the lowest version among
//     its parts (parts can straddle a SwapBackend).
//   - Back-pressure: at most `max_queued_rows` rows wait in the queue (rows taken into a batch no
//     longer count). Submit never blocks: when the request does not fit it returns
//     ResourceExhausted at once, and the caller (the gRPC service, an actor) decides whether to
//     retry. Memory is bounded by max_queued_rows + num_workers * max_batch rows of planes and
//     outputs.
//   - SwapBackend switches models between batches: each batch is bound to the backend current
//     when it was taken, so in-flight batches finish on the old model (kept alive by shared_ptr),
//     the next batch uses the new one, and no request fails because of a swap. Every answer
//     carries the version of the backend that computed it.
//   - Self-tuning (Options::tuning set): Create measures the backend's forward cost per batch
//     size (BatchTuner::Profile, inference_server/batch_tuner.h) before the workers start, and
//     the batcher chooses max_batch (at most Options::max_batch, now a ceiling) and max_delay
//     (Options::max_delay is then unused) itself; every retune_interval the worker finishing a
//     batch re-chooses them from the costs of the batches served, the rows/s submitted and the
//     most rows outstanding at once (max_batch at most that over num_workers: callers with a
//     bounded number of rows in flight cannot fill more, and the workers should pipeline), or
//     probe the next size up for a short round (the served costs correct a wrong profile; a
//     worker then waits up to max_delay for a batch of that size). Otherwise a free worker waits
//     for more rows only while waiting lowers the cost per row (BatchTuner::WorthWaiting), at
//     most max_delay.
//   - Close fails every queued row with CANCELLED, lets in-flight batches finish normally, and
//     joins the workers.
//
// Completion: each accepted request's `done` callback runs exactly once, on a worker thread (or
// on the thread calling Close, for requests cancelled there), with no batcher lock held. It
// should be quick (copy or hand off the result); it may call Submit, but must not call Close or
// destroy the batcher. A rejected Submit (non-OK return) never calls `done`.
//
// Metrics, when Options::registry is set (no per-request or per-version labels):
//   zf_inference_evaluations_total        counter: positions evaluated successfully
//   zf_inference_requests_total{code}     counter: requests finished, by status code
//                                         ("ok", "invalid_argument", "resource_exhausted",
//                                         "cancelled", ...), rejections at Submit included
//   zf_inference_batch_rows               histogram: rows per batch
//   zf_inference_queue_wait_seconds       histogram: Submit to the dispatch of a request's
//                                         first row
//   zf_inference_compute_seconds          histogram: Backend::Run time per batch
//   zf_inference_request_seconds          histogram: Submit to completion, per request
//   zf_inference_queued_rows              gauge: rows waiting in the queue
//   zf_inference_model_version            gauge: version of the current backend
//   zf_inference_max_batch_rows           gauge: max_batch (batch fill = mean batch rows / this),
//                                         the tuner's choice when tuning (a probed size
//                                         during a probe round)
//   zf_inference_max_delay_seconds        gauge: max_delay, the tuner's choice when tuning
// Times are read from Options::clock.
//
// Thread-safety: thread-safe. Submit, SwapBackend, stats and Close may be called from any thread.
// Lifetime: the destructor calls Close. The Clock and Registry (if any) must outlive the batcher.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/thread.h"
#include "inference_server/backend.h"
#include "inference_server/batch_tuner.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace zf::inference {

// The network's answer for one request.
struct Evaluation {
  int rows = 0;
  // rows * num_actions raw logits, row after row.
  std::vector<float> policy_logits;
  // rows * 3 probabilities (win, draw, loss for the player to move), row after row.
  std::vector<float> wdl;
  // rows expected final margins (points / sqrt(H * W)) for the player to move, when the models
  // that computed the rows have a score head (ModelSpec::score); empty otherwise.
  std::vector<float> scores;
  // The version of the backend that computed the rows (the lowest one, for a split request).
  int64_t model_version = 0;
};

class Batcher {
 public:
  // Called exactly once per accepted request: the Evaluation, or
  //   Cancelled: the batcher was closed before the request's rows were dispatched;
  //   any error of Backend::Run for a batch holding one of its rows (ResourceExhausted,
  //   Internal, ...).
  using DoneCallback = absl::AnyInvocable<void(absl::StatusOr<Evaluation>)>;

  struct Options {
    // The model to serve. Required. Its max_batch() must be at least `max_batch`.
    std::shared_ptr<Backend> backend;
    // Rows per batch at most; a batch is dispatched as soon as this many rows are queued.
    int max_batch = 256;
    // How long the oldest queued row waits for others before a smaller batch is dispatched.
    // Zero: dispatch whatever is queued whenever a worker is free.
    absl::Duration max_delay = absl::Milliseconds(2);
    // Rows allowed to wait in the queue (back-pressure). At least max_request_rows.
    int64_t max_queued_rows = 8192;
    // Rows one request may hold; more is InvalidArgument. May exceed max_batch (split).
    int max_request_rows = 4096;
    // Worker threads, i.e. batches that can be in flight at once. At least 1.
    int num_workers = 2;
    // Not owned. Default (nullptr): RealClock().
    Clock* clock = nullptr;
    // Not owned; nullptr exports no metrics.
    prometheus::Registry* registry = nullptr;
    // Set: the batcher tunes max_batch (up to `max_batch`) and max_delay itself (see above).
    std::optional<BatchTunerOptions> tuning;

    // Returns: InvalidArgument naming the bad field: no backend, a bad backend spec, max_batch
    // < 1 or above the backend's max_batch(), negative max_delay, max_request_rows < 1,
    // max_queued_rows < max_request_rows, num_workers < 1, bad tuning options.
    absl::Status Validate() const;
  };

  // A snapshot of the batcher's state, for tests and status pages.
  struct Stats {
    int64_t queued_rows = 0;         // rows waiting in the queue
    int64_t queued_requests = 0;     // requests with at least one row waiting
    int64_t batches_in_flight = 0;   // batches taken and not yet finished
    int64_t batches_completed = 0;   // batches finished (successfully or not)
    int64_t rows_evaluated = 0;      // rows of successful batches
    int64_t requests_completed = 0;  // accepted requests whose callback has run (or is running)
    // Workers that have seen the queued rows and wait only for max_delay to run out (the queue
    // holds fewer than max_batch rows): lets a FakeClock test know the batcher is parked.
    int workers_awaiting_delay = 0;
    int64_t model_version = 0;  // version of the current backend
    // Backend::Run time summed over batches (exceeds wall time when runs overlap), and the
    // wall time during which at least one Run was in progress: busy_seconds / elapsed time is
    // the duty cycle of the device (the share of time a forward pass is in flight).
    double compute_seconds = 0;
    double busy_seconds = 0;
    // The limits in force: the options', or the tuner's latest choice.
    int max_batch = 0;
    absl::Duration max_delay;
    // The limits are a probe round's (tuning only; see BatchTuner, "Probing").
    bool probing = false;
  };

  // Validates the options, profiles the backend when tuning, and starts the workers.
  // Returns the batcher, or InvalidArgument (see Options::Validate), or the backend's error
  // from profiling.
  static absl::StatusOr<std::unique_ptr<Batcher>> Create(Options options);

  // Close()s: blocks until in-flight batches finish and the workers are joined.
  ~Batcher();
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  // Queues `rows` positions for evaluation; `planes` holds rows * spec().PlaneSize() bytes,
  // position after position (moved in, not copied: the inference service moves the request
  // proto's own bytes field here, so planes are copied once, into the batch). Never blocks. On OK,
  // `done` runs exactly once later (see the class comment); otherwise it never runs. Returns:
  //   OK: queued;
  //   InvalidArgument: rows < 1, rows > max_request_rows, a planes size other than
  //     rows * PlaneSize() (the message gives both), or an empty callback;
  //   ResourceExhausted: the queue cannot take `rows` more rows now (retry later);
  //   Cancelled: the batcher is closed.
  absl::Status Submit(std::string planes, int rows, DoneCallback done) ABSL_LOCKS_EXCLUDED(mu_);
  // The same, from bytes in a vector (copied once).
  absl::Status Submit(const std::vector<uint8_t>& planes, int rows, DoneCallback done)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The same with the planes packed eight to a byte (plane_bits.h): `bits` holds
  // rows * PackedPlaneBytes(spec().PlaneSize()) bytes; they are unpacked straight into the batch.
  absl::Status SubmitBits(std::string bits, int rows, DoneCallback done) ABSL_LOCKS_EXCLUDED(mu_);

  // Makes `backend` the model for every batch taken from now on; batches in flight finish on
  // the old backend, which is released when the last of them ends. Never blocks on a batch.
  // Returns:
  //   OK;
  //   InvalidArgument: null backend, other planes or actions than spec() (a score head may come
  //     or go: each batch asks its backend for scores only when it has them), or a max_batch()
  //     below Options::max_batch;
  //   Cancelled: the batcher is closed.
  absl::Status SwapBackend(std::shared_ptr<Backend> backend) ABSL_LOCKS_EXCLUDED(mu_);

  // Shutdown: rejects later Submits (Cancelled), fails every queued row's request with
  // Cancelled (their callbacks run on this thread, or on the worker finishing their last
  // in-flight part), lets in-flight batches finish, and joins the workers. Blocks until the
  // workers have exited, i.e. for at most the in-flight forward passes. Idempotent; must not be
  // called from a DoneCallback.
  void Close() ABSL_LOCKS_EXCLUDED(mu_, join_mu_);

  Stats stats() const ABSL_LOCKS_EXCLUDED(mu_);
  // The first model's shapes (the planes and actions are fixed for the batcher's lifetime:
  // SwapBackend keeps them; `score` may change with the model).
  const ModelSpec& spec() const { return spec_; }
  // The current backend's version.
  int64_t model_version() const ABSL_LOCKS_EXCLUDED(mu_);
  // Whether the current backend has a score head (its answers carry scores).
  bool serving_scores() const ABSL_LOCKS_EXCLUDED(mu_);
  // The tuner's cost curve as CurveString() writes it ("" when not tuning).
  std::string tuning_curve() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Request;  // an accepted request and its completion state
  struct Slice;    // a run of one request's rows inside a batch
  struct Metrics;

  Batcher(Options options, std::optional<BatchTuner> tuner);
  // Records one batch's cost with the tuner and, every retune_interval, applies its choice.
  void Retune(int rows, absl::Time start, absl::Time end) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SetLimits(BatchLimits limits) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Blocks until a batch is ready (see the algorithm), then takes it: fills `slices`, `backend`
  // and `now`. Returns false, with nothing taken, once the batcher is closed.
  bool TakeBatch(std::vector<Slice>* slices, std::shared_ptr<Backend>* backend, absl::Time* now)
      ABSL_LOCKS_EXCLUDED(mu_);
  void WorkerLoop() ABSL_LOCKS_EXCLUDED(mu_);
  // Records `count` of `request`'s rows as finished with `status` (by `version` when OK), and
  // completes the request (runs its callback) if they were its last. No lock held.
  // `scored`: the rows' model had a score head (the request's scores are handed out only when
  // all of its rows were).
  void Settle(const std::shared_ptr<Request>& request, int count, const absl::Status& status,
              int64_t version, bool scored) ABSL_LOCKS_EXCLUDED(mu_);
  void CountRequest(absl::StatusCode code);
  absl::Status SubmitPlanes(std::string planes, bool bit_packed, int rows, DoneCallback done)
      ABSL_LOCKS_EXCLUDED(mu_);

  Options options_;  // constant after construction; `backend` moved into backend_
  const ModelSpec spec_;
  Clock* const clock_;
  std::unique_ptr<Metrics> metrics_;  // null without a registry

  mutable absl::Mutex mu_;
  std::shared_ptr<Backend> backend_ ABSL_GUARDED_BY(mu_);
  std::deque<std::shared_ptr<Request>> queue_ ABSL_GUARDED_BY(mu_);
  int64_t queued_rows_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  int64_t batches_in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t batches_completed_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t rows_evaluated_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t requests_completed_ ABSL_GUARDED_BY(mu_) = 0;
  int workers_awaiting_delay_ ABSL_GUARDED_BY(mu_) = 0;
  int forward_passes_running_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time busy_since_ ABSL_GUARDED_BY(mu_);
  absl::Duration busy_time_ ABSL_GUARDED_BY(mu_);
  absl::Duration compute_time_ ABSL_GUARDED_BY(mu_);
  // The limits TakeBatch applies: the options', or the tuner's.
  int max_batch_ ABSL_GUARDED_BY(mu_);
  absl::Duration max_delay_ ABSL_GUARDED_BY(mu_);
  std::optional<BatchTuner> tuner_ ABSL_GUARDED_BY(mu_);
  int chosen_max_batch_ ABSL_GUARDED_BY(mu_) = 0;     // the tuner's latest choice, probes aside
  bool probing_ ABSL_GUARDED_BY(mu_) = false;         // the limits in force are a probe's
  int64_t rows_submitted_ ABSL_GUARDED_BY(mu_) = 0;   // accepted by Submit, ever
  int64_t rows_in_batches_ ABSL_GUARDED_BY(mu_) = 0;  // taken into batches not yet finished
  // The most rows outstanding (queued or in batches) at once since the last retune.
  int64_t peak_outstanding_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t rows_submitted_at_retune_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time last_retune_ ABSL_GUARDED_BY(mu_);

  // Serializes joining the workers between concurrent Close calls. Never held with mu_.
  absl::Mutex join_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  std::vector<Thread> workers_ ABSL_GUARDED_BY(join_mu_);
};

}  // namespace zf::inference
