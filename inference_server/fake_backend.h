// FakeBackend: a deterministic Backend for tests and benchmarks of everything around the network.
//
// Its outputs are a pure function of (version, one position's plane bytes): position i's logits
// and value depend only on its own bytes, never on its place in the batch or on the other
// positions. Tests can therefore recompute, with FakeBackend::Evaluate, exactly the answer each
// request must get back, and see whether an answer was routed to the wrong request or computed
// by the wrong model version:
//
//   h        = FNV-1a 64 of the position's bytes, seeded with the version
//   logit[a] = ((SplitMix64(h + a) >> 40) / 2^24) * 8 - 4             in [-4, 4)
//   w, d, l  = u0+1, u1+1, u2+1 normalized to sum 1, with uk = (SplitMix64(h ^ k) >> 40) / 2^24
//
// Besides computing, it can be told to
//   - take time: each Run sleeps `delay` on the injected Clock (a FakeClock makes the test move
//     time forward);
//   - fail: SetFailure(status) makes every later Run return `status` until SetFailure(OkStatus());
//   - hold: PauseRuns() makes later Runs block until ResumeRuns(), so a test can hold batches in
//     flight and count them with NumBlockedRuns();
// and it records how many Runs it did and their batch sizes.
//
// Thread-safe. The Clock (if any) must outlive the backend. Destroying a FakeBackend while a Run
// is blocked in it is a bug: ResumeRuns first.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "inference_server/backend.h"

namespace zf::inference {

class FakeBackend : public Backend {
 public:
  struct Options {
    ModelSpec spec;
    int max_batch = 1024;
    int64_t version = 1;
    // Time each Run takes, slept on `clock`; zero for none.
    absl::Duration delay = absl::ZeroDuration();
    // Not owned. Default (nullptr): RealClock().
    Clock* clock = nullptr;

    // Returns: InvalidArgument for a bad spec, max_batch < 1, version < 0 or a negative delay.
    absl::Status Validate() const;
  };

  // Returns the backend, or InvalidArgument (see Options::Validate).
  static absl::StatusOr<std::unique_ptr<FakeBackend>> Create(const Options& options);

  // Computes the fake network's answer for one position: `planes` is one position's bytes
  // (any length), `policy_logits` has num_actions entries, `wdl` has 3. Pure.
  static void Evaluate(int64_t version, std::span<const uint8_t> planes,
                       std::span<float> policy_logits, std::span<float> wdl);
  // The fake network's score for one position (for a spec with `score`), in [-2, 2]. Pure.
  static float Score(int64_t version, std::span<const uint8_t> planes);

  const ModelSpec& spec() const override { return options_.spec; }
  int max_batch() const override { return options_.max_batch; }
  int64_t version() const override { return options_.version; }

  // Validates its arguments, waits while paused, sleeps `delay`, then writes Evaluate's answer
  // (and Score's, when asked) for each position. Blocks while paused (until ResumeRuns) and for
  // `delay` on the clock.
  // Returns: InvalidArgument for bad arguments (ValidateRunArguments); the failure set with
  // SetFailure (checked after the pause and delay); OK.
  using Backend::Run;
  absl::Status Run(std::span<const uint8_t> planes, int batch, std::span<float> policy_logits,
                   std::span<float> wdl, std::span<float> scores) override ABSL_LOCKS_EXCLUDED(mu_);

  // Later Runs (and those still blocked) return `status` until it is set back to OK.
  void SetFailure(absl::Status status) ABSL_LOCKS_EXCLUDED(mu_);
  // Later Runs block until ResumeRuns().
  void PauseRuns() ABSL_LOCKS_EXCLUDED(mu_);
  // Releases every blocked Run and stops pausing. Idempotent.
  void ResumeRuns() ABSL_LOCKS_EXCLUDED(mu_);
  // The number of Runs blocked by PauseRuns right now.
  int NumBlockedRuns() const ABSL_LOCKS_EXCLUDED(mu_);
  // The number of Runs that got past validation (including blocked and failed ones).
  int64_t NumRuns() const ABSL_LOCKS_EXCLUDED(mu_);
  // The batch size of every Run that got past validation, in the order they started.
  std::vector<int> BatchSizes() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  explicit FakeBackend(const Options& options) : options_(options) {}

  const Options options_;
  mutable absl::Mutex mu_;
  absl::Status failure_ ABSL_GUARDED_BY(mu_);
  bool paused_ ABSL_GUARDED_BY(mu_) = false;
  int blocked_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<int> batch_sizes_ ABSL_GUARDED_BY(mu_);
};

}  // namespace zf::inference
