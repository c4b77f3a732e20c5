#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>

#include "common/grpc/channel.h"
#include "common/grpc/status.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/grpc/health/v1/health.grpc.pb.h"

namespace zf::grpc_util {
namespace {

using ::grpc::health::v1::Health;
using ::grpc::health::v1::HealthCheckRequest;
using ::grpc::health::v1::HealthCheckResponse;
using ::testing::HasSubstr;
using ::zf::testing::StatusIs;

TEST(GrpcStatusTest, RoundTripsEveryCode) {
  for (int code = 0; code <= 16; ++code) {
    absl::Status status(static_cast<absl::StatusCode>(code), code == 0 ? "" : "why");
    grpc::Status g = ToGrpcStatus(status);
    EXPECT_EQ(static_cast<int>(g.error_code()), code);
    EXPECT_EQ(FromGrpcStatus(g), status);
  }
  EXPECT_EQ(ToGrpcStatus(absl::ResourceExhaustedError("full")).error_message(), "full");
}

HealthCheckResponse::ServingStatus Check(Health::Stub& stub, grpc::Status* status) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  HealthCheckRequest request;
  HealthCheckResponse response;
  *status = stub.Check(&context, request, &response);
  return response.status();
}

TEST(GrpcServerTest, HealthStartsNotServingAndFollowsTheServer) {
  grpc::ServerBuilder builder;
  ApplyServerSettings(WireSettings{}, &builder);
  int port = 0;
  absl::StatusOr<std::unique_ptr<grpc::Server>> server =
      StartServer("127.0.0.1:0", WireSettings{}, &builder, &port);
  ASSERT_OK(server);
  ASSERT_GT(port, 0);
  auto stub = Health::NewStub(CreateChannel("127.0.0.1:" + std::to_string(port)));
  grpc::Status status;
  EXPECT_EQ(Check(*stub, &status), HealthCheckResponse::NOT_SERVING);
  EXPECT_TRUE(status.ok()) << status.error_message();
  (*server)->GetHealthCheckService()->SetServingStatus(true);
  EXPECT_EQ(Check(*stub, &status), HealthCheckResponse::SERVING);
  (*server)->Shutdown();
}

TEST(GrpcServerTest, BadAddressesAreRefused) {
  grpc::ServerBuilder b1;
  int port = 0;
  EXPECT_THAT(StartServer("no-port", WireSettings{}, &b1, &port),
              StatusIs(absl::StatusCode::kInvalidArgument));
  grpc::ServerBuilder b2;
  EXPECT_THAT(StartServer("127.0.0.1:99999", WireSettings{}, &b2, &port),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

// A co-located client reaches the server over a Unix domain socket ("unix:PATH").
TEST(GrpcServerTest, ServesOnAUnixSocket) {
  const std::string path = "/tmp/zf-grpc-test-" + std::to_string(::getpid()) + ".sock";
  std::remove(path.c_str());
  grpc::ServerBuilder builder;
  ApplyServerSettings(WireSettings{}, &builder);
  int port = 0;
  absl::StatusOr<std::unique_ptr<grpc::Server>> server =
      StartServer("unix:" + path, WireSettings{}, &builder, &port);
  ASSERT_OK(server);
  (*server)->GetHealthCheckService()->SetServingStatus(true);
  auto stub = Health::NewStub(CreateChannel("unix:" + path));
  grpc::Status status;
  EXPECT_EQ(Check(*stub, &status), HealthCheckResponse::SERVING);
  EXPECT_TRUE(status.ok()) << status.error_message();
  (*server)->Shutdown();
  std::remove(path.c_str());

  grpc::ServerBuilder b2;
  EXPECT_THAT(StartServer("unix:" + std::string(200, 'x'), WireSettings{}, &b2, &port),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("1..107 bytes")));
}

TEST(GrpcServerTest, MemoryQuotaBelowOneMessageIsRefused) {
  WireSettings settings;
  settings.server_memory_bytes = settings.max_message_bytes;
  grpc::ServerBuilder builder;
  int port = 0;
  EXPECT_THAT(StartServer("127.0.0.1:0", settings, &builder, &port),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("memory quota")));
}

TEST(GrpcServerTest, PortInUseIsUnavailable) {
  grpc::ServerBuilder b1;
  ApplyServerSettings(WireSettings{}, &b1);
  int port = 0;
  absl::StatusOr<std::unique_ptr<grpc::Server>> first =
      StartServer("127.0.0.1:0", WireSettings{}, &b1, &port);
  ASSERT_OK(first);
  grpc::ServerBuilder b2;
  ApplyServerSettings(WireSettings{}, &b2);
  int port2 = 0;
  EXPECT_THAT(StartServer("127.0.0.1:" + std::to_string(port), WireSettings{}, &b2, &port2),
              StatusIs(absl::StatusCode::kUnavailable));
  (*first)->Shutdown();
}

}  // namespace
}  // namespace zf::grpc_util
