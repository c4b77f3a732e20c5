#include "learner/trainer.h"

#include <dlfcn.h>

#include <cmath>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "learner/lr_schedule.h"
#include "learner/testing/batches.h"
#include "model/inference_session.h"

namespace zf::learner {
namespace {

using testing::MakeBatch;
using testing::TinyShape;

TrainerOptions Options(OptimizerKind kind = OptimizerKind::kSgd) {
  TrainerOptions o;
  o.game = "tiny";
  o.shape = TinyShape();
  o.seed = 7;
  o.optimizer = kind;
  o.lr.lr = kind == OptimizerKind::kSgd ? 0.05 : 0.01;
  o.intra_op_threads = 1;
  return o;
}

TEST(LrScheduleTest, WarmupStepAndCosine) {
  LrSchedule s;
  s.lr = 1.0;
  s.warmup_steps = 4;
  EXPECT_DOUBLE_EQ(LearningRateAt(s, 0), 0.25);
  EXPECT_DOUBLE_EQ(LearningRateAt(s, 3), 1.0);
  EXPECT_DOUBLE_EQ(LearningRateAt(s, 100), 1.0);
  s.kind = LrScheduleKind::kStep;
  s.step_every = 10;
  s.gamma = 0.5;
  EXPECT_DOUBLE_EQ(LearningRateAt(s, 13), 1.0);
  EXPECT_DOUBLE_EQ(LearningRateAt(s, 14), 0.5);
  EXPECT_DOUBLE_EQ(LearningRateAt(s, 34), 0.125);
  s.kind = LrScheduleKind::kCosine;
  s.total_steps = 14;
  s.min_fraction = 0.1;
  EXPECT_DOUBLE_EQ(LearningRateAt(s, 4), 1.0);
  EXPECT_NEAR(LearningRateAt(s, 9), 0.55, 1e-12);
  EXPECT_NEAR(LearningRateAt(s, 14), 0.1, 1e-12);
  EXPECT_NEAR(LearningRateAt(s, 1000), 0.1, 1e-12);
  s.total_steps = 4;
  EXPECT_EQ(s.Validate().code(), absl::StatusCode::kInvalidArgument);
}

TEST(LrScheduleTest, TimeDecayIsFlatThenLinearToTheFinalFraction) {
  TimeDecay d{.decay_fraction = 0.25, .final_fraction = 0.1};
  ASSERT_OK(d.Validate());
  EXPECT_DOUBLE_EQ(TimeDecayFactor(d, 0), 1.0);
  EXPECT_DOUBLE_EQ(TimeDecayFactor(d, 0.75), 1.0);
  EXPECT_NEAR(TimeDecayFactor(d, 0.875), 0.55, 1e-12);
  EXPECT_NEAR(TimeDecayFactor(d, 1.0), 0.1, 1e-12);
  EXPECT_NEAR(TimeDecayFactor(d, 7.0), 0.1, 1e-12);
  EXPECT_DOUBLE_EQ(TimeDecayFactor(d, -1.0), 1.0);
  EXPECT_DOUBLE_EQ(TimeDecayFactor(d, std::nan("")), 1.0);
  d.decay_fraction = 0;
  EXPECT_DOUBLE_EQ(TimeDecayFactor(d, 1.0), 1.0);
  d.decay_fraction = 1;
  EXPECT_NEAR(TimeDecayFactor(d, 0.5), 0.55, 1e-12);
  d.decay_fraction = 1.5;
  EXPECT_EQ(d.Validate().code(), absl::StatusCode::kInvalidArgument);
  d = TimeDecay{.decay_fraction = 0.5, .final_fraction = 0};
  EXPECT_EQ(d.Validate().code(), absl::StatusCode::kInvalidArgument);
}

TEST(TrainerTest, StepsReduceTheLoss) {
  for (OptimizerKind kind : {OptimizerKind::kSgd, OptimizerKind::kAdamW}) {
    ASSERT_OK_AND_ASSIGN(auto trainer, Trainer::Create(Options(kind)));
    const auto batch = MakeBatch(TinyShape(), 64, /*seed=*/1);
    ASSERT_OK_AND_ASSIGN(StepResult before, trainer->Evaluate(batch));
    for (int i = 0; i < 40; ++i) ASSERT_OK(trainer->Step(batch).status());
    ASSERT_OK_AND_ASSIGN(StepResult after, trainer->Evaluate(batch));
    EXPECT_EQ(trainer->step(), 40);
    EXPECT_LT(after.total_loss, 0.7 * before.total_loss) << static_cast<int>(kind);
    EXPECT_LT(after.policy_loss, before.policy_loss);
    EXPECT_LT(after.value_loss, before.value_loss);
    EXPECT_NEAR(after.total_loss, after.policy_loss + after.value_loss, 1e-5);
  }
}

// zf run's order: the trainer is created with its threads, then the inference server sets the
// process-wide count to 1. The thread that trains keeps the trainer's count; another thread
// gets the process-wide one.
TEST(TrainerTest, TheTrainingThreadKeepsItsOwnThreadCount) {
  using GetThreadsFn = int (*)();
  auto* const omp_get_max_threads =
      reinterpret_cast<GetThreadsFn>(::dlsym(RTLD_DEFAULT, "omp_get_max_threads"));
  if (omp_get_max_threads == nullptr) GTEST_SKIP() << "this LibTorch has no OpenMP";
  TrainerOptions options = Options();
  options.intra_op_threads = 3;
  ASSERT_OK_AND_ASSIGN(auto trainer, Trainer::Create(options));
  ASSERT_OK(model::SetIntraOpThreads(1));
  const auto batch = MakeBatch(TinyShape(), 16, /*seed=*/1);
  int training_thread = 0;
  std::thread([&] {
    EXPECT_OK(trainer->Step(batch).status());
    EXPECT_OK(trainer->Step(batch).status());
    training_thread = omp_get_max_threads();
  }).join();
  int other_thread = 0;
  std::thread([&] { other_thread = model::IntraOpThreads(); }).join();
  EXPECT_EQ(training_thread, 3);
  EXPECT_EQ(other_thread, 1);
}

TEST(TrainerTest, ReportEveryAveragesTheLossesOfItsSteps) {
  TrainerOptions every_step = Options();
  every_step.report_every = 1;
  TrainerOptions every_third = Options();
  every_third.report_every = 3;
  ASSERT_OK_AND_ASSIGN(auto a, Trainer::Create(every_step));
  ASSERT_OK_AND_ASSIGN(auto b, Trainer::Create(every_third));
  double sum_total = 0, sum_policy = 0, sum_norm = 0;
  for (int i = 0; i < 3; ++i) {
    const auto batch = MakeBatch(TinyShape(), 32, /*seed=*/10 + i);
    ASSERT_OK_AND_ASSIGN(StepResult ra, a->Step(batch));
    ASSERT_OK_AND_ASSIGN(StepResult rb, b->Step(batch));
    EXPECT_TRUE(ra.reported);
    EXPECT_EQ(rb.reported, i == 2) << i;
    if (i < 2) {
      EXPECT_EQ(rb.total_loss, 0) << "no report yet";
    }
    sum_total += ra.total_loss;
    sum_policy += ra.policy_loss;
    sum_norm += ra.grad_norm;
    if (i == 2) {
      EXPECT_NEAR(rb.total_loss, sum_total / 3, 1e-5);
      EXPECT_NEAR(rb.policy_loss, sum_policy / 3, 1e-5);
      EXPECT_NEAR(rb.grad_norm, sum_norm / 3, 1e-4);
      EXPECT_GT(rb.grad_norm, 0);
    }
  }
  // The next step repeats the last report until the following one.
  ASSERT_OK_AND_ASSIGN(StepResult next, b->Step(MakeBatch(TinyShape(), 32, /*seed=*/20)));
  EXPECT_FALSE(next.reported);
  EXPECT_NEAR(next.total_loss, sum_total / 3, 1e-5);
}

TEST(TrainerTest, LearnsAOneHotPolicy) {
  ASSERT_OK_AND_ASSIGN(auto trainer, Trainer::Create(Options(OptimizerKind::kAdamW)));
  for (int i = 0; i < 150; ++i) {
    ASSERT_OK(trainer->Step(MakeBatch(TinyShape(), 32, 100 + i, /*policy_action=*/4)).status());
  }
  ASSERT_OK_AND_ASSIGN(StepResult r,
                       trainer->Evaluate(MakeBatch(TinyShape(), 64, 9999, /*policy_action=*/4)));
  // Cross-entropy against a one-hot target is -log p(target): p > 0.9 on unseen positions.
  EXPECT_LT(r.policy_loss, -std::log(0.9));
}

TEST(TrainerTest, GlobalPoolingNetworkLearnsAndItsCheckpointSaysSo) {
  TrainerOptions o = Options(OptimizerKind::kAdamW);
  o.shape.global_pooling = true;
  ASSERT_OK_AND_ASSIGN(auto trainer, Trainer::Create(o));
  for (int i = 0; i < 150; ++i) {
    ASSERT_OK(trainer->Step(MakeBatch(o.shape, 32, 100 + i, /*policy_action=*/4)).status());
  }
  ASSERT_OK_AND_ASSIGN(StepResult r,
                       trainer->Evaluate(MakeBatch(o.shape, 64, 9999, /*policy_action=*/4)));
  EXPECT_LT(r.policy_loss, -std::log(0.9));
  ASSERT_OK_AND_ASSIGN(model::Checkpoint checkpoint, trainer->MakeCheckpoint(1));
  EXPECT_TRUE(checkpoint.manifest.shape.global_pooling);
  EXPECT_EQ(checkpoint.manifest.shape, o.shape);
}

// A batch with ownership and score targets for every row.
zerofleet::v1::SampleBatch AuxBatch(const model::NetworkShape& shape, int b, uint64_t seed) {
  auto batch = MakeBatch(shape, b, seed);
  testing::AddOwnership(shape, &batch);
  return batch;
}

TEST(TrainerTest, AuxHeadsLearnOwnershipAndScore) {
  TrainerOptions o = Options(OptimizerKind::kAdamW);
  o.shape.aux_heads = true;
  ASSERT_OK_AND_ASSIGN(auto trainer, Trainer::Create(o));
  const auto eval = AuxBatch(o.shape, 64, 4242);
  ASSERT_OK_AND_ASSIGN(StepResult before, trainer->Evaluate(eval));
  EXPECT_GT(before.ownership_loss, 0.0);
  EXPECT_GT(before.score_loss, 0.0);
  EXPECT_NEAR(before.total_loss,
              before.policy_loss + before.value_loss + o.ownership_weight * before.ownership_loss +
                  o.score_weight * before.score_loss,
              1e-4);
  for (int i = 0; i < 150; ++i) {
    ASSERT_OK(trainer->Step(AuxBatch(o.shape, 32, 500 + i)).status());
  }
  ASSERT_OK_AND_ASSIGN(StepResult after, trainer->Evaluate(eval));
  EXPECT_LT(after.ownership_loss, 0.5 * before.ownership_loss);
  EXPECT_LT(after.score_loss, 0.5 * before.score_loss);
  // The ownership loss is a cross-entropy of three-valued targets: it cannot reach 0 for the
  // 0 cells (ln 2 each), but the learnable +-1 cells can.
  ASSERT_OK_AND_ASSIGN(model::Checkpoint checkpoint, trainer->MakeCheckpoint(1));
  EXPECT_TRUE(checkpoint.manifest.shape.aux_heads);
}

TEST(TrainerTest, ChannelsLastTrainsAsTheStandardLayoutDoes) {
  TrainerOptions o = Options();
  o.shape.aux_heads = true;
  TrainerOptions nchw_options = o;
  nchw_options.cpu_channels_last = false;
  ASSERT_TRUE(o.cpu_channels_last);  // the default
  ASSERT_OK_AND_ASSIGN(auto channels_last, Trainer::Create(o));
  ASSERT_OK_AND_ASSIGN(auto nchw, Trainer::Create(nchw_options));
  for (int i = 0; i < 5; ++i) {
    const auto batch = AuxBatch(o.shape, 32, 700 + i);
    ASSERT_OK_AND_ASSIGN(StepResult a, channels_last->Step(batch));
    ASSERT_OK_AND_ASSIGN(StepResult b, nchw->Step(batch));
    // The same sums in another order: equal to float rounding.
    EXPECT_NEAR(a.total_loss, b.total_loss, 1e-4 * b.total_loss) << i;
    EXPECT_NEAR(a.ownership_loss, b.ownership_loss, 1e-4 * b.ownership_loss) << i;
  }
  // Its checkpoint holds the standard layout: an NCHW trainer takes it and evaluates as it does.
  ASSERT_OK_AND_ASSIGN(model::Checkpoint checkpoint, channels_last->MakeCheckpoint(1));
  TrainerOptions other = nchw_options;
  other.seed = 99;
  ASSERT_OK_AND_ASSIGN(auto restored, Trainer::Create(other));
  ASSERT_OK(restored->Restore(checkpoint));
  const auto eval = AuxBatch(o.shape, 64, 4242);
  ASSERT_OK_AND_ASSIGN(StepResult want, channels_last->Evaluate(eval));
  ASSERT_OK_AND_ASSIGN(StepResult got, restored->Evaluate(eval));
  EXPECT_NEAR(got.total_loss, want.total_loss, 1e-4 * want.total_loss);
  // And back: a channels-last trainer resumes an NCHW trainer's checkpoint, optimizer state too.
  ASSERT_OK_AND_ASSIGN(model::Checkpoint nchw_checkpoint, nchw->MakeCheckpoint(2));
  TrainerOptions resumed_options = o;
  resumed_options.seed = 5;
  ASSERT_OK_AND_ASSIGN(auto resumed, Trainer::Create(resumed_options));
  ASSERT_OK(resumed->Restore(nchw_checkpoint));
  const auto next = AuxBatch(o.shape, 32, 800);
  for (int i = 0; i < 2; ++i) {
    ASSERT_OK_AND_ASSIGN(StepResult a, resumed->Step(next));
    ASSERT_OK_AND_ASSIGN(StepResult b, nchw->Step(next));
    EXPECT_NEAR(a.total_loss, b.total_loss, 1e-4 * b.total_loss) << i;
  }
}

TEST(TrainerTest, AuxLossesOnlyWithHeadsAndTargets) {
  // Targets without heads: ignored (a network without them trains on a Go batch as before).
  ASSERT_OK_AND_ASSIGN(auto plain, Trainer::Create(Options()));
  auto batch = MakeBatch(TinyShape(), 16, 8);
  auto with_targets = batch;
  testing::AddOwnership(TinyShape(), &with_targets);
  ASSERT_OK_AND_ASSIGN(StepResult a, plain->Evaluate(batch));
  ASSERT_OK_AND_ASSIGN(StepResult b, plain->Evaluate(with_targets));
  EXPECT_EQ(b.ownership_loss, 0.0);
  EXPECT_EQ(b.score_loss, 0.0);
  EXPECT_DOUBLE_EQ(a.total_loss, b.total_loss);
  // Heads without targets: no aux loss.
  TrainerOptions o = Options();
  o.shape.aux_heads = true;
  ASSERT_OK_AND_ASSIGN(auto heads, Trainer::Create(o));
  ASSERT_OK_AND_ASSIGN(StepResult c, heads->Evaluate(batch));
  EXPECT_EQ(c.ownership_loss, 0.0);
  EXPECT_NEAR(c.total_loss, c.policy_loss + c.value_loss, 1e-5);
  // Rows with aux_mask 0 do not count: all-masked gives 0.
  auto masked = batch;
  testing::AddOwnership(TinyShape(), &masked, /*mask_every=*/1);
  ASSERT_OK_AND_ASSIGN(StepResult d, heads->Evaluate(masked));
  EXPECT_EQ(d.ownership_loss, 0.0);
  EXPECT_EQ(d.score_loss, 0.0);
  // The heads' parameters are extra: the shared ones start equal for the same seed.
  ASSERT_OK_AND_ASSIGN(StepResult e, heads->Evaluate(batch));
  EXPECT_DOUBLE_EQ(e.policy_loss, a.policy_loss);
  EXPECT_DOUBLE_EQ(e.value_loss, a.value_loss);
}

TEST(TrainerTest, MaskedRowsAreNoPolicyTargets) {
  ASSERT_OK_AND_ASSIGN(auto trainer, Trainer::Create(Options()));
  auto batch = MakeBatch(TinyShape(), 8, 3);
  batch.set_policy_mask(std::string(8, '\0'));
  ASSERT_OK_AND_ASSIGN(StepResult r, trainer->Evaluate(batch));
  EXPECT_EQ(r.policy_loss, 0.0);
  EXPECT_GT(r.value_loss, 0.0);
}

class ResumeTest : public ::testing::TestWithParam<OptimizerKind> {};

TEST_P(ResumeTest, CheckpointAndResumeGiveTheSameNextStep) {
  ASSERT_OK_AND_ASSIGN(auto a, Trainer::Create(Options(GetParam())));
  for (int i = 0; i < 3; ++i) ASSERT_OK(a->Step(MakeBatch(TinyShape(), 16, i)).status());
  ASSERT_OK_AND_ASSIGN(model::Checkpoint checkpoint, a->MakeCheckpoint(/*version=*/5));
  EXPECT_EQ(checkpoint.manifest.training_step, 3);
  EXPECT_FALSE(checkpoint.optimizer_state.empty());
  const auto next = MakeBatch(TinyShape(), 16, 42);
  ASSERT_OK_AND_ASSIGN(StepResult expected, a->Step(next));
  ASSERT_OK_AND_ASSIGN(StepResult expected2, a->Step(next));

  TrainerOptions other = Options(GetParam());
  other.seed = 12345;  // different initial weights: everything must come from the checkpoint
  ASSERT_OK_AND_ASSIGN(auto b, Trainer::Create(other));
  ASSERT_OK(b->Restore(checkpoint));
  EXPECT_EQ(b->step(), 3);
  ASSERT_OK_AND_ASSIGN(StepResult got, b->Step(next));
  ASSERT_OK_AND_ASSIGN(StepResult got2, b->Step(next));
  EXPECT_EQ(got.step, expected.step);
  EXPECT_DOUBLE_EQ(got.total_loss, expected.total_loss);
  EXPECT_DOUBLE_EQ(got.learning_rate, expected.learning_rate);
  // The second step depends on the first update, hence on the restored optimizer state.
  EXPECT_DOUBLE_EQ(got2.total_loss, expected2.total_loss);
  EXPECT_DOUBLE_EQ(got2.policy_loss, expected2.policy_loss);

  // Without the optimizer state the second step differs: the test can tell.
  model::Checkpoint weights_only = checkpoint;
  weights_only.optimizer_state.clear();
  ASSERT_OK_AND_ASSIGN(auto c, Trainer::Create(other));
  ASSERT_OK(c->Restore(weights_only));
  ASSERT_OK_AND_ASSIGN(StepResult c1, c->Step(next));
  ASSERT_OK_AND_ASSIGN(StepResult c2, c->Step(next));
  EXPECT_DOUBLE_EQ(c1.total_loss, expected.total_loss);
  EXPECT_NE(c2.total_loss, expected2.total_loss);
}

// A checkpoint written by the other optimizer kind gives its weights and step, and the optimizer
// starts fresh: the same steps as restoring the weights alone.
TEST_P(ResumeTest, AnotherOptimizersStateIsLeftOut) {
  const OptimizerKind other_kind =
      GetParam() == OptimizerKind::kSgd ? OptimizerKind::kAdamW : OptimizerKind::kSgd;
  ASSERT_OK_AND_ASSIGN(auto a, Trainer::Create(Options(other_kind)));
  for (int i = 0; i < 3; ++i) ASSERT_OK(a->Step(MakeBatch(TinyShape(), 16, i)).status());
  ASSERT_OK_AND_ASSIGN(model::Checkpoint checkpoint, a->MakeCheckpoint(/*version=*/5));
  ASSERT_FALSE(checkpoint.optimizer_state.empty());
  model::Checkpoint weights_only = checkpoint;
  weights_only.optimizer_state.clear();

  const auto next = MakeBatch(TinyShape(), 16, 42);
  std::vector<double> losses[2];
  for (int k = 0; k < 2; ++k) {
    ASSERT_OK_AND_ASSIGN(auto b, Trainer::Create(Options(GetParam())));
    ASSERT_OK(b->Restore(k == 0 ? checkpoint : weights_only));
    EXPECT_EQ(b->step(), 3);
    for (int i = 0; i < 2; ++i) {
      ASSERT_OK_AND_ASSIGN(StepResult r, b->Step(next));
      losses[k].push_back(r.total_loss);
    }
  }
  EXPECT_EQ(losses[0], losses[1]);
}

INSTANTIATE_TEST_SUITE_P(Optimizers, ResumeTest,
                         ::testing::Values(OptimizerKind::kSgd, OptimizerKind::kAdamW));

TEST(TrainerTest, RestoreRefusesAnotherShape) {
  ASSERT_OK_AND_ASSIGN(auto a, Trainer::Create(Options()));
  ASSERT_OK_AND_ASSIGN(model::Checkpoint checkpoint, a->MakeCheckpoint(1));
  TrainerOptions wider = Options();
  wider.shape.filters = 16;
  ASSERT_OK_AND_ASSIGN(auto b, Trainer::Create(wider));
  EXPECT_EQ(b->Restore(checkpoint).code(), absl::StatusCode::kInvalidArgument);
  checkpoint.weights = "garbage";
  EXPECT_EQ(a->Restore(checkpoint).code(), absl::StatusCode::kDataLoss);
}

TEST(TrainerTest, BadBatchesAreInvalidArgument) {
  ASSERT_OK_AND_ASSIGN(auto trainer, Trainer::Create(Options()));
  const auto good = MakeBatch(TinyShape(), 4, 1);
  auto wrong_shape = good;
  wrong_shape.mutable_plane_shape()->set_height(4);
  auto short_planes = good;
  short_planes.mutable_planes()->pop_back();
  auto wrong_actions = good;
  wrong_actions.set_num_actions(10);
  auto nan_value = good;
  const float nan = std::nanf("");
  std::memcpy(nan_value.mutable_value()->data(), &nan, 4);
  auto wrong_game = good;
  wrong_game.set_game("chess");
  auto empty = good;
  empty.set_batch_size(0);
  auto owned = good;
  testing::AddOwnership(TinyShape(), &owned);
  auto short_ownership = owned;
  short_ownership.mutable_ownership()->pop_back();
  auto owner_2 = owned;
  (*owner_2.mutable_ownership())[3] = 2;
  auto no_mask = owned;
  no_mask.clear_aux_mask();
  auto huge_score = owned;
  const float huge = 1e6f;
  std::memcpy(huge_score.mutable_score()->data(), &huge, 4);
  for (const auto* bad : {&wrong_shape, &short_planes, &wrong_actions, &nan_value, &wrong_game,
                          &empty, &short_ownership, &owner_2, &no_mask, &huge_score}) {
    absl::StatusOr<StepResult> r = trainer->Step(*bad);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  }
  EXPECT_EQ(trainer->step(), 0);
  EXPECT_OK(trainer->Step(good).status());
}

TEST(TrainerTest, OptionsAreValidated) {
  TrainerOptions o = Options();
  o.momentum = 1.0;
  EXPECT_EQ(Trainer::Create(o).status().code(), absl::StatusCode::kInvalidArgument);
  o = Options();
  o.device = "tpu";
  EXPECT_EQ(Trainer::Create(o).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseOptimizerKind("adam").status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace zf::learner
