#include "inference_server/batcher.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/metrics/buckets.h"
#include "common/status_macros.h"
#include "inference_server/plane_bits.h"

namespace zf::inference {

struct Batcher::Request {
  Request(std::string planes_in, bool bit_packed_in, int rows_in, DoneCallback done_in,
          absl::Time submitted_in, const ModelSpec& spec)
      : planes(std::move(planes_in)),
        bit_packed(bit_packed_in),
        rows(rows_in),
        submitted(submitted_in),
        policy_logits(static_cast<size_t>(rows_in) * spec.num_actions),
        wdl(static_cast<size_t>(rows_in) * ModelSpec::kWdlSize),
        scores(static_cast<size_t>(rows_in)),
        done(std::move(done_in)) {}

  // Immutable after Submit; read by the workers gathering a batch without a lock.
  const std::string planes;  // rows * PlaneSize() bytes, or packed (plane_bits.h)
  const bool bit_packed;
  const int rows;
  const absl::Time submitted;

  // Rows [0, next_row) have been taken into batches. Guarded by Batcher::mu_ (a member of
  // another object, so not annotated).
  int next_row = 0;

  // Outputs: each slice writes its own disjoint rows, without a lock; the final Settle (which
  // synchronizes through `mu`) hands them to the callback.
  std::vector<float> policy_logits;
  std::vector<float> wdl;
  std::vector<float> scores;  // handed out only when every part was computed with a score

  absl::Mutex mu;
  int rows_settled ABSL_GUARDED_BY(mu) = 0;
  absl::Status status ABSL_GUARDED_BY(mu);  // the first failure of any part
  int64_t min_version ABSL_GUARDED_BY(mu) = std::numeric_limits<int64_t>::max();
  bool unscored ABSL_GUARDED_BY(mu) = false;  // a part ran on a model without a score head
  DoneCallback done ABSL_GUARDED_BY(mu);
};

struct Batcher::Slice {
  std::shared_ptr<Request> request;
  int begin = 0;
  int count = 0;
};

struct Batcher::Metrics {
  explicit Metrics(prometheus::Registry& registry, int max_batch)
      : evaluations(prometheus::BuildCounter()
                        .Name("zf_inference_evaluations_total")
                        .Help("Positions evaluated successfully by the inference batcher.")
                        .Register(registry)
                        .Add({})),
        requests(prometheus::BuildCounter()
                     .Name("zf_inference_requests_total")
                     .Help("Inference requests finished, by status code (rejections included).")
                     .Register(registry)),
        batch_rows(prometheus::BuildHistogram()
                       .Name("zf_inference_batch_rows")
                       .Help("Rows (positions) per batch sent to the network.")
                       .Register(registry)
                       .Add({}, BatchBuckets(max_batch))),
        queue_wait(prometheus::BuildHistogram()
                       .Name("zf_inference_queue_wait_seconds")
                       .Help("Time from a request's submission to the dispatch of its first row.")
                       .Register(registry)
                       .Add({}, metrics::ExponentialBuckets(0.00005, 2, 16))),
        compute(prometheus::BuildHistogram()
                    .Name("zf_inference_compute_seconds")
                    .Help("Time of one network forward pass (one batch).")
                    .Register(registry)
                    .Add({}, metrics::ExponentialBuckets(0.0001, 2, 16))),
        request_latency(prometheus::BuildHistogram()
                            .Name("zf_inference_request_seconds")
                            .Help("Time from a request's submission to its completion.")
                            .Register(registry)
                            .Add({}, metrics::ExponentialBuckets(0.0001, 2, 16))),
        queued_rows(prometheus::BuildGauge()
                        .Name("zf_inference_queued_rows")
                        .Help("Rows waiting in the inference batcher's queue.")
                        .Register(registry)
                        .Add({})),
        model_version(prometheus::BuildGauge()
                          .Name("zf_inference_model_version")
                          .Help("Version of the model the inference batcher serves.")
                          .Register(registry)
                          .Add({})),
        // Batch fill (mean zf_inference_batch_rows over this) needs the maximum as a series:
        // the histogram's buckets cannot give it to PromQL.
        max_batch_rows(prometheus::BuildGauge()
                           .Name("zf_inference_max_batch_rows")
                           .Help("Rows per network batch at most (the batcher's max_batch).")
                           .Register(registry)
                           .Add({})),
        max_delay_seconds(prometheus::BuildGauge()
                              .Name("zf_inference_max_delay_seconds")
                              .Help("How long the oldest queued row waits for a fuller batch at "
                                    "most (the batcher's max_delay).")
                              .Register(registry)
                              .Add({})) {}

  // 1, 2, 4, ... up to max_batch (max_batch itself included).
  static prometheus::Histogram::BucketBoundaries BatchBuckets(int max_batch) {
    prometheus::Histogram::BucketBoundaries bounds;
    for (int b = 1; b < max_batch; b *= 2) bounds.push_back(b);
    bounds.push_back(max_batch);
    return bounds;
  }

  prometheus::Counter& evaluations;
  prometheus::Family<prometheus::Counter>& requests;
  // requests' series by status code (0..16), made on first use: Add() builds a label set and
  // takes the family's lock, once per code instead of once per request.
  std::array<std::atomic<prometheus::Counter*>, 17> requests_by_code{};
  prometheus::Histogram& batch_rows;
  prometheus::Histogram& queue_wait;
  prometheus::Histogram& compute;
  prometheus::Histogram& request_latency;
  prometheus::Gauge& queued_rows;
  prometheus::Gauge& model_version;
  prometheus::Gauge& max_batch_rows;
  prometheus::Gauge& max_delay_seconds;
};

absl::Status Batcher::Options::Validate() const {
  if (backend == nullptr) return absl::InvalidArgumentError("backend is required");
  ZF_RETURN_IF_ERROR(backend->spec().Validate());
  if (max_batch < 1 || max_batch > backend->max_batch()) {
    return absl::InvalidArgumentError(absl::StrCat("max_batch must be in [1, ",
                                                   backend->max_batch(),
                                                   "] (the backend's max_batch), got ", max_batch));
  }
  if (max_delay < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_delay must not be negative, got ", absl::FormatDuration(max_delay)));
  }
  if (max_request_rows < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_request_rows must be >= 1, got ", max_request_rows));
  }
  if (max_queued_rows < max_request_rows) {
    return absl::InvalidArgumentError(absl::StrCat("max_queued_rows (", max_queued_rows,
                                                   ") must be >= max_request_rows (",
                                                   max_request_rows, ")"));
  }
  if (num_workers < 1) {
    return absl::InvalidArgumentError(absl::StrCat("num_workers must be >= 1, got ", num_workers));
  }
  if (tuning.has_value()) ZF_RETURN_IF_ERROR(tuning->Validate());
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Batcher>> Batcher::Create(Options options) {
  ZF_RETURN_IF_ERROR(options.Validate());
  std::optional<BatchTuner> tuner;
  if (options.tuning.has_value()) {
    Clock& clock = options.clock != nullptr ? *options.clock : *RealClock();
    ZF_ASSIGN_OR_RETURN(
        std::vector<BatchCostPoint> curve,
        BatchTuner::Profile(*options.backend, options.max_batch, *options.tuning, clock));
    ZF_ASSIGN_OR_RETURN(tuner,
                        BatchTuner::Create(options.max_batch, *options.tuning, std::move(curve)));
  }
  std::unique_ptr<Batcher> batcher(new Batcher(std::move(options), std::move(tuner)));
  absl::MutexLock lock(&batcher->join_mu_);
  for (int i = 0; i < batcher->options_.num_workers; ++i) {
    Batcher* self = batcher.get();
    batcher->workers_.emplace_back(absl::StrCat("zf-batcher-", i), [self] { self->WorkerLoop(); });
  }
  return batcher;
}

Batcher::Batcher(Options options, std::optional<BatchTuner> tuner)
    : options_(std::move(options)),
      spec_(options_.backend->spec()),
      clock_(options_.clock != nullptr ? options_.clock : RealClock()),
      backend_(std::move(options_.backend)),
      max_batch_(options_.max_batch),
      max_delay_(options_.max_delay),
      tuner_(std::move(tuner)) {
  // options_.backend is now null: a swapped-out model must not be kept alive by the options.
  if (options_.registry != nullptr) {
    metrics_ = std::make_unique<Metrics>(*options_.registry, options_.max_batch);
    metrics_->model_version.Set(static_cast<double>(backend_->version()));
  }
  absl::MutexLock lock(&mu_);
  last_retune_ = clock_->Now();
  if (tuner_.has_value()) {
    SetLimits(tuner_->Choose(0));
    chosen_max_batch_ = max_batch_;
  } else {
    SetLimits({options_.max_batch, options_.max_delay});
  }
}

void Batcher::SetLimits(BatchLimits limits) {
  max_batch_ = limits.max_batch;
  max_delay_ = limits.max_delay;
  probing_ = limits.probe;
  if (metrics_ != nullptr) {
    metrics_->max_batch_rows.Set(static_cast<double>(max_batch_));
    metrics_->max_delay_seconds.Set(absl::ToDoubleSeconds(max_delay_));
  }
}

void Batcher::Retune(int rows, absl::Time start, absl::Time end) {
  if (!tuner_.has_value()) return;
  tuner_->Observe(rows, absl::ToDoubleSeconds(end - start));
  const absl::Duration elapsed = end - last_retune_;
  const absl::Duration interval = tuner_->options().retune_interval;
  // A probe round ends once the probed size is measured (and the window is long enough for
  // the arrival rate to mean something).
  if (elapsed < interval && !(tuner_->ProbeMeasured() && elapsed >= interval / 10)) return;
  const double arrival = static_cast<double>(rows_submitted_ - rows_submitted_at_retune_) /
                         absl::ToDoubleSeconds(elapsed);
  last_retune_ = end;
  rows_submitted_at_retune_ = rows_submitted_;
  const int64_t cap = std::max<int64_t>(1, peak_outstanding_ / options_.num_workers);
  peak_outstanding_ = queued_rows_ + rows_in_batches_;
  const BatchLimits limits =
      tuner_->Next(arrival, static_cast<int>(std::min<int64_t>(cap, options_.max_batch)));
  SetLimits(limits);
  // Probes come and go every few rounds; only a change of the chosen size is news.
  if (!limits.probe && limits.max_batch != chosen_max_batch_) {
    ZF_LOG(INFO) << "batcher: max_batch " << chosen_max_batch_ << " -> " << max_batch_
                 << " (max_delay " << absl::FormatDuration(max_delay_) << ", "
                 << static_cast<int64_t>(arrival) << " rows/s arriving, at most " << cap
                 << " rows outstanding per worker; cost by batch size (* served) "
                 << tuner_->CurveString() << ")";
    chosen_max_batch_ = limits.max_batch;
  }
}

std::string Batcher::tuning_curve() const {
  absl::MutexLock lock(&mu_);
  return tuner_.has_value() ? tuner_->CurveString() : "";
}

Batcher::~Batcher() { Close(); }

void Batcher::CountRequest(absl::StatusCode code) {
  if (metrics_ == nullptr) return;
  const auto index = static_cast<size_t>(code);
  if (index >= metrics_->requests_by_code.size()) {
    metrics_->requests.Add({{"code", absl::AsciiStrToLower(absl::StatusCodeToString(code))}})
        .Increment();
    return;
  }
  std::atomic<prometheus::Counter*>& cached = metrics_->requests_by_code[index];
  prometheus::Counter* counter = cached.load(std::memory_order_acquire);
  if (counter == nullptr) {
    // Add() returns the same series to every thread that races here.
    counter =
        &metrics_->requests.Add({{"code", absl::AsciiStrToLower(absl::StatusCodeToString(code))}});
    cached.store(counter, std::memory_order_release);
  }
  counter->Increment();
}

absl::Status Batcher::Submit(const std::vector<uint8_t>& planes, int rows, DoneCallback done) {
  return Submit(std::string(reinterpret_cast<const char*>(planes.data()), planes.size()), rows,
                std::move(done));
}

absl::Status Batcher::Submit(std::string planes, int rows, DoneCallback done) {
  return SubmitPlanes(std::move(planes), /*bit_packed=*/false, rows, std::move(done));
}

absl::Status Batcher::SubmitBits(std::string bits, int rows, DoneCallback done) {
  return SubmitPlanes(std::move(bits), /*bit_packed=*/true, rows, std::move(done));
}

absl::Status Batcher::SubmitPlanes(std::string planes, bool bit_packed, int rows,
                                   DoneCallback done) {
  const int64_t row_bytes = bit_packed ? PackedPlaneBytes(spec_.PlaneSize()) : spec_.PlaneSize();
  absl::Status invalid;
  if (rows < 1) {
    invalid = absl::InvalidArgumentError(absl::StrCat("rows must be >= 1, got ", rows));
  } else if (rows > options_.max_request_rows) {
    invalid = absl::InvalidArgumentError(absl::StrCat("rows: ", rows, " exceeds the limit of ",
                                                      options_.max_request_rows, " per request"));
  } else if (static_cast<int64_t>(planes.size()) != rows * row_bytes) {
    invalid = absl::InvalidArgumentError(absl::StrCat(
        "planes: expected ", rows * row_bytes, " bytes (", rows, " rows of ", row_bytes,
        bit_packed ? " packed" : "", " bytes for ", spec_.DebugString(), "), got ", planes.size()));
  } else if (!done) {
    invalid = absl::InvalidArgumentError("done callback is empty");
  }
  if (!invalid.ok()) {
    CountRequest(invalid.code());
    return invalid;
  }

  // Made before the lock: its output buffers are allocated here, with no lock held.
  auto request = std::make_shared<Request>(std::move(planes), bit_packed, rows, std::move(done),
                                           clock_->Now(), spec_);
  absl::Status rejected;
  {
    absl::MutexLock lock(&mu_);
    if (closed_) {
      rejected = absl::CancelledError("batcher closed");
    } else if (queued_rows_ + rows > options_.max_queued_rows) {
      rejected = absl::ResourceExhaustedError(
          absl::StrCat("inference queue full: ", queued_rows_, " rows queued, limit ",
                       options_.max_queued_rows, ", request has ", rows));
    } else {
      queue_.push_back(std::move(request));
      queued_rows_ += rows;
      rows_submitted_ += rows;
      peak_outstanding_ = std::max(peak_outstanding_, queued_rows_ + rows_in_batches_);
      if (metrics_ != nullptr) metrics_->queued_rows.Set(static_cast<double>(queued_rows_));
    }
  }
  if (!rejected.ok()) CountRequest(rejected.code());
  return rejected;
}

absl::Status Batcher::SwapBackend(std::shared_ptr<Backend> backend) {
  if (backend == nullptr) return absl::InvalidArgumentError("SwapBackend: backend is null");
  if (!backend->spec().SameInputsAndActions(spec_)) {
    return absl::InvalidArgumentError(
        absl::StrCat("SwapBackend: the new model's shapes (", backend->spec().DebugString(),
                     ") differ from the served model's (", spec_.DebugString(), ")"));
  }
  if (backend->max_batch() < options_.max_batch) {
    return absl::InvalidArgumentError(
        absl::StrCat("SwapBackend: the new backend's max_batch (", backend->max_batch(),
                     ") is below the batcher's max_batch (", options_.max_batch, ")"));
  }
  std::shared_ptr<Backend> old;  // released outside the lock
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return absl::CancelledError("batcher closed");
    if (metrics_ != nullptr) metrics_->model_version.Set(static_cast<double>(backend->version()));
    old = std::exchange(backend_, std::move(backend));
  }
  return absl::OkStatus();
}

bool Batcher::TakeBatch(std::vector<Slice>* slices, std::shared_ptr<Backend>* backend,
                        absl::Time* now) {
  absl::MutexLock lock(&mu_);
  while (true) {
    if (closed_) return false;
    if (queue_.empty()) {
      auto has_work = [this]()
                          ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return closed_ || !queue_.empty(); };
      // Cancel path: Close sets closed_.
      clock_->AwaitWithDeadline(&mu_, absl::Condition(&has_work), absl::InfiniteFuture());
      continue;
    }
    const Request* front = queue_.front().get();
    absl::Duration wait = max_delay_;
    // A probe waits for its size to fill: WorthWaiting would judge it by a guess.
    if (tuner_.has_value() && !probing_) {
      wait = std::min(wait, tuner_->WorthWaiting(static_cast<int>(queued_rows_), max_batch_));
    }
    const absl::Time deadline = front->submitted + wait;
    *now = clock_->Now();
    if (queued_rows_ >= max_batch_ || *now >= deadline) break;
    // Wait for the delay to run out, unless the batch fills, the front request is taken by
    // another worker (the deadline then changes), or the batcher closes; when tuning, also when
    // rows arrive (WorthWaiting's wait depends on them; without tuning the deadline does not, so
    // a Submit need not wake the waiting workers).
    const int64_t seen_rows = tuner_.has_value() ? queued_rows_ : -1;
    auto changed = [this, front, seen_rows]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return closed_ || queued_rows_ >= max_batch_ || queue_.empty() ||
             queue_.front().get() != front || (seen_rows >= 0 && queued_rows_ != seen_rows);
    };
    ++workers_awaiting_delay_;
    clock_->AwaitWithDeadline(&mu_, absl::Condition(&changed), deadline);
    --workers_awaiting_delay_;
  }

  int taken = 0;
  while (taken < max_batch_ && !queue_.empty()) {
    const std::shared_ptr<Request>& request = queue_.front();
    const int left = request->rows - request->next_row;
    int room = max_batch_ - taken;
    // A request that fits in one batch of the ceiling (Options::max_batch) is never split, so
    // one model computes all its rows in one pass: under a tuned max_batch below its size it
    // is a batch of its own. Only a request larger than the ceiling is cut, to fill the batch.
    if (left > room && request->rows <= options_.max_batch) {
      if (taken > 0) break;
      room = left;
    }
    const int count = std::min(left, room);
    slices->push_back(Slice{request, request->next_row, count});
    request->next_row += count;
    taken += count;
    if (request->next_row == request->rows) queue_.pop_front();
  }
  queued_rows_ -= taken;
  rows_in_batches_ += taken;
  if (metrics_ != nullptr) metrics_->queued_rows.Set(static_cast<double>(queued_rows_));
  *backend = backend_;
  ++batches_in_flight_;
  return true;
}

void Batcher::WorkerLoop() {
  // Per-worker buffers, reused across batches: gathering batch k+1 into one worker's buffer
  // overlaps the forward pass of batch k in another's.
  std::vector<uint8_t> input;
  std::vector<float> policy_logits;
  std::vector<float> wdl;
  std::vector<float> scores;
  std::vector<Slice> slices;
  const int64_t plane_size = spec_.PlaneSize();
  const int num_actions = spec_.num_actions;
  while (true) {
    slices.clear();
    std::shared_ptr<Backend> backend;
    absl::Time dispatched;
    if (!TakeBatch(&slices, &backend, &dispatched)) return;

    int rows = 0;
    for (const Slice& slice : slices) rows += slice.count;
    input.resize(static_cast<size_t>(rows * plane_size));
    policy_logits.resize(static_cast<size_t>(rows) * num_actions);
    wdl.resize(static_cast<size_t>(rows) * ModelSpec::kWdlSize);
    // A score head may come or go with a new model (SwapBackend): each batch asks its own.
    const bool with_score = backend->spec().score;
    scores.resize(with_score ? static_cast<size_t>(rows) : 0);
    int row = 0;
    const int64_t packed_size = PackedPlaneBytes(plane_size);
    for (const Slice& slice : slices) {
      if (slice.request->bit_packed) {
        UnpackPlaneBits(slice.request->planes.data() + slice.begin * packed_size, slice.count,
                        plane_size, input.data() + row * plane_size);
      } else {
        std::memcpy(input.data() + row * plane_size,
                    slice.request->planes.data() + slice.begin * plane_size,
                    static_cast<size_t>(slice.count * plane_size));
      }
      row += slice.count;
      if (metrics_ != nullptr && slice.begin == 0) {
        metrics_->queue_wait.Observe(absl::ToDoubleSeconds(dispatched - slice.request->submitted));
      }
    }

    const absl::Time start = clock_->Now();
    {
      absl::MutexLock lock(&mu_);
      if (forward_passes_running_++ == 0) busy_since_ = start;
    }
    absl::Status status = backend->Run(input, rows, policy_logits, wdl, scores);
    const absl::Time end = clock_->Now();
    if (!status.ok()) {
      ZF_LOG(WARNING) << "inference batch of " << rows << " rows failed: " << status;
    }
    if (metrics_ != nullptr) {
      metrics_->compute.Observe(absl::ToDoubleSeconds(end - start));
      metrics_->batch_rows.Observe(rows);
      if (status.ok()) metrics_->evaluations.Increment(rows);
    }

    const int64_t version = backend->version();
    backend.reset();  // a swapped-out model is released as soon as its last batch ends
    {
      // Counted before the callbacks run, so a caller who sees its answer sees its batch counted.
      absl::MutexLock lock(&mu_);
      --batches_in_flight_;
      ++batches_completed_;
      if (status.ok()) rows_evaluated_ += rows;
      compute_time_ += end - start;
      rows_in_batches_ -= rows;
      if (--forward_passes_running_ == 0) busy_time_ += end - busy_since_;
      if (status.ok()) Retune(rows, start, end);
    }
    row = 0;
    for (const Slice& slice : slices) {
      if (status.ok()) {
        std::copy_n(
            policy_logits.begin() + static_cast<size_t>(row) * num_actions,
            static_cast<size_t>(slice.count) * num_actions,
            slice.request->policy_logits.begin() + static_cast<size_t>(slice.begin) * num_actions);
        std::copy_n(
            wdl.begin() + static_cast<size_t>(row) * ModelSpec::kWdlSize,
            static_cast<size_t>(slice.count) * ModelSpec::kWdlSize,
            slice.request->wdl.begin() + static_cast<size_t>(slice.begin) * ModelSpec::kWdlSize);
        if (with_score) {
          std::copy_n(scores.begin() + row, slice.count,
                      slice.request->scores.begin() + slice.begin);
        }
      }
      row += slice.count;
      Settle(slice.request, slice.count, status, version, with_score);
    }
    slices.clear();  // release the requests before waiting for the next batch
  }
}

void Batcher::Settle(const std::shared_ptr<Request>& request, int count, const absl::Status& status,
                     int64_t version, bool scored) {
  DoneCallback done;
  absl::StatusOr<Evaluation> result;
  {
    absl::MutexLock lock(&request->mu);
    if (status.ok()) {
      request->min_version = std::min(request->min_version, version);
      if (!scored) request->unscored = true;
    } else if (request->status.ok()) {
      request->status = status;
    }
    request->rows_settled += count;
    if (request->rows_settled < request->rows) return;
    done = std::move(request->done);
    if (request->status.ok()) {
      Evaluation evaluation;
      evaluation.rows = request->rows;
      evaluation.policy_logits = std::move(request->policy_logits);
      evaluation.wdl = std::move(request->wdl);
      if (!request->unscored) evaluation.scores = std::move(request->scores);
      evaluation.model_version = request->min_version;
      result = std::move(evaluation);
    } else {
      result = request->status;
    }
  }
  CountRequest(result.status().code());
  if (metrics_ != nullptr) {
    metrics_->request_latency.Observe(absl::ToDoubleSeconds(clock_->Now() - request->submitted));
  }
  {
    absl::MutexLock lock(&mu_);
    ++requests_completed_;
  }
  done(std::move(result));
}

void Batcher::Close() {
  std::deque<std::shared_ptr<Request>> cancelled;
  std::vector<int> untaken;
  {
    absl::MutexLock lock(&mu_);
    closed_ = true;
    cancelled.swap(queue_);
    for (const auto& request : cancelled) untaken.push_back(request->rows - request->next_row);
    queued_rows_ = 0;
    if (metrics_ != nullptr) metrics_->queued_rows.Set(0);
  }
  const absl::Status status = absl::CancelledError("batcher closed before the request was served");
  for (size_t i = 0; i < cancelled.size(); ++i) {
    Settle(cancelled[i], untaken[i], status, /*version=*/0, /*scored=*/false);
  }
  absl::MutexLock lock(&join_mu_);
  for (Thread& worker : workers_) worker.Join();
}

Batcher::Stats Batcher::stats() const {
  absl::MutexLock lock(&mu_);
  Stats stats;
  stats.queued_rows = queued_rows_;
  stats.queued_requests = static_cast<int64_t>(queue_.size());
  stats.batches_in_flight = batches_in_flight_;
  stats.batches_completed = batches_completed_;
  stats.rows_evaluated = rows_evaluated_;
  stats.requests_completed = requests_completed_;
  stats.workers_awaiting_delay = workers_awaiting_delay_;
  stats.model_version = backend_->version();
  stats.compute_seconds = absl::ToDoubleSeconds(compute_time_);
  stats.busy_seconds = absl::ToDoubleSeconds(busy_time_);
  if (forward_passes_running_ > 0)
    stats.busy_seconds += absl::ToDoubleSeconds(clock_->Now() - busy_since_);
  stats.max_batch = max_batch_;
  stats.max_delay = max_delay_;
  stats.probing = probing_;
  return stats;
}

int64_t Batcher::model_version() const {
  absl::MutexLock lock(&mu_);
  return backend_->version();
}

bool Batcher::serving_scores() const {
  absl::MutexLock lock(&mu_);
  return backend_->spec().score;
}

}  // namespace zf::inference
