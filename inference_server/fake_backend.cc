#include "inference_server/fake_backend.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace zf::inference {
namespace {

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A uniform float in [0, 1) from the top 24 bits.
float Unit(uint64_t x) { return static_cast<float>(x >> 40) / static_cast<float>(1 << 24); }

// FNV-1a of the planes, seeded by the version.
uint64_t PlanesHash(int64_t version, std::span<const uint8_t> planes) {
  uint64_t h = 0xcbf29ce484222325ULL ^ SplitMix64(static_cast<uint64_t>(version));
  for (uint8_t byte : planes) {
    h ^= byte;
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace

absl::Status FakeBackend::Options::Validate() const {
  ZF_RETURN_IF_ERROR(spec.Validate());
  if (max_batch < 1) {
    return absl::InvalidArgumentError(absl::StrCat("max_batch must be >= 1, got ", max_batch));
  }
  if (version < 0) {
    return absl::InvalidArgumentError(absl::StrCat("version must be >= 0, got ", version));
  }
  if (delay < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("delay must not be negative, got ", absl::FormatDuration(delay)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<FakeBackend>> FakeBackend::Create(const Options& options) {
  ZF_RETURN_IF_ERROR(options.Validate());
  return std::unique_ptr<FakeBackend>(new FakeBackend(options));
}

float FakeBackend::Score(int64_t version, std::span<const uint8_t> planes) {
  return Unit(SplitMix64(~PlanesHash(version, planes))) * 4.0f - 2.0f;
}

void FakeBackend::Evaluate(int64_t version, std::span<const uint8_t> planes,
                           std::span<float> policy_logits, std::span<float> wdl) {
  const uint64_t h = PlanesHash(version, planes);
  for (size_t a = 0; a < policy_logits.size(); ++a) {
    policy_logits[a] = Unit(SplitMix64(h + a)) * 8.0f - 4.0f;
  }
  float sum = 0.0f;
  for (size_t k = 0; k < wdl.size(); ++k) {
    wdl[k] = Unit(SplitMix64(h ^ k)) + 1.0f;
    sum += wdl[k];
  }
  for (float& p : wdl) p /= sum;
}

absl::Status FakeBackend::Run(std::span<const uint8_t> planes, int batch,
                              std::span<float> policy_logits, std::span<float> wdl,
                              std::span<float> scores) {
  ZF_RETURN_IF_ERROR(ValidateRunArguments(options_.spec, options_.max_batch, planes, batch,
                                          policy_logits, wdl, scores));
  {
    absl::MutexLock lock(&mu_);
    batch_sizes_.push_back(batch);
    if (paused_) {
      ++blocked_;
      auto resumed = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !paused_; };
      mu_.Await(absl::Condition(&resumed));  // cancel path: ResumeRuns
      --blocked_;
    }
  }
  if (options_.delay > absl::ZeroDuration()) {
    Clock* clock = options_.clock != nullptr ? options_.clock : RealClock();
    clock->SleepUntil(clock->Now() + options_.delay);
  }
  {
    absl::MutexLock lock(&mu_);
    if (!failure_.ok()) return failure_;
  }
  const int64_t plane_size = options_.spec.PlaneSize();
  const int num_actions = options_.spec.num_actions;
  for (int i = 0; i < batch; ++i) {
    Evaluate(options_.version, planes.subspan(i * plane_size, plane_size),
             policy_logits.subspan(static_cast<size_t>(i) * num_actions, num_actions),
             wdl.subspan(static_cast<size_t>(i) * ModelSpec::kWdlSize, ModelSpec::kWdlSize));
    if (!scores.empty())
      scores[i] = Score(options_.version, planes.subspan(i * plane_size, plane_size));
  }
  return absl::OkStatus();
}

void FakeBackend::SetFailure(absl::Status status) {
  absl::MutexLock lock(&mu_);
  failure_ = std::move(status);
}

void FakeBackend::PauseRuns() {
  absl::MutexLock lock(&mu_);
  paused_ = true;
}

void FakeBackend::ResumeRuns() {
  absl::MutexLock lock(&mu_);
  paused_ = false;
}

int FakeBackend::NumBlockedRuns() const {
  absl::MutexLock lock(&mu_);
  return blocked_;
}

int64_t FakeBackend::NumRuns() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(batch_sizes_.size());
}

std::vector<int> FakeBackend::BatchSizes() const {
  absl::MutexLock lock(&mu_);
  return batch_sizes_;
}

}  // namespace zf::inference
