#include "common/metrics/metrics_server.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/metrics/buckets.h"
#include "common/metrics/exposition.h"
#include "common/testing/http_get.h"
#include "common/testing/status_matchers.h"
#include "common/thread.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace zf::metrics {
namespace {

using ::prometheus::BuildCounter;
using ::prometheus::BuildGauge;
using ::prometheus::BuildHistogram;
using ::prometheus::Histogram;
using ::prometheus::Registry;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::zf::testing::HttpGet;
using ::zf::testing::HttpResponse;
using ::zf::testing::StatusIs;

constexpr absl::Duration kTimeout = absl::Seconds(20);

using Backend = MetricsServer::Backend;

MetricsServer::Options Loopback(Backend backend = Backend::kAuto, int port = 0) {
  MetricsServer::Options options;
  options.listen_address = absl::StrCat("127.0.0.1:", port);
  options.backend = backend;
  return options;
}

// Every behaviour below holds for both HTTP servers.
class MetricsServerTest : public ::testing::TestWithParam<Backend> {};

// A registry with every kind of metric and the characters that need escaping.
std::shared_ptr<Registry> MakeRegistry() {
  auto registry = std::make_shared<Registry>();
  auto& requests = BuildCounter()
                       .Name("zf_test_requests_total")
                       .Help("Requests served, by \"code\".\nA \\ backslash and a second line.")
                       .Labels({{"component", "metrics_test"}})
                       .Register(*registry);
  requests.Add({{"code", "ok"}}).Increment(41);
  requests.Add({{"code", "quote\"back\\slash\nnewline"}}).Increment();
  auto& depth = BuildGauge().Name("zf_test_queue_rows").Help("Rows waiting.").Register(*registry);
  depth.Add({}).Set(-3.25);
  depth.Add({{"queue", "inf"}}).Set(std::numeric_limits<double>::infinity());
  depth.Add({{"queue", "nan"}}).Set(std::numeric_limits<double>::quiet_NaN());
  depth.Add({{"queue", "utf8 é ☃"}}).Set(1e-9);
  auto& latency =
      BuildHistogram().Name("zf_test_latency_seconds").Help("Time to answer.").Register(*registry);
  Histogram& get = latency.Add({{"path", "/metrics"}}, ExponentialBuckets(0.001, 4, 6));
  for (double v : {0.0005, 0.003, 0.003, 0.2, 7.0}) get.Observe(v);
  latency.Add({{"path", "we\"ird\\"}}, Histogram::BucketBoundaries{0.5}).Observe(0.25);
  return registry;
}

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

// Returns the path of promtool, or "" (the caller fails the test: the bootstrap installs it).
std::string FindPromtool() {
  CommandResult which = RunShell("which promtool");
  if (which.exit_code != 0) return "";
  return std::string(absl::StripAsciiWhitespace(which.output));
}

// Pipes `exposition` into `promtool check metrics`.
CommandResult PromtoolCheck(const std::string& promtool, const std::string& exposition) {
  std::string path = ::testing::TempDir() + "/zf_metrics_XXXXXX";
  const int fd = ::mkstemp(path.data());
  if (fd < 0) return {-1, "mkstemp failed"};
  size_t written = 0;
  while (written < exposition.size()) {
    const ssize_t n = ::write(fd, exposition.data() + written, exposition.size() - written);
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
  ::close(fd);
  CommandResult result = RunShell(absl::StrCat("'", promtool, "' check metrics < '", path, "'"));
  ::unlink(path.c_str());
  return result;
}

TEST(MetricsServerOptionsTest, Validate) {
  EXPECT_OK(MetricsServer::Options().Validate());
  EXPECT_OK(Loopback(Backend::kHttplib, 0).Validate());
  MetricsServer::Options options;
  options.listen_address = "localhost:9100";
  EXPECT_OK(options.Validate());
  for (const char* bad : {"", "nonsense", "127.0.0.1", "127.0.0.1:", ":9090", "127.0.0.1:70000",
                          "127.0.0.1:-1", "127.0.0.1:+80", "127.0.0.1:80x", "300.1.1.1:80",
                          "1.2.3:80", "example.com:80", "[::1]:80", "::1:80", " 127.0.0.1:80"}) {
    options.listen_address = bad;
    EXPECT_THAT(options.Validate(), StatusIs(absl::StatusCode::kInvalidArgument)) << bad;
  }
  options = Loopback();
  options.num_threads = 0;
  EXPECT_THAT(options.Validate(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("num_threads")));
}

TEST_P(MetricsServerTest, BadAddressIsInvalidArgument) {
  MetricsServer::Options options;
  options.listen_address = "127.0.0.1:port";
  EXPECT_THAT(MetricsServer::Create(options, {MakeRegistry()}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("127.0.0.1:port")));
}

TEST_P(MetricsServerTest, ServesMetricsOnAnEphemeralPort) {
  std::shared_ptr<Registry> registry = MakeRegistry();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<MetricsServer> server,
                       MetricsServer::Create(Loopback(GetParam(), 0), {registry}));
  EXPECT_GT(server->port(), 0);
  EXPECT_EQ(server->address(), absl::StrCat("127.0.0.1:", server->port()));

  ASSERT_OK_AND_ASSIGN(HttpResponse response,
                       HttpGet("127.0.0.1", server->port(), "/metrics", kTimeout));
  EXPECT_EQ(response.status_code, 200);
  // The text format (Prometheus reads plain text as 0.0.4; cpp-httplib's says so explicitly).
  EXPECT_THAT(response.Header("Content-Type"), HasSubstr("text/plain"));
  // The Exposer adds its own exposer_* families; the registries' exposition is there whole.
  EXPECT_THAT(response.body, HasSubstr(server->Scrape()));
  EXPECT_EQ(server->Scrape(), TextExposition(*registry));
  EXPECT_THAT(response.body, HasSubstr("zf_test_requests_total{component=\"metrics_test\","
                                       "code=\"ok\"} 41\n"));

  // Values change between scrapes.
  BuildCounter()
      .Name("zf_test_requests_total")
      .Help("Requests served, by \"code\".\nA \\ backslash and a second line.")
      .Labels({{"component", "metrics_test"}})
      .Register(*registry)
      .Add({{"code", "ok"}})
      .Increment();
  ASSERT_OK_AND_ASSIGN(response, HttpGet("127.0.0.1", server->port(), "/metrics", kTimeout));
  EXPECT_THAT(response.body, HasSubstr("code=\"ok\"} 42\n"));
  // A query string does not change the path.
  ASSERT_OK_AND_ASSIGN(response, HttpGet("127.0.0.1", server->port(), "/metrics?x=1", kTimeout));
  EXPECT_EQ(response.status_code, 200);
}

TEST_P(MetricsServerTest, OtherPathsAreNotFound) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<MetricsServer> server,
                       MetricsServer::Create(Loopback(GetParam(), 0), {MakeRegistry()}));
  // (The Exposer also answers /metricsx and /metrics/x: civetweb's handlers match URI prefixes.)
  for (const char* path : {"/", "/nope", "/index.html", "/metric"}) {
    ASSERT_OK_AND_ASSIGN(HttpResponse response,
                         HttpGet("127.0.0.1", server->port(), path, kTimeout));
    EXPECT_EQ(response.status_code, 404) << path;
    EXPECT_THAT(response.body, Not(HasSubstr("zf_test_"))) << path;
  }
}

TEST_P(MetricsServerTest, PortInUseIsUnavailableAndQuiet) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<MetricsServer> first,
                       MetricsServer::Create(Loopback(GetParam(), 0), {MakeRegistry()}));
  const std::string taken = absl::StrCat("127.0.0.1:", first->port());
  ::testing::internal::CaptureStderr();
  absl::StatusOr<std::unique_ptr<MetricsServer>> second =
      MetricsServer::Create(Loopback(GetParam(), first->port()), {MakeRegistry()});
  const std::string stderr_output = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(second, StatusIs(absl::StatusCode::kUnavailable, HasSubstr(taken)));
  EXPECT_THAT(second.status().message(), HasSubstr("in use"));
  // The reason is in the status, not on stderr.
  EXPECT_THAT(stderr_output, IsEmpty());
  // The first server is unharmed.
  ASSERT_OK_AND_ASSIGN(HttpResponse response,
                       HttpGet("127.0.0.1", first->port(), "/metrics", kTimeout));
  EXPECT_EQ(response.status_code, 200);
}

TEST_P(MetricsServerTest, DestructorStopsServing) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<MetricsServer> server,
                       MetricsServer::Create(Loopback(GetParam(), 0), {MakeRegistry()}));
  const int port = server->port();
  ASSERT_OK(HttpGet("127.0.0.1", port, "/metrics", kTimeout).status());
  server.reset();
  EXPECT_THAT(HttpGet("127.0.0.1", port, "/metrics", kTimeout),
              StatusIs(absl::StatusCode::kUnavailable));
  // The port is free again.
  ASSERT_OK_AND_ASSIGN(server, MetricsServer::Create(Loopback(GetParam(), port), {MakeRegistry()}));
  EXPECT_EQ(server->port(), port);
}

TEST_P(MetricsServerTest, ServesEveryRegistryIncludingAddedOnes) {
  auto first = std::make_shared<Registry>();
  auto second = std::make_shared<Registry>();
  BuildCounter().Name("zf_test_first_total").Help("First.").Register(*first).Add({}).Increment();
  BuildGauge().Name("zf_test_second").Help("Second.").Register(*second).Add({}).Set(2);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<MetricsServer> server,
                       MetricsServer::Create(Loopback(GetParam(), 0), {first, nullptr}));
  ASSERT_OK_AND_ASSIGN(HttpResponse response,
                       HttpGet("127.0.0.1", server->port(), "/metrics", kTimeout));
  EXPECT_EQ(server->Scrape(),
            "# HELP zf_test_first_total First.\n"
            "# TYPE zf_test_first_total counter\n"
            "zf_test_first_total 1\n");
  EXPECT_THAT(response.body, HasSubstr(server->Scrape()));
  server->AddRegistry(second);
  server->AddRegistry(nullptr);
  ASSERT_OK_AND_ASSIGN(response, HttpGet("127.0.0.1", server->port(), "/metrics", kTimeout));
  EXPECT_EQ(server->Scrape(),
            "# HELP zf_test_first_total First.\n"
            "# TYPE zf_test_first_total counter\n"
            "zf_test_first_total 1\n"
            "# HELP zf_test_second Second.\n"
            "# TYPE zf_test_second gauge\n"
            "zf_test_second 2\n");
  EXPECT_THAT(response.body, HasSubstr(server->Scrape()));
}

TEST_P(MetricsServerTest, ConcurrentScrapesWhileMetricsChange) {
  std::shared_ptr<Registry> registry = MakeRegistry();
  prometheus::Counter& ticks =
      BuildCounter().Name("zf_test_ticks_total").Help("Ticks.").Register(*registry).Add({});
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<MetricsServer> server,
                       MetricsServer::Create(Loopback(GetParam(), 0), {registry}));
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  {
    Thread writer("ticker", [&] {
      while (!stop.load()) ticks.Increment();
    });
    std::vector<std::unique_ptr<Thread>> scrapers;
    for (int t = 0; t < 4; ++t) {
      scrapers.push_back(std::make_unique<Thread>("scraper", [&] {
        for (int i = 0; i < 10; ++i) {
          absl::StatusOr<HttpResponse> response =
              HttpGet("127.0.0.1", server->port(), "/metrics", kTimeout);
          if (!response.ok() || response->status_code != 200 ||
              response->body.find("zf_test_ticks_total ") == std::string::npos) {
            failures.fetch_add(1);
          }
        }
      }));
    }
    scrapers.clear();  // joins
    stop.store(true);
  }
  EXPECT_EQ(failures.load(), 0);
}

TEST(PromtoolTest, PromtoolIsInstalled) {
  EXPECT_NE(FindPromtool(), "")
      << "promtool is not on PATH: install the Debian package 'prometheus' (the bootstrap does)";
}

TEST(PromtoolTest, PromtoolRejectsABadExposition) {
  // Proves the check below is not vacuous: promtool does complain about problems.
  const std::string promtool = FindPromtool();
  ASSERT_NE(promtool, "") << "promtool is not on PATH: install the Debian package 'prometheus'";
  CommandResult lint = PromtoolCheck(promtool, "# HELP foo Foo.\n# TYPE foo counter\nfoo 1\n");
  EXPECT_NE(lint.exit_code, 0);
  EXPECT_THAT(lint.output, HasSubstr("_total"));
  CommandResult broken = PromtoolCheck(promtool, "zf_test_x{a=\"unterminated} 1\n");
  EXPECT_NE(broken.exit_code, 0);
  EXPECT_THAT(broken.output, Not(IsEmpty()));
}

TEST_P(MetricsServerTest, ServedExpositionPassesPromtoolCheckMetrics) {
  const std::string promtool = FindPromtool();
  ASSERT_NE(promtool, "") << "promtool is not on PATH: install the Debian package 'prometheus'";
  auto second = std::make_shared<Registry>();
  BuildHistogram()
      .Name("zf_test_batch_rows")
      .Help("Rows per batch.")
      .Labels({{"backend", "fake"}})
      .Register(*second)
      .Add({{"model", "a\nb"}}, LinearBuckets(1, 1, 4))
      .ObserveMultiple(std::vector<double>{1, 2, 3, 4, 5}, 50);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<MetricsServer> server,
                       MetricsServer::Create(Loopback(GetParam(), 0), {MakeRegistry(), second}));
  ASSERT_OK_AND_ASSIGN(HttpResponse response,
                       HttpGet("127.0.0.1", server->port(), "/metrics", kTimeout));
  ASSERT_EQ(response.status_code, 200);
  // What is checked really has histograms, counters and escaped label values.
  EXPECT_THAT(response.body, HasSubstr("# TYPE zf_test_latency_seconds histogram\n"));
  EXPECT_THAT(response.body, HasSubstr("le=\"+Inf\"} 5\n"));
  EXPECT_THAT(response.body, HasSubstr("# TYPE zf_test_requests_total counter\n"));
  EXPECT_THAT(response.body, HasSubstr("code=\"quote\\\"back\\\\slash\\nnewline\""));
  EXPECT_THAT(response.body, HasSubstr("zf_test_batch_rows_bucket{backend=\"fake\","
                                       "model=\"a\\nb\",le=\"4\"} 10\n"));
  EXPECT_THAT(response.body, HasSubstr(" Nan\n"));

  CommandResult check = PromtoolCheck(promtool, response.body);
  EXPECT_EQ(check.exit_code, 0) << check.output << "\n--- exposition ---\n" << response.body;
  EXPECT_EQ(check.output, "") << "promtool reported problems:\n" << check.output;
}

TEST(MetricsServerBackendTest, AutoPicksTheExposerWhereItsThreadsCanStart) {
  // This test links no LibTorch: its static TLS is far below what civetweb's stacks can hold.
  EXPECT_GT(ProcessStaticTlsBytes(), 0u);  // glibc's and libstdc++'s own TLS at least
  EXPECT_LE(ProcessStaticTlsBytes(), kExposerStaticTlsLimitBytes);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<MetricsServer> server,
                       MetricsServer::Create(Loopback(Backend::kAuto), {MakeRegistry()}));
  EXPECT_EQ(server->backend(), Backend::kPrometheusExposer);
  ASSERT_OK_AND_ASSIGN(HttpResponse response,
                       HttpGet("127.0.0.1", server->port(), "/metrics", kTimeout));
  EXPECT_THAT(response.body, HasSubstr("# TYPE exposer_scrapes_total counter\n"));
}

TEST(MetricsServerBackendTest, HttplibServesOnlyTheRegistries) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<MetricsServer> server,
                       MetricsServer::Create(Loopback(Backend::kHttplib), {MakeRegistry()}));
  EXPECT_EQ(server->backend(), Backend::kHttplib);
  ASSERT_OK_AND_ASSIGN(HttpResponse response,
                       HttpGet("127.0.0.1", server->port(), "/metrics", kTimeout));
  EXPECT_EQ(response.body, server->Scrape());
}

INSTANTIATE_TEST_SUITE_P(Backends, MetricsServerTest,
                         ::testing::Values(Backend::kPrometheusExposer, Backend::kHttplib),
                         [](const ::testing::TestParamInfo<Backend>& info) {
                           return info.param == Backend::kHttplib ? "Httplib" : "Exposer";
                         });

}  // namespace
}  // namespace zf::metrics
