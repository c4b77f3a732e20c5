// Tests InferenceSession through its torch-free API (this file compiles without LibTorch
// headers).
#include "model/inference_session.h"

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
#include "model/checkpoint.h"
#include "model/network.h"

namespace zf::model {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Pointwise;
using ::zf::testing::StatusIs;
namespace fs = std::filesystem;

// Connect Four's planes with a small tower, to keep the tests fast.
NetworkShape SmallShape() {
  return {.input_channels = 3,
          .board_height = 6,
          .board_width = 7,
          .num_actions = 7,
          .blocks = 2,
          .filters = 16,
          .value_hidden = 16};
}

std::vector<uint8_t> RandomPlanes(const NetworkShape& shape, int batch, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> planes(batch * shape.PlaneSize());
  for (uint8_t& p : planes) p = static_cast<uint8_t>(rng() & 1);
  return planes;
}

struct Outputs {
  std::vector<float> logits;
  std::vector<float> wdl;
};

Outputs RunOrDie(const InferenceSession& session, const std::vector<uint8_t>& planes, int batch) {
  Outputs out{std::vector<float>(batch * session.shape().num_actions),
              std::vector<float>(batch * 3)};
  const absl::Status status = session.Run(planes, batch, out.logits, out.wdl);
  EXPECT_OK(status);
  return out;
}

class InferenceSessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = (fs::path(::testing::TempDir()) / "zf_session_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(templ.data()), nullptr);
    dir_ = templ;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

TEST_F(InferenceSessionTest, FreshSessionProducesProbabilities) {
  ASSERT_OK_AND_ASSIGN(auto session, InferenceSession::CreateFresh(SmallShape(), /*seed=*/1));
  EXPECT_EQ(session->shape(), SmallShape());
  EXPECT_EQ(session->version(), 0);
  EXPECT_EQ(session->device(), "cpu");
  const int batch = 5;
  const Outputs out = RunOrDie(*session, RandomPlanes(SmallShape(), batch, 7), batch);
  for (float logit : out.logits) EXPECT_TRUE(std::isfinite(logit));
  for (int i = 0; i < batch; ++i) {
    float sum = 0;
    for (int k = 0; k < 3; ++k) {
      const float p = out.wdl[3 * i + k];
      EXPECT_GE(p, 0.0f);
      EXPECT_LE(p, 1.0f);
      sum += p;
    }
    EXPECT_NEAR(sum, 1.0f, 1e-5f);
  }
  // Different positions get different answers from a random network.
  EXPECT_NE(std::vector<float>(out.logits.begin(), out.logits.begin() + 7),
            std::vector<float>(out.logits.begin() + 7, out.logits.begin() + 14));
}

TEST_F(InferenceSessionTest, SeedDeterminesTheWeights) {
  ASSERT_OK_AND_ASSIGN(auto a, InferenceSession::CreateFresh(SmallShape(), 42));
  ASSERT_OK_AND_ASSIGN(auto b, InferenceSession::CreateFresh(SmallShape(), 42));
  ASSERT_OK_AND_ASSIGN(auto c, InferenceSession::CreateFresh(SmallShape(), 43));
  const auto planes = RandomPlanes(SmallShape(), 4, 1);
  const Outputs out_a = RunOrDie(*a, planes, 4);
  const Outputs out_b = RunOrDie(*b, planes, 4);
  const Outputs out_c = RunOrDie(*c, planes, 4);
  EXPECT_EQ(out_a.logits, out_b.logits);
  EXPECT_EQ(out_a.wdl, out_b.wdl);
  EXPECT_NE(out_a.logits, out_c.logits);
}

TEST_F(InferenceSessionTest, BatchedRowsMatchSingleRuns) {
  ASSERT_OK_AND_ASSIGN(auto session, InferenceSession::CreateFresh(SmallShape(), 3));
  const int batch = 6;
  const auto planes = RandomPlanes(SmallShape(), batch, 9);
  const Outputs batched = RunOrDie(*session, planes, batch);
  const int64_t plane_size = SmallShape().PlaneSize();
  for (int i = 0; i < batch; ++i) {
    const std::vector<uint8_t> one(planes.begin() + i * plane_size,
                                   planes.begin() + (i + 1) * plane_size);
    const Outputs single = RunOrDie(*session, one, 1);
    EXPECT_THAT(single.logits, Pointwise(::testing::FloatNear(1e-4f),
                                         std::vector<float>(batched.logits.begin() + 7 * i,
                                                            batched.logits.begin() + 7 * (i + 1))));
    EXPECT_THAT(single.wdl, Pointwise(::testing::FloatNear(1e-5f),
                                      std::vector<float>(batched.wdl.begin() + 3 * i,
                                                         batched.wdl.begin() + 3 * (i + 1))));
  }
}

TEST_F(InferenceSessionTest, SaveThenLoadGivesBitIdenticalOutputs) {
  InferenceSession::Options options;
  options.shape = SmallShape();
  options.seed = 11;
  options.game = "connect4";
  ASSERT_OK_AND_ASSIGN(auto original, InferenceSession::Create(options));
  const std::string path = Path("model.zfckpt");
  ASSERT_OK_AND_ASSIGN(CheckpointManifest written,
                       original->Save(path, {.version = 17, .training_step = 1234}));
  EXPECT_EQ(written.game, "connect4");
  EXPECT_EQ(written.version, 17);
  EXPECT_FALSE(written.torch_version.empty());

  ASSERT_OK_AND_ASSIGN(auto loaded, InferenceSession::Create({.checkpoint_path = path}));
  EXPECT_EQ(loaded->shape(), SmallShape());
  EXPECT_EQ(loaded->version(), 17);
  EXPECT_EQ(loaded->game(), "connect4");
  ASSERT_OK_AND_ASSIGN(CheckpointManifest manifest, ReadManifest(path));
  EXPECT_EQ(manifest.training_step, 1234);

  const int batch = 9;
  const auto planes = RandomPlanes(SmallShape(), batch, 5);
  const Outputs before = RunOrDie(*original, planes, batch);
  const Outputs after = RunOrDie(*loaded, planes, batch);
  EXPECT_EQ(before.logits, after.logits);
  EXPECT_EQ(before.wdl, after.wdl);

  // Saving the loaded network again gives the same weights.
  ASSERT_OK_AND_ASSIGN(CheckpointManifest again, loaded->Save(Path("again.zfckpt"), {}));
  EXPECT_EQ(again.version, 17);
  ASSERT_OK_AND_ASSIGN(Checkpoint first, ReadCheckpoint(path));
  ASSERT_OK_AND_ASSIGN(Checkpoint second, ReadCheckpoint(Path("again.zfckpt")));
  ASSERT_OK_AND_ASSIGN(auto reloaded,
                       InferenceSession::Create({.checkpoint_path = Path("again.zfckpt")}));
  EXPECT_EQ(RunOrDie(*reloaded, planes, batch).logits, before.logits);
}

TEST_F(InferenceSessionTest, WrongSizesAreInvalidArgument) {
  ASSERT_OK_AND_ASSIGN(auto session, InferenceSession::CreateFresh(SmallShape(), 1));
  const auto planes = RandomPlanes(SmallShape(), 2, 1);
  std::vector<float> logits(14), wdl(6);
  EXPECT_OK(session->Run(planes, 2, logits, wdl));
  EXPECT_THAT(session->Run(planes, 3, logits, wdl),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("planes"), HasSubstr("252"), HasSubstr("378"))));
  EXPECT_THAT(session->Run(std::span<const uint8_t>(planes).first(100), 2, logits, wdl),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("planes has 100")));
  std::vector<float> short_logits(13);
  EXPECT_THAT(session->Run(planes, 2, short_logits, wdl),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("policy_logits has 13"), HasSubstr("expected 14"))));
  std::vector<float> long_wdl(7);
  EXPECT_THAT(session->Run(planes, 2, logits, long_wdl),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("wdl_probs has 7"), HasSubstr("expected 6"))));
  EXPECT_THAT(session->Run(planes, -1, logits, wdl),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("batch")));
  EXPECT_OK(session->Run({}, 0, {}, {}));
}

TEST_F(InferenceSessionTest, MissingCheckpointIsNotFound) {
  EXPECT_THAT(InferenceSession::Create({.checkpoint_path = Path("absent.zfckpt")}),
              StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(InferenceSessionTest, CorruptCheckpointIsDataLoss) {
  ASSERT_OK_AND_ASSIGN(auto session, InferenceSession::CreateFresh(SmallShape(), 1));
  const std::string path = Path("model.zfckpt");
  ASSERT_OK(session->Save(path, {.game = "connect4"}));
  const auto size = fs::file_size(path);
  fs::resize_file(path, size - 10);
  EXPECT_THAT(InferenceSession::Create({.checkpoint_path = path}),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("truncated")));
}

TEST_F(InferenceSessionTest, WeightsThatDoNotFitTheManifestAreDataLoss) {
  // A well-formed file whose weights belong to another network shape.
  NetworkShape wider = SmallShape();
  wider.filters = 24;
  ASSERT_OK_AND_ASSIGN(auto session, InferenceSession::CreateFresh(wider, 1));
  const std::string path = Path("model.zfckpt");
  ASSERT_OK(session->Save(path, {.game = "connect4"}));
  ASSERT_OK_AND_ASSIGN(Checkpoint checkpoint, ReadCheckpoint(path));
  checkpoint.manifest.shape = SmallShape();
  ASSERT_OK(WriteCheckpoint(path, checkpoint));
  EXPECT_THAT(InferenceSession::Create({.checkpoint_path = path}),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr(path), HasSubstr("do not match the network shape"))));

  // And weights that are not a LibTorch archive at all.
  checkpoint.weights = "not a zip archive";
  ASSERT_OK(WriteCheckpoint(path, checkpoint));
  EXPECT_THAT(InferenceSession::Create({.checkpoint_path = path}),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("the weights do not load")));
}

TEST_F(InferenceSessionTest, CheckpointMustMatchTheOptions) {
  ASSERT_OK_AND_ASSIGN(auto session, InferenceSession::CreateFresh(SmallShape(), 1));
  const std::string path = Path("model.zfckpt");
  ASSERT_OK(session->Save(path, {.game = "connect4"}));
  NetworkShape other = SmallShape();
  other.blocks = 3;
  EXPECT_THAT(InferenceSession::Create({.checkpoint_path = path, .shape = other}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("3 blocks")));
  EXPECT_THAT(InferenceSession::Create({.checkpoint_path = path, .game = "tictactoe"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("tictactoe")));
  EXPECT_OK(InferenceSession::Create(
      {.checkpoint_path = path, .shape = SmallShape(), .game = "connect4"}));
}

// A server started from flags (a shape without aux heads) follows a learner that trains them:
// the heads' weights load and change no policy or value the server computes.
TEST_F(InferenceSessionTest, AuxHeadsDoNotCountWhenMatchingTheOptions) {
  NetworkShape aux = SmallShape();
  aux.aux_heads = true;
  ASSERT_OK_AND_ASSIGN(auto trained, InferenceSession::CreateFresh(aux, 5));
  const std::string path = Path("aux.zfckpt");
  ASSERT_OK(trained->Save(path, {.game = "connect4"}));
  ASSERT_OK_AND_ASSIGN(auto served,
                       InferenceSession::Create(
                           {.checkpoint_path = path, .shape = SmallShape(), .game = "connect4"}));
  EXPECT_TRUE(served->shape().aux_heads);
  const auto planes = RandomPlanes(SmallShape(), 4, 9);
  EXPECT_EQ(RunOrDie(*served, planes, 4).logits, RunOrDie(*trained, planes, 4).logits);
  // Without aux heads the same seed gives the same outputs: the heads are extra parameters.
  ASSERT_OK_AND_ASSIGN(auto plain, InferenceSession::CreateFresh(SmallShape(), 5));
  EXPECT_EQ(RunOrDie(*plain, planes, 4).wdl, RunOrDie(*trained, planes, 4).wdl);
}

// The score head at inference (search's score utility): the same policy and value as without
// it, one finite score per row that does not depend on the batch, and a clear error where the
// network has no score head or the span is the wrong size.
TEST_F(InferenceSessionTest, ScoresComeWithTheSameAnswersFromANetworkWithTheScoreHead) {
  NetworkShape aux = SmallShape();
  aux.aux_heads = true;
  ASSERT_OK_AND_ASSIGN(auto session, InferenceSession::CreateFresh(aux, 5));
  const int batch = 5;
  const auto planes = RandomPlanes(aux, batch, 11);
  const Outputs plain = RunOrDie(*session, planes, batch);
  Outputs out{std::vector<float>(batch * 7), std::vector<float>(batch * 3)};
  std::vector<float> scores(batch, NAN);
  ASSERT_OK(session->Run(planes, batch, out.logits, out.wdl, scores));
  EXPECT_EQ(out.logits, plain.logits);
  EXPECT_EQ(out.wdl, plain.wdl);
  for (const float s : scores) EXPECT_TRUE(std::isfinite(s));
  EXPECT_NE(scores[0], scores[1]);  // a function of the position, not a constant
  const int64_t plane_size = aux.PlaneSize();
  for (int i = 0; i < batch; ++i) {
    const std::vector<uint8_t> one(planes.begin() + i * plane_size,
                                   planes.begin() + (i + 1) * plane_size);
    std::vector<float> logits(7), wdl(3), score(1);
    ASSERT_OK(session->Run(one, 1, logits, wdl, score));
    EXPECT_NEAR(score[0], scores[i], 1e-4f);
  }

  std::vector<float> wrong(batch - 1);
  EXPECT_THAT(session->Run(planes, batch, out.logits, out.wdl, wrong),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("scores")));
  ASSERT_OK_AND_ASSIGN(auto no_head, InferenceSession::CreateFresh(SmallShape(), 5));
  EXPECT_THAT(no_head->Run(planes, batch, out.logits, out.wdl, scores),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no score head")));
}

// Global pooling changes what the network computes: a server whose shape says otherwise refuses
// the checkpoint, and one that says so serves it as it was trained.
TEST_F(InferenceSessionTest, GlobalPoolingCountsWhenMatchingTheOptions) {
  NetworkShape pooled = SmallShape();
  pooled.global_pooling = true;
  ASSERT_OK_AND_ASSIGN(auto trained, InferenceSession::CreateFresh(pooled, 5));
  const std::string path = Path("pooled.zfckpt");
  ASSERT_OK(trained->Save(path, {.game = "connect4"}));
  EXPECT_THAT(InferenceSession::Create({.checkpoint_path = path, .shape = SmallShape()}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("global pooling")));
  ASSERT_OK_AND_ASSIGN(
      auto served,
      InferenceSession::Create({.checkpoint_path = path, .shape = pooled, .game = "connect4"}));
  EXPECT_TRUE(served->shape().global_pooling);
  const auto planes = RandomPlanes(pooled, 4, 9);
  EXPECT_EQ(RunOrDie(*served, planes, 4).logits, RunOrDie(*trained, planes, 4).logits);
  EXPECT_EQ(RunOrDie(*served, planes, 4).wdl, RunOrDie(*trained, planes, 4).wdl);
}

TEST_F(InferenceSessionTest, BadOptionsAreInvalidArgument) {
  EXPECT_THAT(InferenceSession::Create({}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("needs a shape")));
  NetworkShape bad = SmallShape();
  bad.num_actions = 0;
  EXPECT_THAT(InferenceSession::Create({.shape = bad}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("num_actions")));
  EXPECT_THAT(InferenceSession::Create({.shape = SmallShape(), .device = "tpu"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("tpu")));
  EXPECT_THAT(InferenceSession::Create({.shape = SmallShape(), .device = "cuda:x"}),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(InferenceSession::Create({.shape = SmallShape(), .intra_op_threads = -1}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("intra_op_threads")));
  EXPECT_THAT(InferenceSession::Create({.shape = SmallShape(), .precision = "fp8"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("fp8")));
  EXPECT_THAT(InferenceSession::Create({.shape = SmallShape(), .max_batch = 0}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("max_batch")));
  EXPECT_THAT(InferenceSession::Create({.shape = SmallShape(), .concurrency = 17}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("concurrency")));
}

TEST_F(InferenceSessionTest, ReducedPrecisionNeedsCuda) {
  EXPECT_THAT(
      InferenceSession::Create({.shape = SmallShape(), .device = "cpu", .precision = "bf16"}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("needs a CUDA device")));
  ASSERT_OK_AND_ASSIGN(
      auto session,
      InferenceSession::Create({.shape = SmallShape(), .device = "cpu", .precision = "auto"}));
  EXPECT_EQ(session->precision(), "fp32");
}

TEST_F(InferenceSessionTest, CudaWithoutCudaIsInvalidArgument) {
  if (CudaAvailable()) GTEST_SKIP() << "CUDA is available; the gpu test covers this path";
  EXPECT_THAT(InferenceSession::Create({.shape = SmallShape(), .device = "cuda"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("CUDA")));
  ASSERT_OK_AND_ASSIGN(auto session,
                       InferenceSession::Create({.shape = SmallShape(), .device = "auto"}));
  EXPECT_EQ(session->device(), "cpu");
}

TEST_F(InferenceSessionTest, SaveNeedsAGame) {
  ASSERT_OK_AND_ASSIGN(auto session, InferenceSession::CreateFresh(SmallShape(), 1));
  EXPECT_THAT(session->Save(Path("model.zfckpt"), {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("game")));
  EXPECT_FALSE(fs::exists(Path("model.zfckpt")));
}

TEST_F(InferenceSessionTest, ConcurrentRunsAgreeWithSerialRuns) {
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<const InferenceSession> session,
                       InferenceSession::CreateFresh(SmallShape(), 8));
  constexpr int kThreads = 4;
  constexpr int kRuns = 20;
  std::vector<std::vector<uint8_t>> inputs;
  std::vector<Outputs> expected;
  for (int t = 0; t < kThreads; ++t) {
    inputs.push_back(RandomPlanes(SmallShape(), 1 + t, 100 + t));
    expected.push_back(RunOrDie(*session, inputs.back(), 1 + t));
  }
  std::vector<int> mismatches(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRuns; ++r) {
        const Outputs out = RunOrDie(*session, inputs[t], 1 + t);
        if (out.logits != expected[t].logits || out.wdl != expected[t].wdl) ++mismatches[t];
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_THAT(mismatches, ::testing::Each(0));
}

TEST_F(InferenceSessionTest, IntraOpThreadsAreProcessWide) {
  EXPECT_THAT(SetIntraOpThreads(0), StatusIs(absl::StatusCode::kInvalidArgument));
  ASSERT_OK(SetIntraOpThreads(2));
  EXPECT_EQ(IntraOpThreads(), 2);
  int seen_by_other_thread = 0;
  std::thread([&] { seen_by_other_thread = IntraOpThreads(); }).join();
  EXPECT_EQ(seen_by_other_thread, 2);
  // Creating a session with the default options sets 1 thread.
  ASSERT_OK(InferenceSession::CreateFresh(SmallShape(), 1));
  EXPECT_EQ(IntraOpThreads(), 1);
  std::thread([&] { seen_by_other_thread = IntraOpThreads(); }).join();
  EXPECT_EQ(seen_by_other_thread, 1);
}

}  // namespace
}  // namespace zf::model
