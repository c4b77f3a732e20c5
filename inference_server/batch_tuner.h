// BatchTuner: chooses the dynamic batcher's max_batch and max_delay from measured forward-pass
// costs, so nobody has to (on this 2-core CPU a batch above ~16 rows costs more per row; on a
// GPU 256+ is cheapest).
//
// The cost curve holds t(b), the seconds of one forward pass of b rows, at b = 1, 2, 4, ... up
// to the ceiling (the batcher's Options::max_batch; the ceiling itself when it is not a power of
// two). Profile measures it on the backend before serving (one discarded run per size, then the
// fastest of `profile_repeats`: load from elsewhere only adds time), stopping after the first
// size slower than 4x the latency target (a margin, so that one slow size does not end the
// curve: a profile cut short at 1 row once pinned a restarted server to batches of 1).
//
// Choose, given the curve and the rows/s arriving:
//   feasible   = the sizes with t(b) <= latency_target (size 1 always counts);
//   best       = min over feasible of t(b) / b, the cost per row;
//   max_batch  = the smallest feasible b with t(b) / b <= best * (1 + tolerance): larger
//                batches lower the cost per row by less than `tolerance` and only add latency;
//   max_delay  = min(max_batch / arrival rate, t(max_batch)), at most latency_target -
//                t(max_batch), 0 for max_batch 1: wait no longer than it takes the arrivals
//                to fill the batch, nor longer than one forward pass (with two workers the
//                other one computes meanwhile, so waiting longer only idles the device).
// Callers that keep a bounded number of rows in flight (actors: games x leaves per request) can
// never fill a batch larger than those rows, and a batch of all of them leaves the other workers
// idle while every caller waits for it: the batcher passes the peak rows outstanding (queued or
// computing) over the last interval divided by its workers as `cap`, so the workers pipeline.
//
// How long a free worker waits (WorthWaiting): with q rows queued and a batch of b to fill, waiting
// w to dispatch b rows pays off only while (w + t(b)) / b < t(q) / q, the cost per row of
// dispatching now, so the batcher waits at most w(q) = b t(q) / q - t(b) (t interpolated between
// the curve's points), and never longer than max_delay. On a CPU whose cost per row barely falls
// (t(8) / 8 = 0.23 ms, t(16) / 16 = 0.22 ms) 8 queued rows go at once; on a GPU's flat curve a
// few rows wait for many.
//
// While serving, Observe feeds each batch's (rows, seconds). The batcher only ever sees batches
// up to its current max_batch, so the other sizes cannot be re-measured; the tuner assumes the
// device as a whole got slower or faster (a CPU shared with actors, a GPU shared with a learner)
// and keeps one factor, the ratio of observed to profiled time (an exponential moving average
// with weight `smoothing` over batches whose size is within 25% above a profiled size, scaled to
// it; one batch counts as at most 4x or 1/4 of the current factor, so a forward pass that spanned
// a stop of the process does not throw the curve). The curve is the profile times that factor: the
// cost per row keeps its shape, the latency cap and the delay follow the device. A device whose
// curve changes shape needs a new profile (a restart of the server).
//
// Thread-compatible: the batcher calls it under its own lock.
#pragma once

#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "inference_server/backend.h"

namespace zf::inference {

struct BatchTunerOptions {
  // A forward pass may take at most this long (the cap on max_batch, and on max_delay plus it).
  absl::Duration latency_target = absl::Milliseconds(20);
  // A larger batch must lower the cost per row by more than this fraction to be chosen.
  double tolerance = 0.05;
  // Measured runs per batch size at warm-up (after one discarded run). 1..100.
  int profile_repeats = 5;
  // Weight of a new observation in the curve's moving average, in (0, 1].
  double smoothing = 0.2;
  // How often the batcher re-chooses while serving.
  absl::Duration retune_interval = absl::Seconds(2);

  // Returns: InvalidArgument naming the bad field.
  absl::Status Validate() const;
};

struct BatchCostPoint {
  int rows = 0;
  double seconds = 0;  // one forward pass of `rows` rows
};

struct BatchLimits {
  int max_batch = 1;
  absl::Duration max_delay = absl::ZeroDuration();
};

class BatchTuner {
 public:
  // Measures the cost curve of `backend` up to `ceiling` rows (zero planes), timed on `clock`.
  // Blocks for the forward passes: profile_repeats + 1 runs per size, sizes up to the first
  // one slower than 4 x latency_target.
  // Returns: the curve (at least the point of size 1); InvalidArgument for a ceiling below 1 or
  // above backend.max_batch(); the backend's error.
  static absl::StatusOr<std::vector<BatchCostPoint>> Profile(Backend& backend, int ceiling,
                                                             const BatchTunerOptions& options,
                                                             Clock& clock);

  // `curve`: increasing sizes from 1, each at most `ceiling` (as Profile returns).
  // Returns: InvalidArgument for a bad option, an empty curve or one not starting at 1 row.
  static absl::StatusOr<BatchTuner> Create(int ceiling, const BatchTunerOptions& options,
                                           std::vector<BatchCostPoint> curve);

  // One batch of `rows` rows took `seconds` to compute.
  void Observe(int rows, double seconds);

  // The limits for `arrival_rows_per_second` (0: unknown or idle; max_delay is then
  // t(max_batch)), with max_batch at most `cap` (sizes above it are not considered).
  BatchLimits Choose(double arrival_rows_per_second,
                     int cap = std::numeric_limits<int>::max()) const;

  // The longest wait that lowers the cost per row, with `queued` rows queued and batches of
  // `max_batch` (see above); zero once queued >= max_batch.
  absl::Duration WorthWaiting(int queued, int max_batch) const;

  // The profile times the observed slowdown factor.
  std::vector<BatchCostPoint> curve() const;
  // Observed over profiled forward-pass time (1 until observations come).
  double slowdown() const { return slowdown_; }
  const BatchTunerOptions& options() const { return options_; }

  // "1:0.21ms 2:0.25ms 4:0.33ms ...", for logs.
  std::string CurveString() const;

 private:
  BatchTuner(BatchTunerOptions options, std::vector<BatchCostPoint> curve)
      : options_(options), profile_(std::move(curve)) {}

  BatchTunerOptions options_;
  std::vector<BatchCostPoint> profile_;
  double slowdown_ = 1.0;

  // t(rows) of curve(): linear between points, proportional beyond the last.
  double Seconds(int rows) const;
};

}  // namespace zf::inference
