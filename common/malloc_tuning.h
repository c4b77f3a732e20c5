// glibc malloc settings for processes that run tensors: every training step and every inference
// batch allocates and frees buffers of a few megabytes (activations, gradients, batched inputs).
// With glibc's defaults each such free hands memory back to the kernel (the heap's top is trimmed
// past 128 KiB; blocks past the dynamic mmap threshold are unmapped) and the next step faults the
// same pages in again, zeroed: on the 2-core VM, Go's training step spent about a tenth of its
// time in the kernel's page-fault path (docs/benchmarks.md, "glibc malloc tuned for tensor work").
//
// TuneMallocForTensors keeps that memory in the process instead:
//   M_MMAP_THRESHOLD 32 MiB  blocks below it come from the heap, not from a fresh mmap each time;
//   M_TRIM_THRESHOLD 256 MiB free memory at the heap's top is handed back only past this;
//   M_TOP_PAD 64 MiB         each heap grows by this much more than asked, in fewer system calls.
// The price is resident memory: up to a few hundred MiB that glibc would have handed back stay
// with the process (measured in the same section). Setting ZF_MALLOC_TUNING=0 in the environment
// keeps glibc's defaults (for comparison, or where memory is tighter than time).
//
// Thread-safety: call once at the start of main, before any thread starts (mallopt changes
// process-wide settings).
#pragma once

#include "absl/status/statusor.h"

namespace zf {

// Applies the settings above and returns true, or returns false where ZF_MALLOC_TUNING is "0".
// InvalidArgument for any other value of ZF_MALLOC_TUNING than "0" or "1" (nothing applied: a
// mistyped switch is an error, not silently ignored); Internal where glibc refuses a setting.
absl::StatusOr<bool> TuneMallocForTensors();

}  // namespace zf
