// The /metrics endpoint inside the real, torch-linked `zf` binary: `zf inference` and `zf replay`
// started with --metrics_listen 127.0.0.1:0 serve an exposition that `promtool check metrics`
// accepts and that names the build (zf_build_info). This is the process that links LibTorch,
// OpenBLAS and glog (106 KiB of static TLS), where civetweb's 100 KiB thread stacks could not be
// created; see common/metrics/metrics_server.h.
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/testing/background_process.h"
#include "common/testing/http_get.h"
#include "common/testing/status_matchers.h"
#include "common/testing/wait.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zf {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::zf::testing::BackgroundProcess;
using ::zf::testing::HttpGet;
using ::zf::testing::HttpResponse;

constexpr absl::Duration kTimeout = absl::Seconds(60);

struct CommandResult {
  int exit_code = -1;
  std::string output;
};

// Runs `command` through the shell; returns its exit code and stdout+stderr.
CommandResult RunShell(const std::string& command) {
  CommandResult result;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  size_t n;
  while ((n = ::fread(buffer, 1, sizeof(buffer), pipe)) > 0) result.output.append(buffer, n);
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// `promtool check metrics` on `exposition` (promtool comes with Debian's prometheus package,
// which the bootstrap installs).
CommandResult PromtoolCheck(const std::filesystem::path& dir, const std::string& exposition) {
  const std::filesystem::path path = dir / "scrape.prom";
  FILE* file = ::fopen(path.c_str(), "w");
  if (file == nullptr) return {-1, "cannot write " + path.string()};
  ::fwrite(exposition.data(), 1, exposition.size(), file);
  ::fclose(file);
  return RunShell(absl::StrCat("promtool check metrics < '", path.string(), "'"));
}

// The metrics port from the process's stdout line "... metrics on port N" or
// "... metrics on HOST:N"; 0 if it does not appear within kTimeout.
int MetricsPort(BackgroundProcess& process) {
  int port = 0;
  testing::WaitFor(
      [&] {
        const std::string out = process.Stdout();
        const size_t at = out.find("metrics on ");
        if (at == std::string::npos) return false;
        const size_t end = out.find('\n', at);
        if (end == std::string::npos) return false;
        const std::string line = out.substr(at, end - at);
        const size_t digits = line.find_last_of(" :") + 1;
        return absl::SimpleAtoi(line.substr(digits), &port);
      },
      kTimeout);
  return port;
}

class CliMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::path(::testing::TempDir()) / absl::StrCat("cli_metrics_test_", getpid());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Starts `zf args`, scrapes its /metrics, checks it with promtool, stops it with SIGTERM.
  void ScrapeAndCheck(const std::vector<std::string>& args, const std::string& component) {
    std::vector<std::string> argv = {ZF_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<BackgroundProcess> process,
                         BackgroundProcess::Start(argv, (dir_ / component).string()));
    const int port = MetricsPort(*process);
    ASSERT_GT(port, 0) << process->Stdout() << process->Stderr();
    ASSERT_OK_AND_ASSIGN(HttpResponse response, HttpGet("127.0.0.1", port, "/metrics", kTimeout));
    EXPECT_EQ(response.status_code, 200) << process->Stderr();
    EXPECT_THAT(response.Header("Content-Type"), HasSubstr("text/plain"));
    EXPECT_THAT(response.body, HasSubstr("# TYPE zf_build_info gauge\n"));
    EXPECT_THAT(response.body,
                MatchesRegex(absl::StrCat("(.|\n)*zf_build_info\\{component=\"", component,
                                          "\",version=\"[0-9]+\\.[0-9]+\\.[0-9]+\\+[^\"]+\"\\} 1\n"
                                          "(.|\n)*")));
    // The component's own metrics are there too, not only the build info.
    EXPECT_THAT(response.body, HasSubstr(absl::StrCat("zf_", component, "_")));
    const CommandResult check = PromtoolCheck(dir_, response.body);
    EXPECT_EQ(check.exit_code, 0) << check.output << "\n--- exposition ---\n" << response.body;
    EXPECT_EQ(check.output, "") << "promtool reported problems:\n" << check.output;
    // The process logs where its metrics are.
    EXPECT_THAT(process->Stderr(), HasSubstr(absl::StrCat("metrics on 127.0.0.1:", port)));

    process->Signal(SIGTERM);
    ASSERT_OK_AND_ASSIGN(const int exit_code, process->Wait(kTimeout));
    EXPECT_EQ(exit_code, 0) << process->Stderr();
  }

  std::filesystem::path dir_;
};

TEST_F(CliMetricsTest, InferenceServesPromtoolCleanMetrics) {
  ScrapeAndCheck({"inference", "--game", "tictactoe", "--blocks", "1", "--filters", "8", "--listen",
                  "127.0.0.1:0", "--metrics_listen", "127.0.0.1:0"},
                 "inference");
}

TEST_F(CliMetricsTest, ReplayServesPromtoolCleanMetrics) {
  ScrapeAndCheck({"replay", "--dir", (dir_ / "shard").string(), "--listen", "127.0.0.1:0",
                  "--metrics_listen", "127.0.0.1:0"},
                 "replay");
}

TEST(CliMetricsPromtoolTest, PromtoolIsInstalled) {
  EXPECT_EQ(RunShell("which promtool").exit_code, 0)
      << "promtool is not on PATH: install the Debian package 'prometheus' (the bootstrap does)";
}

}  // namespace
}  // namespace zf
