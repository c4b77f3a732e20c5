// `zf inference` as an operator runs it: a real process serving a checkpoint over gRPC, answering
// the client with the same numbers as the in-process network, reloading on SIGHUP (refusing a
// corrupt file and serving on), draining and exiting 0 on SIGTERM; and its usage errors.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/grpc/channel.h"
#include "common/testing/status_matchers.h"
#include "common/testing/wait.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "inference_server/client/remote_evaluator_client.h"
#include "model/inference_session.h"
#include "proto/grpc/health/v1/health.grpc.pb.h"
#include "tests/zf_cli_testing.h"

extern char** environ;

namespace zf {
namespace {

using ::testing::HasSubstr;
using ::zf::testing::ExpectUsageError;
using ::zf::testing::ProcessResult;
using ::zf::testing::Zf;

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// `zf ARGS` in the background, stdout and stderr to files; killed by the destructor if running.
class ZfServer {
 public:
  ZfServer(const std::vector<std::string>& args, const std::filesystem::path& dir)
      : out_(dir / "server.stdout"), err_(dir / "server.stderr") {
    std::vector<std::string> argv = {ZF_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> cargv;
    for (std::string& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    EXPECT_EQ(posix_spawn(&pid_, ZF_BINARY, &actions, nullptr, cargv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&actions);
  }
  ~ZfServer() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  void Signal(int signal) { kill(pid_, signal); }
  // The exit code, or -1 if it has not exited within `timeout`.
  int Wait(absl::Duration timeout) {
    int status = 0;
    const bool exited =
        testing::WaitFor([&] { return waitpid(pid_, &status, WNOHANG) == pid_; }, timeout);
    if (!exited) return -1;
    pid_ = 0;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  std::string Stdout() const { return ReadFile(out_); }
  std::string Stderr() const { return ReadFile(err_); }
  // Waits for the "on port N" line; 0 if it does not come.
  int Port() const {
    int port = 0;
    testing::WaitFor(
        [&] {
          std::string out = Stdout();
          size_t at = out.find(" on port ");
          if (at == std::string::npos) return false;
          size_t end = out.find_first_not_of("0123456789", at + 9);
          return absl::SimpleAtoi(out.substr(at + 9, end - at - 9), &port);
        },
        absl::Seconds(60));
    return port;
  }

 private:
  std::filesystem::path out_, err_;
  pid_t pid_ = 0;
};

class CliInferenceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::path(::testing::TempDir()) / absl::StrCat("cli_inference_test_", getpid());
    std::filesystem::create_directories(dir_);
    checkpoint_ = (dir_ / "model.zfckpt").string();
    ProcessResult r = Zf({"checkpoint", "new", "--game", "tictactoe", "--blocks", "1", "--filters",
                          "8", "--seed", "5", "--out", checkpoint_});
    ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path dir_;
  std::string checkpoint_;
};

// Sends one batch of tictactoe-shaped planes; returns the answer.
absl::StatusOr<inference::RemoteEvaluatorClient::Result> EvaluateOnce(
    inference::RemoteEvaluatorClient& client, const std::vector<uint8_t>& planes, int rows) {
  absl::Notification done;
  absl::StatusOr<inference::RemoteEvaluatorClient::Result> result;
  absl::Status submitted =
      client.Submit(planes, rows, [&](absl::StatusOr<inference::RemoteEvaluatorClient::Result> r) {
        result = std::move(r);
        done.Notify();
      });
  if (!submitted.ok()) return submitted;
  if (!done.WaitForNotificationWithTimeout(absl::Seconds(60))) {
    return absl::DeadlineExceededError("no answer");
  }
  return result;
}

TEST_F(CliInferenceTest, ServesReloadsOnSighupAndDrainsOnSigterm) {
  ZfServer server({"inference", "--listen", "127.0.0.1:0", "--checkpoint", checkpoint_,
                   "--max_batch", "16", "--max_delay_us", "500"},
                  dir_);
  const int port = server.Port();
  ASSERT_GT(port, 0) << server.Stdout() << server.Stderr();
  EXPECT_THAT(server.Stdout(), HasSubstr("zf inference: serving tictactoe"));

  auto health =
      grpc::health::v1::Health::NewStub(grpc_util::CreateChannel(absl::StrCat("127.0.0.1:", port)));
  grpc::ClientContext health_context;
  health_context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  grpc::health::v1::HealthCheckResponse health_response;
  ASSERT_TRUE(health->Check(&health_context, {}, &health_response).ok());
  EXPECT_EQ(health_response.status(), grpc::health::v1::HealthCheckResponse::SERVING);

  inference::RemoteEvaluatorClient::Options options;
  options.target = absl::StrCat("127.0.0.1:", port);
  options.input_channels = 3;  // tictactoe planes are [3, 3, 3]
  options.board_height = 3;
  options.board_width = 3;
  ASSERT_OK_AND_ASSIGN(auto client, inference::RemoteEvaluatorClient::Create(options));
  ASSERT_OK_AND_ASSIGN(zerofleet::v1::ModelInfo info, client->GetModelInfo(absl::Seconds(30)));
  EXPECT_EQ(info.game(), "tictactoe");
  EXPECT_EQ(info.input_channels(), 3);
  EXPECT_EQ(info.num_actions(), 9);
  EXPECT_EQ(info.version(), 0);

  // The served network computes what the same checkpoint computes in process.
  model::InferenceSession::Options local_options;
  local_options.checkpoint_path = checkpoint_;
  ASSERT_OK_AND_ASSIGN(auto local, model::InferenceSession::Create(local_options));
  constexpr int kRows = 5;
  std::vector<uint8_t> planes(kRows * 27);
  for (size_t i = 0; i < planes.size(); ++i) planes[i] = (i * 7 + i / 5) % 3 == 0;
  std::vector<float> logits(kRows * 9), wdl(kRows * 3);
  ASSERT_OK(local->Run(planes, kRows, logits, wdl));
  ASSERT_OK_AND_ASSIGN(auto answer, EvaluateOnce(*client, planes, kRows));
  ASSERT_EQ(answer.policy_logits.size(), logits.size());
  for (size_t i = 0; i < logits.size(); ++i) EXPECT_NEAR(answer.policy_logits[i], logits[i], 1e-4);
  for (size_t i = 0; i < wdl.size(); ++i) EXPECT_NEAR(answer.wdl[i], wdl[i], 1e-4);

  // A corrupt checkpoint is refused on SIGHUP; the old model keeps serving.
  const std::string good = ReadFile(checkpoint_);
  { std::ofstream(checkpoint_, std::ios::trunc) << "not a checkpoint"; }
  server.Signal(SIGHUP);
  ASSERT_TRUE(testing::WaitFor([&] { return server.Stderr().find("refused") != std::string::npos; },
                               absl::Seconds(60)))
      << server.Stderr();
  EXPECT_OK(EvaluateOnce(*client, planes, kRows).status());
  // A good one is loaded.
  { std::ofstream(checkpoint_, std::ios::trunc | std::ios::binary) << good; }
  server.Signal(SIGHUP);
  ASSERT_TRUE(testing::WaitFor(
      [&] { return server.Stderr().find("reloaded") != std::string::npos; }, absl::Seconds(60)))
      << server.Stderr();
  EXPECT_OK(EvaluateOnce(*client, planes, kRows).status());

  client->Close();
  server.Signal(SIGTERM);
  EXPECT_EQ(server.Wait(absl::Seconds(60)), 0) << server.Stderr();
  EXPECT_THAT(server.Stderr(), HasSubstr("stopped"));
}

TEST(CliInferenceUsageTest, BadFlagsAreUsageErrors) {
  ExpectUsageError({"inference", "--listen", "127.0.0.1:0", "--max_batch", "0"}, "--max_batch");
  ExpectUsageError({"inference", "--listen", "127.0.0.1:0", "--workers", "99"}, "--workers");
  ExpectUsageError({"inference", "--listen", "127.0.0.1:0", "--game", "chess"}, "chess");
  ExpectUsageError({"inference", "extra"}, "positional");
  ExpectUsageError(
      {"inference", "--listen", "127.0.0.1:0", "--game", "tictactoe", "--precision", "fp8"},
      "precision");
  ExpectUsageError(
      {"inference", "--listen", "127.0.0.1:0", "--game", "tictactoe", "--device", "tpu"}, "tpu");
  ExpectUsageError({"inference", "--listen", "nonsense", "--game", "tictactoe", "--blocks", "1",
                    "--filters", "8"},
                   "nonsense");
}

}  // namespace
}  // namespace zf
