// The one translation unit that includes ATen/autocast_mode.h (heavy in 2.x: it pulls in the
// native function declarations).
#include "model/internal/torch_compat.h"

#include <ATen/Context.h>
#include <ATen/autocast_mode.h>
#include <torch/version.h>

// PyTorch 2.4 (PR #124359) made the autocast API device-typed; the old names remain only as
// deprecated wrappers that warn at run time.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
#define ZF_DEVICE_TYPED_AUTOCAST 1
#else
#define ZF_DEVICE_TYPED_AUTOCAST 0
#endif

namespace zf::model::internal {

void SetCudaMath(bool allow_tf32, bool cudnn_benchmark) {
  at::Context& context = at::globalContext();
  context.setAllowTF32CuBLAS(allow_tf32);
  context.setAllowTF32CuDNN(allow_tf32);
  context.setBenchmarkCuDNN(cudnn_benchmark);
}

bool CudaAutocast::Enabled() {
#if ZF_DEVICE_TYPED_AUTOCAST
  return at::autocast::is_autocast_enabled(at::kCUDA);
#else
  return at::autocast::is_enabled();
#endif
}

c10::ScalarType CudaAutocast::Dtype() {
#if ZF_DEVICE_TYPED_AUTOCAST
  return at::autocast::get_autocast_dtype(at::kCUDA);
#else
  return at::autocast::get_autocast_gpu_dtype();
#endif
}

CudaAutocast::CudaAutocast(c10::ScalarType dtype)
    : previous_enabled_(Enabled()), previous_dtype_(Dtype()) {
#if ZF_DEVICE_TYPED_AUTOCAST
  at::autocast::set_autocast_dtype(at::kCUDA, dtype);
  at::autocast::set_autocast_enabled(at::kCUDA, true);
#else
  at::autocast::set_autocast_gpu_dtype(dtype);
  at::autocast::set_enabled(true);
#endif
  at::autocast::increment_nesting();
}

CudaAutocast::~CudaAutocast() {
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
#if ZF_DEVICE_TYPED_AUTOCAST
  at::autocast::set_autocast_enabled(at::kCUDA, previous_enabled_);
  at::autocast::set_autocast_dtype(at::kCUDA, previous_dtype_);
#else
  at::autocast::set_enabled(previous_enabled_);
  at::autocast::set_autocast_gpu_dtype(previous_dtype_);
#endif
}

}  // namespace zf::model::internal
