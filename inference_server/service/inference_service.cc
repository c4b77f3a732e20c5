#include "inference_server/service/inference_service.h"

#include <bit>
#include <deque>
#include <limits>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/grpc/status.h"
#include "inference_server/plane_bits.h"

namespace zf::inference {
namespace {

using zerofleet::v1::EvaluateRequest;
using zerofleet::v1::EvaluateResponse;

void PackFloats(const std::vector<float>& values, int64_t rows, int64_t columns,
                zerofleet::v1::Tensor* tensor) {
  tensor->set_dtype(zerofleet::v1::DTYPE_FLOAT32);
  tensor->add_shape(rows);
  tensor->add_shape(columns);
  // The wire is little-endian, as is every machine we build for.
  static_assert(std::endian::native == std::endian::little);
  tensor->set_data(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
}

EvaluateResponse ErrorResponse(uint64_t request_id, const absl::Status& status) {
  EvaluateResponse response;
  response.set_request_id(request_id);
  response.set_error_code(static_cast<int>(status.code()));
  response.set_error_message(std::string(status.message()));
  return response;
}

}  // namespace

absl::StatusOr<int> ValidatePlanes(const zerofleet::v1::Tensor& planes, const ModelSpec& spec,
                                   int max_rows) {
  const bool bits = planes.dtype() == zerofleet::v1::DTYPE_BITS;
  if (planes.dtype() != zerofleet::v1::DTYPE_UINT8 && !bits) {
    return absl::InvalidArgumentError(
        absl::StrCat("planes.dtype is ", zerofleet::v1::DType_Name(planes.dtype()), " (",
                     static_cast<int>(planes.dtype()), "), expected DTYPE_UINT8 or DTYPE_BITS"));
  }
  if (planes.shape_size() != 4 || planes.shape(1) != spec.input_channels ||
      planes.shape(2) != spec.board_height || planes.shape(3) != spec.board_width) {
    return absl::InvalidArgumentError(
        absl::StrCat("planes.shape is [", absl::StrJoin(planes.shape(), ", "), "], expected [n, ",
                     spec.input_channels, ", ", spec.board_height, ", ", spec.board_width, "]"));
  }
  const int64_t rows = planes.shape(0);
  if (rows < 1 || rows > max_rows) {
    return absl::InvalidArgumentError(
        absl::StrCat("planes.shape[0] (positions) is ", rows, ", expected 1..", max_rows));
  }
  const int64_t row_bytes = bits ? PackedPlaneBytes(spec.PlaneSize()) : spec.PlaneSize();
  const int64_t want_bytes = rows * row_bytes;  // no overflow: both are small
  if (static_cast<int64_t>(planes.data().size()) != want_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("planes.data has ", planes.data().size(), " bytes, expected ", want_bytes,
                     " (", rows, " x ", row_bytes, bits ? ", DTYPE_BITS: ceil(" : "",
                     bits ? absl::StrCat(spec.PlaneSize(), " / 8)") : "", ")"));
  }
  return static_cast<int>(rows);
}

struct InferenceService::Metrics {
  explicit Metrics(prometheus::Registry& registry)
      : open_streams(prometheus::BuildGauge()
                         .Name("zf_inference_open_streams")
                         .Help("Evaluate streams open now.")
                         .Register(registry)
                         .Add({})),
        streams(prometheus::BuildCounter()
                    .Name("zf_inference_streams_total")
                    .Help("Evaluate streams opened.")
                    .Register(registry)
                    .Add({})),
        invalid(prometheus::BuildCounter()
                    .Name("zf_inference_requests_total")
                    .Help("Inference requests finished, by status code (rejections included).")
                    .Register(registry)
                    .Add({{"code", "invalid_argument"}})),
        dropped(prometheus::BuildCounter()
                    .Name("zf_inference_responses_dropped_total")
                    .Help("Answers computed for an Evaluate stream that had already ended.")
                    .Register(registry)
                    .Add({})) {}

  prometheus::Gauge& open_streams;
  prometheus::Counter& streams;
  prometheus::Counter& invalid;
  prometheus::Counter& dropped;
};

// One Evaluate stream. Owns itself (self_) from creation until gRPC's OnDone; the batcher's
// callbacks hold further references. gRPC operations (StartRead, StartWrite, Finish) are started
// outside mu_: the decision is taken under the lock, flags make sure each is started once.
class InferenceService::Stream final
    : public grpc::ServerBidiReactor<EvaluateRequest, EvaluateResponse> {
 public:
  Stream(InferenceService* service, bool draining, bool grace_over)
      : service_(service), draining_(draining), grace_over_(grace_over) {
    if (draining_) {
      outbox_.push_back(DrainingNotice());
      ++unwritten_;
    }
  }

  // Takes the self-reference and starts the first read and write (when the service is already
  // draining: the notice). Called once, right after creation.
  void Start(std::shared_ptr<Stream> self) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    self_ = std::move(self);
    ActLocked();
  }

  // Tells the client the server is going (the notice), and reads on until it closes its side.
  void OnDrain() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    BeginDrainLocked();
    ActLocked();
  }

  // The drain's grace is over (draining, if it was not): end once the answers are written,
  // whether or not the client has closed its side.
  void OnDrainGraceOver() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    BeginDrainLocked();
    grace_over_ = true;
    ActLocked();
  }

  void OnReadDone(bool ok) override ABSL_LOCKS_EXCLUDED(mu_) {
    if (!ok) {
      absl::MutexLock lock(&mu_);
      reading_ = false;
      read_closed_ = true;
      ActLocked();
      return;
    }
    const uint64_t id = request_.request_id();
    absl::StatusOr<int> rows = ValidatePlanes(request_.planes(), service_->options_.batcher->spec(),
                                              service_->options_.max_request_rows);
    absl::Status submitted;
    bool draining;
    {
      absl::MutexLock lock(&mu_);
      draining = draining_ || broken_ || finished_;
    }
    if (!rows.ok()) {
      if (service_->metrics_ != nullptr) service_->metrics_->invalid.Increment();
      submitted = rows.status();
    } else if (draining) {
      submitted = absl::CancelledError("server shutting down");
    } else {
      // The request's own bytes, moved (no copy): the batcher copies (or unpacks) them once,
      // into a batch.
      const bool bits = request_.planes().dtype() == zerofleet::v1::DTYPE_BITS;
      std::string planes = std::move(*request_.mutable_planes()->mutable_data());
      uint64_t seq;
      {
        absl::MutexLock lock(&mu_);
        // Before Submit: the callback may run before Submit returns.
        seq = next_seq_++;
        unanswered_.insert(seq);
        ++in_flight_;
      }
      auto done = [self = Self(), id, seq](absl::StatusOr<Evaluation> result) {
        self->OnEvaluated(id, seq, std::move(result));
      };
      Batcher& batcher = *service_->options_.batcher;
      submitted = bits ? batcher.SubmitBits(std::move(planes), *rows, std::move(done))
                       : batcher.Submit(std::move(planes), *rows, std::move(done));
      if (!submitted.ok()) {
        absl::MutexLock lock(&mu_);
        unanswered_.erase(seq);
        --in_flight_;
      }
    }
    absl::MutexLock lock(&mu_);
    reading_ = false;
    if (!submitted.ok()) EnqueueLocked(ErrorResponse(id, submitted));
    ActLocked();
  }

  void OnWriteDone(bool ok) override ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    if (!ok) {
      // The client is gone; nothing more can be written.
      broken_ = true;
      if (service_->metrics_ != nullptr) {
        service_->metrics_->dropped.Increment(static_cast<double>(outbox_.size()));
      }
      outbox_.clear();
    } else {
      outbox_.pop_front();
      --unwritten_;
    }
    ActLocked();
  }

  void OnCancel() override ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    broken_ = true;
    ActLocked();
  }

  void OnDone() override {
    std::shared_ptr<Stream> self;
    {
      absl::MutexLock lock(&mu_);
      self = std::move(self_);
    }
    service_->Unregister(this);
    // `self` (maybe the last reference) is released here; callbacks still pending keep theirs.
  }

 private:
  std::shared_ptr<Stream> Self() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return self_;
  }

  // Answers are written in completion order, except that an answer computed by a newer model
  // than any written so far on this stream waits until every request submitted before it has
  // been answered: the batcher takes requests in order and swaps models between batches, so
  // those earlier requests were computed by an older (or the same) model, and writing them
  // first keeps the versions a stream sees from going down (the proto's promise) even when a
  // batch on the new model finishes before one still running on the old model.
  void OnEvaluated(uint64_t id, uint64_t seq, absl::StatusOr<Evaluation> result)
      ABSL_LOCKS_EXCLUDED(mu_) {
    EvaluateResponse response;
    if (!result.ok()) {
      response = ErrorResponse(id, result.status());
    } else {
      const int64_t actions = service_->options_.batcher->spec().num_actions;
      response.set_request_id(id);
      response.set_model_version(result->model_version);
      PackFloats(result->policy_logits, result->rows, actions, response.mutable_policy_logits());
      PackFloats(result->wdl, result->rows, ModelSpec::kWdlSize, response.mutable_wdl());
      if (!result->scores.empty()) {
        PackFloats(result->scores, result->rows, 1, response.mutable_score());
      }
    }
    absl::MutexLock lock(&mu_);
    unanswered_.erase(seq);
    if (response.error_code() != 0 || response.model_version() <= max_version_written_) {
      --in_flight_;
      EnqueueLocked(std::move(response));
    } else {
      held_.emplace(seq, std::move(response));
    }
    while (!held_.empty() && (unanswered_.empty() || held_.begin()->first < *unanswered_.begin())) {
      --in_flight_;
      EnqueueLocked(std::move(held_.begin()->second));
      held_.erase(held_.begin());
    }
    ActLocked();
  }

  void BeginDrainLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (draining_) return;
    draining_ = true;
    if (!broken_ && !finished_) EnqueueLocked(DrainingNotice());
  }

  static EvaluateResponse DrainingNotice() {
    EvaluateResponse notice;
    notice.set_draining(true);
    notice.set_error_code(grpc::StatusCode::UNAVAILABLE);
    notice.set_error_message("server shutting down: send nothing more on this stream");
    return notice;
  }

  void EnqueueLocked(EvaluateResponse response) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (broken_ || finished_) {
      if (service_->metrics_ != nullptr) service_->metrics_->dropped.Increment();
      return;
    }
    if (response.model_version() > max_version_written_) {
      max_version_written_ = response.model_version();
    }
    outbox_.push_back(std::move(response));
    ++unwritten_;
  }

  // Starts whatever gRPC operation the state calls for. The operations are started with mu_
  // released (a reaction could otherwise run inline and deadlock), so this unlocks and relocks.
  void ActLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finished_) return;
    // Read on while the stream is healthy and under its in-flight bound; while draining too
    // (requests are answered CANCELLED) until the client closes its side.
    bool start_read = false, start_write = false, finish = false;
    grpc::Status finish_status;
    if (!broken_ && !read_closed_ && !reading_ && !(draining_ && grace_over_) &&
        in_flight_ + unwritten_ < service_->options_.max_in_flight_per_stream) {
      reading_ = true;
      start_read = true;
    }
    const EvaluateResponse* to_write = nullptr;
    if (!broken_ && !writing_ && !outbox_.empty()) {
      writing_ = true;
      start_write = true;
      to_write = &outbox_.front();  // deque: stays valid while others are pushed
    }
    // Finish may be called with a read outstanding (it then fails), never with a write.
    if (!writing_) {
      if (broken_) {
        finish = true;
        finish_status = grpc::Status(grpc::StatusCode::CANCELLED, "stream cancelled");
      } else if (in_flight_ == 0 && outbox_.empty()) {
        // Draining, the stream ends once the client has closed its side (or the grace is
        // over): ending it before would reset the HTTP/2 stream, and gRPC may then drop
        // answers the client has not read yet (seen: a batch's answers lost at shutdown).
        if (draining_ && (read_closed_ || grace_over_)) {
          finish = true;
          finish_status = grpc::Status(grpc::StatusCode::UNAVAILABLE, "server shutting down");
        } else if (read_closed_) {
          finish = true;
          finish_status = grpc::Status::OK;
        }
      }
    }
    if (finish) finished_ = true;
    if (!start_read && !start_write && !finish) return;
    mu_.Unlock();
    if (start_read) StartRead(&request_);
    if (start_write) StartWrite(to_write);
    if (finish) Finish(finish_status);
    mu_.Lock();
  }

  InferenceService* const service_;
  EvaluateRequest request_;  // the read buffer; touched only between StartRead and OnReadDone

  absl::Mutex mu_;
  std::shared_ptr<Stream> self_ ABSL_GUARDED_BY(mu_);
  bool draining_ ABSL_GUARDED_BY(mu_);
  bool grace_over_ ABSL_GUARDED_BY(mu_);                // draining: end without the client's close
  bool reading_ ABSL_GUARDED_BY(mu_) = false;           // a read is outstanding
  bool read_closed_ ABSL_GUARDED_BY(mu_) = false;       // the client half-closed (or reads failed)
  bool writing_ ABSL_GUARDED_BY(mu_) = false;           // a write is outstanding
  bool broken_ ABSL_GUARDED_BY(mu_) = false;            // cancelled or a write failed
  bool finished_ ABSL_GUARDED_BY(mu_) = false;          // Finish was called
  int64_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;          // submitted, answer not yet queued
  uint64_t next_seq_ ABSL_GUARDED_BY(mu_) = 0;          // submission order on this stream
  std::set<uint64_t> unanswered_ ABSL_GUARDED_BY(mu_);  // seqs whose callback has not run
  std::map<uint64_t, EvaluateResponse> held_ ABSL_GUARDED_BY(mu_);  // by seq, see OnEvaluated
  int64_t max_version_written_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t unwritten_ ABSL_GUARDED_BY(mu_) = 0;                // answers queued or being written
  std::deque<EvaluateResponse> outbox_ ABSL_GUARDED_BY(mu_);  // front: being written
};

absl::Status InferenceService::Options::Validate() const {
  if (batcher == nullptr)
    return absl::InvalidArgumentError("InferenceService: batcher is required");
  if (max_request_rows < 1) {
    return absl::InvalidArgumentError(absl::StrCat("InferenceService: max_request_rows is ",
                                                   max_request_rows, ", expected >= 1"));
  }
  if (max_in_flight_per_stream < 1) {
    return absl::InvalidArgumentError(absl::StrCat("InferenceService: max_in_flight_per_stream is ",
                                                   max_in_flight_per_stream, ", expected >= 1"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<InferenceService>> InferenceService::Create(Options options) {
  absl::Status valid = options.Validate();
  if (!valid.ok()) return valid;
  return std::unique_ptr<InferenceService>(new InferenceService(std::move(options)));
}

InferenceService::InferenceService(Options options) : options_(std::move(options)) {
  if (options_.registry != nullptr) metrics_ = std::make_unique<Metrics>(*options_.registry);
}

InferenceService::~InferenceService() = default;

void InferenceService::Drain() {
  std::vector<std::shared_ptr<Stream>> streams;
  {
    absl::MutexLock lock(&mu_);
    draining_ = true;
    streams.assign(streams_.begin(), streams_.end());
  }
  for (const auto& stream : streams) stream->OnDrain();
}

bool InferenceService::AwaitStreamsEnded(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto ended = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return streams_.empty(); };
  return mu_.AwaitWithTimeout(absl::Condition(&ended), timeout);
}

void InferenceService::EndDrainGrace() {
  std::vector<std::shared_ptr<Stream>> streams;
  {
    absl::MutexLock lock(&mu_);
    draining_ = true;
    grace_over_ = true;
    streams.assign(streams_.begin(), streams_.end());
  }
  for (const auto& stream : streams) stream->OnDrainGraceOver();
}

int InferenceService::open_streams() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(streams_.size());
}

void InferenceService::Unregister(Stream* stream) {
  absl::MutexLock lock(&mu_);
  if (streams_.erase(stream) > 0 && metrics_ != nullptr) metrics_->open_streams.Decrement();
}

grpc::ServerBidiReactor<EvaluateRequest, EvaluateResponse>* InferenceService::Evaluate(
    grpc::CallbackServerContext* context) {
  // Tells clients they may send DTYPE_BITS planes (sent with the stream's first answer).
  context->AddInitialMetadata(std::string(kPlanesMetadataKey), std::string(kPlanesBits));
  std::shared_ptr<Stream> stream;
  {
    absl::MutexLock lock(&mu_);
    stream = std::make_shared<Stream>(this, draining_, grace_over_);
    streams_.insert(stream);
    if (metrics_ != nullptr) {
      metrics_->open_streams.Increment();
      metrics_->streams.Increment();
    }
  }
  Stream* raw = stream.get();
  raw->Start(std::move(stream));
  return raw;
}

grpc::ServerUnaryReactor* InferenceService::GetModelInfo(
    grpc::CallbackServerContext* context, const zerofleet::v1::GetModelInfoRequest* request,
    zerofleet::v1::ModelInfo* response) {
  const ModelSpec& spec = options_.batcher->spec();
  response->set_version(options_.batcher->model_version());
  response->set_game(options_.game);
  response->set_input_channels(spec.input_channels);
  response->set_board_height(spec.board_height);
  response->set_board_width(spec.board_width);
  response->set_num_actions(spec.num_actions);
  response->set_max_request_rows(options_.max_request_rows);
  response->set_score(options_.batcher->serving_scores());
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace zf::inference
