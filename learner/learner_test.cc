#include "learner/learner.h"

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/metrics/exposition.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "learner/checkpoint_dir.h"
#include "learner/testing/batches.h"

namespace zf::learner {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::zf::testing::StatusIs;

class LearnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(::testing::TempDir(), "/learner_test_", ::getpid(), "_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  LearnerOptions Options(int64_t max_steps) {
    LearnerOptions o;
    o.trainer.game = "tiny";
    o.trainer.shape = testing::TinyShape();
    o.trainer.intra_op_threads = 1;
    o.batch_size = 16;
    o.dir = dir_;
    o.steps_per_checkpoint = 10;
    o.keep_checkpoints = 3;
    o.max_steps = max_steps;
    o.batch_source = [this](absl::Time) -> absl::StatusOr<zerofleet::v1::SampleBatch> {
      return testing::MakeBatch(testing::TinyShape(), 16, batches_++);
    };
    return o;
  }

  std::string dir_;
  uint64_t batches_ = 0;
};

TEST_F(LearnerTest, PublishesEveryKStepsAndResumes) {
  std::vector<int64_t> published;
  LearnerOptions o = Options(/*max_steps=*/20);
  o.on_publish = [&](const model::CheckpointManifest& m) { published.push_back(m.version); };
  ASSERT_OK_AND_ASSIGN(auto learner, Learner::Create(o));
  ASSERT_OK(learner->Run());
  // Version 1 is the initial network, published by Create; then one every 10 steps.
  EXPECT_THAT(published, ::testing::ElementsAre(1, 2, 3));
  LearnerStats stats = learner->stats();
  EXPECT_EQ(stats.steps, 20);
  EXPECT_EQ(stats.samples_this_run, 320);
  EXPECT_EQ(stats.published_version, 3);
  const std::string checkpoints = dir_ + "/checkpoints";
  ASSERT_OK_AND_ASSIGN(auto files, ListCheckpoints(checkpoints));
  EXPECT_EQ(files.size(), 3u);
  ASSERT_OK_AND_ASSIGN(model::Checkpoint latest, model::ReadCheckpoint(checkpoints + "/latest"));
  EXPECT_EQ(latest.manifest.version, 3);
  EXPECT_EQ(latest.manifest.training_step, 20);
  EXPECT_EQ(latest.manifest.game, "tiny");
  EXPECT_FALSE(latest.optimizer_state.empty());

  const std::string text = metrics::TextExposition(learner->registry());
  EXPECT_THAT(text, HasSubstr("zf_learner_steps_total 20"));
  EXPECT_THAT(text, HasSubstr("zf_learner_samples_total 320"));
  EXPECT_THAT(text, HasSubstr("zf_learner_published_version 3"));
  EXPECT_THAT(text, HasSubstr("zf_learner_loss{head=\"policy\"}"));
  EXPECT_THAT(text, HasSubstr("zf_learner_loss{head=\"value\"}"));
  EXPECT_THAT(text, HasSubstr("zf_learner_loss{head=\"total\"}"));
  EXPECT_THAT(text, HasSubstr("zf_learner_learning_rate"));
  EXPECT_THAT(text, HasSubstr("zf_learner_data_wait_seconds_total"));
  EXPECT_THAT(text, HasSubstr("zf_learner_step_seconds_count 20"));
  learner.reset();

  // Resume: step, version and weights continue.
  ASSERT_OK_AND_ASSIGN(auto resumed, Learner::Create(Options(/*max_steps=*/25)));
  EXPECT_EQ(resumed->stats().steps, 20);
  EXPECT_EQ(resumed->stats().published_version, 3);
  ASSERT_OK(resumed->Run());
  EXPECT_EQ(resumed->stats().steps, 25);
  // Stopping off a K-step boundary still keeps the steps: a final checkpoint.
  ASSERT_OK_AND_ASSIGN(latest, model::ReadCheckpoint(checkpoints + "/latest"));
  EXPECT_EQ(latest.manifest.version, 4);
  EXPECT_EQ(latest.manifest.training_step, 25);
}

// A newest checkpoint damaged at rest (bytes changed, or cut short) does not stop a resume: the
// learner takes the newest intact one, sets the damaged file aside and publishes the resumed
// weights above its version, so `latest` never names it and its version number is not reused.
TEST_F(LearnerTest, ADamagedNewestCheckpointIsSetAsideAndTheNewestIntactOneResumes) {
  const std::string checkpoints = dir_ + "/checkpoints";
  for (bool cut_short : {false, true}) {
    SCOPED_TRACE(cut_short ? "cut short" : "bytes changed");
    fs::remove_all(dir_);
    {
      ASSERT_OK_AND_ASSIGN(auto learner, Learner::Create(Options(/*max_steps=*/20)));
      ASSERT_OK(learner->Run());  // versions 1, 2 (step 10), 3 (step 20)
    }
    const std::string newest = checkpoints + "/" + CheckpointFileName(3);
    const auto size = fs::file_size(newest);
    if (cut_short) {
      fs::resize_file(newest, size / 2);
    } else {
      std::fstream f(newest, std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(static_cast<std::streamoff>(size - 100));
      f.write("\xde\xad\xbe\xef", 4);
    }
    std::vector<int64_t> published;
    LearnerOptions o = Options(/*max_steps=*/25);
    o.on_publish = [&](const model::CheckpointManifest& m) { published.push_back(m.version); };
    ASSERT_OK_AND_ASSIGN(auto resumed, Learner::Create(o));
    EXPECT_EQ(resumed->stats().steps, 10);  // version 2's step
    EXPECT_THAT(published, ::testing::ElementsAre(4));
    EXPECT_FALSE(fs::exists(newest));
    EXPECT_TRUE(fs::exists(checkpoints + "/damaged/" + CheckpointFileName(3)));
    ASSERT_OK_AND_ASSIGN(model::Checkpoint latest, model::ReadCheckpoint(checkpoints + "/latest"));
    EXPECT_EQ(latest.manifest.version, 4);
    EXPECT_EQ(latest.manifest.training_step, 10);
    ASSERT_OK(resumed->Run());
    EXPECT_EQ(resumed->stats().steps, 25);
    EXPECT_THAT(published, ::testing::ElementsAre(4, 5, 6));
  }
  // A crash between setting a damaged file aside and publishing above it: the next start still
  // publishes above the damaged version, never as it.
  fs::remove_all(dir_);
  {
    ASSERT_OK_AND_ASSIGN(auto learner, Learner::Create(Options(/*max_steps=*/20)));
    ASSERT_OK(learner->Run());
  }
  fs::create_directories(checkpoints + "/damaged");
  fs::rename(checkpoints + "/" + CheckpointFileName(3),
             checkpoints + "/damaged/" + CheckpointFileName(3));
  std::vector<int64_t> published;
  LearnerOptions o = Options(/*max_steps=*/20);
  o.on_publish = [&](const model::CheckpointManifest& m) { published.push_back(m.version); };
  ASSERT_OK_AND_ASSIGN(auto resumed, Learner::Create(o));
  EXPECT_EQ(resumed->stats().steps, 10);
  EXPECT_THAT(published, ::testing::ElementsAre(4));
}

TEST_F(LearnerTest, StopFinishesTheStepAndCheckpoints) {
  LearnerOptions o = Options(/*max_steps=*/0);
  Learner* learner_ptr = nullptr;
  o.batch_source = [&](absl::Time) -> absl::StatusOr<zerofleet::v1::SampleBatch> {
    if (++batches_ == 5) learner_ptr->Stop();  // asked while the 5th batch is handed out
    return testing::MakeBatch(testing::TinyShape(), 16, batches_);
  };
  ASSERT_OK_AND_ASSIGN(auto learner, Learner::Create(o));
  learner_ptr = learner.get();
  ASSERT_OK(learner->Run());
  EXPECT_EQ(learner->stats().steps, 5);
  ASSERT_OK_AND_ASSIGN(model::Checkpoint latest,
                       model::ReadCheckpoint(dir_ + "/checkpoints/latest"));
  EXPECT_EQ(latest.manifest.training_step, 5);
  EXPECT_EQ(latest.manifest.version, 2);
}

TEST_F(LearnerTest, DataWaitIsCountedAndDeadlinesRetried) {
  LearnerOptions o = Options(/*max_steps=*/3);
  int calls = 0;
  o.batch_source = [&](absl::Time) -> absl::StatusOr<zerofleet::v1::SampleBatch> {
    if (++calls % 2 == 1) return absl::DeadlineExceededError("no data yet");
    return testing::MakeBatch(testing::TinyShape(), 16, calls);
  };
  ASSERT_OK_AND_ASSIGN(auto learner, Learner::Create(o));
  ASSERT_OK(learner->Run());
  EXPECT_EQ(learner->stats().steps, 3);
  EXPECT_EQ(calls, 6);
}

TEST_F(LearnerTest, BadBatchStopsTheRunWithInvalidArgument) {
  LearnerOptions o = Options(/*max_steps=*/10);
  o.batch_source = [](absl::Time) -> absl::StatusOr<zerofleet::v1::SampleBatch> {
    auto b = testing::MakeBatch(testing::TinyShape(), 4, 1);
    b.mutable_plane_shape()->set_channels(3);
    return b;
  };
  ASSERT_OK_AND_ASSIGN(auto learner, Learner::Create(o));
  EXPECT_EQ(learner->Run().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(LearnerTest, LrScaleMultipliesTheScheduleAndABadOneStopsTheRun) {
  LearnerOptions o = Options(/*max_steps=*/4);
  o.trainer.lr.lr = 0.02;
  int calls = 0;
  o.lr_scale = [&] { return ++calls <= 2 ? 1.0 : 0.25; };
  {
    ASSERT_OK_AND_ASSIGN(auto learner, Learner::Create(o));
    ASSERT_OK(learner->Run());
    EXPECT_EQ(calls, 4);
    EXPECT_DOUBLE_EQ(learner->stats().last.learning_rate, 0.005);
  }
  for (double bad : {0.0, 1.5, std::nan("")}) {
    LearnerOptions b = Options(/*max_steps=*/10);
    b.lr_scale = [bad] { return bad; };
    ASSERT_OK_AND_ASSIGN(auto learner, Learner::Create(b));
    absl::Status run = learner->Run();
    EXPECT_EQ(run.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(run.message(), ::testing::HasSubstr("lr_scale")) << run;
    EXPECT_EQ(learner->stats().steps, 4) << "no step taken with scale " << bad;
  }
}

TEST(BlendSearchValueTest, MixesTheResultWithTheSearchValueRowByRow) {
  zerofleet::v1::SampleBatch batch;
  batch.set_batch_size(3);
  const float z[] = {1, -1, 0}, q[] = {0.5f, 0.25f, -1};
  batch.mutable_value()->assign(reinterpret_cast<const char*>(z), sizeof(z));
  batch.mutable_search_value()->assign(reinterpret_cast<const char*>(q), sizeof(q));
  zerofleet::v1::SampleBatch unchanged = batch;
  ASSERT_OK(BlendSearchValue(0, &unchanged));
  EXPECT_EQ(unchanged.value(), batch.value());
  ASSERT_OK(BlendSearchValue(0.5, &batch));
  float v[3];
  std::memcpy(v, batch.value().data(), sizeof(v));
  EXPECT_FLOAT_EQ(v[0], 0.75f);
  EXPECT_FLOAT_EQ(v[1], -0.375f);
  EXPECT_FLOAT_EQ(v[2], -0.5f);
}

TEST(BlendSearchValueTest, RefusesAMissingOrBadSearchValue) {
  zerofleet::v1::SampleBatch batch;
  batch.set_batch_size(2);
  const float z[] = {1, -1}, q[] = {0.5f, 3};
  batch.mutable_value()->assign(reinterpret_cast<const char*>(z), sizeof(z));
  zerofleet::v1::SampleBatch missing = batch;
  EXPECT_THAT(BlendSearchValue(0.5, &missing),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("older than search values")));
  EXPECT_OK(BlendSearchValue(0, &missing));  // weight 0 needs no search values
  batch.mutable_search_value()->assign(reinterpret_cast<const char*>(q), sizeof(q));
  EXPECT_THAT(BlendSearchValue(0.5, &batch),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("search_value 1 is 3")));
  EXPECT_THAT(BlendSearchValue(1.5, &batch),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("[0, 1]")));
}

// The learner blends before each step; a weight outside [0, 1] is refused at Create.
TEST_F(LearnerTest, SearchValueWeightIsValidatedAndUsedEachStep) {
  LearnerOptions bad = Options(/*max_steps=*/2);
  bad.search_value_weight = 1.5;
  EXPECT_THAT(Learner::Create(bad).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("search_value_weight")));
  LearnerOptions o = Options(/*max_steps=*/2);
  o.search_value_weight = 0.5;  // MakeBatch carries no search values: the run stops, saying so
  ASSERT_OK_AND_ASSIGN(auto learner, Learner::Create(o));
  absl::Status run = learner->Run();
  EXPECT_THAT(run, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("search_value")));
  EXPECT_EQ(learner->stats().steps_this_run, 0);
  LearnerOptions with = Options(/*max_steps=*/2);
  with.search_value_weight = 0.5;
  with.batch_source = [](absl::Time) -> absl::StatusOr<zerofleet::v1::SampleBatch> {
    auto b = testing::MakeBatch(testing::TinyShape(), 16, 1);
    b.set_search_value(b.value());
    return b;
  };
  ASSERT_OK_AND_ASSIGN(auto good, Learner::Create(with));
  ASSERT_OK(good->Run());
  EXPECT_EQ(good->stats().steps_this_run, 2);
}

TEST_F(LearnerTest, RefusesAnotherNetworkInTheDirectory) {
  { ASSERT_OK_AND_ASSIGN(auto learner, Learner::Create(Options(1))); }
  LearnerOptions wider = Options(1);
  wider.trainer.shape.filters = 16;
  EXPECT_EQ(Learner::Create(wider).status().code(), absl::StatusCode::kInvalidArgument);
  LearnerOptions no_resume = Options(1);
  no_resume.resume = false;
  EXPECT_EQ(Learner::Create(no_resume).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace zf::learner
