// `zf health` and `zf top` against real processes: a `zf replay` shard (gRPC health and /metrics)
// and, for the NOT_SERVING case, an in-test gRPC server whose health service says NOT_SERVING.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "common/grpc/channel.h"
#include "common/testing/background_process.h"
#include "common/testing/status_matchers.h"
#include "common/testing/wait.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/zf_cli_testing.h"

namespace zf {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using ::zf::testing::BackgroundProcess;
using ::zf::testing::ExpectUsageError;
using ::zf::testing::ProcessResult;
using ::zf::testing::Zf;

constexpr absl::Duration kTimeout = absl::Seconds(60);

// The number after `marker` in the process's stdout ("... on port N" / "metrics on HOST:N"),
// 0 if it does not appear within kTimeout.
int PortAfter(BackgroundProcess& process, const std::string& marker) {
  int port = 0;
  testing::WaitFor(
      [&] {
        const std::string out = process.Stdout();
        const size_t at = out.find(marker);
        if (at == std::string::npos) return false;
        size_t end = at + marker.size();
        while (end < out.size() && out[end] != ',' && out[end] != '\n') ++end;
        if (end == out.size()) return false;
        const std::string text = out.substr(at + marker.size(), end - at - marker.size());
        const size_t digits =
            text.find_last_of(" :") == std::string::npos ? 0 : text.find_last_of(" :") + 1;
        return absl::SimpleAtoi(text.substr(digits), &port);
      },
      kTimeout);
  return port;
}

// Exactly one line on stderr.
int Lines(const std::string& text) {
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

class CliOpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) / absl::StrCat("cli_ops_test_", getpid());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Starts `zf replay` with gRPC and metrics on free loopback ports.
  void StartReplay() {
    ASSERT_OK_AND_ASSIGN(
        replay_,
        BackgroundProcess::Start({ZF_BINARY, "replay", "--dir", (dir_ / "shard").string(),
                                  "--listen", "127.0.0.1:0", "--metrics_listen", "127.0.0.1:0"},
                                 (dir_ / "replay").string()));
    grpc_port_ = PortAfter(*replay_, " on port ");
    metrics_port_ = PortAfter(*replay_, "metrics on ");
    ASSERT_GT(grpc_port_, 0) << replay_->Stdout() << replay_->Stderr();
    ASSERT_GT(metrics_port_, 0) << replay_->Stdout() << replay_->Stderr();
  }

  void StopReplay() {
    replay_->Signal(SIGTERM);
    ASSERT_OK_AND_ASSIGN(const int exit_code, replay_->Wait(kTimeout));
    EXPECT_EQ(exit_code, 0) << replay_->Stderr();
  }

  std::filesystem::path dir_;
  std::unique_ptr<BackgroundProcess> replay_;
  int grpc_port_ = 0;
  int metrics_port_ = 0;
};

TEST_F(CliOpsTest, HealthOfARealReplayShard) {
  StartReplay();
  const std::string target = absl::StrCat("127.0.0.1:", grpc_port_);
  // NOT_SERVING until the shard has recovered its log; then SERVING.
  ProcessResult r;
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        r = Zf({"health", absl::StrCat("--target=", target)});
        return r.exit_code == 0;
      },
      kTimeout))
      << r.stderr_text;
  EXPECT_EQ(r.stdout_text, "SERVING\n");
  EXPECT_EQ(r.stderr_text, "");
  // The flags exactly as docker-compose's health checks pass them, and the spaced form.
  EXPECT_EQ(Zf({"health", "--target", target, "--timeout_ms", "5000"}).exit_code, 0);

  // A service the server does not know: exit 1, one line naming it.
  r = Zf({"health", "--target", target, "--service", "no.such.Service"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.stderr_text, StartsWith("zf health: "));
  EXPECT_THAT(r.stderr_text, HasSubstr("no.such.Service"));
  EXPECT_EQ(Lines(r.stderr_text), 1) << r.stderr_text;

  StopReplay();
  // Nothing listens there any more: unreachable, exit 1, one line.
  r = Zf({"health", "--target", target, "--timeout_ms", "5000"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.stderr_text, HasSubstr(target));
  EXPECT_EQ(Lines(r.stderr_text), 1) << r.stderr_text;
  EXPECT_EQ(r.stdout_text, "");
}

TEST(CliHealthTest, NotServingIsExitOne) {
  // A server with only the default health service, which starts NOT_SERVING.
  grpc::ServerBuilder builder;
  grpc_util::ApplyServerSettings(grpc_util::WireSettings{}, &builder);
  int port = 0;
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<grpc::Server> server,
      grpc_util::StartServer("127.0.0.1:0", grpc_util::WireSettings{}, &builder, &port));
  const std::string target = absl::StrCat("--target=127.0.0.1:", port);
  ProcessResult r = Zf({"health", target});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.stderr_text, HasSubstr("NOT_SERVING"));
  EXPECT_EQ(Lines(r.stderr_text), 1) << r.stderr_text;
  EXPECT_EQ(r.stdout_text, "");
  server->GetHealthCheckService()->SetServingStatus(true);
  r = Zf({"health", target});
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_EQ(r.stdout_text, "SERVING\n");
  server->Shutdown();
}

TEST(CliHealthTest, BadUsageIsExitTwo) {
  ExpectUsageError({"health"}, "--target");
  ExpectUsageError({"health", "--target", "localhost"}, "HOST:PORT");
  ExpectUsageError({"health", "--target", "localhost:0"}, "HOST:PORT");
  ExpectUsageError({"health", "--target", "localhost:7400", "--timeout_ms", "0"}, "--timeout_ms");
  ExpectUsageError({"health", "--target", "localhost:7400", "extra"}, "extra");
}

TEST_F(CliOpsTest, TopOnceJsonAgainstARealReplayShard) {
  StartReplay();
  const std::string metrics = absl::StrCat("127.0.0.1:", metrics_port_);
  ProcessResult r = Zf({"top", "--targets", metrics, "--once", "--json", "--interval_s", "0.2"});
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_EQ(r.stderr_text, "");
  EXPECT_THAT(r.stdout_text, StartsWith("{\"elapsed_seconds\": "));
  EXPECT_THAT(r.stdout_text, HasSubstr(absl::StrCat("{\"target\": \"", metrics,
                                                    "\", \"up\": true, \"roles\": \"replay\"")));
  // An empty shard: one shard, nothing stored, nothing inserted or sampled over the interval.
  EXPECT_THAT(r.stdout_text,
              HasSubstr("\"replay\": {\"shards\": 1, \"positions\": 0, \"games\": 0, "
                        "\"insert_positions_per_second\": 0, "
                        "\"sample_positions_per_second\": 0"));
  EXPECT_THAT(r.stdout_text, HasSubstr("\"actors\": {\"processes\": 0"));
  EXPECT_THAT(r.stdout_text, HasSubstr("\"bottleneck\": {\"component\": \"unknown\""));
  EXPECT_EQ(Lines(r.stdout_text), 1);

  // A dead target beside a live one: listed as down, the view still printed, exit 0.
  StopReplay();
  r = Zf(
      {"top", "--targets", absl::StrCat(metrics, ",127.0.0.1:1"), "--once", "--interval_s", "0.1"});
  // Both are down now: exit 1, the view on stdout, one line on stderr.
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.stdout_text, HasSubstr("127.0.0.1:1 DOWN ("));
  EXPECT_THAT(r.stderr_text, HasSubstr("no target answered"));
  EXPECT_EQ(Lines(r.stderr_text), 1) << r.stderr_text;
}

TEST_F(CliOpsTest, TopTextViewNamesEveryComponentLine) {
  StartReplay();
  const std::string metrics = absl::StrCat("127.0.0.1:", metrics_port_);
  ProcessResult r = Zf(
      {"top", "--targets", absl::StrCat(metrics, ",127.0.0.1:1"), "--once", "--interval_s", "0.2"});
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  for (const char* line :
       {"actors     none scraped", "inference  none scraped", "replay     1 shard(s)   0 positions",
        "learner    none scraped", "bottleneck unknown: ", "1 of 2 targets up"}) {
    EXPECT_THAT(r.stdout_text, HasSubstr(line));
  }
  EXPECT_THAT(r.stdout_text, HasSubstr(absl::StrCat(metrics, " replay")));
  StopReplay();
}

TEST_F(CliOpsTest, TopRefreshesUntilSigint) {
  StartReplay();
  const std::string metrics = absl::StrCat("127.0.0.1:", metrics_port_);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<BackgroundProcess> top,
                       BackgroundProcess::Start({ZF_BINARY, "top", "--targets", metrics,
                                                 "--interval_s", "0.1", "--json"},
                                                (dir_ / "top").string()));
  // Without --once it keeps printing, one JSON object per interval, until SIGINT.
  ASSERT_TRUE(testing::WaitFor([&] { return Lines(top->Stdout()) >= 3; }, kTimeout))
      << top->Stdout() << top->Stderr();
  EXPECT_TRUE(top->Running());
  top->Signal(SIGINT);
  ASSERT_OK_AND_ASSIGN(const int exit_code, top->Wait(kTimeout));
  EXPECT_EQ(exit_code, 0) << top->Stderr();
  for (absl::string_view line : absl::StrSplit(top->Stdout(), '\n', absl::SkipEmpty())) {
    EXPECT_THAT(std::string(line), StartsWith("{\"elapsed_seconds\": "));
    EXPECT_THAT(std::string(line), HasSubstr("\"roles\": \"replay\""));
  }
  StopReplay();
}

TEST(CliTopTest, BadUsageIsExitTwo) {
  ExpectUsageError({"top"}, "--targets");
  ExpectUsageError({"top", "--targets", "nohost"}, "no port");
  ExpectUsageError({"top", "--targets", "127.0.0.1:9100,h:0"}, "1..65535");
  ExpectUsageError({"top", "--targets", "127.0.0.1:9100", "--interval_s", "0"}, "--interval_s");
  ExpectUsageError({"top", "--targets", "127.0.0.1:9100", "--interval_s", "x"}, "interval_s");
}

}  // namespace
}  // namespace zf
