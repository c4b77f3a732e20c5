// INTERNAL: the LibTorch calls whose spelling differs between Debian's 1.13 (CPU, what CI
// builds) and the 2.x of a CUDA machine. shared/libtorch-compat.md lists the differences; this
// header hides them behind one spelling. Light: no ATen operator headers.
//
// Thread-safety: autocast state is thread-local in LibTorch, so CudaAutocast affects only the
// calling thread. SetCudaMath changes process-wide flags; call it before work starts.
#pragma once

#include <c10/core/ScalarType.h>

namespace zf::model::internal {

// TF32 for cuBLAS matmuls and cuDNN convolutions, and cuDNN autotuning (benchmark mode: the
// first call of each shape tries the algorithms and keeps the fastest), process-wide. Only the
// legacy setters are used: 2.9+ refuses a mix of the legacy and the new precision API. Harmless
// where LibTorch has no CUDA.
void SetCudaMath(bool allow_tf32, bool cudnn_benchmark);

// While alive, CUDA operations of the calling thread run under autocast to `dtype`
// (at::kBFloat16 or at::kHalf), as Python's `with torch.autocast("cuda", dtype=...)`:
// matmuls and convolutions in `dtype`, reductions and losses in float32. Nests; the
// destructor restores the previous state and clears the cast cache at the outermost level.
// The C++ frontend has no gradient scaler, so train with bf16 (no loss scaling needed).
class CudaAutocast {
 public:
  explicit CudaAutocast(c10::ScalarType dtype);
  ~CudaAutocast();
  CudaAutocast(const CudaAutocast&) = delete;
  CudaAutocast& operator=(const CudaAutocast&) = delete;

  // Whether CUDA autocast is on in the calling thread, and its dtype (for tests).
  static bool Enabled();
  static c10::ScalarType Dtype();

 private:
  bool previous_enabled_;
  c10::ScalarType previous_dtype_;
};

}  // namespace zf::model::internal
