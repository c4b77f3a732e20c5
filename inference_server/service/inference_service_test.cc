// The inference service over loopback gRPC with the deterministic FakeBackend: routing under many
// concurrent streams, bad input, health, hot reload during traffic, draining.
#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/grpc/channel.h"
#include "common/metrics/exposition.h"
#include "common/testing/status_matchers.h"
#include "common/testing/wait.h"
#include "common/thread.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "inference_server/fake_backend.h"
#include "inference_server/service/inference_server.h"
#include "proto/grpc/health/v1/health.grpc.pb.h"
#include "proto/zerofleet/v1/inference.grpc.pb.h"

namespace zf::inference {
namespace {

using ::testing::HasSubstr;
using zerofleet::v1::EvaluateRequest;
using zerofleet::v1::EvaluateResponse;

constexpr ModelSpec kSpec{
    .input_channels = 3, .board_height = 6, .board_width = 7, .num_actions = 7};
constexpr int kMaxRequestRows = 64;

std::shared_ptr<FakeBackend> Fake(int64_t version, ModelSpec spec = kSpec) {
  auto backend = FakeBackend::Create({.spec = spec, .max_batch = 1024, .version = version});
  EXPECT_TRUE(backend.ok()) << backend.status();
  return std::shared_ptr<FakeBackend>(std::move(*backend));
}

InferenceServer::Options ServerOptions(std::shared_ptr<Backend> backend) {
  InferenceServer::Options options;
  options.listen_address = "127.0.0.1:0";
  options.backend = std::move(backend);
  options.game = "connect4";
  options.batcher.max_batch = 32;
  options.batcher.max_delay = absl::Microseconds(500);
  options.batcher.max_request_rows = kMaxRequestRows;
  options.batcher.max_queued_rows = 1 << 16;
  options.batcher.num_workers = 2;
  return options;
}

std::unique_ptr<InferenceServer> StartServer(InferenceServer::Options options) {
  auto server = InferenceServer::Create(std::move(options));
  EXPECT_TRUE(server.ok()) << server.status();
  if (!server.ok()) return nullptr;
  EXPECT_OK((*server)->Serve());
  return *std::move(server);
}

std::unique_ptr<zerofleet::v1::Inference::Stub> Stub(int port) {
  return zerofleet::v1::Inference::NewStub(
      grpc_util::CreateChannel(absl::StrCat("127.0.0.1:", port)));
}

std::string RandomPlanes(int rows, std::mt19937_64& rng) {
  std::string data(static_cast<size_t>(rows * kSpec.PlaneSize()), '\0');
  for (char& c : data) c = static_cast<char>(rng() & 0xff);
  return data;
}

EvaluateRequest Request(uint64_t id, int rows, std::mt19937_64& rng) {
  EvaluateRequest request;
  request.set_request_id(id);
  zerofleet::v1::Tensor* planes = request.mutable_planes();
  planes->set_dtype(zerofleet::v1::DTYPE_UINT8);
  for (int64_t d : {int64_t{rows}, int64_t{kSpec.input_channels}, int64_t{kSpec.board_height},
                    int64_t{kSpec.board_width}}) {
    planes->add_shape(d);
  }
  planes->set_data(RandomPlanes(rows, rng));
  return request;
}

std::vector<float> Floats(const zerofleet::v1::Tensor& tensor) {
  std::vector<float> out(tensor.data().size() / sizeof(float));
  std::memcpy(out.data(), tensor.data().data(), out.size() * sizeof(float));
  return out;
}

// Checks `response` against FakeBackend's pure function of `request`'s rows and the version the
// response names.
void ExpectCorrectAnswer(const EvaluateRequest& request, const EvaluateResponse& response) {
  ASSERT_EQ(response.error_code(), 0) << response.error_message();
  const int64_t rows = request.planes().shape(0);
  ASSERT_EQ(response.policy_logits().dtype(), zerofleet::v1::DTYPE_FLOAT32);
  ASSERT_THAT(response.policy_logits().shape(), ::testing::ElementsAre(rows, kSpec.num_actions));
  ASSERT_THAT(response.wdl().shape(), ::testing::ElementsAre(rows, 3));
  std::vector<float> logits = Floats(response.policy_logits());
  std::vector<float> wdl = Floats(response.wdl());
  ASSERT_EQ(static_cast<int64_t>(logits.size()), rows * kSpec.num_actions);
  ASSERT_EQ(static_cast<int64_t>(wdl.size()), rows * 3);
  std::vector<float> want_logits(kSpec.num_actions), want_wdl(3);
  const auto* bytes = reinterpret_cast<const uint8_t*>(request.planes().data().data());
  for (int64_t i = 0; i < rows; ++i) {
    FakeBackend::Evaluate(response.model_version(),
                          std::span<const uint8_t>(bytes + i * kSpec.PlaneSize(),
                                                   static_cast<size_t>(kSpec.PlaneSize())),
                          want_logits, want_wdl);
    for (int a = 0; a < kSpec.num_actions; ++a) {
      ASSERT_EQ(logits[i * kSpec.num_actions + a], want_logits[a]) << "row " << i;
    }
    for (int k = 0; k < 3; ++k) ASSERT_EQ(wdl[i * 3 + k], want_wdl[k]) << "row " << i;
  }
}

// Sends `requests` on one stream (a writer thread) while reading every answer, then half-closes.
// Returns the answers by request id; `versions` gets the model versions in arrival order.
std::map<uint64_t, EvaluateResponse> Exchange(zerofleet::v1::Inference::Stub& stub,
                                              const std::vector<EvaluateRequest>& requests,
                                              std::vector<int64_t>* versions = nullptr,
                                              std::atomic<int>* answered = nullptr) {
  grpc::ClientContext context;
  auto stream = stub.Evaluate(&context);
  std::map<uint64_t, EvaluateResponse> answers;
  {
    Thread writer("test-writer", [&] {
      for (const EvaluateRequest& r : requests) {
        if (!stream->Write(r)) break;
      }
      stream->WritesDone();
    });
    EvaluateResponse response;
    while (answers.size() < requests.size() && stream->Read(&response)) {
      EXPECT_EQ(answers.count(response.request_id()), 0u) << "answered twice";
      if (versions != nullptr && response.error_code() == 0) {
        versions->push_back(response.model_version());
      }
      answers[response.request_id()] = response;
      if (answered != nullptr) answered->fetch_add(1);
    }
  }
  grpc::Status status = stream->Finish();
  EXPECT_TRUE(status.ok()) << status.error_message();
  return answers;
}

TEST(InferenceServiceTest, ManyStreamsGetTheirOwnAnswers) {
  auto server = StartServer(ServerOptions(Fake(/*version=*/3)));
  ASSERT_NE(server, nullptr);
  constexpr int kStreams = 16, kRequests = 60;
  std::vector<std::vector<EvaluateRequest>> requests(kStreams);
  std::vector<std::map<uint64_t, EvaluateResponse>> answers(kStreams);
  {
    std::vector<std::unique_ptr<Thread>> clients;
    for (int s = 0; s < kStreams; ++s) {
      std::mt19937_64 rng(s);
      // Every stream uses the same request ids: answers must still go to the right stream.
      for (int i = 0; i < kRequests; ++i) requests[s].push_back(Request(i, 1 + (i + s) % 9, rng));
      clients.push_back(std::make_unique<Thread>(absl::StrCat("client", s), [&, s] {
        auto stub = Stub(server->port());
        answers[s] = Exchange(*stub, requests[s]);
      }));
    }
  }
  for (int s = 0; s < kStreams; ++s) {
    ASSERT_EQ(answers[s].size(), static_cast<size_t>(kRequests)) << "stream " << s;
    for (const EvaluateRequest& r : requests[s]) {
      SCOPED_TRACE(absl::StrCat("stream ", s, " request ", r.request_id()));
      EXPECT_EQ(answers[s][r.request_id()].model_version(), 3);
      ExpectCorrectAnswer(r, answers[s][r.request_id()]);
    }
  }
  EXPECT_THAT(metrics::TextExposition(server->registry()),
              HasSubstr("zf_inference_streams_total 16"));
}

TEST(InferenceServiceTest, BadInputIsAnsweredInvalidArgumentAndTheStreamGoesOn) {
  auto server = StartServer(ServerOptions(Fake(/*version=*/1)));
  ASSERT_NE(server, nullptr);
  std::mt19937_64 rng(7);
  std::vector<EvaluateRequest> requests;
  std::map<uint64_t, std::string> bad;  // id -> expected message part
  auto add_bad = [&](EvaluateRequest r, const std::string& needle) {
    r.set_request_id(100 + bad.size());
    bad[r.request_id()] = needle;
    requests.push_back(std::move(r));
  };
  requests.push_back(Request(1, 2, rng));
  EvaluateRequest r = Request(0, 2, rng);
  r.mutable_planes()->set_dtype(zerofleet::v1::DTYPE_FLOAT32);
  add_bad(r, "dtype is DTYPE_FLOAT32");
  requests.push_back(Request(2, 3, rng));
  r = Request(0, 2, rng);
  r.mutable_planes()->set_shape(2, 7);
  add_bad(r, "shape is [2, 3, 7, 7], expected [n, 3, 6, 7]");
  r = Request(0, 2, rng);
  r.mutable_planes()->mutable_data()->pop_back();
  add_bad(r, "has 251 bytes, expected 252");
  r = Request(0, 1, rng);
  r.mutable_planes()->set_shape(0, 0);
  r.mutable_planes()->clear_data();
  add_bad(r, "positions) is 0, expected 1..64");
  add_bad(Request(0, kMaxRequestRows + 1, rng), "is 65, expected 1..64");
  r = Request(0, 1, rng);
  r.mutable_planes()->set_shape(0, int64_t{1} << 62);
  add_bad(r, "positions) is 4611686018427387904");
  r = Request(0, 1, rng);
  r.mutable_planes()->set_shape(1, -3);
  add_bad(r, "shape is [1, -3, 6, 7]");
  r = Request(0, 1, rng);
  r.mutable_planes()->clear_shape();
  add_bad(r, "shape is []");
  r = Request(0, 1, rng);
  r.clear_planes();
  add_bad(r, "dtype is DTYPE_UNSPECIFIED");
  requests.push_back(Request(3, 1, rng));

  auto stub = Stub(server->port());
  std::map<uint64_t, EvaluateResponse> answers = Exchange(*stub, requests);
  ASSERT_EQ(answers.size(), requests.size());
  for (const EvaluateRequest& req : requests) {
    const EvaluateResponse& a = answers[req.request_id()];
    if (bad.count(req.request_id())) {
      EXPECT_EQ(a.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << req.request_id();
      EXPECT_THAT(a.error_message(), HasSubstr(bad[req.request_id()]));
    } else {
      ExpectCorrectAnswer(req, a);
    }
  }
  EXPECT_THAT(metrics::TextExposition(server->registry()),
              HasSubstr(absl::StrCat("zf_inference_requests_total{code=\"invalid_argument\"} ",
                                     bad.size())));
}

TEST(InferenceServiceTest, GetModelInfoDescribesTheModel) {
  InferenceServer::Options options = ServerOptions(Fake(/*version=*/5));
  options.metrics_listen = "127.0.0.1:0";
  auto server = StartServer(std::move(options));
  ASSERT_NE(server, nullptr);
  EXPECT_GT(server->metrics_port(), 0);
  auto stub = Stub(server->port());
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  zerofleet::v1::ModelInfo info;
  ASSERT_TRUE(stub->GetModelInfo(&context, {}, &info).ok());
  EXPECT_EQ(info.version(), 5);
  EXPECT_EQ(info.game(), "connect4");
  EXPECT_EQ(info.input_channels(), 3);
  EXPECT_EQ(info.board_height(), 6);
  EXPECT_EQ(info.board_width(), 7);
  EXPECT_EQ(info.num_actions(), 7);
  EXPECT_EQ(info.max_request_rows(), kMaxRequestRows);
  EXPECT_FALSE(info.score());  // kSpec has no score head
}

grpc::health::v1::HealthCheckResponse::ServingStatus Health(int port) {
  auto stub =
      grpc::health::v1::Health::NewStub(grpc_util::CreateChannel(absl::StrCat("127.0.0.1:", port)));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::health::v1::HealthCheckResponse response;
  grpc::Status status = stub->Check(&context, {}, &response);
  EXPECT_TRUE(status.ok()) << status.error_message();
  return response.status();
}

TEST(InferenceServiceTest, HealthIsNotServingUntilWarmedUpAndWhileDraining) {
  std::shared_ptr<FakeBackend> backend = Fake(1);
  backend->PauseRuns();
  auto created = InferenceServer::Create(ServerOptions(backend));
  ASSERT_OK(created.status());
  InferenceServer& server = **created;
  EXPECT_EQ(Health(server.port()), grpc::health::v1::HealthCheckResponse::NOT_SERVING);
  {
    Thread serve("serve", [&] { EXPECT_OK(server.Serve()); });
    ASSERT_TRUE(testing::WaitFor([&] { return backend->NumBlockedRuns() == 1; }));
    // The warm-up batch is running: still not serving.
    EXPECT_EQ(Health(server.port()), grpc::health::v1::HealthCheckResponse::NOT_SERVING);
    EXPECT_FALSE(server.serving());
    backend->ResumeRuns();
  }
  EXPECT_EQ(backend->BatchSizes(), std::vector<int>{32});  // one full batch
  EXPECT_EQ(Health(server.port()), grpc::health::v1::HealthCheckResponse::SERVING);
  server.Shutdown();
  EXPECT_FALSE(server.serving());
}

// A reload may add or drop the score head (a server started from flags serves a learner's
// --aux_heads checkpoints): ModelInfo says which, and answers carry scores only from a model
// that has it.
TEST(InferenceServiceTest, ReloadMayAddOrDropTheScoreHead) {
  ModelSpec scored = kSpec;
  scored.score = true;
  std::map<std::string, std::shared_ptr<Backend>> checkpoints = {{"aux", Fake(2, scored)},
                                                                 {"plain", Fake(3)}};
  InferenceServer::Options options = ServerOptions(Fake(1));
  options.loader = [&](const std::string& path) -> absl::StatusOr<std::shared_ptr<Backend>> {
    return checkpoints.at(path);
  };
  auto server = StartServer(std::move(options));
  ASSERT_NE(server, nullptr);
  auto stub = Stub(server->port());
  auto info_score = [&] {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    zerofleet::v1::ModelInfo info;
    EXPECT_TRUE(stub->GetModelInfo(&context, {}, &info).ok());
    return info.score();
  };
  std::mt19937_64 rng(3);
  auto ask = [&](uint64_t id) {
    const EvaluateRequest request = Request(id, 3, rng);
    std::map<uint64_t, EvaluateResponse> answers = Exchange(*stub, {request});
    EXPECT_EQ(answers.size(), 1u);
    ExpectCorrectAnswer(request, answers[id]);
    return std::make_pair(request, answers[id]);
  };
  EXPECT_FALSE(info_score());
  EXPECT_FALSE(ask(1).second.has_score());

  ASSERT_OK(server->Reload("aux"));
  EXPECT_TRUE(info_score());
  const auto [request, response] = ask(2);
  ASSERT_THAT(response.score().shape(), ::testing::ElementsAre(3, 1));
  const std::vector<float> scores = Floats(response.score());
  const auto* bytes = reinterpret_cast<const uint8_t*>(request.planes().data().data());
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(scores[i], FakeBackend::Score(
                             2, std::span<const uint8_t>(bytes + i * kSpec.PlaneSize(),
                                                         static_cast<size_t>(kSpec.PlaneSize()))));
  }

  ASSERT_OK(server->Reload("plain"));
  EXPECT_FALSE(info_score());
  EXPECT_FALSE(ask(3).second.has_score());
}

TEST(InferenceServiceTest, HotReloadDuringTrafficFailsNothingAndVersionsNeverGoDown) {
  std::map<std::string, std::shared_ptr<Backend>> checkpoints = {
      {"v2", Fake(2)},
      {"v3", Fake(3)},
      {"v4", Fake(4)},
      {"old", Fake(1)},
      {"mismatch", Fake(9, ModelSpec{3, 6, 7, 8})}};
  InferenceServer::Options options = ServerOptions(Fake(1));
  options.loader = [&](const std::string& path) -> absl::StatusOr<std::shared_ptr<Backend>> {
    auto it = checkpoints.find(path);
    if (it == checkpoints.end()) return absl::DataLossError(absl::StrCat(path, " is corrupt"));
    return it->second;
  };
  auto server = StartServer(std::move(options));
  ASSERT_NE(server, nullptr);

  // Each stream sends requests until the test has seen answers of the last model.
  constexpr int kStreams = 4;
  std::atomic<int> answered{0};
  std::array<std::atomic<int>, 5> by_version{};  // answers by model version
  std::atomic<bool> stop{false};
  std::vector<std::vector<EvaluateRequest>> requests(kStreams);
  std::vector<std::map<uint64_t, EvaluateResponse>> answers(kStreams);
  std::vector<std::vector<int64_t>> versions(kStreams);
  {
    std::vector<std::unique_ptr<Thread>> clients;
    for (int s = 0; s < kStreams; ++s) {
      clients.push_back(std::make_unique<Thread>(absl::StrCat("client", s), [&, s] {
        auto stub = Stub(server->port());
        grpc::ClientContext context;
        auto stream = stub->Evaluate(&context);
        {
          Thread writer("writer", [&] {
            std::mt19937_64 rng(100 + s);
            for (int i = 0; !stop.load() || i < 100; ++i) {
              requests[s].push_back(Request(i, 1 + i % 5, rng));
              if (!stream->Write(requests[s].back())) break;
            }
            stream->WritesDone();
          });
          EvaluateResponse response;
          while (stream->Read(&response)) {
            EXPECT_EQ(answers[s].count(response.request_id()), 0u) << "answered twice";
            versions[s].push_back(response.model_version());
            answers[s][response.request_id()] = response;
            answered.fetch_add(1);
            if (response.model_version() >= 1 && response.model_version() <= 4) {
              by_version[response.model_version()].fetch_add(1);
            }
          }
        }
        grpc::Status status = stream->Finish();
        EXPECT_TRUE(status.ok()) << status.error_message();
      }));
    }
    // Reload while the streams are busy.
    ASSERT_TRUE(testing::WaitFor([&] { return answered.load() >= 200; }));
    EXPECT_OK(server->Reload("v2"));
    EXPECT_EQ(server->model_version(), 2);
    EXPECT_THAT(server->Reload("corrupt").message(), HasSubstr("corrupt"));
    EXPECT_EQ(server->Reload("mismatch").code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(server->Reload("old").code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(server->model_version(), 2);
    ASSERT_TRUE(testing::WaitFor([&] { return by_version[2].load() >= 100; }));
    EXPECT_OK(server->Reload("v3"));
    ASSERT_TRUE(testing::WaitFor([&] { return by_version[3].load() >= 100; }));
    EXPECT_OK(server->Reload("v4"));
    ASSERT_TRUE(testing::WaitFor([&] { return by_version[4].load() >= 200; }));
    stop.store(true);
  }
  std::set<int64_t> seen;
  for (int s = 0; s < kStreams; ++s) {
    ASSERT_EQ(answers[s].size(), requests[s].size());
    for (const EvaluateRequest& r : requests[s]) {
      SCOPED_TRACE(absl::StrCat("stream ", s, " request ", r.request_id()));
      ExpectCorrectAnswer(r, answers[s][r.request_id()]);
    }
    EXPECT_TRUE(std::is_sorted(versions[s].begin(), versions[s].end())) << "stream " << s;
    seen.insert(versions[s].begin(), versions[s].end());
  }
  EXPECT_EQ(seen, (std::set<int64_t>{1, 2, 3, 4}));
}

TEST(InferenceServiceTest, ShutdownFinishesInFlightAnswersAndEndsStreamsUnavailable) {
  std::shared_ptr<FakeBackend> backend = Fake(1);
  InferenceServer::Options options = ServerOptions(backend);
  options.batcher.num_workers = 1;
  options.batcher.max_batch = 4;
  options.drain_grace = absl::Seconds(60);  // the stream ends when the client closes its side
  auto server = StartServer(std::move(options));
  ASSERT_NE(server, nullptr);
  backend->PauseRuns();
  auto stub = Stub(server->port());
  grpc::ClientContext context;
  auto stream = stub->Evaluate(&context);
  std::mt19937_64 rng(1);
  std::vector<EvaluateRequest> requests;
  for (int i = 0; i < 3; ++i) {
    requests.push_back(Request(i, 4, rng));
    ASSERT_TRUE(stream->Write(requests.back()));
  }
  // One batch (request 0) is held in the backend; requests 1 and 2 wait in the queue.
  ASSERT_TRUE(testing::WaitFor([&] {
    return backend->NumBlockedRuns() == 1 && server->batcher().stats().queued_requests == 2;
  }));
  {
    Thread shutdown("shutdown", [&] { server->Shutdown(); });
    // Shutdown stops serving first and closes the batcher after (which cancels the queue): resume
    // the held batch only once the queue is cancelled, or the worker may serve request 1 first.
    ASSERT_TRUE(testing::WaitFor(
        [&] { return !server->serving() && server->batcher().stats().queued_requests == 0; }));
    backend->ResumeRuns();
    std::map<uint64_t, EvaluateResponse> answers;
    EvaluateResponse response;
    int notices = 0;
    while (stream->Read(&response)) {
      if (response.draining()) {
        // The drain notice: close this side, as it asks, and read on.
        ++notices;
        EXPECT_EQ(response.error_code(), grpc::StatusCode::UNAVAILABLE);
        // A request sent while draining is answered too: CANCELLED.
        requests.push_back(Request(3, 1, rng));
        EXPECT_TRUE(stream->Write(requests.back()));
        stream->WritesDone();
        continue;
      }
      answers[response.request_id()] = response;
    }
    EXPECT_EQ(notices, 1);
    ASSERT_EQ(answers.size(), 4u);
    ExpectCorrectAnswer(requests[0], answers[0]);
    EXPECT_EQ(answers[1].error_code(), grpc::StatusCode::CANCELLED);
    EXPECT_EQ(answers[2].error_code(), grpc::StatusCode::CANCELLED);
    EXPECT_EQ(answers[3].error_code(), grpc::StatusCode::CANCELLED);
    grpc::Status status = stream->Finish();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
  }
}

TEST(InferenceServiceTest, ShutdownEndsTheStreamOfAClientThatNeverClosesItsSide) {
  std::shared_ptr<FakeBackend> backend = Fake(1);
  auto server = StartServer(ServerOptions(backend));
  ASSERT_NE(server, nullptr);
  auto stub = Stub(server->port());
  grpc::ClientContext context;
  auto stream = stub->Evaluate(&context);
  std::mt19937_64 rng(1);
  EvaluateRequest request = Request(7, 2, rng);
  ASSERT_TRUE(stream->Write(request));
  EvaluateResponse response;
  ASSERT_TRUE(stream->Read(&response));
  ExpectCorrectAnswer(request, response);
  // The client ignores the notice and keeps its side open: Shutdown ends the stream after its
  // grace (a second) all the same.
  const absl::Time start = absl::Now();
  Thread shutdown("shutdown", [&] { server->Shutdown(); });
  ASSERT_TRUE(stream->Read(&response));
  EXPECT_TRUE(response.draining());
  EXPECT_FALSE(stream->Read(&response));
  EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_LT(absl::Now() - start, absl::Seconds(30));
}

TEST(InferenceServiceTest, ClientCancellingWithRequestsInFlightIsSafe) {
  std::shared_ptr<FakeBackend> backend = Fake(1);
  auto server = StartServer(ServerOptions(backend));
  ASSERT_NE(server, nullptr);
  backend->PauseRuns();
  {
    auto stub = Stub(server->port());
    grpc::ClientContext context;
    auto stream = stub->Evaluate(&context);
    std::mt19937_64 rng(1);
    for (int i = 0; i < 20; ++i) ASSERT_TRUE(stream->Write(Request(i, 8, rng)));
    ASSERT_TRUE(testing::WaitFor([&] { return backend->NumBlockedRuns() >= 1; }));
    context.TryCancel();
    stream->Finish();
  }
  // The stream ends while its answers are still being computed; they are dropped when they come.
  ASSERT_TRUE(testing::WaitFor([&] { return server->service().open_streams() == 0; }));
  backend->ResumeRuns();
  ASSERT_TRUE(testing::WaitFor([&] {
    Batcher::Stats stats = server->batcher().stats();
    return stats.queued_rows == 0 && stats.batches_in_flight == 0;
  }));
  // The server still serves.
  auto stub = Stub(server->port());
  std::mt19937_64 rng(2);
  std::vector<EvaluateRequest> requests = {Request(1, 1, rng)};
  auto answers = Exchange(*stub, requests);
  ASSERT_EQ(answers.size(), 1u);
  ExpectCorrectAnswer(requests[0], answers[1]);
}

}  // namespace
}  // namespace zf::inference
