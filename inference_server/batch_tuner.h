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
// While serving, Observe feeds each batch's (rows, seconds), and the served costs are what the
// tuner trusts. Each size on the grid (1, 2, 4, ... and the ceiling) keeps its own estimate: the
// moving average (weight `smoothing`) of the batches served at it (a batch counts for the
// largest grid size at or below it if it is within 25% above it, scaled to that size; one batch
// moves an estimate at most 4x, so a forward pass that spanned a stop of the process does not
// throw it). A size not served yet is estimated as its profile times the slowdown factor (the
// moving average of served over profiled time, across sizes: a CPU shared with actors, a GPU
// shared with a learner), and a size the profile did not reach as the size below scaled in
// proportion (no cheaper per row, so never chosen unmeasured).
//
// Probing. The batcher only ever sees batches up to its current max_batch, so a profile whose
// shape is wrong would hold forever: a server restarted on a loaded 2-core host once measured
// 1 row at 50 ms and 2 rows at 148 ms (served, 1 row took 0.35 ms) and stayed at batches of 1.
// So Next, called every retune_interval, returns Choose's limits unless the next grid size up
// could be filled (at most `cap`) and has been neither served nor probed for `probe_every`
// rounds (whatever its
// estimate: one above the latency target may be as wrong as that profile, or a served average
// from a busier time): then it returns that size for the round (BatchLimits::probe),
// and the round may end as soon as `kProbeBatches` batches of it were observed
// (ProbeMeasured); during it the batcher's workers wait up to max_delay for a batch of that size
// instead of asking WorthWaiting (whose estimate of an unmeasured size would never let it fill).
// A wrong profile is corrected in one short round per doubling; a right one costs a short round
// at the next size every `probe_every` rounds. The slowdown factor follows only batches of
// profiled sizes, so once the sizes served are ones the profile never reached it stops moving;
// it matters only for profiled sizes not served yet.
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
  // Weight of a new observation in the moving averages, in (0, 1].
  double smoothing = 0.2;
  // How often the batcher re-chooses while serving.
  absl::Duration retune_interval = absl::Seconds(2);
  // Rounds (calls of Next) after which a size served before is probed again. 1..1000000.
  int probe_every = 10;

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
  // Next chose max_batch to measure it (see "Probing" above), not for its cost.
  bool probe = false;
};

class BatchTuner {
 public:
  // Batches of a probed size that measure it well enough to end a probe round early.
  static constexpr int kProbeBatches = 8;

  // Measures the cost curve of `backend` up to `ceiling` rows (zero planes), timed on `clock`.
  // Blocks for the forward passes: profile_repeats + 1 runs per size, sizes up to the first
  // one slower than 4 x latency_target.
  // Returns: the curve (at least the point of size 1); InvalidArgument for a ceiling below 1 or
  // above backend.max_batch(); the backend's error.
  static absl::StatusOr<std::vector<BatchCostPoint>> Profile(Backend& backend, int ceiling,
                                                             const BatchTunerOptions& options,
                                                             Clock& clock);

  // `curve`: increasing sizes from 1, each at most `ceiling` (as Profile returns); the grid is
  // its sizes, the powers of two below `ceiling`, and `ceiling`.
  // Returns: InvalidArgument for a bad option, an empty curve or one not starting at 1 row.
  static absl::StatusOr<BatchTuner> Create(int ceiling, const BatchTunerOptions& options,
                                           std::vector<BatchCostPoint> curve);

  // One batch of `rows` rows took `seconds` to compute.
  void Observe(int rows, double seconds);

  // The limits for `arrival_rows_per_second` (0: unknown or idle; max_delay is then
  // t(max_batch)), with max_batch at most `cap` (sizes above it are not considered), from the
  // current estimates. Never a probe.
  BatchLimits Choose(double arrival_rows_per_second,
                     int cap = std::numeric_limits<int>::max()) const;

  // One retune round: Choose's limits, or a probe of the next size up (see "Probing").
  BatchLimits Next(double arrival_rows_per_second, int cap = std::numeric_limits<int>::max());

  // True once the round's probe (if any) has been served kProbeBatches times.
  bool ProbeMeasured() const { return probe_index_ >= 0 && probe_batches_ >= kProbeBatches; }

  // The longest wait that lowers the cost per row, with `queued` rows queued and batches of
  // `max_batch` (see above); zero once queued >= max_batch.
  absl::Duration WorthWaiting(int queued, int max_batch) const;

  // The estimate of every grid size that was profiled or served, in increasing size.
  std::vector<BatchCostPoint> curve() const;
  // Served over profiled forward-pass time (1 until observations come).
  double slowdown() const { return slowdown_; }
  const BatchTunerOptions& options() const { return options_; }

  // "1:0.21ms 2:0.25ms 4:0.33ms ...", for logs; a served size is marked "*" ("4*:0.3ms").
  std::string CurveString() const;

 private:
  struct Size {
    int rows = 0;
    double profiled = 0;  // seconds; 0: the profile did not reach this size
    double served = 0;    // moving average of served batches; 0: none served yet
    int64_t served_batches = 0;
    int64_t served_round = -1;  // the round of the latest batch served at this size
    int64_t probed_round = -1;  // the latest round that probed this size
  };

  BatchTuner(BatchTunerOptions options, std::vector<Size> grid);

  // Recomputes estimate_ from the grid, the slowdown factor and the extrapolation rule.
  void UpdateEstimates();
  // Choose's limits for grid index `i`.
  BatchLimits LimitsFor(size_t i, double arrival_rows_per_second) const;
  // t(rows) of the estimates: linear between grid sizes, proportional beyond the last.
  double Seconds(int rows) const;

  BatchTunerOptions options_;
  std::vector<Size> grid_;
  std::vector<double> estimate_;  // seconds, one per grid size
  double slowdown_ = 1.0;
  int64_t round_ = 0;
  int probe_index_ = -1;  // the grid index probed this round, -1 for none
  int probe_batches_ = 0;
};

}  // namespace zf::inference
