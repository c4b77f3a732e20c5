// The CUDA path of InferenceSession (label `gpu`): bf16 and TF32 against the float32 CPU path,
// the score head's column, every batch bucket with and without CUDA graphs, splitting above
// max_batch, checkpoints between devices, concurrent callers. Skips, saying why, where this build's
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

// bf16 keeps 8 bits of mantissa: a 4x64 tower of random weights agrees with the float32 CPU
// path to about 1e-2 relative; TF32 (fp32 precision on CUDA) to about 1e-3.
constexpr float kBf16LogitTolerance = 0.1f;
constexpr float kBf16WdlTolerance = 0.03f;
constexpr float kTf32LogitTolerance = 2e-2f;
constexpr float kTf32WdlTolerance = 1e-2f;

struct Outputs {
  std::vector<float> logits, wdl;
};

Outputs RunOn(const InferenceSession& session, const std::vector<uint8_t>& planes, int batch) {
  Outputs out{std::vector<float>(batch * 7), std::vector<float>(batch * 3)};
  EXPECT_OK(session.Run(planes, batch, out.logits, out.wdl));
  return out;
}

TEST_F(InferenceSessionGpuTest, Bf16AndTf32AgreeWithTheCpuWithinTheirTolerance) {
  ASSERT_OK_AND_ASSIGN(auto cpu, InferenceSession::CreateFresh(Shape(), 5));
  ASSERT_OK_AND_ASSIGN(
      auto bf16,
      InferenceSession::Create({.shape = Shape(), .seed = 5, .device = "cuda", .max_batch = 64}));
  EXPECT_EQ(bf16->device(), "cuda:0");
  EXPECT_EQ(bf16->precision(), "bf16");
  ASSERT_OK_AND_ASSIGN(
      auto tf32,
      InferenceSession::Create(
          {.shape = Shape(), .seed = 5, .device = "cuda", .precision = "fp32", .max_batch = 64}));
  const int batch = 64;
  const auto planes = RandomPlanes(batch, 3);
  const Outputs want = RunOn(*cpu, planes, batch);
  const Outputs got_bf16 = RunOn(*bf16, planes, batch);
  EXPECT_THAT(got_bf16.logits, Pointwise(FloatNear(kBf16LogitTolerance), want.logits));
  EXPECT_THAT(got_bf16.wdl, Pointwise(FloatNear(kBf16WdlTolerance), want.wdl));
  const Outputs got_tf32 = RunOn(*tf32, planes, batch);
  EXPECT_THAT(got_tf32.logits, Pointwise(FloatNear(kTf32LogitTolerance), want.logits));
  EXPECT_THAT(got_tf32.wdl, Pointwise(FloatNear(kTf32WdlTolerance), want.wdl));
}

// Global pooling blocks (means and maxima over the board, channels-last, bf16, in CUDA graphs)
// agree with the CPU's float32 as the plain network does.
TEST_F(InferenceSessionGpuTest, GlobalPoolingAgreesWithTheCpu) {
  NetworkShape pooled = Shape();
  pooled.global_pooling = true;
  ASSERT_OK_AND_ASSIGN(auto cpu, InferenceSession::CreateFresh(pooled, 5));
  ASSERT_OK_AND_ASSIGN(
      auto bf16,
      InferenceSession::Create(
          {.shape = pooled, .seed = 5, .device = "cuda", .cuda_graphs = true, .max_batch = 64}));
  const int batch = 64;
  const auto planes = RandomPlanes(batch, 4);
  const Outputs want = RunOn(*cpu, planes, batch);
  const Outputs got = RunOn(*bf16, planes, batch);
  EXPECT_THAT(got.logits, Pointwise(FloatNear(kBf16LogitTolerance), want.logits));
  EXPECT_THAT(got.wdl, Pointwise(FloatNear(kBf16WdlTolerance), want.wdl));
}

// A network with the score head: the CUDA graphs compute the score column for every batch;
// callers that ask get it (agreeing with the CPU), callers that do not get the same policy and
// value.
TEST_F(InferenceSessionGpuTest, ScoresAgreeWithTheCpu) {
  NetworkShape aux = Shape();
  aux.aux_heads = true;
  ASSERT_OK_AND_ASSIGN(auto cpu, InferenceSession::CreateFresh(aux, 5));
  ASSERT_OK_AND_ASSIGN(
      auto bf16,
      InferenceSession::Create(
          {.shape = aux, .seed = 5, .device = "cuda", .cuda_graphs = true, .max_batch = 64}));
  const int batch = 37;  // padded to the 64 bucket
  const auto planes = RandomPlanes(batch, 6);
  Outputs want{std::vector<float>(batch * 7), std::vector<float>(batch * 3)};
  Outputs got = want;
  std::vector<float> want_scores(batch), got_scores(batch);
  ASSERT_OK(cpu->Run(planes, batch, want.logits, want.wdl, want_scores));
  ASSERT_OK(bf16->Run(planes, batch, got.logits, got.wdl, got_scores));
  EXPECT_THAT(got.logits, Pointwise(FloatNear(kBf16LogitTolerance), want.logits));
  EXPECT_THAT(got.wdl, Pointwise(FloatNear(kBf16WdlTolerance), want.wdl));
  EXPECT_THAT(got_scores, Pointwise(FloatNear(kBf16LogitTolerance), want_scores));
  const Outputs without = RunOn(*bf16, planes, batch);
  EXPECT_EQ(without.logits, got.logits);
  EXPECT_EQ(without.wdl, got.wdl);
}

TEST_F(InferenceSessionGpuTest, EveryBatchSizeIsAnsweredRowForRowWithAndWithoutGraphs) {
  // max_batch 24: buckets 1, 2, 4, 8, 16, 24; batches above 24 are split.
  ASSERT_OK_AND_ASSIGN(auto cpu, InferenceSession::CreateFresh(Shape(), 9));
  for (const bool graphs : {true, false}) {
    SCOPED_TRACE(graphs ? "CUDA graphs" : "no graphs");
    ASSERT_OK_AND_ASSIGN(auto gpu, InferenceSession::Create({.shape = Shape(),
                                                             .seed = 9,
                                                             .device = "cuda",
                                                             .cuda_graphs = graphs,
                                                             .max_batch = 24}));
    for (int batch : {1, 2, 3, 5, 8, 13, 16, 17, 24, 25, 50}) {
      SCOPED_TRACE(batch);
      const auto planes = RandomPlanes(batch, 100 + batch);
      const Outputs want = RunOn(*cpu, planes, batch);
      const Outputs got = RunOn(*gpu, planes, batch);
      EXPECT_THAT(got.logits, Pointwise(FloatNear(kBf16LogitTolerance), want.logits));
      EXPECT_THAT(got.wdl, Pointwise(FloatNear(kBf16WdlTolerance), want.wdl));
    }
  }
}

TEST_F(InferenceSessionGpuTest, CheckpointsMoveBetweenTheGpuAndTheCpu) {
  ASSERT_OK_AND_ASSIGN(auto gpu,
                       InferenceSession::Create(
                           {.shape = Shape(), .seed = 5, .game = "connect4", .device = "cuda"}));
  ASSERT_OK_AND_ASSIGN(auto cpu, InferenceSession::CreateFresh(Shape(), 5));
  const int batch = 16;
  const auto planes = RandomPlanes(batch, 3);
  const Outputs want = RunOn(*cpu, planes, batch);

  // The session keeps float32 master weights, so a checkpoint written from the GPU session
  // holds exactly the CPU session's weights.
  std::string dir = (fs::path(::testing::TempDir()) / "zf_gpu_test.XXXXXX").string();
  ASSERT_NE(::mkdtemp(dir.data()), nullptr);
  const std::string path = (fs::path(dir) / "model.zfckpt").string();
  ASSERT_OK(gpu->Save(path, {.version = 1}));
  ASSERT_OK_AND_ASSIGN(auto from_gpu, InferenceSession::Create({.checkpoint_path = path}));
  const Outputs loaded = RunOn(*from_gpu, planes, batch);
  EXPECT_EQ(loaded.logits, want.logits);
  EXPECT_EQ(loaded.wdl, want.wdl);
  // And back onto the GPU, where it answers as the first GPU session did.
  ASSERT_OK_AND_ASSIGN(auto back,
                       InferenceSession::Create({.checkpoint_path = path, .device = "cuda:0"}));
  EXPECT_THAT(RunOn(*back, planes, batch).logits,
              Pointwise(FloatNear(1e-3f), RunOn(*gpu, planes, batch).logits));
  fs::remove_all(dir);
}

TEST_F(InferenceSessionGpuTest, ConcurrentRunsOnOneDevice) {
  // Four callers share two slots (concurrency 2): two wait while two run.
  ASSERT_OK_AND_ASSIGN(
      auto session,
      InferenceSession::Create(
          {.shape = Shape(), .seed = 2, .device = "auto", .max_batch = 32, .concurrency = 2}));
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
          if (std::abs(logits[i] - expected_logits[i]) > 1e-2f) {
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
