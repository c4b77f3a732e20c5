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

// Held in a volatile global so that the compiler cannot drop the malloc/free pair.
void* volatile g_block = nullptr;
constexpr size_t kBlock = 8u << 20;  // 8 MiB: one tensor-sized buffer

// Blocks glibc has served with mmap and still holds, while an 8 MiB block is allocated.
size_t MmappedBlocksWhileHolding() {
  g_block = std::malloc(kBlock);
  std::memset(g_block, 1, kBlock);
  const size_t mmapped = mallinfo2().hblks;
  std::free(g_block);
  g_block = nullptr;
  return mmapped;
}

// One test, in order: mallopt's settings are process-wide and cannot be taken back, so the
// untuned cases must run before the tuned one.
TEST(MallocTuningTest, SwitchesAndEffect) {
  ASSERT_EQ(setenv("ZF_MALLOC_TUNING", "yes", 1), 0);
  const absl::StatusOr<bool> mistyped = TuneMallocForTensors();
  EXPECT_EQ(mistyped.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(mistyped.status().message(), HasSubstr("ZF_MALLOC_TUNING must be 0"));
  EXPECT_THAT(mistyped.status().message(), HasSubstr("\"yes\""));

  // Off: glibc's defaults, under which a fresh process mmaps an 8 MiB block (the default
  // threshold is 128 KiB and has not yet risen: nothing this large was freed before).
  ASSERT_EQ(setenv("ZF_MALLOC_TUNING", "0", 1), 0);
  ASSERT_OK_AND_ASSIGN(const bool off, TuneMallocForTensors());
  EXPECT_FALSE(off);
  const size_t before = mallinfo2().hblks;
  EXPECT_EQ(MmappedBlocksWhileHolding(), before + 1);

  // On (unset means on): the same block comes from the heap, and once freed it stays with the
  // process rather than being handed back to the kernel.
  ASSERT_EQ(unsetenv("ZF_MALLOC_TUNING"), 0);
  ASSERT_OK_AND_ASSIGN(const bool on, TuneMallocForTensors());
  EXPECT_TRUE(on);
  EXPECT_EQ(MmappedBlocksWhileHolding(), mallinfo2().hblks);
  EXPECT_GE(mallinfo2().fordblks, kBlock);  // free bytes the heap kept
}

}  // namespace
}  // namespace zf
