// The inference server's core on the GPU (label `gpu`): a CUDA TorchBackend under the batcher,
// hot-swapped to a new CUDA model while requests flow. The new model's CUDA graphs are
// captured while the old one serves, which only works with thread-local capture. Skips, saying
// why, where this build's LibTorch has no CUDA or no GPU is visible.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "common/status_macros.h"
#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"
#include "inference_server/batcher.h"
#include "inference_server/torch_backend.h"
#include "model/inference_session.h"
#include "model/network.h"

namespace zf::inference {
namespace {

// Connect Four's planes with the default tower (4 blocks x 64 filters).
model::NetworkShape Shape() {
  return {.input_channels = 3, .board_height = 6, .board_width = 7, .num_actions = 7};
}

absl::StatusOr<std::shared_ptr<Backend>> CudaBackend(uint64_t seed, int64_t version) {
  ZF_ASSIGN_OR_RETURN(
      std::shared_ptr<model::InferenceSession> session,
      model::InferenceSession::Create(
          {.shape = Shape(), .seed = seed, .device = "cuda", .max_batch = 64, .concurrency = 2}));
  ZF_ASSIGN_OR_RETURN(
      auto backend,
      TorchBackend::Create({.session = std::move(session), .max_batch = 64, .version = version}));
  return std::shared_ptr<Backend>(std::move(backend));
}

TEST(TorchBackendGpuTest, HotSwapOnTheGpuFailsNoRequestAndVersionsOnlyGoUp) {
  if (!model::CudaAvailable()) {
    GTEST_SKIP() << "no CUDA: this build's LibTorch has no CUDA support or no GPU is visible";
  }
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Backend> first, CudaBackend(/*seed=*/1, /*version=*/1));
  ASSERT_OK_AND_ASSIGN(auto batcher, Batcher::Create({.backend = first,
                                                      .max_batch = 64,
                                                      .max_delay = absl::Microseconds(500),
                                                      .num_workers = 2}));
  constexpr int kClients = 4;
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0}, answered{0}, went_back{0};
  std::vector<std::thread> clients;
  absl::Mutex seen_mu;
  std::vector<int64_t> seen;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      std::mt19937 rng(c);
      int64_t last_version = 0;
      while (!stop.load()) {
        const int rows = 1 + static_cast<int>(rng() % 8);
        std::vector<uint8_t> planes(rows * Shape().PlaneSize());
        for (uint8_t& p : planes) p = static_cast<uint8_t>(rng() & 1);
        absl::Notification done;
        absl::StatusOr<Evaluation> result;
        const absl::Status submitted =
            batcher->Submit(std::move(planes), rows, [&](absl::StatusOr<Evaluation> r) {
              result = std::move(r);
              done.Notify();
            });
        if (!submitted.ok()) {
          ++failures;
          continue;
        }
        done.WaitForNotification();
        if (!result.ok() || result->rows != rows) {
          ++failures;
          continue;
        }
        if (result->model_version < last_version) ++went_back;
        last_version = result->model_version;
        ++answered;
        absl::MutexLock lock(&seen_mu);
        seen.push_back(result->model_version);
      }
    });
  }
  while (answered.load() < 200) std::this_thread::yield();
  // Built (graphs captured, warmed up) while the first model serves.
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Backend> second, CudaBackend(/*seed=*/2, /*version=*/2));
  ASSERT_OK(batcher->SwapBackend(second));
  const int before = answered.load();
  while (answered.load() < before + 200) std::this_thread::yield();
  stop = true;
  for (std::thread& t : clients) t.join();
  batcher->Close();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(went_back.load(), 0);
  absl::MutexLock lock(&seen_mu);
  EXPECT_NE(std::find(seen.begin(), seen.end(), 1), seen.end());
  EXPECT_EQ(seen.back(), 2);
}

}  // namespace
}  // namespace zf::inference
