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
  // mallopt returns 1 on success and anything else where it refuses (a sanitizer's malloc): the
  // process then goes on with that allocator's own behaviour.
  if (mallopt(M_MMAP_THRESHOLD, kMmapThreshold) != 1 ||
      mallopt(M_TRIM_THRESHOLD, kTrimThreshold) != 1 || mallopt(M_TOP_PAD, kTopPad) != 1) {
    return false;
  }
  return true;
}

}  // namespace zf
