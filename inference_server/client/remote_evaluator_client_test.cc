// RemoteEvaluatorClient against a real InferenceServer over loopback (FakeBackend): answers
// matched to requests with many in flight, GetModelInfo with a deadline, reconnection with
// re-sending when the server is shut down and restarted on the same port, and the synchronous
// search::Evaluator adapter.
#include "inference_server/client/remote_evaluator_client.h"

#include <atomic>
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/metrics/exposition.h"
#include "common/testing/status_matchers.h"
#include "common/testing/wait.h"
#include "common/thread.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "inference_server/fake_backend.h"
#include "inference_server/service/inference_server.h"
#include "inference_server/testing/test_server.h"

namespace zf::inference {
namespace {

constexpr ModelSpec kSpec{
    .input_channels = 2, .board_height = 4, .board_width = 5, .num_actions = 9};

std::shared_ptr<FakeBackend> Fake(int64_t version, ModelSpec spec = kSpec) {
  auto backend = FakeBackend::Create({.spec = spec, .max_batch = 1024, .version = version});
  EXPECT_TRUE(backend.ok()) << backend.status();
  return std::shared_ptr<FakeBackend>(std::move(*backend));
}

std::unique_ptr<InferenceServer> StartServer(std::shared_ptr<Backend> backend,
                                             const std::string& address = "127.0.0.1:0") {
  return StartTestServer(std::move(backend), {.address = address});
}

std::unique_ptr<RemoteEvaluatorClient> Client(const std::string& target, ModelSpec spec = kSpec,
                                              absl::Duration stall_timeout = absl::Seconds(1),
                                              prometheus::Registry* registry = nullptr) {
  RemoteEvaluatorClient::Options options;
  options.target = target;
  options.metrics = registry;
  options.stall_timeout = stall_timeout;
  options.input_channels = spec.input_channels;
  options.board_height = spec.board_height;
  options.board_width = spec.board_width;
  options.initial_backoff = absl::Milliseconds(10);
  options.max_backoff = absl::Milliseconds(200);
  auto client = RemoteEvaluatorClient::Create(options);
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? *std::move(client) : nullptr;
}

std::unique_ptr<RemoteEvaluatorClient> Client(int port, ModelSpec spec = kSpec) {
  return Client(absl::StrCat("127.0.0.1:", port), spec);
}

// Collects answers; checks each against FakeBackend's pure function.
class Answers {
 public:
  RemoteEvaluatorClient::Callback Expect(std::vector<uint8_t> planes, int rows) {
    return [this, planes = std::move(planes),
            rows](absl::StatusOr<RemoteEvaluatorClient::Result> result) {
      bool correct = result.ok() && result->rows == rows;
      std::vector<float> logits(kSpec.num_actions), wdl(3);
      for (int i = 0; correct && i < rows; ++i) {
        FakeBackend::Evaluate(
            result->model_version,
            std::span<const uint8_t>(planes).subspan(i * kSpec.PlaneSize(), kSpec.PlaneSize()),
            logits, wdl);
        correct = std::equal(logits.begin(), logits.end(),
                             result->policy_logits.begin() + i * kSpec.num_actions) &&
                  std::equal(wdl.begin(), wdl.end(), result->wdl.begin() + i * 3);
      }
      if (correct) {
        correct = result->score.size() == (expect_scores ? static_cast<size_t>(rows) : 0u);
        for (int i = 0; correct && i < static_cast<int>(result->score.size()); ++i) {
          correct =
              result->score[i] == FakeBackend::Score(result->model_version,
                                                     std::span<const uint8_t>(planes).subspan(
                                                         i * kSpec.PlaneSize(), kSpec.PlaneSize()));
        }
      }
      absl::MutexLock lock(&mu_);
      ++done_;
      if (!correct) {
        ++wrong_;
        if (!result.ok()) last_error_ = result.status();
      }
      if (result.ok()) ++versions_[result->model_version];
    };
  }
  // Waits (bounded) for `n` answers.
  bool WaitFor(int n) {
    absl::MutexLock lock(&mu_);
    auto enough = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return done_ >= n; };
    return mu_.AwaitWithTimeout(absl::Condition(&enough), absl::Seconds(60));
  }
  int wrong() {
    absl::MutexLock lock(&mu_);
    return wrong_;
  }
  absl::Status last_error() {
    absl::MutexLock lock(&mu_);
    return last_error_;
  }
  std::map<int64_t, int> versions() {
    absl::MutexLock lock(&mu_);
    return versions_;
  }

  // Whether answers carry scores (a model with a score head); set before the first Expect.
  bool expect_scores = false;

 private:
  absl::Mutex mu_;
  int done_ ABSL_GUARDED_BY(mu_) = 0;
  int wrong_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status last_error_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, int> versions_ ABSL_GUARDED_BY(mu_);
};

std::vector<uint8_t> RandomPlanes(int rows, std::mt19937_64& rng) {
  std::vector<uint8_t> planes(static_cast<size_t>(rows * kSpec.PlaneSize()));
  for (uint8_t& b : planes) b = static_cast<uint8_t>(rng());
  return planes;
}

TEST(RemoteEvaluatorClientTest, ManyRequestsInFlightAreMatchedToTheirAnswers) {
  auto server = StartServer(Fake(/*version=*/7));
  ASSERT_NE(server, nullptr);
  auto client = Client(server->port());
  ASSERT_NE(client, nullptr);
  Answers answers;
  constexpr int kThreads = 4, kPerThread = 150;
  {
    std::vector<std::unique_ptr<Thread>> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.push_back(std::make_unique<Thread>(absl::StrCat("submit", t), [&, t] {
        std::mt19937_64 rng(t);
        for (int i = 0; i < kPerThread; ++i) {
          const int rows = 1 + i % 12;
          std::vector<uint8_t> planes = RandomPlanes(rows, rng);
          EXPECT_OK(client->Submit(planes, rows, answers.Expect(planes, rows)));
        }
      }));
    }
  }
  ASSERT_TRUE(answers.WaitFor(kThreads * kPerThread));
  EXPECT_EQ(answers.wrong(), 0) << answers.last_error();
  EXPECT_EQ(answers.versions(), (std::map<int64_t, int>{{7, kThreads * kPerThread}}));
  EXPECT_EQ(client->pending(), 0);
}

TEST(RemoteEvaluatorClientTest, ScoresComeBackFromAModelWithAScoreHead) {
  ModelSpec spec = kSpec;
  spec.score = true;
  auto server = StartServer(Fake(/*version=*/4, spec));
  ASSERT_NE(server, nullptr);
  auto client = Client(server->port());
  ASSERT_NE(client, nullptr);
  Answers answers;
  answers.expect_scores = true;
  std::mt19937_64 rng(1);
  for (int i = 0; i < 40; ++i) {
    const int rows = 1 + i % 7;
    std::vector<uint8_t> planes = RandomPlanes(rows, rng);
    ASSERT_OK(client->Submit(planes, rows, answers.Expect(planes, rows)));
  }
  ASSERT_TRUE(answers.WaitFor(40));
  EXPECT_EQ(answers.wrong(), 0) << answers.last_error();
}

TEST(RemoteEvaluatorClientTest, BadSubmitAndServerErrorsAreReported) {
  auto server = StartServer(Fake(1));
  ASSERT_NE(server, nullptr);
  auto client = Client(server->port());
  std::vector<uint8_t> planes(kSpec.PlaneSize() * 2);
  EXPECT_EQ(client->Submit(planes, 3, [](auto) {}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(client->Submit(planes, 0, [](auto) {}).code(), absl::StatusCode::kInvalidArgument);
  // A client whose plane shape is not the model's: the server answers INVALID_ARGUMENT.
  auto wrong = Client(server->port(), ModelSpec{3, 4, 5, 9});
  absl::Notification done;
  absl::Status status;
  std::vector<uint8_t> wrong_planes(3 * 4 * 5);
  ASSERT_OK(wrong->Submit(wrong_planes, 1, [&](absl::StatusOr<RemoteEvaluatorClient::Result> r) {
    status = r.status();
    done.Notify();
  }));
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(60)));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), ::testing::HasSubstr("expected [n, 2, 4, 5]"));
}

TEST(RemoteEvaluatorClientTest, GetModelInfoHasADeadline) {
  auto server = StartServer(Fake(4));
  ASSERT_NE(server, nullptr);
  auto client = Client(server->port());
  absl::StatusOr<zerofleet::v1::ModelInfo> info = client->GetModelInfo(absl::Seconds(10));
  ASSERT_OK(info.status());
  EXPECT_EQ(info->version(), 4);
  EXPECT_EQ(info->num_actions(), 9);
  const int port = server->port();
  server.reset();
  auto orphan = Client(port);
  absl::StatusOr<zerofleet::v1::ModelInfo> none = orphan->GetModelInfo(absl::Seconds(1));
  EXPECT_THAT(none.status().code(), ::testing::AnyOf(absl::StatusCode::kUnavailable,
                                                     absl::StatusCode::kDeadlineExceeded));
}

TEST(RemoteEvaluatorClientTest, ReconnectsAndResendsWhenTheServerIsRestarted) {
  std::shared_ptr<FakeBackend> first_backend = Fake(1);
  auto server = StartServer(first_backend);
  ASSERT_NE(server, nullptr);
  const int port = server->port();
  auto client = Client(port);
  Answers answers;
  constexpr int kRequests = 60;
  std::mt19937_64 rng(3);
  first_backend->PauseRuns();
  for (int i = 0; i < kRequests; ++i) {
    const int rows = 1 + i % 8;
    std::vector<uint8_t> planes = RandomPlanes(rows, rng);
    ASSERT_OK(client->Submit(planes, rows, answers.Expect(planes, rows)));
  }
  // A batch is held in the backend and more requests are queued behind it when the server goes.
  ASSERT_TRUE(testing::WaitFor([&] {
    return first_backend->NumBlockedRuns() == 1 && server->batcher().stats().queued_requests > 0;
  }));
  {
    Thread shutdown("shutdown", [&] { server->Shutdown(); });
    // Resume the held batch only once the batcher is closed (its queue cancelled): resumed
    // before, the one worker may serve the queue on the old model too.
    ASSERT_TRUE(testing::WaitFor(
        [&] { return !server->serving() && server->batcher().stats().queued_requests == 0; }));
    first_backend->ResumeRuns();
  }
  server.reset();
  EXPECT_GT(client->pending(), 0);
  // Restart on the same port with a newer model: every request is eventually answered.
  auto restarted = StartServer(Fake(2), absl::StrCat("127.0.0.1:", port));
  ASSERT_NE(restarted, nullptr);
  ASSERT_TRUE(answers.WaitFor(kRequests));
  EXPECT_EQ(answers.wrong(), 0) << answers.last_error();
  std::map<int64_t, int> versions = answers.versions();
  EXPECT_GT(versions[1], 0);  // the batch in flight during shutdown was answered
  EXPECT_GT(versions[2], 0);  // the rest were re-sent to the new server
  EXPECT_EQ(versions[1] + versions[2], kRequests);
  EXPECT_GE(client->streams_opened(), 2);
}

TEST(RemoteEvaluatorClientTest, CloseCancelsUnansweredRequests) {
  std::shared_ptr<FakeBackend> backend = Fake(1);
  auto server = StartServer(backend);
  ASSERT_NE(server, nullptr);
  auto client = Client(server->port());
  backend->PauseRuns();
  absl::Notification done;
  absl::Status status;
  std::vector<uint8_t> planes(kSpec.PlaneSize());
  ASSERT_OK(client->Submit(planes, 1, [&](absl::StatusOr<RemoteEvaluatorClient::Result> r) {
    status = r.status();
    done.Notify();
  }));
  ASSERT_TRUE(testing::WaitFor([&] { return backend->NumBlockedRuns() == 1; }));
  client->Close();
  ASSERT_TRUE(done.HasBeenNotified());
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(client->Submit(planes, 1, [](auto) {}).code(), absl::StatusCode::kCancelled);
  backend->ResumeRuns();
}

// Submits `count` requests of 1..4 rows, at most `in_flight` unanswered at once.
void SubmitClosedLoop(RemoteEvaluatorClient* client, Answers* answers, int count, int in_flight) {
  std::mt19937_64 rng(11);
  for (int i = 0; i < count; ++i) {
    ASSERT_TRUE(testing::WaitFor([&] { return client->pending() < in_flight; }));
    const int rows = 1 + i % 4;
    std::vector<uint8_t> planes = RandomPlanes(rows, rng);
    ASSERT_OK(client->Submit(planes, rows, answers->Expect(planes, rows)));
  }
}

int64_t AnswersFrom(const RemoteEvaluatorClient& client, int port) {
  for (const auto& server : client.servers()) {
    if (absl::EndsWith(server.address, absl::StrCat(":", port))) return server.answers;
  }
  return -1;
}

TEST(RemoteEvaluatorClientTest, TargetListsAreCheckedEntryByEntry) {
  for (const char* bad : {"127.0.0.1", "127.0.0.1:1,", "host:0", ":50051", "a:b"}) {
    RemoteEvaluatorClient::Options options;
    options.target = bad;
    options.input_channels = options.board_height = options.board_width = 1;
    absl::StatusOr<std::unique_ptr<RemoteEvaluatorClient>> client =
        RemoteEvaluatorClient::Create(options);
    ASSERT_FALSE(client.ok()) << bad;
    EXPECT_EQ(client.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(client.status().message(), ::testing::HasSubstr("target entry")) << bad;
  }
}

TEST(RemoteEvaluatorClientTest, ASlowerServerGetsLessWork) {
  auto slow_backend = FakeBackend::Create(
      {.spec = kSpec, .max_batch = 1024, .version = 1, .delay = absl::Milliseconds(30)});
  ASSERT_OK(slow_backend.status());
  auto slow = StartServer(std::shared_ptr<FakeBackend>(std::move(*slow_backend)));
  auto fast = StartServer(Fake(2));
  ASSERT_NE(slow, nullptr);
  ASSERT_NE(fast, nullptr);
  auto client = Client(absl::StrCat("127.0.0.1:", slow->port(), ", 127.0.0.1:", fast->port()));
  ASSERT_EQ(client->servers().size(), 2u);
  Answers answers;
  constexpr int kRequests = 400;
  SubmitClosedLoop(client.get(), &answers, kRequests, 16);
  ASSERT_TRUE(answers.WaitFor(kRequests));
  EXPECT_EQ(answers.wrong(), 0) << answers.last_error();
  const std::map<int64_t, int> versions = answers.versions();
  // Least outstanding rows: the server that answers 30 ms later holds its rows longer.
  EXPECT_GT(versions.at(1), 0);
  EXPECT_GT(versions.at(2), 3 * versions.at(1));
  EXPECT_EQ(AnswersFrom(*client, fast->port()), versions.at(2));
}

TEST(RemoteEvaluatorClientTest, RequestsOfAServerThatShutsDownGoToTheOther) {
  std::shared_ptr<FakeBackend> first_backend = Fake(1);
  auto first = StartServer(first_backend);
  auto second = StartServer(Fake(2));
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  auto client = Client(absl::StrCat("127.0.0.1:", first->port(), ",127.0.0.1:", second->port()));
  Answers answers;
  // Both servers answer first (so both are in use).
  SubmitClosedLoop(client.get(), &answers, 40, 8);
  ASSERT_TRUE(answers.WaitFor(40));
  ASSERT_GT(answers.versions()[1], 0);
  // The first holds a batch, and more are routed to it, when it shuts down.
  first_backend->PauseRuns();
  std::mt19937_64 rng(5);
  constexpr int kMore = 60;
  for (int i = 0; i < kMore; ++i) {
    std::vector<uint8_t> planes = RandomPlanes(1, rng);
    ASSERT_OK(client->Submit(planes, 1, answers.Expect(planes, 1)));
  }
  ASSERT_TRUE(testing::WaitFor([&] { return first_backend->NumBlockedRuns() == 1; }));
  {
    Thread shutdown("shutdown", [&] { first->Shutdown(); });
    ASSERT_TRUE(testing::WaitFor([&] { return !first->serving(); }));
    first_backend->ResumeRuns();
  }
  first.reset();
  ASSERT_TRUE(answers.WaitFor(40 + kMore));
  EXPECT_EQ(answers.wrong(), 0) << answers.last_error();
  EXPECT_EQ(client->pending(), 0);
  // Every request was answered once; the second server kept answering while the first went.
  const std::map<int64_t, int> versions = answers.versions();
  EXPECT_EQ(versions.at(1) + versions.at(2), 40 + kMore);
  const int second_before = answers.versions()[2];
  SubmitClosedLoop(client.get(), &answers, 20, 4);
  ASSERT_TRUE(answers.WaitFor(40 + kMore + 20));
  EXPECT_EQ(answers.versions()[2], second_before + 20);
}

// After a stall the stopped server is only probed with copies of requests answered elsewhere:
// no search waits on it again, however long it stays stopped, and it rejoins when it answers.
TEST(RemoteEvaluatorClientTest, AStalledServerHoldsUpNoRequestAndRejoinsWhenItAnswers) {
  std::shared_ptr<FakeBackend> stuck_backend = Fake(1);
  auto stuck = StartServer(stuck_backend);
  auto healthy = StartServer(Fake(2));
  ASSERT_NE(stuck, nullptr);
  ASSERT_NE(healthy, nullptr);
  constexpr absl::Duration kStall = absl::Milliseconds(200);
  auto client = Client(absl::StrCat("127.0.0.1:", stuck->port(), ",127.0.0.1:", healthy->port()),
                       kSpec, kStall);
  Answers answers;
  SubmitClosedLoop(client.get(), &answers, 40, 8);  // both servers answer
  ASSERT_TRUE(answers.WaitFor(40));
  ASSERT_GT(answers.versions()[1], 0);
  stuck_backend->PauseRuns();  // from now on it accepts requests and never answers
  int done = 40;
  SubmitClosedLoop(client.get(), &answers, 40, 8);  // the stall: some wait kStall, then move
  done += 40;
  ASSERT_TRUE(answers.WaitFor(done));
  ASSERT_GT(client->requests_moved(), 0);
  // For several stall timeouts, one request at a time: each is answered by the healthy server
  // at once (the stopped one gets copies only, on stream after stream).
  std::mt19937_64 rng(11);
  absl::Duration slowest = absl::ZeroDuration();
  const absl::Time until = absl::Now() + 8 * kStall;
  while (absl::Now() < until) {
    std::vector<uint8_t> planes = RandomPlanes(1, rng);
    const absl::Time sent = absl::Now();
    ASSERT_OK(client->Submit(planes, 1, answers.Expect(planes, 1)));
    ASSERT_TRUE(answers.WaitFor(++done));
    slowest = std::max(slowest, absl::Now() - sent);
  }
  EXPECT_LT(slowest, kStall / 2);
  EXPECT_EQ(answers.wrong(), 0) << answers.last_error();
  // Running again, it answers a probe and gets its share of new requests.
  const int stuck_before = answers.versions()[1];
  stuck_backend->ResumeRuns();
  ASSERT_TRUE(testing::WaitFor([&] {
    SubmitClosedLoop(client.get(), &answers, 16, 8);
    done += 16;
    return answers.WaitFor(done) && answers.versions()[1] > stuck_before;
  }));
  EXPECT_EQ(answers.wrong(), 0) << answers.last_error();
}

TEST(RemoteEvaluatorClientTest, AServerThatStopsAnsweringIsLeftForTheOthers) {
  std::shared_ptr<FakeBackend> stuck_backend = Fake(1);
  auto stuck = StartServer(stuck_backend);
  auto healthy = StartServer(Fake(2));
  ASSERT_NE(stuck, nullptr);
  ASSERT_NE(healthy, nullptr);
  stuck_backend->PauseRuns();  // accepts requests and never answers: a stopped process
  prometheus::Registry registry;
  auto client =
      Client(absl::StrCat("127.0.0.1:", stuck->port(), ",127.0.0.1:", healthy->port()), kSpec,
             /*stall_timeout=*/absl::Milliseconds(200), &registry);
  // Both connected before the first request: had the healthy server answered before the stuck
  // one connected, the stuck one would be on probation (copies only) and never stall.
  ASSERT_TRUE(testing::WaitFor([&] {
    std::vector<RemoteEvaluatorClient::ServerState> servers = client->servers();
    return servers.size() == 2 && servers[0].usable && servers[1].usable;
  }));
  Answers answers;
  constexpr int kRequests = 200;
  const absl::Time start = absl::Now();
  SubmitClosedLoop(client.get(), &answers, kRequests, 16);
  ASSERT_TRUE(answers.WaitFor(kRequests));
  EXPECT_EQ(answers.wrong(), 0) << answers.last_error();
  EXPECT_EQ(answers.versions()[2], kRequests);  // all from the healthy server
  EXPECT_GT(client->requests_moved(), 0);
  EXPECT_LT(absl::Now() - start, absl::Seconds(30));
  // The metrics say the same: every move counted, one server stalled and one usable.
  const std::string text = metrics::TextExposition(registry);
  EXPECT_THAT(text, ::testing::HasSubstr(absl::StrCat("zf_inference_client_requests_moved_total ",
                                                      client->requests_moved())));
  EXPECT_TRUE(testing::WaitFor([&] {
    const std::string now = metrics::TextExposition(registry);
    return absl::StrContains(now, "zf_inference_client_servers{state=\"stalled\"} 1") &&
           absl::StrContains(now, "zf_inference_client_servers{state=\"usable\"} 1");
  })) << metrics::TextExposition(registry);
  stuck_backend->ResumeRuns();
}

TEST(RemoteEvaluatorClientTest, ANameIsResolvedToItsAddresses) {
  auto server = StartServer(Fake(3));
  ASSERT_NE(server, nullptr);
  auto client = Client(absl::StrCat("localhost:", server->port()));
  // The resolver thread makes one server per address of "localhost" (127.0.0.1, maybe ::1).
  ASSERT_TRUE(testing::WaitFor([&] { return !client->servers().empty(); }));
  bool loopback = false;
  for (const auto& s : client->servers()) {
    loopback = loopback || s.address == absl::StrCat("ipv4:127.0.0.1:", server->port());
  }
  EXPECT_TRUE(loopback);
  Answers answers;
  SubmitClosedLoop(client.get(), &answers, 20, 4);
  ASSERT_TRUE(answers.WaitFor(20));
  EXPECT_EQ(answers.wrong(), 0) << answers.last_error();
}

}  // namespace
}  // namespace zf::inference
