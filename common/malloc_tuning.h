// glibc malloc settings for processes that run tensors: every training step and every inference
// batch allocates and frees buffers of a few megabytes (activations, gradients, batched inputs).
// With glibc's defaults much of that memory goes back to the kernel when freed: the heap's top is
// trimmed once its free space passes the trim threshold (128 KiB at first, raised to twice the
// largest mmapped block freed so far), and blocks past the mmap threshold are unmapped. The next
// step faults the same pages in again, zeroed: on the 2-core VM, Go's training step spent about a
// tenth of its time in the kernel's page-fault path (docs/benchmarks.md, "glibc malloc tuned for
// tensor work").
//
// TuneMallocForTensors keeps that memory in the process instead:
//   M_MMAP_THRESHOLD 32 MiB  blocks below it come from a heap, not from a fresh mmap each time
//                            (32 MiB is the largest value glibc accepts on 64-bit hosts);
//   M_TRIM_THRESHOLD 256 MiB the main heap's free top is handed back only past this (per-thread
//                            heaps, at most 64 MiB each, are then never trimmed);
//   M_TOP_PAD 64 MiB         the main heap grows by this much more than asked, and per-thread
//                            heaps start this large, in fewer system calls.
// Setting any of them also turns glibc's dynamic thresholds off. The price is resident memory:
// it stays near its peak instead of falling back after a burst (15 MiB, 3%, more peak resident
// memory in 3-minute `zf run` probes of Go; long runs not measured). ZF_MALLOC_TUNING=0 in the
// environment keeps glibc's defaults (for comparison, or where memory is tighter than time).
//
// zf tunes the commands that run a network (cli/command.cc); the others keep glibc's defaults.
//
// Thread-safety: call once at the start of main, before the program starts its own threads
// (mallopt changes process-wide settings).
#pragma once

#include "absl/status/statusor.h"

namespace zf {

// Applies the settings above and returns true. Returns false, applying nothing, where
// ZF_MALLOC_TUNING is "0", and false where mallopt refuses them (the sanitizers' mallocs do:
// AddressSanitizer's returns 0, MemorySanitizer's -1). An allocator preloaded in glibc's place
// (jemalloc, tcmalloc) takes or ignores them and true is returned either way. InvalidArgument
// for any other value of ZF_MALLOC_TUNING than "0" or "1": a mistyped switch is an error, not
// ignored.
absl::StatusOr<bool> TuneMallocForTensors();

}  // namespace zf
