// INTERNAL: the CUDA forward path of InferenceSession. Built only where LibTorch has CUDA
// (ZF_WITH_CUDA=1); the CPU path stays in inference_session.cc.
//
// What one Run does, for a batch of n positions (n <= max_batch):
//   1. takes a free slot (one per concurrent caller; a caller waits while all are busy);
//   2. copies the caller's uint8 planes into the slot's pinned host buffer;
//   3. on the runner's upload stream: an asynchronous host-to-device copy of the n rows into
//      the slot's static device input (uint8: 4x fewer bytes than float), then an event;
//   4. on the slot's compute stream, after that event: the network on the first b rows, where
//      b is the smallest bucket >= n (buckets: powers of two up to max_batch, and max_batch),
//      as a CUDA graph replay when graphs are on (one graph per slot and bucket, captured at
//      Create), else as ordinary kernel launches. uint8 -> dtype conversion, the network in
//      dtype (bf16 by default: tensor cores) with channels-last activations, float32 logits and
//      a float32 softmax of the value head (and, for a network with aux_heads, the score
//      head's output), written as one [b, A + 3] (or [b, A + 4]) float tensor;
//   5. on the runner's download stream, after the compute event: a device-to-host copy of the
//      n rows into the slot's pinned output buffer, then an event the caller waits on;
//   6. copies the outputs into the caller's buffers and frees the slot.
// With two or more callers (the batcher's workers) the copies of one batch overlap the compute
// of another: uploads, computes and downloads of different slots run on different streams.
// Rows b - n .. b of a padded bucket hold stale planes; rows are independent (batch norm is in
// eval mode), so they change no answer, and their outputs are never copied.
//
// Create also warms up: every slot runs every bucket (cuDNN autotuning picks its algorithms
// there, and allocator pools fill) before the session is handed out, so the first real request
// is as fast as the rest and the server reports SERVING only after it.
//
// Thread-safety: thread-safe; Run may be called from any number of threads.
#pragma once

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "model/internal/network_ops.h"
#include "model/network.h"

namespace zf::model::internal {

struct CudaRunnerOptions {
  c10::Device device{c10::kCUDA, 0};
  c10::ScalarType dtype = c10::kBFloat16;  // kBFloat16, kHalf or kFloat
  int max_batch = 1024;                    // 1..65536
  int slots = 2;                           // concurrent Runs, 1..16
  bool cuda_graphs = true;
};

// The batch buckets Run pads to: 1, 2, 4, ... below max_batch, and max_batch.
std::vector<int> BatchBuckets(int max_batch);

// The driver's name of CUDA device `index`, or "" if there is none.
std::string CudaDeviceName(int index);

class CudaRunner {
 public:
  // Copies `net` to the device in options.dtype (channels-last), sets up the slots, captures
  // the graphs and warms up. Blocks for all of that (seconds for large max_batch).
  // Returns: the runner; InvalidArgument for bad options; ResourceExhausted if the device is
  // out of memory; Internal for other CUDA or LibTorch errors (a failed capture included).
  static absl::StatusOr<std::unique_ptr<CudaRunner>> Create(const ResidualNetImpl& net,
                                                            const CudaRunnerOptions& options);
  ~CudaRunner();  // waits for work in flight
  CudaRunner(const CudaRunner&) = delete;
  CudaRunner& operator=(const CudaRunner&) = delete;

  // As InferenceSession::Run (the caller has checked the sizes; 1 <= batch <= max_batch;
  // `scores` empty or, for a network with aux_heads, `batch` floats).
  // Blocks while every slot is busy, then for one upload, forward pass and download.
  // Returns: OK; ResourceExhausted (out of memory); Internal (another CUDA or LibTorch error).
  absl::Status Run(std::span<const uint8_t> planes, int batch, std::span<float> policy_logits,
                   std::span<float> wdl_probs, std::span<float> scores);

  const CudaRunnerOptions& options() const { return options_; }

 private:
  struct State;  // streams, slots, graphs: cuda_runner.cc
  CudaRunner(CudaRunnerOptions options, std::unique_ptr<State> state);

  const CudaRunnerOptions options_;
  std::unique_ptr<State> state_;
};

}  // namespace zf::model::internal
