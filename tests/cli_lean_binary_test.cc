// The two binaries seen from outside (cli/network_runtime.h): a running `zf actor` maps no
// LibTorch while the `zf inference` it plays against (handed to zf-torch, same PID) does; a `zf`
// with no zf-torch next to it still runs everything that needs no network and says clearly what
// it cannot run.
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/testing/background_process.h"
#include "common/testing/status_matchers.h"
#include "common/testing/subprocess.h"
#include "common/testing/wait.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/zf_cli_testing.h"

namespace zf {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::zf::testing::BackgroundProcess;
using ::zf::testing::ProcessResult;
using ::zf::testing::RunProcess;
using ::zf::testing::ServedPort;
using ::zf::testing::Zf;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool HasGames(const std::string& dir) {
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    if (entry.is_regular_file() && entry.file_size() > 0) return true;
  }
  return false;
}

TEST(CliLeanBinaryTest, TheActorMapsNoLibTorchAndTheInferenceServerDoes) {
  const std::string dir = absl::StrCat(::testing::TempDir(), "/cli_lean_", getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<BackgroundProcess> server,
                       testing::StartTicTacToeInference(dir + "/server"));
  // `zf inference` became zf-torch in place: the PID that was started maps LibTorch.
  EXPECT_THAT(ReadFile(absl::StrCat("/proc/", server->pid(), "/maps")), HasSubstr("libtorch"));

  const std::string games = dir + "/games";
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<BackgroundProcess> actor,
      BackgroundProcess::Start(
          {ZF_BINARY, "actor", "--game=tictactoe",
           absl::StrCat("--inference=127.0.0.1:", ServedPort(server->Stdout())), "--out=" + games,
           "--games=0", "--sims=8", "--workers=1", "--games_per_worker=2", "--seed=5"},
          dir + "/actor"));
  // Playing: games have come back from the server and reached the run directory.
  ASSERT_TRUE(testing::WaitFor([&] { return HasGames(games); }, absl::Seconds(120)))
      << actor->Stderr();
  const std::string maps = ReadFile(absl::StrCat("/proc/", actor->pid(), "/maps"));
  EXPECT_THAT(maps, HasSubstr("libgrpc"));  // the file is the live process's
  EXPECT_THAT(maps, Not(HasSubstr("libtorch")));
  EXPECT_THAT(maps, Not(HasSubstr("libc10")));

  actor->Signal(SIGTERM);
  ASSERT_OK_AND_ASSIGN(int actor_code, actor->Wait(absl::Seconds(60)));
  EXPECT_EQ(actor_code, 0) << actor->Stderr();
  server->Signal(SIGTERM);
  ASSERT_OK_AND_ASSIGN(int server_code, server->Wait(absl::Seconds(60)));
  EXPECT_EQ(server_code, 0) << server->Stderr();
  std::filesystem::remove_all(dir);
}

// `zf` copied where there is no zf-torch, as in the actor image.
class LeanAloneTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) / absl::StrCat("cli_lean_alone_", getpid());
    dir_ = std::filesystem::path(dir_).lexically_normal().string();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    std::filesystem::copy_file(ZF_BINARY, dir_ + "/zf");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  ProcessResult Run(std::vector<std::string> args) {
    args.insert(args.begin(), dir_ + "/zf");
    absl::StatusOr<ProcessResult> result = RunProcess(args);
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? *result : ProcessResult{};
  }

  std::string dir_;
};

TEST_F(LeanAloneTest, RunsWhatNeedsNoNetwork) {
  ProcessResult position = Run({"position", "--game=tictactoe", "--moves=4"});
  EXPECT_EQ(position.exit_code, 0) << position.stderr_text;
  ProcessResult match =
      Run({"match", "--game=tictactoe", "--p1=random", "--p2=mcts:8", "--games=2", "--seed=1"});
  EXPECT_EQ(match.exit_code, 0) << match.stderr_text;
  ProcessResult help = Run({"help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.stdout_text, HasSubstr("actor"));
  EXPECT_THAT(help.stdout_text, HasSubstr("not installed here"));
}

TEST_F(LeanAloneTest, SaysWhatItCannotRunAndWhy) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"inference", "--game=tictactoe"},
           {"inference", "--help"},
           {"match", "--game=tictactoe", "--p1=net:/x.zfckpt:8", "--p2=random"},
           {"actor", "--game=tictactoe", "--local", "--out=/tmp/x"},
       }) {
    ProcessResult r = Run(args);
    EXPECT_EQ(r.exit_code, 1) << args[0];
    EXPECT_THAT(r.stderr_text, HasSubstr(dir_ + "/zf-torch cannot be run")) << args[0];
  }
}

TEST(CliLeanBinaryTest, NetworkCommandsAndPlayersRunThroughZf) {
  // A network command's help comes from zf-torch; a net: player's bad checkpoint is zf-torch's
  // own error, not a missing-runtime one.
  ProcessResult help = Zf({"inference", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.stdout_text, HasSubstr("--max_batch"));
  ProcessResult net = Zf(
      {"match", "--game=tictactoe", "--p1=net:/nonexistent.zfckpt:8", "--p2=random", "--games=1"});
  EXPECT_NE(net.exit_code, 0);
  EXPECT_THAT(net.stderr_text, HasSubstr("nonexistent.zfckpt"));
  EXPECT_THAT(net.stderr_text, Not(HasSubstr("zf-torch")));
}

}  // namespace
}  // namespace zf
