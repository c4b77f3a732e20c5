// The Replay service and ReplayServer over loopback gRPC: insert, duplicates, sample, bad input,
// health across recovery, restart on the same directory.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/grpc/channel.h"
#include "common/metrics/exposition.h"
#include "common/testing/http_get.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "grpcpp/generic/generic_stub.h"
#include "gtest/gtest.h"
#include "proto/grpc/health/v1/health.grpc.pb.h"
#include "proto/zerofleet/v1/replay.grpc.pb.h"
#include "replay/service/replay_server.h"
#include "replay/testing/records.h"

namespace zf::replay {
namespace {

using ::grpc::health::v1::Health;
using ::grpc::health::v1::HealthCheckRequest;
using ::grpc::health::v1::HealthCheckResponse;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using zerofleet::v1::GetInfoRequest;
using zerofleet::v1::InsertRequest;
using zerofleet::v1::InsertResponse;
using zerofleet::v1::Replay;
using zerofleet::v1::ReplayInfo;
using zerofleet::v1::SampleBatch;
using zerofleet::v1::SampleRequest;

void SetDeadline(grpc::ClientContext* context, std::chrono::milliseconds timeout) {
  context->set_deadline(std::chrono::system_clock::now() + timeout);
}

class ReplayServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(::testing::TempDir(), "/replay_service_test_", ::getpid(), "_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  ReplayServerOptions Options() const {
    ReplayServerOptions o;
    o.listen = "127.0.0.1:0";
    o.dir = dir_;
    o.capacity_positions = 1000;
    o.samples_per_insert = 1.0;
    o.min_size_to_sample = 10;
    o.error_buffer = 1000;
    o.max_positions_per_game = 16;
    o.max_sample_positions = 64;
    o.insert_workers.num_threads = 4;
    return o;
  }

  void Start(ReplayServerOptions options) {
    server_.reset();
    absl::StatusOr<std::unique_ptr<ReplayServer>> server = ReplayServer::Create(std::move(options));
    ASSERT_OK(server);
    server_ = std::move(*server);
    stub_ = Replay::NewStub(grpc_util::CreateChannel(absl::StrCat("127.0.0.1:", server_->port())));
  }

  grpc::Status Insert(const InsertRequest& request, InsertResponse* response) {
    grpc::ClientContext context;
    SetDeadline(&context, std::chrono::seconds(10));
    return stub_->Insert(&context, request, response);
  }

  ReplayInfo Info() {
    grpc::ClientContext context;
    SetDeadline(&context, std::chrono::seconds(10));
    ReplayInfo info;
    grpc::Status status = stub_->GetInfo(&context, GetInfoRequest(), &info);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return info;
  }

  std::string dir_;
  std::unique_ptr<ReplayServer> server_;
  std::unique_ptr<Replay::Stub> stub_;
};

TEST_F(ReplayServiceTest, HealthIsNotServingUntilRecoveredThenServing) {
  ReplayServerOptions options = Options();
  bool checked = false;
  options.on_listening = [&checked](int port) {
    auto channel = grpc_util::CreateChannel(absl::StrCat("127.0.0.1:", port));
    auto health = Health::NewStub(channel);
    grpc::ClientContext context;
    SetDeadline(&context, std::chrono::seconds(10));
    HealthCheckResponse response;
    grpc::Status status = health->Check(&context, HealthCheckRequest(), &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(response.status(), HealthCheckResponse::NOT_SERVING);
    // The Replay service answers UNAVAILABLE while the shard recovers.
    auto replay = Replay::NewStub(channel);
    grpc::ClientContext info_context;
    SetDeadline(&info_context, std::chrono::seconds(10));
    ReplayInfo info;
    EXPECT_EQ(replay->GetInfo(&info_context, GetInfoRequest(), &info).error_code(),
              grpc::StatusCode::UNAVAILABLE);
    checked = true;
  };
  Start(options);
  EXPECT_TRUE(checked);
  auto health =
      Health::NewStub(grpc_util::CreateChannel(absl::StrCat("127.0.0.1:", server_->port())));
  grpc::ClientContext context;
  SetDeadline(&context, std::chrono::seconds(10));
  HealthCheckResponse response;
  ASSERT_TRUE(health->Check(&context, HealthCheckRequest(), &response).ok());
  EXPECT_EQ(response.status(), HealthCheckResponse::SERVING);
}

TEST_F(ReplayServiceTest, InsertAcknowledgesStoredAndDuplicateGames) {
  Start(Options());
  InsertRequest request;
  *request.add_games() = testing::MakeRecord("a", 5);
  *request.add_games() = testing::MakeRecord("b", 7);
  InsertResponse response;
  grpc::Status status = Insert(request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_THAT(response.outcomes(), ElementsAre(InsertResponse::STORED, InsertResponse::STORED));

  InsertRequest again;
  *again.add_games() = testing::MakeRecord("b", 7);
  *again.add_games() = testing::MakeRecord("c", 3);
  status = Insert(again, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_THAT(response.outcomes(), ElementsAre(InsertResponse::DUPLICATE, InsertResponse::STORED));

  ReplayInfo info = Info();
  EXPECT_EQ(info.games(), 3);
  EXPECT_EQ(info.positions(), 15);
  EXPECT_EQ(info.capacity(), 1000);
  EXPECT_EQ(info.inserts(), 3);
  EXPECT_EQ(info.duplicates(), 1);
  EXPECT_EQ(info.samples_per_insert(), 1.0);
  EXPECT_EQ(info.min_size_to_sample(), 10);
}

TEST_F(ReplayServiceTest, SampleServesABatchOnceTheMinimumSizeIsReached) {
  Start(Options());
  // Below min_size_to_sample, a sample waits under the rate limiter until its deadline.
  {
    grpc::ClientContext context;
    SetDeadline(&context, std::chrono::milliseconds(200));
    SampleRequest request;
    request.set_batch_size(4);
    SampleBatch batch;
    EXPECT_EQ(stub_->Sample(&context, request, &batch).error_code(),
              grpc::StatusCode::DEADLINE_EXCEEDED);
  }
  InsertRequest request;
  *request.add_games() = testing::MakeRecord("a", 12);
  InsertResponse response;
  ASSERT_TRUE(Insert(request, &response).ok());

  grpc::ClientContext context;
  SetDeadline(&context, std::chrono::seconds(10));
  SampleRequest sample;
  sample.set_batch_size(8);
  SampleBatch batch;
  grpc::Status status = stub_->Sample(&context, sample, &batch);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(batch.batch_size(), 8);
  EXPECT_EQ(batch.game(), "toy");
  EXPECT_EQ(batch.planes().size(), 8u * 2 * 2 * 2);
  EXPECT_EQ(batch.policy().size(), 8u * 4 * sizeof(float));
  EXPECT_EQ(batch.value().size(), 8u * sizeof(float));
  EXPECT_EQ(Info().sampled_positions(), 8);
}

TEST_F(ReplayServiceTest, ASampleWaitingForDataIsServedOnceInsertsArrive) {
  ReplayServerOptions options = Options();
  options.sample_workers.num_threads = 1;  // even a single sample thread cannot block inserts
  Start(options);
  grpc::Status sample_status;
  SampleBatch batch;
  std::thread learner([&] {
    grpc::ClientContext context;
    SetDeadline(&context, std::chrono::seconds(60));
    SampleRequest request;
    request.set_batch_size(4);
    sample_status = stub_->Sample(&context, request, &batch);
  });
  InsertRequest request;
  *request.add_games() = testing::MakeRecord("a", 12);
  InsertResponse response;
  grpc::Status status = Insert(request, &response);
  EXPECT_TRUE(status.ok()) << status.error_message();
  learner.join();
  EXPECT_TRUE(sample_status.ok()) << sample_status.error_message();
  EXPECT_EQ(batch.batch_size(), 4);
}

TEST_F(ReplayServiceTest, BadInputIsInvalidArgumentNamingTheProblemAndCounted) {
  Start(Options());
  InsertResponse response;
  grpc::Status status = Insert(InsertRequest(), &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("got 0"));

  InsertRequest bad;
  *bad.add_games() = testing::MakeRecord("ok", 3);
  zerofleet::v1::GameRecord broken = testing::MakeRecord("broken", 3);
  broken.set_policy(testing::PackFloats(std::vector<float>(12, 0.5f)));  // rows sum to 2
  *bad.add_games() = broken;
  status = Insert(bad, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("game 1: bad_policy"));
  EXPECT_EQ(response.outcomes_size(), 0);

  zerofleet::v1::GameRecord garbage;
  garbage.set_game_id("g");
  garbage.set_num_positions(1 << 30);
  garbage.set_planes("\xff\x00\x13");
  InsertRequest garbage_request;
  *garbage_request.add_games() = garbage;
  EXPECT_EQ(Insert(garbage_request, &response).error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  for (int batch_size : {0, -3, 100000}) {
    grpc::ClientContext context;
    SetDeadline(&context, std::chrono::seconds(10));
    SampleRequest request;
    request.set_batch_size(batch_size);
    SampleBatch batch;
    status = stub_->Sample(&context, request, &batch);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << batch_size;
    EXPECT_THAT(status.error_message(), HasSubstr("batch_size")) << batch_size;
  }

  std::string metrics = zf::metrics::TextExposition(*server_->registry());
  EXPECT_THAT(metrics, HasSubstr("zf_replay_service_invalid_requests_total{rpc=\"insert\"} 3"));
  EXPECT_THAT(metrics, HasSubstr("zf_replay_service_invalid_requests_total{rpc=\"sample\"} 3"));
  // The server still serves.
  EXPECT_EQ(Info().games(), 1);  // "ok" was valid and is stored
}

TEST_F(ReplayServiceTest, ServesMetricsWhenAsked) {
  ReplayServerOptions options = Options();
  options.metrics_listen = "127.0.0.1:0";
  Start(options);
  std::string address = server_->metrics_address();
  ASSERT_FALSE(address.empty());
  int port = 0;
  ASSERT_TRUE(absl::SimpleAtoi(address.substr(address.rfind(':') + 1), &port)) << address;
  InsertRequest request;
  *request.add_games() = testing::MakeRecord("a", 5);
  InsertResponse response;
  ASSERT_TRUE(Insert(request, &response).ok());
  ASSERT_OK_AND_ASSIGN(::zf::testing::HttpResponse http,
                       ::zf::testing::HttpGet("127.0.0.1", port, "/metrics", absl::Seconds(10)));
  EXPECT_EQ(http.status_code, 200);
  EXPECT_THAT(http.body, HasSubstr("zf_replay_games_stored 1"));
  EXPECT_THAT(http.body, HasSubstr("zf_replay_service_invalid_requests_total"));
}

TEST_F(ReplayServiceTest, BytesThatAreNoMessageAreRefusedAndTheServerKeepsServing) {
  Start(Options());
  grpc::GenericStub generic(grpc_util::CreateChannel(absl::StrCat("127.0.0.1:", server_->port())));
  for (const char* method : {"/zerofleet.v1.Replay/Insert", "/zerofleet.v1.Replay/Sample"}) {
    const std::string garbage = "\xff\xff\xff\xff\x0f not a protobuf \x08";
    grpc::Slice slice(garbage);
    grpc::ByteBuffer request(&slice, 1);
    grpc::ByteBuffer response;
    grpc::ClientContext context;
    SetDeadline(&context, std::chrono::seconds(10));
    absl::Notification done;
    grpc::Status status;
    generic.UnaryCall(&context, method, grpc::StubOptions(), &request, &response,
                      [&](grpc::Status s) {
                        status = std::move(s);
                        done.Notify();
                      });
    done.WaitForNotification();
    EXPECT_FALSE(status.ok()) << method;
  }
  EXPECT_EQ(Info().games(), 0);  // still serving
}

TEST_F(ReplayServiceTest, RestartRecoversGamesAndKeepsThemDeduplicated) {
  Start(Options());
  InsertRequest request;
  for (int i = 0; i < 5; ++i) *request.add_games() = testing::MakeRecord(absl::StrCat("g", i), 4);
  InsertResponse response;
  ASSERT_TRUE(Insert(request, &response).ok());
  server_->Shutdown();

  Start(Options());
  ReplayInfo info = Info();
  EXPECT_EQ(info.games(), 5);
  EXPECT_EQ(info.recovered_games(), 5);
  EXPECT_EQ(info.positions(), 20);
  ASSERT_TRUE(Insert(request, &response).ok());
  for (int outcome : response.outcomes()) EXPECT_EQ(outcome, InsertResponse::DUPLICATE);
  EXPECT_EQ(Info().games(), 5);
}

TEST_F(ReplayServiceTest, CallsAfterShutdownBeganAreUnavailable) {
  Start(Options());
  auto channel = grpc_util::CreateChannel(absl::StrCat("127.0.0.1:", server_->port()));
  server_->Shutdown();
  auto stub = Replay::NewStub(channel);
  grpc::ClientContext context;
  SetDeadline(&context, std::chrono::seconds(2));
  ReplayInfo info;
  EXPECT_EQ(stub->GetInfo(&context, GetInfoRequest(), &info).error_code(),
            grpc::StatusCode::UNAVAILABLE);
}

TEST(ReplayServerOptionsTest, BadOptionsAreInvalidArgument) {
  ReplayServerOptions options;
  EXPECT_THAT(ReplayServer::Create(options),
              ::zf::testing::StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("dir")));
  options.dir = "/tmp/unused";
  options.error_buffer = 1;  // a band that could deadlock
  EXPECT_THAT(ReplayServer::Create(options),
              ::zf::testing::StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace zf::replay
