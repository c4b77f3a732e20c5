// InferenceSession: one network, loaded once, evaluated on raw buffers. Torch-free header.
//
// It is the in-process forward pass behind every network evaluation: LocalEvaluator (search
// in the same process: `zf play`, `zf match`, the batch-1 baseline of the benchmarks) and, later,
// the inference server's torch backend. Callers hand it uint8 planes and get policy logits and
// win/draw/loss probabilities (and, from a network with the score head, the expected score)
// back; LibTorch stays inside model/.
//
//   ZF_ASSIGN_OR_RETURN(auto session, InferenceSession::Create({.checkpoint_path = path}));
//   ZF_RETURN_IF_ERROR(session->Run(planes, batch, logits, wdl));
//
// Per call, Run copies the planes to the session's device as uint8, converts them to floats
// there, runs the network in eval mode under c10::InferenceMode, applies a softmax to the value
// head, and copies the results into the caller's buffers. On CUDA it does so through
// model/internal/cuda_runner.h: bf16 by default, pinned staging buffers, uploads and downloads
// on their own streams overlapping other callers' compute, CUDA graphs per batch bucket, TF32
// and cuDNN autotuning on, all of it warmed up in Create.
//
// Threads. LibTorch's CPU kernels use an intra-op thread pool (OpenMP here) that is
// process-wide, and OpenBLAS (which Debian's LibTorch calls through libblas.so.3) has its
// own. Left alone both start one thread per core in every process, so N actor processes on
// N cores would run N^2 threads. Options::intra_op_threads therefore sets both, process-wide,
// when a session is created (default 1: self-play actors parallelize over games, not inside
// one forward pass; a CPU inference server should pass its core count). The last setting wins
// for the whole process; 0 leaves the current setting alone. OPENBLAS_NUM_THREADS and
// OMP_NUM_THREADS in the environment only set the starting values.
//
// Thread-safety: thread-safe. The network is immutable after Create, so any number of threads
// may call Run at once: on the CPU each call allocates its own tensors and concurrent calls
// share the intra-op pool; on CUDA up to Options::concurrency calls proceed at once, each in a
// slot of its own (buffers, stream, graphs), and further callers wait for a free slot. Save
// only reads the float32 weights (kept on the CPU in both cases).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "model/checkpoint.h"
#include "model/network.h"

namespace zf::model {

class InferenceSession {
 public:
  struct Options {
    // Where the weights come from: a checkpoint file when non-empty, else a fresh network
    // initialized from `seed` (for tests, benchmarks and the first model of a run).
    std::string checkpoint_path;
    // Required for a fresh network. With a checkpoint, optional: if set, the checkpoint's
    // shape must equal it (InvalidArgument otherwise).
    std::optional<NetworkShape> shape;
    // Initialization seed of a fresh network: the same seed gives the same weights on every
    // device and in every process.
    uint64_t seed = 0;
    // A fresh network's game name (recorded by Save; may be empty). With a checkpoint, if
    // non-empty, the checkpoint's game must equal it (InvalidArgument otherwise).
    std::string game;
    // "cpu", "cuda" (= "cuda:0"), "cuda:N", or "auto" (cuda:0 when CudaAvailable(), else cpu).
    std::string device = "cpu";
    // Intra-op threads of LibTorch and OpenBLAS, set process-wide when the session is
    // created (see the top of this file). 1..1024, or 0 to leave the current setting.
    int intra_op_threads = 1;

    // The arithmetic of the forward pass: "auto" (bf16 on CUDA, fp32 on the CPU), "fp32",
    // "bf16" or "fp16". The last two only on CUDA (InvalidArgument on the CPU, where they would
    // be slower than fp32).
    std::string precision = "auto";
    // CUDA only (ignored on the CPU), see model/internal/cuda_runner.h:
    //   cuda_graphs  capture one CUDA graph per batch bucket at Create and replay it;
    //   max_batch    the largest batch one forward pass takes (1..65536); the pinned buffers,
    //                buckets and graphs are sized for it; Run splits larger batches;
    //   concurrency  Runs that proceed at once (1..16), each with its own pinned buffers,
    //                compute stream and graphs; further callers wait for a free one. Give it
    //                the inference server's batcher worker count.
    bool cuda_graphs = true;
    int max_batch = 1024;
    int concurrency = 2;

    // Returns: InvalidArgument naming the bad field (device syntax, thread count, a missing
    // or invalid shape for a fresh network, a game name with control characters, precision,
    // max_batch, concurrency).
    absl::Status Validate() const;
  };

  // Loads or creates the network and moves it to the device. Blocks on file I/O and device
  // initialization.
  // Returns the session, or:
  //   InvalidArgument: bad options; the checkpoint's shape or game differs from the options;
  //     a CUDA device was asked for but this build or machine has none (CudaAvailable());
  //   NotFound / DataLoss / ...: from ReadCheckpoint (missing or corrupt file); DataLoss also
  //     when the weights do not load into the manifest's network shape;
  //   ResourceExhausted: out of memory; Internal: another LibTorch error.
  static absl::StatusOr<std::unique_ptr<InferenceSession>> Create(const Options& options);

  // A fresh network on the CPU from `seed`, with the default thread setting: for tests and
  // benchmarks. Returns: as Create.
  static absl::StatusOr<std::unique_ptr<InferenceSession>> CreateFresh(const NetworkShape& shape,
                                                                       uint64_t seed);

  ~InferenceSession();
  InferenceSession(const InferenceSession&) = delete;
  InferenceSession& operator=(const InferenceSession&) = delete;

  // Evaluates `batch` positions. `planes` holds batch * shape().PlaneSize() bytes, position
  // after position, each [C, H, W] as games::Game::Encode writes it. Writes
  //   policy_logits[i * A + a]: the raw logit of action a in position i (A = num_actions;
  //     all actions, legal or not; LocalEvaluator masks and normalizes),
  //   wdl_probs[i * 3 + k]: P(win), P(draw), P(loss) for the player to move, summing to 1.
  // The spans must have exactly these sizes. batch == 0 does nothing. Blocks until the
  // results are in the caller's buffers: one forward pass (on CUDA one per max_batch rows,
  // after waiting for a free slot).
  // Returns: OK; InvalidArgument if batch < 0 or a span's size is wrong (the message gives
  // the expected and the actual size); ResourceExhausted if the device is out of memory;
  // Internal for another LibTorch error (the outputs are then unspecified).
  absl::Status Run(std::span<const uint8_t> planes, int batch, std::span<float> policy_logits,
                   std::span<float> wdl_probs) const {
    return Run(planes, batch, policy_logits, wdl_probs, {});
  }
  // The same, and, when `scores` is not empty, scores[i]: the score head's expected final
  // margin of the player to move in position i, in points / sqrt(H * W) (model/network.h).
  // `scores` is empty or has exactly `batch` floats; non-empty needs a network with aux_heads.
  // The score costs one linear layer on the value head's hidden layer (and, on CUDA, one more
  // float per row to download).
  // Returns: as above; InvalidArgument also for scores of the wrong size or from a network
  // without aux_heads.
  absl::Status Run(std::span<const uint8_t> planes, int batch, std::span<float> policy_logits,
                   std::span<float> wdl_probs, std::span<float> scores) const;

  const NetworkShape& shape() const { return shape_; }
  // The checkpoint's model version, or 0 for a fresh network.
  int64_t version() const { return version_; }
  // The checkpoint's game, or Options::game for a fresh network.
  const std::string& game() const { return game_; }
  // Where the network runs: "cpu" or "cuda:N".
  const std::string& device() const { return device_; }
  // The forward pass's arithmetic: "fp32", "bf16" or "fp16".
  const std::string& precision() const { return precision_; }

  struct SaveOptions {
    // Default: game().
    std::optional<std::string> game;
    // Default: version().
    std::optional<int64_t> version;
    int64_t training_step = 0;
  };
  // Writes the network as a checkpoint (WriteCheckpoint: atomic), for tests and tools; the
  // learner writes its own, with the optimizer state. Blocks on disk I/O.
  // Returns the manifest written, or: InvalidArgument if the game is empty or a field is out of
  // range; the errors of WriteCheckpoint; Internal if serialization fails.
  // The ownership head's prediction for `batch` positions: ownership[i * H * W + cell] in
  // (-1, 1), +1 the player to move owns the cell at the end (row-major, row 0 the top). For
  // analysis (GTP kata-analyze), one position at a time: it runs on the CPU copy of the weights
  // whatever the device. Needs a network with aux_heads.
  // Returns: OK; InvalidArgument for a network without the head or spans of the wrong size;
  // Internal for a LibTorch error.
  absl::Status RunOwnership(std::span<const uint8_t> planes, int batch,
                            std::span<float> ownership) const;

  absl::StatusOr<CheckpointManifest> Save(const std::string& path,
                                          const SaveOptions& options) const;

 private:
  struct Impl;  // the LibTorch module and device; defined in inference_session.cc
  InferenceSession(std::unique_ptr<Impl> impl, NetworkShape shape, int64_t version,
                   std::string game, std::string device, std::string precision);

  std::unique_ptr<Impl> impl_;
  NetworkShape shape_;
  int64_t version_;
  std::string game_;
  std::string device_;
  std::string precision_;
};

// Sets the intra-op threads of LibTorch (at::set_num_threads) and, when the process has
// OpenBLAS loaded, of OpenBLAS (openblas_set_num_threads): process-wide, last call wins.
// InferenceSession::Create calls it; call it directly to change the setting later.
// Returns: InvalidArgument unless 1 <= threads <= 1024; Internal if LibTorch refuses.
absl::Status SetIntraOpThreads(int threads);

// LibTorch's current intra-op thread count as seen by the calling thread (0 if LibTorch
// fails to say).
int IntraOpThreads();

// True when this build's LibTorch has CUDA and a CUDA device is visible.
bool CudaAvailable();

// The name of CUDA device `index` as the driver reports it (e.g. "NVIDIA H100 80GB HBM3"), or
// "" where there is no such device or this build has no CUDA.
std::string CudaDeviceName(int index);

}  // namespace zf::model
