// The learner's step on the GPU (label `gpu`): bf16 autocast against the float32 CPU step,
// training progress, deferred loss reports and checkpoints that move between devices. Skips,
// saying why, where this build's LibTorch has no CUDA or no GPU is visible.
#include <cmath>

#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"
#include "learner/testing/batches.h"
#include "learner/trainer.h"
#include "model/inference_session.h"

namespace zf::learner {
namespace {

using testing::MakeBatch;
using testing::TinyShape;

TrainerOptions Options(const std::string& device) {
  TrainerOptions o;
  o.game = "tiny";
  o.shape = TinyShape();
  o.seed = 7;
  o.optimizer = OptimizerKind::kAdamW;
  o.lr.lr = 0.01;
  o.device = device;
  o.report_every = 1;
  return o;
}

class TrainerGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!model::CudaAvailable()) {
      GTEST_SKIP() << "no CUDA: this build's LibTorch has no CUDA support or no GPU is "
                      "visible; the learner's CUDA step is not tested here";
    }
  }
};

TEST_F(TrainerGpuTest, Bf16StepAgreesWithTheCpuStep) {
  ASSERT_OK_AND_ASSIGN(auto cpu, Trainer::Create(Options("cpu")));
  ASSERT_OK_AND_ASSIGN(auto gpu, Trainer::Create(Options("cuda")));
  const auto batch = MakeBatch(TinyShape(), 128, /*seed=*/1);
  for (int i = 0; i < 5; ++i) {
    ASSERT_OK_AND_ASSIGN(StepResult c, cpu->Step(batch));
    ASSERT_OK_AND_ASSIGN(StepResult g, gpu->Step(batch));
    // bf16 keeps about 3 significant digits; five steps of AdamW stay within a few percent.
    EXPECT_NEAR(g.policy_loss, c.policy_loss, 0.03 * c.policy_loss) << "step " << i;
    EXPECT_NEAR(g.value_loss, c.value_loss, 0.03 * c.value_loss + 0.01) << "step " << i;
    EXPECT_NEAR(g.grad_norm, c.grad_norm, 0.05 * c.grad_norm + 0.01) << "step " << i;
  }
}

TEST_F(TrainerGpuTest, TrainsWithDeferredReportsAndCheckpointsMoveToTheCpu) {
  TrainerOptions o = Options("cuda");
  o.report_every = 10;
  ASSERT_OK_AND_ASSIGN(auto gpu, Trainer::Create(o));
  const auto batch = MakeBatch(TinyShape(), 128, /*seed=*/2);
  ASSERT_OK_AND_ASSIGN(StepResult before, gpu->Evaluate(batch));
  int reports = 0;
  for (int i = 0; i < 60; ++i) {
    ASSERT_OK_AND_ASSIGN(StepResult r, gpu->Step(batch));
    reports += r.reported ? 1 : 0;
  }
  EXPECT_EQ(reports, 6);
  ASSERT_OK_AND_ASSIGN(StepResult after, gpu->Evaluate(batch));
  EXPECT_LT(after.total_loss, 0.7 * before.total_loss);

  ASSERT_OK_AND_ASSIGN(model::Checkpoint checkpoint, gpu->MakeCheckpoint(/*version=*/3));
  ASSERT_OK_AND_ASSIGN(auto cpu, Trainer::Create(Options("cpu")));
  ASSERT_OK(cpu->Restore(checkpoint));
  EXPECT_EQ(cpu->step(), 60);
  ASSERT_OK_AND_ASSIGN(StepResult on_cpu, cpu->Evaluate(batch));
  EXPECT_NEAR(on_cpu.total_loss, after.total_loss, 0.03 * after.total_loss);
}

}  // namespace
}  // namespace zf::learner
