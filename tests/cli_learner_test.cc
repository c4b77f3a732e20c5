// `zf learner` as an operator runs it: a real `zf replay` shard filled with synthetic tic-tac-toe
// games, the learner training from it, publishing checkpoints that `zf checkpoint show` reads
// through DIR/checkpoints/latest, and stopping cleanly on SIGTERM with a final checkpoint.
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/grpc/channel.h"
#include "common/testing/background_process.h"
#include "common/testing/status_matchers.h"
#include "common/testing/wait.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/checkpoint.h"
#include "proto/zerofleet/v1/inference.grpc.pb.h"
#include "proto/zerofleet/v1/replay.grpc.pb.h"
#include "tests/zf_cli_testing.h"

namespace zf {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::zf::testing::BackgroundProcess;
using ::zf::testing::ProcessResult;
using ::zf::testing::Zf;

// A valid tic-tac-toe-shaped record (3 planes of 3x3, 9 actions) of random positions.
zerofleet::v1::GameRecord TicTacToeRecord(const std::string& id, int n, std::mt19937_64& rng) {
  zerofleet::v1::GameRecord r;
  r.set_game_id(id);
  r.set_game("tictactoe");
  r.mutable_plane_shape()->set_channels(3);
  r.mutable_plane_shape()->set_height(3);
  r.mutable_plane_shape()->set_width(3);
  r.set_num_actions(9);
  r.set_num_positions(n);
  std::string planes(static_cast<size_t>(n * 27), '\0');
  for (char& c : planes) c = static_cast<char>(rng() % 2);
  std::vector<float> policy(static_cast<size_t>(n * 9), 0.0f);
  std::string to_play, full;
  for (int i = 0; i < n; ++i) {
    policy[static_cast<size_t>(i * 9 + static_cast<int>(rng() % 9))] = 1.0f;
    to_play.push_back(static_cast<char>(i % 2));
    full.push_back(1);
  }
  r.set_planes(planes);
  r.set_policy(std::string(reinterpret_cast<const char*>(policy.data()), policy.size() * 4));
  r.set_to_play(to_play);
  r.set_full_search(full);
  r.add_returns(1.0f);
  r.add_returns(-1.0f);
  r.add_model_versions(0);
  return r;
}

// The number after `prefix` in `text`, or -1.
int NumberAfter(const std::string& text, const std::string& prefix) {
  const size_t at = text.find(prefix);
  if (at == std::string::npos) return -1;
  const size_t start = at + prefix.size();
  const size_t end = text.find_first_not_of("0123456789", start);
  int value = -1;
  if (!absl::SimpleAtoi(text.substr(start, end - start), &value)) return -1;
  return value;
}

class CliLearnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           absl::StrCat("cli_learner_test_", getpid(), "_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    ASSERT_OK_AND_ASSIGN(
        replay_, BackgroundProcess::Start({ZF_BINARY, "replay", "--listen", "127.0.0.1:0", "--dir",
                                           (dir_ / "replay").string(), "--capacity", "100000",
                                           "--min_size_to_sample", "50"},
                                          (dir_ / "replay").string()));
    int port = -1;
    ASSERT_TRUE(zf::testing::WaitFor(
        [&] {
          port = NumberAfter(replay_->Stdout(), " on port ");
          return port > 0 || !replay_->Running();
        },
        absl::Seconds(60)));
    ASSERT_GT(port, 0) << replay_->Stderr();
    replay_address_ = absl::StrCat("127.0.0.1:", port);

    auto stub = zerofleet::v1::Replay::NewStub(grpc_util::CreateChannel(replay_address_));
    std::mt19937_64 rng(3);
    zerofleet::v1::InsertRequest request;
    for (int g = 0; g < 30; ++g)
      *request.add_games() = TicTacToeRecord(absl::StrCat("g", g), 7, rng);
    zerofleet::v1::InsertResponse response;
    grpc::Status status;
    // The shard answers UNAVAILABLE until it has recovered its log.
    ASSERT_TRUE(zf::testing::WaitFor(
        [&] {
          grpc::ClientContext context;
          context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
          status = stub->Insert(&context, request, &response);
          return status.error_code() != grpc::StatusCode::UNAVAILABLE;
        },
        absl::Seconds(60)));
    ASSERT_TRUE(status.ok()) << status.error_message();
  }

  void TearDown() override {
    if (replay_) {
      replay_->Signal(SIGTERM);
      (void)replay_->Wait(absl::Seconds(30));
    }
    fs::remove_all(dir_);
  }

  std::vector<std::string> LearnerArgs() const {
    return {"learner",
            "--game",
            "tictactoe",
            "--replay",
            replay_address_,
            "--dir",
            (dir_ / "run").string(),
            "--batch_size",
            "32",
            "--blocks",
            "1",
            "--filters",
            "8",
            "--threads",
            "1",
            "--device",
            "cpu"};
  }

  fs::path dir_;
  std::unique_ptr<BackgroundProcess> replay_;
  std::string replay_address_;
};

TEST_F(CliLearnerTest, TrainsPublishesAndLatestLoads) {
  std::vector<std::string> args = LearnerArgs();
  for (const char* a : {"--max_steps", "20", "--steps_per_checkpoint", "10"}) args.push_back(a);
  ProcessResult r = Zf(args);
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, HasSubstr("20 steps"));
  const fs::path checkpoints = dir_ / "run" / "checkpoints";
  // Version 1 is the initial network; steps 10 and 20 published versions 2 and 3.
  for (const char* name : {"ckpt-000000000002.zfckpt", "ckpt-000000000003.zfckpt"}) {
    EXPECT_TRUE(fs::exists(checkpoints / name)) << name;
  }
  EXPECT_FALSE(fs::exists(checkpoints / "ckpt-000000000004.zfckpt"));
  ASSERT_OK_AND_ASSIGN(model::Checkpoint latest,
                       model::ReadCheckpoint((checkpoints / "latest").string()));
  EXPECT_EQ(latest.manifest.version, 3);
  EXPECT_EQ(latest.manifest.training_step, 20);
  EXPECT_EQ(latest.manifest.game, "tictactoe");

  ProcessResult show = Zf({"checkpoint", "show", (checkpoints / "latest").string()});
  EXPECT_EQ(show.exit_code, 0) << show.stderr_text;
  EXPECT_THAT(show.stdout_text, HasSubstr("tictactoe"));
  // And it plays: `net:DIR/checkpoints/latest:SIMS`.
  ProcessResult match = Zf({"match", "--game", "tictactoe", "--p1",
                            absl::StrCat("net:", (checkpoints / "latest").string(), ":4"), "--p2",
                            "random", "--games", "2"});
  EXPECT_EQ(match.exit_code, 0) << match.stderr_text;

  // Resuming continues the step and version count.
  args = LearnerArgs();
  for (const char* a : {"--max_steps", "25", "--steps_per_checkpoint", "10"}) args.push_back(a);
  r = Zf(args);
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, HasSubstr("step 20 version 3"));
  ASSERT_OK_AND_ASSIGN(latest, model::ReadCheckpoint((checkpoints / "latest").string()));
  EXPECT_EQ(latest.manifest.version, 4);
  EXPECT_EQ(latest.manifest.training_step, 25);
}

TEST_F(CliLearnerTest, SigtermFinishesTheStepAndCheckpoints) {
  std::vector<std::string> args = LearnerArgs();
  args.insert(args.begin(), ZF_BINARY);
  for (const char* a : {"--steps_per_checkpoint", "5"}) args.push_back(a);
  ASSERT_OK_AND_ASSIGN(auto learner, BackgroundProcess::Start(args, (dir_ / "learner").string()));
  const fs::path second = dir_ / "run" / "checkpoints" / "ckpt-000000000002.zfckpt";
  ASSERT_TRUE(zf::testing::WaitFor([&] { return fs::exists(second) || !learner->Running(); },
                                   absl::Seconds(120)))
      << learner->Stderr();
  learner->Signal(SIGTERM);
  ASSERT_OK_AND_ASSIGN(int code, learner->Wait(absl::Seconds(60)));
  EXPECT_EQ(code, 0) << learner->Stderr();
  ASSERT_OK_AND_ASSIGN(model::Checkpoint latest,
                       model::ReadCheckpoint((dir_ / "run" / "checkpoints" / "latest").string()));
  EXPECT_GE(latest.manifest.version, 2);
  EXPECT_GE(latest.manifest.training_step, 5);
  EXPECT_THAT(learner->Stdout(), HasSubstr(absl::StrCat("version ", latest.manifest.version)));
}

// The fleet path: `zf learner --listen` serves its checkpoints, `zf inference --model_service`
// follows them; the version the inference server reports goes up while both run.
TEST_F(CliLearnerTest, InferenceFollowsTheLearnersModelService) {
  std::vector<std::string> args = LearnerArgs();
  args.insert(args.begin(), ZF_BINARY);
  for (const char* a : {"--steps_per_checkpoint", "3", "--listen", "127.0.0.1:0"})
    args.push_back(a);
  ASSERT_OK_AND_ASSIGN(auto learner, BackgroundProcess::Start(args, (dir_ / "learner").string()));
  int model_port = -1;
  ASSERT_TRUE(zf::testing::WaitFor(
      [&] {
        model_port = NumberAfter(learner->Stdout(), "model service on port ");
        return model_port > 0 || !learner->Running();
      },
      absl::Seconds(120)));
  ASSERT_GT(model_port, 0) << learner->Stderr();

  ASSERT_OK_AND_ASSIGN(
      auto inference,
      BackgroundProcess::Start({ZF_BINARY, "inference", "--listen", "127.0.0.1:0", "--checkpoint",
                                (dir_ / "run" / "checkpoints" / "latest").string(), "--max_batch",
                                "8", "--model_service", absl::StrCat("127.0.0.1:", model_port)},
                               (dir_ / "inference").string()));
  int inference_port = -1;
  ASSERT_TRUE(zf::testing::WaitFor(
      [&] {
        inference_port = NumberAfter(inference->Stdout(), " on port ");
        return inference_port > 0 || !inference->Running();
      },
      absl::Seconds(120)));
  ASSERT_GT(inference_port, 0) << inference->Stderr();
  auto stub = zerofleet::v1::Inference::NewStub(
      grpc_util::CreateChannel(absl::StrCat("127.0.0.1:", inference_port)));
  auto version = [&]() -> int64_t {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
    zerofleet::v1::ModelInfo info;
    if (!stub->GetModelInfo(&context, {}, &info).ok()) return -1;
    return info.version();
  };
  const int64_t first = version();
  ASSERT_GE(first, 1);
  ASSERT_TRUE(zf::testing::WaitFor([&] { return version() > first; }, absl::Seconds(120)))
      << inference->Stderr();

  inference->Signal(SIGTERM);
  learner->Signal(SIGTERM);
  ASSERT_OK_AND_ASSIGN(int inference_code, inference->Wait(absl::Seconds(60)));
  EXPECT_EQ(inference_code, 0) << inference->Stderr();
  ASSERT_OK_AND_ASSIGN(int learner_code, learner->Wait(absl::Seconds(60)));
  EXPECT_EQ(learner_code, 0) << learner->Stderr();
}

TEST(CliLearnerUsageTest, BadFlagsAreUsageErrors) {
  zf::testing::ExpectUsageError({"learner", "--game", "tictactoe", "--dir", "/tmp/x"}, "--replay");
  zf::testing::ExpectUsageError({"learner", "--game", "tictactoe", "--replay", "127.0.0.1:1"},
                                "--dir");
  zf::testing::ExpectUsageError({"learner", "--game", "tictactoe", "--replay", "127.0.0.1:1",
                                 "--dir", "/tmp/x", "--optimizer", "adam"},
                                "optimizer");
}

}  // namespace
}  // namespace zf
