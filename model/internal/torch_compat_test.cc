// The compatibility layer on this build's LibTorch (1.13 on Debian, 2.x on a CUDA machine).
#include "model/internal/torch_compat.h"

#include <ATen/Context.h>

#include "gtest/gtest.h"

namespace zf::model::internal {
namespace {

TEST(CudaAutocastTest, TurnsAutocastOnForItsScopeAndRestoresTheDtype) {
  ASSERT_FALSE(CudaAutocast::Enabled());
  const c10::ScalarType before = CudaAutocast::Dtype();
  {
    CudaAutocast outer(at::kBFloat16);
    EXPECT_TRUE(CudaAutocast::Enabled());
    EXPECT_EQ(CudaAutocast::Dtype(), at::kBFloat16);
    {
      CudaAutocast inner(at::kHalf);
      EXPECT_EQ(CudaAutocast::Dtype(), at::kHalf);
    }
    EXPECT_TRUE(CudaAutocast::Enabled());
    EXPECT_EQ(CudaAutocast::Dtype(), at::kBFloat16);
  }
  EXPECT_FALSE(CudaAutocast::Enabled());
  EXPECT_EQ(CudaAutocast::Dtype(), before);
}

TEST(SetCudaMathTest, SetsTheLegacyFlags) {
  SetCudaMath(/*allow_tf32=*/true, /*cudnn_benchmark=*/true);
  EXPECT_TRUE(at::globalContext().allowTF32CuBLAS());
  EXPECT_TRUE(at::globalContext().allowTF32CuDNN());
  EXPECT_TRUE(at::globalContext().benchmarkCuDNN());
  SetCudaMath(/*allow_tf32=*/false, /*cudnn_benchmark=*/false);
  EXPECT_FALSE(at::globalContext().allowTF32CuBLAS());
  EXPECT_FALSE(at::globalContext().allowTF32CuDNN());
  EXPECT_FALSE(at::globalContext().benchmarkCuDNN());
}

}  // namespace
}  // namespace zf::model::internal
