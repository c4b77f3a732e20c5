#include "common/malloc_tuning.h"

#include <malloc.h>

#include <cstdlib>
#include <cstring>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zf {
namespace {

using ::testing::HasSubstr;

// A sanitizer brings its own malloc: its mallopt refuses the settings (AddressSanitizer,
// MemorySanitizer) or reaches a glibc heap it does not use (ThreadSanitizer), and glibc's
// mallinfo2 does not see its blocks.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kGlibcMalloc = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer) || __has_feature(hwaddress_sanitizer)
constexpr bool kGlibcMalloc = false;
#else
constexpr bool kGlibcMalloc = true;
#endif
#else
constexpr bool kGlibcMalloc = true;
#endif

// Held in a volatile global so that the compiler cannot drop the malloc/free pair.
void* volatile g_block = nullptr;
constexpr size_t kBlock = 8u << 20;  // 8 MiB: one tensor-sized buffer
constexpr size_t kTopPad = 64u << 20;

struct HeapAround {
  size_t mmapped_blocks_while_held = 0;  // blocks glibc served with mmap, the 8 MiB one held
  size_t heap_before = 0;                // the main heap's size (mallinfo2().arena) before,
  size_t free_top_before = 0;            // (its free top then, mallinfo2().keepcost)
  size_t heap_while_held = 0;            // while the block is held,
  size_t heap_after = 0;                 // and after it is freed
};

HeapAround AllocateAndFree() {
  HeapAround h;
  h.heap_before = mallinfo2().arena;
  h.free_top_before = mallinfo2().keepcost;
  g_block = std::malloc(kBlock);
  std::memset(g_block, 1, kBlock);
  h.mmapped_blocks_while_held = mallinfo2().hblks;
  h.heap_while_held = mallinfo2().arena;
  std::free(g_block);
  g_block = nullptr;
  h.heap_after = mallinfo2().arena;
  return h;
}

// One test, in order: mallopt's settings are process-wide and cannot be taken back, so the
// untuned cases must run before the tuned one.
TEST(MallocTuningTest, SwitchesAndEffect) {
  ASSERT_EQ(setenv("ZF_MALLOC_TUNING", "yes", 1), 0);
  const absl::StatusOr<bool> mistyped = TuneMallocForTensors();
  EXPECT_EQ(mistyped.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(mistyped.status().message(), HasSubstr("ZF_MALLOC_TUNING must be 0"));
  EXPECT_THAT(mistyped.status().message(), HasSubstr("\"yes\""));

  // Off: glibc's defaults, under which a fresh process mmaps an 8 MiB block (the mmap threshold
  // starts at 128 KiB and has not yet risen: nothing this large was freed before).
  ASSERT_EQ(setenv("ZF_MALLOC_TUNING", "0", 1), 0);
  ASSERT_OK_AND_ASSIGN(const bool off, TuneMallocForTensors());
  EXPECT_FALSE(off);
  if (kGlibcMalloc) {
    const size_t mmapped_before = mallinfo2().hblks;
    EXPECT_EQ(AllocateAndFree().mmapped_blocks_while_held, mmapped_before + 1);
  }

  // On (unset means on). Under a sanitizer only that it does not fail.
  ASSERT_EQ(unsetenv("ZF_MALLOC_TUNING"), 0);
  ASSERT_OK_AND_ASSIGN(const bool on, TuneMallocForTensors());
  if (!kGlibcMalloc) return;
  EXPECT_TRUE(on);
  const size_t mmapped_before = mallinfo2().hblks;
  const HeapAround h = AllocateAndFree();
  // M_MMAP_THRESHOLD: the block comes from the main heap, not from mmap.
  EXPECT_EQ(h.mmapped_blocks_while_held, mmapped_before);
  // M_TOP_PAD: the heap grew by the block and 64 MiB more, less the free top it already had.
  EXPECT_GE(h.heap_while_held + h.free_top_before, h.heap_before + kBlock + kTopPad);
  // M_TRIM_THRESHOLD: freeing it hands nothing back (the dynamic trim threshold, raised to 16
  // MiB by the 8 MiB block freed above, would have trimmed the ~72 MiB free top).
  EXPECT_EQ(h.heap_after, h.heap_while_held);
}

}  // namespace
}  // namespace zf
