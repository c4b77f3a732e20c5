// The CUDA path of InferenceSession (label `gpu`). Skips, saying why, where this build's
// LibTorch has no CUDA or no GPU is visible.
#include <stdlib.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/inference_session.h"
#include "model/network.h"

namespace zf::model {
namespace {

using ::testing::FloatNear;
using ::testing::Pointwise;
namespace fs = std::filesystem;

NetworkShape Shape() {
  return {.input_channels = 3,
          .board_height = 6,
          .board_width = 7,
          .num_actions = 7,
          .blocks = 4,
          .filters = 64,
          .value_hidden = 64};
}

std::vector<uint8_t> RandomPlanes(int batch, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> planes(batch * Shape().PlaneSize());
  for (uint8_t& p : planes) p = static_cast<uint8_t>(rng() & 1);
  return planes;
}

class InferenceSessionGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!CudaAvailable()) {
      GTEST_SKIP() << "no CUDA: this build's LibTorch has no CUDA support or no GPU is "
                      "visible; the CUDA path of InferenceSession is not tested here";
    }
  }
};

TEST_F(InferenceSessionGpuTest, CudaAgreesWithCpuAndCheckpointsMoveBetweenThem) {
  ASSERT_OK_AND_ASSIGN(auto gpu,
                       InferenceSession::Create(
                           {.shape = Shape(), .seed = 5, .game = "connect4", .device = "cuda"}));
  EXPECT_EQ(gpu->device(), "cuda:0");
  ASSERT_OK_AND_ASSIGN(auto cpu, InferenceSession::CreateFresh(Shape(), 5));
  const int batch = 64;
  const auto planes = RandomPlanes(batch, 3);
  std::vector<float> gpu_logits(batch * 7), gpu_wdl(batch * 3);
  std::vector<float> cpu_logits(batch * 7), cpu_wdl(batch * 3);
  ASSERT_OK(gpu->Run(planes, batch, gpu_logits, gpu_wdl));
  ASSERT_OK(cpu->Run(planes, batch, cpu_logits, cpu_wdl));
  // cuDNN may use TF32 for convolutions: agreement to about 1e-2, not bit for bit.
  EXPECT_THAT(gpu_logits, Pointwise(FloatNear(2e-2f), cpu_logits));
  EXPECT_THAT(gpu_wdl, Pointwise(FloatNear(1e-2f), cpu_wdl));

  // A checkpoint written from the GPU loads on the CPU with the same weights.
  std::string dir = (fs::path(::testing::TempDir()) / "zf_gpu_test.XXXXXX").string();
  ASSERT_NE(::mkdtemp(dir.data()), nullptr);
  const std::string path = (fs::path(dir) / "model.zfckpt").string();
  ASSERT_OK(gpu->Save(path, {.version = 1}));
  ASSERT_OK_AND_ASSIGN(auto from_gpu, InferenceSession::Create({.checkpoint_path = path}));
  std::vector<float> logits(batch * 7), wdl(batch * 3);
  ASSERT_OK(from_gpu->Run(planes, batch, logits, wdl));
  EXPECT_EQ(logits, cpu_logits);
  EXPECT_EQ(wdl, cpu_wdl);
  // And back onto the GPU.
  ASSERT_OK_AND_ASSIGN(auto back,
                       InferenceSession::Create({.checkpoint_path = path, .device = "cuda:0"}));
  ASSERT_OK(back->Run(planes, batch, logits, wdl));
  EXPECT_THAT(logits, Pointwise(FloatNear(1e-5f), gpu_logits));
  fs::remove_all(dir);
}

TEST_F(InferenceSessionGpuTest, ConcurrentRunsOnOneDevice) {
  ASSERT_OK_AND_ASSIGN(auto session,
                       InferenceSession::Create({.shape = Shape(), .seed = 2, .device = "auto"}));
  EXPECT_EQ(session->device(), "cuda:0");
  constexpr int kThreads = 4;
  const auto planes = RandomPlanes(32, 4);
  std::vector<float> expected_logits(32 * 7), expected_wdl(32 * 3);
  ASSERT_OK(session->Run(planes, 32, expected_logits, expected_wdl));
  std::vector<int> failures(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<float> logits(32 * 7), wdl(32 * 3);
      for (int r = 0; r < 50; ++r) {
        if (!session->Run(planes, 32, logits, wdl).ok()) ++failures[t];
        for (size_t i = 0; i < logits.size(); ++i) {
          if (std::abs(logits[i] - expected_logits[i]) > 1e-5f) {
            ++failures[t];
            break;
          }
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_THAT(failures, ::testing::Each(0));
}

TEST_F(InferenceSessionGpuTest, BadDeviceIndexIsInvalidArgument) {
  EXPECT_THAT(InferenceSession::Create({.shape = Shape(), .device = "cuda:63"}),
              ::zf::testing::StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace zf::model
