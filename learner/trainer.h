// Trainer: one optimizer step of the policy/value network per training batch. Torch-free header;
// LibTorch lives in trainer.cc only.
//
// Loss of a batch of B positions (planes x, visit distribution pi, policy mask m, result z in
// [-1, 1] from the player to move's side):
//   policy  L_p = sum_i m_i * H(pi_i, softmax(policy_logits_i)) / max(1, sum_i m_i)
//           (rows without a full search, m_i = 0, are no policy targets)
//   value   L_v = mean_i H(t_i, softmax(wdl_logits_i)),  t_i = (max(z,0), 1-|z|, max(-z,0))
//           (win, draw, loss; a draw z = 0 is the one-hot "draw", z = +-1 one-hot win/loss)
//   with aux_heads (model/network.h) and a batch with ownership targets (SampleBatch.ownership,
//   rows r where aux_mask_r = 1, n_aux = max(1, sum_r aux_mask_r); K = H*W cells):
//   ownership L_o = sum_r aux_mask_r * mean_k BCE((1 + o_rk) / 2, sigmoid(2 u_rk)) / n_aux
//           (o in {-1, 0, 1} the final owner from the mover's side, u the head's output before
//           tanh: (1 + tanh u) / 2 = sigmoid(2u), so this is the cross-entropy of the predicted
//           ownership in (-1, 1) seen as a probability, as KataGo trains it)
//   score   L_s = sum_r aux_mask_r * huber(s_hat_r - s_r / sqrt(K)) / n_aux, huber with delta 1
//           (s the mover's final margin in points)
//   total   L = L_p + value_weight * L_v + ownership_weight * L_o + score_weight * L_s
//           (the last two 0 without aux heads or targets)
// with H(p, q) = -sum_a p_a log q_a. Weight decay: SGD adds it to the gradient (L2, as
// AlphaZero); AdamW decouples it. Gradients are clipped to a global L2 norm (max_grad_norm;
// 0 disables), then the optimizer steps with the learning rate of the schedule at this step.
//
// Checkpoints carry the weights, the optimizer state (version-neutral: keyed by parameter name,
// see shared/libtorch-compat.md) and the step, so Restore() + Step() gives the same result as
// the uninterrupted run.
//
// On CUDA (TrainerOptions::device): bf16 autocast, TF32 and cuDNN autotuning; each batch is
// copied into a pinned staging buffer (two, used in turn) and uploaded as one block on a
// separate stream, which the step waits for on the GPU, not on the host; the gradient norm and
// the clipping are computed on the device; and nothing in Step waits for the GPU except a loss
// report (report_every). So while the GPU runs step k, the host already fetches, stages and
// uploads batch k+1.
//
// Thread-safety: thread-compatible (one training thread). Owns the network and the optimizer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "learner/lr_schedule.h"
#include "model/checkpoint.h"
#include "model/network.h"
#include "proto/zerofleet/v1/replay.pb.h"

namespace zf::learner {

enum class OptimizerKind { kSgd, kAdamW };

// "sgd" / "adamw". Returns: the kind; InvalidArgument otherwise.
absl::StatusOr<OptimizerKind> ParseOptimizerKind(const std::string& name);

// The name ParseOptimizerKind reads back.
constexpr const char* OptimizerKindName(OptimizerKind kind) {
  return kind == OptimizerKind::kAdamW ? "adamw" : "sgd";
}

// The weight decay each kind gets when none is given: SGD's L2 penalty of 1e-4 (AlphaZero's),
// AdamW's decoupled 1e-2 (PyTorch's default).
constexpr double DefaultWeightDecay(OptimizerKind kind) {
  return kind == OptimizerKind::kAdamW ? 1e-2 : 1e-4;
}

struct TrainerOptions {
  // Canonical game name (recorded in checkpoints; a batch naming another game is refused).
  std::string game;
  model::NetworkShape shape;
  uint64_t seed = 1;  // initial weights (model::internal::CreateNetwork)

  OptimizerKind optimizer = OptimizerKind::kSgd;
  LrSchedule lr;
  double momentum = 0.9;          // SGD (Nesterov off), in [0, 1)
  double weight_decay = 1e-4;     // >= 0
  double adam_beta1 = 0.9;        // AdamW
  double adam_beta2 = 0.999;      // AdamW
  double adam_eps = 1e-8;         // AdamW
  double max_grad_norm = 10.0;    // global L2 clip; 0: none
  double value_weight = 1.0;      // >= 0
  double ownership_weight = 1.5;  // >= 0; used with aux_heads (KataGo's 1.5 per board)
  double score_weight = 0.5;      // >= 0; used with aux_heads

  // "cpu", "cuda", "cuda:N" or "auto" (CUDA when available).
  std::string device = "cpu";
  // LibTorch intra-op threads: set process-wide at Create (at::set_num_threads), and checked
  // (and put back if something changed it) at each Step/Evaluate for the calling thread only, so
  // a later process-wide setting (`zf run`'s inference server sets 1) leaves the training
  // thread's alone. 0 leaves LibTorch's setting alone. Set it deliberately: actors and the
  // inference server share the cores in `zf run`.
  int intra_op_threads = 0;

  // Steps between loss reports, 0..10000; 0: 1 on the CPU, 20 on CUDA. Reading a loss on the
  // host waits for the GPU to finish every queued step, so on CUDA the losses (and the gradient
  // norm) accumulate on the device and are read once per report: Step() then returns their
  // means over the steps since the previous report (StepResult::reported). Between reports the
  // host only queues work, and the GPU never idles while the host prepares the next batch.
  int report_every = 0;
  // On CUDA: forward and loss under bf16 autocast (fp32 master weights and optimizer state),
  // with TF32 matmuls and cuDNN autotuning. false: plain fp32 (TF32 still on).
  bool bf16_autocast = true;
  // On the CPU: the convolutions' weights, their gradients and optimizer state, and each batch's
  // input in channels-last (NHWC) memory, which oneDNN convolves without reordering
  // (docs/benchmarks.md "Learner training throughput"). Checkpoints are written in the standard
  // layout either way. Ignored on CUDA.
  bool cpu_channels_last = true;

  // Returns: OK; InvalidArgument naming the bad field.
  absl::Status Validate() const;
};

struct StepResult {
  int64_t step = 0;  // steps taken after this one (1 after the first)
  int batch_size = 0;
  // True when the losses and grad_norm below are new: the means over the steps since the
  // previous report (TrainerOptions::report_every). Otherwise they repeat the previous report.
  bool reported = true;
  double policy_loss = 0;
  double value_loss = 0;
  double ownership_loss = 0;  // 0 without aux heads or targets
  double score_loss = 0;      // 0 without aux heads or targets
  double total_loss = 0;
  double learning_rate = 0;  // used by this step
  double grad_norm = 0;      // before clipping
};

class Trainer {
 public:
  // A fresh network from options.seed on options.device and a fresh optimizer at step 0.
  // Returns: the trainer; InvalidArgument (options, or a device this build lacks);
  // ResourceExhausted; Internal.
  static absl::StatusOr<std::unique_ptr<Trainer>> Create(const TrainerOptions& options);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // One optimizer step on `batch`. Blocks for the forward and backward pass.
  // Returns: the losses; InvalidArgument (a batch of another game or shape, sizes that do not
  // match, non-finite or negative targets: the network is not touched); ResourceExhausted (out
  // of memory); Internal (other LibTorch errors).
  absl::StatusOr<StepResult> Step(const zerofleet::v1::SampleBatch& batch);

  // The losses of `batch` under the current weights, without a step (batch norm in training
  // mode, as in Step; no statistics are updated). Returns: as Step.
  absl::StatusOr<StepResult> Evaluate(const zerofleet::v1::SampleBatch& batch);

  // Steps taken so far (restored by Restore).
  int64_t step() const { return step_; }
  // A factor on the schedule's rate from the next Step on (e.g. a decay over wall-clock time,
  // LearnerOptions::lr_scale); 1 at creation, not saved in checkpoints. Precondition: finite
  // and > 0 (Learner checks it).
  void set_lr_scale(double scale) { lr_scale_ = scale; }
  double lr_scale() const { return lr_scale_; }
  const TrainerOptions& options() const { return options_; }

  // The current weights, optimizer state and step as a checkpoint of model `version` (not
  // written anywhere). Returns: the checkpoint; Internal if LibTorch fails.
  absl::StatusOr<model::Checkpoint> MakeCheckpoint(int64_t version) const;

  // Replaces weights, optimizer state (when the checkpoint has one of this optimizer kind;
  // otherwise the optimizer starts fresh) and step with the checkpoint's.
  // Returns: OK; InvalidArgument (another game or shape); DataLoss (unreadable weights or
  // optimizer state). On error the trainer is unchanged.
  absl::Status Restore(const model::Checkpoint& checkpoint);

 private:
  struct Impl;
  Trainer(TrainerOptions options, std::unique_ptr<Impl> impl);
  absl::StatusOr<StepResult> Run(const zerofleet::v1::SampleBatch& batch, bool update);

  const TrainerOptions options_;
  std::unique_ptr<Impl> impl_;
  int64_t step_ = 0;
  double lr_scale_ = 1.0;
};

// Checks `batch` against `shape` (and `game` when both are non-empty) without LibTorch; the
// ownership targets, when present, whatever the shape's aux_heads.
// Returns: OK; InvalidArgument saying what is wrong.
absl::Status ValidateBatch(const zerofleet::v1::SampleBatch& batch,
                           const model::NetworkShape& shape, const std::string& game);

}  // namespace zf::learner
