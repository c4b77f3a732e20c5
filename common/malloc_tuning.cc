#include "common/malloc_tuning.h"

#include <malloc.h>

#include <cstdlib>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace zf {
namespace {

constexpr int kMiB = 1 << 20;
constexpr int kMmapThreshold = 32 * kMiB;  // glibc's largest allowed value on 64-bit hosts
constexpr int kTrimThreshold = 256 * kMiB;
constexpr int kTopPad = 64 * kMiB;

}  // namespace

absl::StatusOr<bool> TuneMallocForTensors() {
  if (const char* env = std::getenv("ZF_MALLOC_TUNING"); env != nullptr) {
    const std::string value(env);
    if (value == "0") return false;
    if (value != "1") {
      return absl::InvalidArgumentError(
          absl::StrCat("ZF_MALLOC_TUNING must be 0 (glibc's malloc defaults) or 1 (tuned), not \"",
                       value, "\""));
    }
  }
  // mallopt returns 1 on success and 0 for a value it refuses.
  if (mallopt(M_MMAP_THRESHOLD, kMmapThreshold) != 1) {
    return absl::InternalError("glibc refused M_MMAP_THRESHOLD of 32 MiB");
  }
  if (mallopt(M_TRIM_THRESHOLD, kTrimThreshold) != 1) {
    return absl::InternalError("glibc refused M_TRIM_THRESHOLD of 256 MiB");
  }
  if (mallopt(M_TOP_PAD, kTopPad) != 1) {
    return absl::InternalError("glibc refused M_TOP_PAD of 64 MiB");
  }
  return true;
}

}  // namespace zf
