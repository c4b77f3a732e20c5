// TorchBackend under the batcher: answers equal a direct InferenceSession::Run on the same rows.
#include "inference_server/torch_backend.h"

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "inference_server/batcher.h"
#include "model/inference_session.h"
#include "model/network.h"

namespace zf::inference {
namespace {

using ::testing::FloatNear;
using ::testing::HasSubstr;
using ::testing::Pointwise;
using ::zf::testing::StatusIs;

model::NetworkShape TinyShape() {
  return {.input_channels = 3, .board_height = 6, .board_width = 7, .num_actions = 7,
          .blocks = 1, .filters = 8, .value_hidden = 8};
}

TEST(TorchBackendTest, BatcherAnswersEqualADirectSessionRun) {
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<model::InferenceSession> session,
                       model::InferenceSession::CreateFresh(TinyShape(), /*seed=*/11));
  ASSERT_OK_AND_ASSIGN(auto backend,
                       TorchBackend::Create({.session = session, .max_batch = 8, .version = 4}));
  EXPECT_EQ(backend->spec(), (ModelSpec{.input_channels = 3, .board_height = 6,
                                        .board_width = 7, .num_actions = 7}));
  EXPECT_EQ(backend->version(), 4);
  ASSERT_OK_AND_ASSIGN(auto batcher, Batcher::Create({.backend = std::move(backend),
                                                      .max_batch = 4,
                                                      .max_delay = absl::Milliseconds(1),
                                                      .max_queued_rows = 64,
                                                      .max_request_rows = 16}));
  // Requests of 1, 3 and 6 rows: the 6-row one is split across batches.
  const int kRows[] = {1, 3, 6};
  std::mt19937 rng(5);
  std::vector<std::vector<uint8_t>> planes;
  std::vector<absl::Notification> done(3);
  std::vector<absl::StatusOr<Evaluation>> results(3, absl::UnknownError("not completed"));
  for (int i = 0; i < 3; ++i) {
    planes.emplace_back(kRows[i] * TinyShape().PlaneSize());
    for (uint8_t& p : planes.back()) p = static_cast<uint8_t>(rng() & 1);
    ASSERT_OK(batcher->Submit(planes.back(), kRows[i], [&, i](absl::StatusOr<Evaluation> r) {
      results[i] = std::move(r);
      done[i].Notify();
    }));
  }
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(done[i].WaitForNotificationWithTimeout(absl::Seconds(60)));
    ASSERT_OK(results[i].status());
    EXPECT_EQ(results[i]->model_version, 4);
    std::vector<float> logits(kRows[i] * 7), wdl(kRows[i] * 3);
    ASSERT_OK(session->Run(planes[i], kRows[i], logits, wdl));
    // Batched and unbatched forward passes may differ in the last bits.
    EXPECT_THAT(results[i]->policy_logits, Pointwise(FloatNear(1e-4), logits)) << "request " << i;
    EXPECT_THAT(results[i]->wdl, Pointwise(FloatNear(1e-5), wdl)) << "request " << i;
  }
}

TEST(TorchBackendTest, ValidatesOptionsAndArguments) {
  EXPECT_THAT(TorchBackend::Create({}), StatusIs(absl::StatusCode::kInvalidArgument,
                                                 HasSubstr("session")));
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<model::InferenceSession> session,
                       model::InferenceSession::CreateFresh(TinyShape(), /*seed=*/1));
  EXPECT_THAT(TorchBackend::Create({.session = session, .max_batch = 0}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("max_batch")));
  ASSERT_OK_AND_ASSIGN(auto backend, TorchBackend::Create({.session = session, .max_batch = 2}));
  EXPECT_EQ(backend->version(), 0);  // a fresh network's version
  std::vector<uint8_t> planes(3 * 126);
  std::vector<float> logits(3 * 7), wdl(3 * 3);
  EXPECT_THAT(backend->Run(planes, 3, logits, wdl),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("batch must be in [1, 2]")));
}

}  // namespace
}  // namespace zf::inference
