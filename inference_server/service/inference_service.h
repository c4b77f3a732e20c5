// InferenceService: the zerofleet.v1.Inference gRPC service, a thin adapter over the Batcher.
//
// Evaluate is a long-lived bidirectional stream served by one reactor (gRPC callback API) per
// stream:
//   - the stream's initial metadata says `zf-planes: bits`: the client may send DTYPE_BITS;
//   - each EvaluateRequest is validated (ValidatePlanes: dtype UINT8 or BITS, shape [n, C, H, W]
//     equal to the model's, data size = n * C * H * W (BITS: n * ceil(C * H * W / 8)),
//     1 <= n <= max_request_rows); the planes' bytes are moved, not copied, into the batcher,
//     which copies (or unpacks) them once, into the batch; a bad one is
//     answered at once with error_code INVALID_ARGUMENT and a message naming the problem, and
//     counted in zf_inference_requests_total{code="invalid_argument"}; the stream goes on;
//   - a valid one is submitted to the batcher; a Submit error (ResourceExhausted when the queue
//     is full, Cancelled while shutting down) becomes that request's error_code;
//   - answers are written back on the stream in completion order. A reactor may have one write
//     outstanding, so answers wait in a per-stream queue. The queue is bounded by reading
//     back-pressure: a stream with `max_in_flight_per_stream` requests submitted and not yet
//     written stops reading until one is written (HTTP/2 flow control then holds the client).
//   - lifetime: each reactor is reference counted. The batcher's callbacks hold a reference, so
//     a callback that fires after the client left (cancelled stream) finds the reactor alive
//     and drops its answer; the reactor is freed after gRPC's OnDone and the last callback.
// GetModelInfo is unary: the model's shapes, the current version, the game and the row limit.
//
// Draining (shutdown): Drain() writes a notice on every stream (an EvaluateResponse with
// `draining` set) and answers every later request with CANCELLED; the owner then closes the
// batcher (queued rows are answered CANCELLED, in-flight batches finish). A stream ends with
// UNAVAILABLE ("server shutting down"; clients reconnect elsewhere or later) once its submitted
// requests are answered and written and the client has closed its side (WritesDone, as the
// notice asks), or, for a client that does not, once EndDrainGrace() is called. Ending a stream
// whose client has not closed its side resets it (HTTP/2 RST_STREAM), and gRPC may then drop
// answers the client has not yet read: measured, a held batch's answers lost at shutdown in
// about one run in 200 under ASan before the notice existed.
//
// Metrics, when Options::registry is set:
//   zf_inference_open_streams        gauge: Evaluate streams open now
//   zf_inference_streams_total       counter: Evaluate streams opened
//   zf_inference_requests_total{code="invalid_argument"}: requests refused by validation (the
//                                    batcher counts the rest of this family)
//   zf_inference_responses_dropped_total counter: answers computed for a stream that had
//                                    already ended (client gone)
//
// Thread-safety: thread-safe (gRPC calls it from its own threads). Lifetime: the batcher must
// outlive the service; destroy the service only after the gRPC server is shut down and the
// batcher is closed (so that no reactor or callback remains).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "inference_server/backend.h"
#include "inference_server/batcher.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "proto/zerofleet/v1/inference.grpc.pb.h"

namespace zf::inference {

// Checks `planes` against `spec` and `max_rows`.
// Returns the row count n, or InvalidArgument naming the problem: a dtype other than
// DTYPE_UINT8 and DTYPE_BITS, a shape that is not [n, C, H, W] with the model's C, H, W, n
// outside [1, max_rows], or a data size other than n * C * H * W bytes (DTYPE_BITS:
// n * ceil(C * H * W / 8); expected and actual given).
absl::StatusOr<int> ValidatePlanes(const zerofleet::v1::Tensor& planes, const ModelSpec& spec,
                                   int max_rows);

class InferenceService final : public zerofleet::v1::Inference::CallbackService {
 public:
  struct Options {
    // Not owned; required; must outlive the service.
    Batcher* batcher = nullptr;
    // Canonical game name reported by GetModelInfo (may be empty).
    std::string game;
    // Rows one request may hold (reported by GetModelInfo; more is INVALID_ARGUMENT). Should be
    // the batcher's Options::max_request_rows. At least 1.
    int max_request_rows = 4096;
    // Requests of one stream submitted and not yet written back before the stream stops
    // reading. At least 1.
    int max_in_flight_per_stream = 256;
    // Not owned; nullptr exports no metrics. Must outlive the service.
    prometheus::Registry* registry = nullptr;

    // Returns: InvalidArgument naming the bad field.
    absl::Status Validate() const;
  };

  // Returns the service, or InvalidArgument (see Options::Validate).
  static absl::StatusOr<std::unique_ptr<InferenceService>> Create(Options options);

  ~InferenceService() override;

  // Starts draining (see the class comment). Idempotent; never blocks.
  void Drain() ABSL_LOCKS_EXCLUDED(mu_);
  // Waits until every Evaluate stream has ended, at most `timeout`; true if they all have.
  bool AwaitStreamsEnded(absl::Duration timeout) ABSL_LOCKS_EXCLUDED(mu_);
  // Ends the drain's grace: streams end once their answers are written, whether or not their
  // client has closed its side. Implies Drain's refusals. Idempotent; never blocks.
  void EndDrainGrace() ABSL_LOCKS_EXCLUDED(mu_);
  // Evaluate streams whose reactor gRPC has not yet released.
  int open_streams() const ABSL_LOCKS_EXCLUDED(mu_);

  // gRPC entry points.
  grpc::ServerBidiReactor<zerofleet::v1::EvaluateRequest, zerofleet::v1::EvaluateResponse>*
  Evaluate(grpc::CallbackServerContext* context) override;
  grpc::ServerUnaryReactor* GetModelInfo(grpc::CallbackServerContext* context,
                                         const zerofleet::v1::GetModelInfoRequest* request,
                                         zerofleet::v1::ModelInfo* response) override;

 private:
  class Stream;  // one Evaluate stream's reactor
  struct Metrics;

  explicit InferenceService(Options options);

  // Called by a Stream from OnDone.
  void Unregister(Stream* stream) ABSL_LOCKS_EXCLUDED(mu_);

  const Options options_;
  std::unique_ptr<Metrics> metrics_;  // null without a registry

  mutable absl::Mutex mu_;
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
  bool grace_over_ ABSL_GUARDED_BY(mu_) = false;
  // Live reactors (each also owns itself until OnDone).
  absl::flat_hash_set<std::shared_ptr<Stream>> streams_ ABSL_GUARDED_BY(mu_);
};

}  // namespace zf::inference
