// The CUDA translation unit of model/ (ZF_WITH_CUDA builds only). Written against the 2.x API
// (shared/libtorch-compat.md: CUDA code only ever meets 2.x); it also passes a syntax-only
// check against Debian's 1.13 headers (scripts/check-cuda-sources).
#define TORCH_ASSERT_ONLY_METHOD_OPERATORS

#include "model/internal/cuda_runner.h"

#include <ATen/core/Tensor.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <c10/core/InferenceMode.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <torch/version.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/status_macros.h"

namespace zf::model::internal {
namespace {

// One static graph per slot and bucket: the graph reads Slot::device_planes[0:batch] and
// writes `output` ([batch, A + 3], or A + 4 with the score head, float32) in place on every
// replay.
struct BucketGraph {
  int batch = 0;
  std::unique_ptr<at::cuda::CUDAGraph> graph;  // null without graphs
  at::Tensor output;
};

struct Slot {
  explicit Slot(c10::cuda::CUDAStream s) : compute(s) {}
  c10::cuda::CUDAStream compute;
  at::Tensor host_planes;    // pinned uint8 [max_batch, C, H, W]
  at::Tensor host_output;    // pinned float [max_batch, A + 3 (+ 1 with the score head)]
  at::Tensor device_planes;  // uint8 [max_batch, C, H, W]: the graphs' static input
  at::cuda::CUDAEvent uploaded, computed, downloaded;
  std::vector<BucketGraph> buckets;
};

// The network on uint8 planes already on the device: [n, A + 3] float32 (logits, then the
// softmax of the value head), and with aux_heads [n, A + 4] (the score last: every batch
// computes it, so one graph per bucket serves callers that want it and callers that do not),
// computed on the current stream.
at::Tensor ComputeOutput(ResidualNetImpl& net, const at::Tensor& planes, c10::ScalarType dtype) {
  at::Tensor x = planes.to(dtype).contiguous(at::MemoryFormat::ChannelsLast);
  const bool with_score = ShapeOf(net).aux_heads;
  NetworkOutput out = with_score ? ForwardWithScore(net, x) : Forward(net, x);
  at::Tensor logits = out.policy_logits.to(at::kFloat);
  at::Tensor wdl = out.wdl_logits.to(at::kFloat).softmax(/*dim=*/1);
  if (!with_score) return at::cat({logits, wdl}, /*dim=*/1);
  return at::cat({logits, wdl, out.score.to(at::kFloat).unsqueeze(1)}, /*dim=*/1);
}

// Floats per row of ComputeOutput's result.
int64_t OutputWidth(const NetworkShape& shape) {
  return int64_t{shape.num_actions} + 3 + (shape.aux_heads ? 1 : 0);
}

}  // namespace

std::vector<int> BatchBuckets(int max_batch) {
  std::vector<int> buckets;
  for (int b = 1; b < max_batch; b *= 2) buckets.push_back(b);
  buckets.push_back(max_batch);
  return buckets;
}

std::string CudaDeviceName(int index) {
  try {
    if (index < 0 || index >= static_cast<int>(at::cuda::device_count())) return "";
    return at::cuda::getDeviceProperties(static_cast<c10::DeviceIndex>(index))->name;
  } catch (...) {
    return "";
  }
}

// A stream of the runner's own, not one of LibTorch's pool: the pool hands the same 32 streams
// per device to the whole process in turn, so a second runner (a hot swap) or the learner could
// share a stream with this one, and work queued on a stream while this runner captures a graph
// on it would land in the graph.
c10::cuda::CUDAStream OwnStream(c10::DeviceIndex index, std::vector<cudaStream_t>* owned) {
  cudaStream_t raw = nullptr;
  C10_CUDA_CHECK(cudaStreamCreateWithFlags(&raw, cudaStreamNonBlocking));
  owned->push_back(raw);
  return c10::cuda::getStreamFromExternal(raw, index);
}

struct CudaRunner::State {
  std::vector<cudaStream_t> owned_streams;  // destroyed with the state
  c10::DeviceIndex index = 0;
  std::shared_ptr<ResidualNetImpl> net;  // the dtype/channels-last copy
  NetworkShape shape;
  std::optional<c10::cuda::CUDAStream> upload;
  std::optional<c10::cuda::CUDAStream> download;
  std::vector<std::unique_ptr<Slot>> slots;

  absl::Mutex mu;
  std::vector<int> free_slots ABSL_GUARDED_BY(mu);

  ~State() {
    slots.clear();  // graphs and buffers before the streams they were used on
    for (cudaStream_t stream : owned_streams) cudaStreamDestroy(stream);
  }

  const BucketGraph& BucketFor(const Slot& slot, int batch) const {
    for (const BucketGraph& bucket : slot.buckets) {
      if (bucket.batch >= batch) return bucket;
    }
    return slot.buckets.back();  // unreachable: the last bucket is max_batch
  }
};

CudaRunner::CudaRunner(CudaRunnerOptions options, std::unique_ptr<State> state)
    : options_(options), state_(std::move(state)) {}

CudaRunner::~CudaRunner() {
  try {
    for (auto& slot : state_->slots) slot->compute.synchronize();
    state_->upload->synchronize();
    state_->download->synchronize();
  } catch (...) {
    // A device error at shutdown: nothing left to report it to.
  }
}

absl::StatusOr<std::unique_ptr<CudaRunner>> CudaRunner::Create(const ResidualNetImpl& net,
                                                               const CudaRunnerOptions& options) {
  if (!options.device.is_cuda()) {
    return absl::InvalidArgumentError("CudaRunner: the device must be a CUDA device");
  }
  if (options.max_batch < 1 || options.max_batch > 65536) {
    return absl::InvalidArgumentError(
        absl::StrCat("CudaRunner: max_batch must be in 1..65536, got ", options.max_batch));
  }
  if (options.slots < 1 || options.slots > 16) {
    return absl::InvalidArgumentError(
        absl::StrCat("CudaRunner: slots must be in 1..16, got ", options.slots));
  }
  ZF_ASSIGN_OR_RETURN(std::shared_ptr<ResidualNetImpl> copy,
                      CopyForInference(net, options.device, options.dtype,
                                       /*channels_last=*/true));
  const NetworkShape shape = ShapeOf(net);
  const c10::DeviceIndex index = options.device.index() < 0 ? 0 : options.device.index();
  return TorchCall(
      absl::StatusCode::kInternal, "setting up the CUDA runner",
      [&]() -> absl::StatusOr<std::unique_ptr<CudaRunner>> {
        c10::cuda::CUDAGuard device_guard(index);
        c10::InferenceMode inference_mode;
        // CopyForInference converted the weights on this thread's current stream; the runner's
        // streams do not wait for it by themselves.
        c10::cuda::getCurrentCUDAStream(index).synchronize();
        auto state = std::make_unique<State>();
        state->index = index;
        state->upload = OwnStream(index, &state->owned_streams);
        state->download = OwnStream(index, &state->owned_streams);
        state->net = std::move(copy);
        state->shape = shape;
        const int64_t b = options.max_batch;
        const std::vector<int64_t> plane_sizes = {b, shape.input_channels, shape.board_height,
                                                  shape.board_width};
        const int64_t out_width = OutputWidth(shape);
        const auto pinned_u8 = at::TensorOptions().dtype(at::kByte).pinned_memory(true);
        const auto pinned_f32 = at::TensorOptions().dtype(at::kFloat).pinned_memory(true);
        const auto device_u8 = at::TensorOptions().dtype(at::kByte).device(options.device);
        for (int s = 0; s < options.slots; ++s) {
          auto slot = std::make_unique<Slot>(OwnStream(index, &state->owned_streams));
          slot->host_planes = at::empty(plane_sizes, pinned_u8);
          slot->host_output = at::empty({b, out_width}, pinned_f32);
          slot->device_planes = at::empty(plane_sizes, device_u8);
          c10::cuda::CUDAStreamGuard stream_guard(slot->compute);
          slot->device_planes.zero_();
          for (int batch : BatchBuckets(options.max_batch)) {
            BucketGraph bucket;
            bucket.batch = batch;
            const at::Tensor input = slot->device_planes.narrow(0, 0, batch);
            // Warm-up on the capture stream: cuDNN autotuning and cuBLAS workspaces must not
            // happen inside a capture, and the first real request should not pay for them.
            for (int i = 0; i < 3; ++i)
              bucket.output = ComputeOutput(*state->net, input, options.dtype);
            if (options.cuda_graphs) {
              slot->compute.synchronize();
              bucket.graph = std::make_unique<at::cuda::CUDAGraph>();
          // Thread-local capture: the batcher's workers may be serving the previous model on
          // the same GPU while this one is prepared (hot swap); a global capture would make
          // their CUDA calls fail.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
              // {0, 0}: the default (a private pool); MempoolId_t moved between namespaces.
              bucket.graph->capture_begin({0, 0}, cudaStreamCaptureModeThreadLocal);
#else
              bucket.graph->capture_begin();
#endif
              try {
                bucket.output = ComputeOutput(*state->net, input, options.dtype);
              } catch (...) {
                try {
                  bucket.graph->capture_end();
                } catch (...) {
                }
                throw;
              }
              bucket.graph->capture_end();
              bucket.graph->replay();  // the first replay uploads the graph
            }
            slot->buckets.push_back(std::move(bucket));
          }
          slot->compute.synchronize();
          state->slots.push_back(std::move(slot));
        }
        {
          absl::MutexLock lock(&state->mu);
          for (int s = 0; s < options.slots; ++s) state->free_slots.push_back(s);
        }
        return std::unique_ptr<CudaRunner>(new CudaRunner(options, std::move(state)));
      });
}

absl::Status CudaRunner::Run(std::span<const uint8_t> planes, int batch,
                             std::span<float> policy_logits, std::span<float> wdl_probs,
                             std::span<float> scores) {
  State& st = *state_;
  int index = -1;
  {
    absl::MutexLock lock(&st.mu);
    st.mu.Await(absl::Condition(
        +[](std::vector<int>* free) { return !free->empty(); }, &st.free_slots));
    index = st.free_slots.back();
    st.free_slots.pop_back();
  }
  Slot& slot = *st.slots[index];
  const absl::Status status = TorchCall(absl::StatusCode::kInternal, "CUDA forward pass", [&] {
    c10::cuda::CUDAGuard device_guard(st.index);
    c10::InferenceMode inference_mode;
    const int64_t n = batch;
    std::memcpy(slot.host_planes.data_ptr<uint8_t>(), planes.data(), planes.size());
    {
      c10::cuda::CUDAStreamGuard guard(*st.upload);
      slot.device_planes.narrow(0, 0, n).copy_(slot.host_planes.narrow(0, 0, n),
                                               /*non_blocking=*/true);
      slot.uploaded.record(*st.upload);
    }
    const BucketGraph& bucket = st.BucketFor(slot, batch);
    at::Tensor output;
    {
      c10::cuda::CUDAStreamGuard guard(slot.compute);
      slot.uploaded.block(slot.compute);
      if (bucket.graph != nullptr) {
        bucket.graph->replay();
        output = bucket.output;
      } else {
        output =
            ComputeOutput(*st.net, slot.device_planes.narrow(0, 0, bucket.batch), options_.dtype);
        // Used on the download stream below; keeps the allocator from reusing it too early.
        output.record_stream(*st.download);
      }
      slot.computed.record(slot.compute);
    }
    {
      c10::cuda::CUDAStreamGuard guard(*st.download);
      slot.computed.block(*st.download);
      slot.host_output.narrow(0, 0, n).copy_(output.narrow(0, 0, n), /*non_blocking=*/true);
      slot.downloaded.record(*st.download);
    }
    slot.downloaded.synchronize();
    const int64_t actions = st.shape.num_actions;
    const int64_t width = OutputWidth(st.shape);
    const float* out = slot.host_output.data_ptr<float>();
    for (int64_t i = 0; i < n; ++i) {
      std::memcpy(policy_logits.data() + i * actions, out + i * width, actions * sizeof(float));
      std::memcpy(wdl_probs.data() + i * 3, out + i * width + actions, 3 * sizeof(float));
      if (!scores.empty()) scores[i] = out[i * width + actions + 3];
    }
  });
  absl::MutexLock lock(&st.mu);
  st.free_slots.push_back(index);
  return status;
}

}  // namespace zf::model::internal
