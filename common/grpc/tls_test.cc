// TLS, mutual TLS and per-role authorization, tested from outside: real certificates made by
// scripts/make-certs (OpenSSL), a real server on a loopback socket, real clients.
#include "common/grpc/tls.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/grpc/authorization.h"
#include "common/grpc/channel.h"
#include "common/grpc/status.h"
#include "common/logging.h"
#include "common/metrics/exposition.h"
#include "common/testing/scratch_dir.h"
#include "common/testing/status_matchers.h"
#include "common/testing/subprocess.h"
#include "common/testing/wait.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/grpc/health/v1/health.grpc.pb.h"
#include "proto/zerofleet/v1/inference.grpc.pb.h"
#include "proto/zerofleet/v1/model.grpc.pb.h"
#include "proto/zerofleet/v1/replay.grpc.pb.h"

namespace zf::grpc_util {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::zf::testing::StatusIs;

// Replay and model services whose handlers only count that they were reached.
std::atomic<int> g_reached{0};

class CountingReplay : public zerofleet::v1::Replay::CallbackService {
  grpc::ServerUnaryReactor* Insert(grpc::CallbackServerContext* context,
                                   const zerofleet::v1::InsertRequest*,
                                   zerofleet::v1::InsertResponse*) override {
    return Reached(context);
  }
  grpc::ServerUnaryReactor* Sample(grpc::CallbackServerContext* context,
                                   const zerofleet::v1::SampleRequest*,
                                   zerofleet::v1::SampleBatch*) override {
    return Reached(context);
  }
  grpc::ServerUnaryReactor* GetInfo(grpc::CallbackServerContext* context,
                                    const zerofleet::v1::GetInfoRequest*,
                                    zerofleet::v1::ReplayInfo*) override {
    return Reached(context);
  }
  static grpc::ServerUnaryReactor* Reached(grpc::CallbackServerContext* context) {
    ++g_reached;
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
};

class CountingModelService : public zerofleet::v1::ModelService::CallbackService {
  grpc::ServerWriteReactor<zerofleet::v1::CheckpointChunk>* FetchCheckpoint(
      grpc::CallbackServerContext*, const zerofleet::v1::FetchCheckpointRequest*) override {
    ++g_reached;
    class Done : public grpc::ServerWriteReactor<zerofleet::v1::CheckpointChunk> {
     public:
      Done() { Finish(grpc::Status::OK); }
      void OnDone() override { delete this; }
    };
    return new Done;
  }
};

std::string CertDir() {
  static const std::string* dir = [] {
    char tmpl[] = "/tmp/zf_tls_test_XXXXXX";
    auto* d = new std::string(mkdtemp(tmpl));
    zf::testing::RemoveAtExit(*d);
    const std::string script = std::string(ZF_SOURCE_DIR) + "/scripts/make-certs";
    auto run = [&](std::vector<std::string> argv) {
      argv.insert(argv.begin(), script);
      absl::StatusOr<zf::testing::ProcessResult> r = zf::testing::RunProcess(argv);
      ZF_CHECK(r.ok() && r->exit_code == 0) << "make-certs failed: " << r->stderr_text;
    };
    run({"--out", *d});
    run({"--out", *d + "/other", "--roles", "actor,replay"});  // another CA
    // Same CA, other certificates: an expired actor, and a certificate naming no known role.
    for (const char* sub : {"/expired", "/stranger", "/rotate"}) {
      std::filesystem::create_directories(*d + sub);
      for (const char* f : {"/ca.pem", "/ca.key"}) {
        std::filesystem::copy_file(*d + f, *d + sub + f);
      }
    }
    run({"--out", *d + "/expired", "--only", "actor", "--days", "-1"});
    run({"--out", *d + "/stranger", "--only", "stranger"});
    run({"--out", *d + "/rotate", "--only", "replay,actor"});
    return d;
  }();
  return *dir;
}

TlsSettings ServerTls(const std::string& dir, const std::string& role = "replay") {
  TlsSettings tls;
  tls.cert_file = dir + "/" + role + ".pem";
  tls.key_file = dir + "/" + role + ".key";
  tls.client_ca_file = dir + "/ca.pem";
  tls.reload_interval = absl::Seconds(1);
  return tls;
}

// A client of `role` (empty: no client certificate) trusting `ca_dir`'s CA.
TlsSettings ClientTls(const std::string& role, const std::string& cert_dir,
                      const std::string& ca_dir) {
  TlsSettings tls;
  tls.ca_file = ca_dir + "/ca.pem";
  if (!role.empty()) {
    tls.cert_file = cert_dir + "/" + role + ".pem";
    tls.key_file = cert_dir + "/" + role + ".key";
  }
  tls.reload_interval = absl::Seconds(1);
  return tls;
}
TlsSettings ClientTls(const std::string& role) { return ClientTls(role, CertDir(), CertDir()); }

class TlsTest : public ::testing::Test {
 protected:
  void Start(const TlsSettings& tls) {
    grpc::ServerBuilder builder;
    ApplyServerSettings(WireSettings{}, &builder);
    builder.RegisterService(&replay_);
    builder.RegisterService(&model_);
    WireSettings wire;
    wire.tls = tls;
    ASSERT_OK_AND_ASSIGN(server_, StartServer("127.0.0.1:0", wire, &builder, &port_, &registry_));
    server_->GetHealthCheckService()->SetServingStatus(true);
    g_reached = 0;
  }
  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown(std::chrono::system_clock::now());
  }

  // A new connection each time (a channel argument no other channel has), so every call does
  // its own handshake with the files as they are now.
  std::shared_ptr<grpc::Channel> Channel(const TlsSettings& tls, const std::string& host) {
    WireSettings wire;
    wire.tls = tls;
    grpc::ChannelArguments args = ClientChannelArguments(wire);
    args.SetInt("zf.test.connection", ++connections_);
    return grpc::CreateCustomChannel(absl::StrCat(host, ":", port_), MakeChannelCredentials(tls),
                                     args);
  }

  // Calls `method` ("Insert", "Sample", "GetInfo", "FetchCheckpoint", "Check") as a client with
  // `tls`; *server_pem gets the server certificate the client saw.
  grpc::Status Call(const std::string& method, const TlsSettings& tls,
                    const std::string& host = "127.0.0.1", std::string* server_pem = nullptr) {
    auto channel = Channel(tls, host);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    grpc::Status status;
    if (method == "Check") {
      grpc::health::v1::HealthCheckResponse response;
      status = grpc::health::v1::Health::NewStub(channel)->Check(
          &context, grpc::health::v1::HealthCheckRequest(), &response);
    } else if (method == "FetchCheckpoint") {
      auto reader = zerofleet::v1::ModelService::NewStub(channel)->FetchCheckpoint(
          &context, zerofleet::v1::FetchCheckpointRequest());
      zerofleet::v1::CheckpointChunk chunk;
      while (reader->Read(&chunk)) {
      }
      status = reader->Finish();
    } else {
      auto stub = zerofleet::v1::Replay::NewStub(channel);
      if (method == "Insert") {
        zerofleet::v1::InsertResponse response;
        status = stub->Insert(&context, zerofleet::v1::InsertRequest(), &response);
      } else if (method == "Sample") {
        zerofleet::v1::SampleBatch response;
        status = stub->Sample(&context, zerofleet::v1::SampleRequest(), &response);
      } else {
        zerofleet::v1::ReplayInfo response;
        status = stub->GetInfo(&context, zerofleet::v1::GetInfoRequest(), &response);
      }
    }
    if (server_pem != nullptr && context.auth_context() != nullptr) {
      for (const auto& v : context.auth_context()->FindPropertyValues("x509_pem_cert")) {
        *server_pem = std::string(v.data(), v.size());
      }
    }
    return status;
  }

  double Denied(const std::string& method, const std::string& role) {
    const std::string needle = absl::StrCat("zf_grpc_server_calls_denied_total{method=\"", method,
                                            "\",role=\"", role, "\"} ");
    const std::string text = metrics::TextExposition(registry_);
    size_t at = text.find(needle);
    return at == std::string::npos ? 0 : std::atof(text.c_str() + at + needle.size());
  }

  CountingReplay replay_;
  CountingModelService model_;
  prometheus::Registry registry_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  int connections_ = 0;
};

TEST_F(TlsTest, EachRoleCallsWhatThePolicyAllows) {
  Start(ServerTls(CertDir()));
  EXPECT_OK(FromGrpcStatus(Call("Insert", ClientTls("actor"))));
  EXPECT_OK(FromGrpcStatus(Call("Sample", ClientTls("learner"))));
  EXPECT_OK(FromGrpcStatus(Call("GetInfo", ClientTls("operator"))));
  EXPECT_OK(FromGrpcStatus(Call("FetchCheckpoint", ClientTls("inference"))));
  EXPECT_OK(FromGrpcStatus(Call("FetchCheckpoint", ClientTls("evaluator"))));
  EXPECT_EQ(g_reached, 5);
  for (const char* role : {"actor", "learner", "inference", "replay", "evaluator", "operator"}) {
    EXPECT_OK(FromGrpcStatus(Call("Check", ClientTls(role)))) << role;
  }
}

TEST_F(TlsTest, AnActorMayNotSampleOrFetchCheckpoints) {
  Start(ServerTls(CertDir()));
  grpc::Status sample = Call("Sample", ClientTls("actor"));
  EXPECT_EQ(sample.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(sample.error_message(),
              AllOf(HasSubstr("role actor"), HasSubstr("/zerofleet.v1.Replay/Sample"),
                    HasSubstr("allowed: learner")));
  grpc::Status fetch = Call("FetchCheckpoint", ClientTls("actor"));
  EXPECT_EQ(fetch.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(fetch.error_message(), HasSubstr("/zerofleet.v1.ModelService/FetchCheckpoint"));
  EXPECT_EQ(Call("Insert", ClientTls("learner")).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(Call("GetInfo", ClientTls("actor")).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(g_reached, 0) << "a denied call reached a handler";
  EXPECT_EQ(Denied("/zerofleet.v1.Replay/Sample", "actor"), 1);
  EXPECT_EQ(Denied("/zerofleet.v1.ModelService/FetchCheckpoint", "actor"), 1);
  EXPECT_EQ(Denied("/zerofleet.v1.Replay/Insert", "learner"), 1);
}

TEST_F(TlsTest, ACertificateWithoutARoleIsDenied) {
  Start(ServerTls(CertDir()));
  grpc::Status status = Call("Insert", ClientTls("stranger", CertDir() + "/stranger", CertDir()));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(status.error_message(), HasSubstr("names no zerofleet role"));
  EXPECT_EQ(g_reached, 0);
  EXPECT_EQ(Denied("/zerofleet.v1.Replay/Insert", "none"), 1);
}

// A refused handshake is UNAVAILABLE at once, never a wait until the deadline.
void ExpectRefused(const grpc::Status& status, absl::Time start) {
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
  EXPECT_LT(absl::Now() - start, absl::Seconds(4)) << "the refusal took until the deadline";
}

TEST_F(TlsTest, HandshakesThatMustFail) {
  Start(ServerTls(CertDir()));
  struct Case {
    const char* what;
    TlsSettings client;
    std::string host = "127.0.0.1";
  };
  TlsSettings plaintext;  // no CA: a plaintext client
  TlsSettings wrong_name = ClientTls("actor");
  wrong_name.server_name = "inference";  // the replay certificate does not carry that name
  const Case cases[] = {
      {"no client certificate", ClientTls("")},
      {"a client certificate from another CA", ClientTls("actor", CertDir() + "/other", CertDir())},
      {"a client trusting another CA", ClientTls("actor", CertDir(), CertDir() + "/other")},
      {"an expired client certificate", ClientTls("actor", CertDir() + "/expired", CertDir())},
      {"a server name the certificate lacks", wrong_name},
      {"a plaintext client", plaintext},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const absl::Time start = absl::Now();
    ExpectRefused(Call("Insert", c.client, c.host), start);
  }
  EXPECT_EQ(g_reached, 0);
}

TEST_F(TlsTest, ATlsClientOfAPlaintextServerIsRefused) {
  Start(TlsSettings{});
  const absl::Time start = absl::Now();
  ExpectRefused(Call("Insert", ClientTls("actor")), start);
  EXPECT_OK(FromGrpcStatus(Call("Insert", TlsSettings{})));
}

TEST_F(TlsTest, ServerTlsWithoutClientCertificatesAuthorizesNothing) {
  TlsSettings tls = ServerTls(CertDir());
  tls.client_ca_file.clear();
  Start(tls);
  EXPECT_OK(FromGrpcStatus(Call("Sample", ClientTls(""))));  // encrypted, anyone may call
  const absl::Time start = absl::Now();
  ExpectRefused(Call("Sample", TlsSettings{}), start);
}

// Rotation: the server's certificate and a client's are replaced on disk; new connections use
// the new files within the reload interval, with no restart.
TEST_F(TlsTest, RotatedCertificatesAreUsedWithoutARestart) {
  const std::string dir = CertDir() + "/rotate";
  Start(ServerTls(dir));
  std::string before;
  ASSERT_OK(FromGrpcStatus(Call("Insert", ClientTls("actor", dir, dir), "127.0.0.1", &before)));
  ASSERT_FALSE(before.empty());
  // The actor's certificate expires (replaced by an expired one): refused once reloaded.
  for (const char* f : {"/actor.pem", "/actor.key"}) {
    std::filesystem::copy_file(CertDir() + "/expired" + f, dir + f,
                               std::filesystem::copy_options::overwrite_existing);
  }
  EXPECT_TRUE(zf::testing::WaitFor(
      [&] { return !Call("Insert", ClientTls("actor", dir, dir)).ok(); }, absl::Seconds(15)));
  // Both are reissued from the same CA (the script's --only): accepted again, and the server
  // presents its new certificate.
  auto result = zf::testing::RunProcess(
      {std::string(ZF_SOURCE_DIR) + "/scripts/make-certs", "--out", dir, "--only", "replay,actor"});
  ASSERT_OK(result);
  ASSERT_EQ(result->exit_code, 0) << result->stderr_text;
  std::string after;
  EXPECT_TRUE(zf::testing::WaitFor(
      [&] {
        return Call("Insert", ClientTls("actor", dir, dir), "127.0.0.1", &after).ok() &&
               !after.empty() && after != before;
      },
      absl::Seconds(15)));
  EXPECT_NE(after, before);
}

TEST(TlsSettingsTest, ValidateNamesTheBadFlag) {
  TlsSettings tls;
  EXPECT_OK(tls.Validate());
  tls.cert_file = CertDir() + "/actor.pem";
  EXPECT_THAT(tls.Validate(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--tls_key")));
  tls.key_file = CertDir() + "/actor.pem";  // a certificate where the key should be
  EXPECT_THAT(tls.Validate(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("holds no PEM private key")));
  tls.key_file = CertDir() + "/actor.key";
  EXPECT_OK(tls.Validate());
  tls.ca_file = CertDir() + "/missing.pem";
  EXPECT_THAT(tls.Validate(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--tls_ca: cannot read")));
  TlsSettings mutual;
  mutual.client_ca_file = CertDir() + "/ca.pem";
  EXPECT_THAT(mutual.Validate(), StatusIs(absl::StatusCode::kInvalidArgument,
                                          HasSubstr("needs the server's own --tls_cert")));
}

TEST(AuthorizationPolicyTest, EveryMethodOfEveryServiceIsInThePolicy) {
  // Default deny would silently refuse a method added to proto/ and forgotten here.
  // Linking the generated code registers each file with the pool.
  EXPECT_NE(zerofleet::v1::EvaluateRequest::descriptor(), nullptr);
  EXPECT_NE(zerofleet::v1::InsertRequest::descriptor(), nullptr);
  EXPECT_NE(zerofleet::v1::FetchCheckpointRequest::descriptor(), nullptr);
  EXPECT_NE(grpc::health::v1::HealthCheckRequest::descriptor(), nullptr);
  for (const char* name : {"zerofleet.v1.Inference", "zerofleet.v1.Replay",
                           "zerofleet.v1.ModelService", "grpc.health.v1.Health"}) {
    const google::protobuf::ServiceDescriptor* service =
        google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(name);
    ASSERT_NE(service, nullptr) << name;
    for (int i = 0; i < service->method_count(); ++i) {
      const std::string path =
          absl::StrCat("/", service->full_name(), "/", service->method(i)->name());
      bool found = false;
      for (const MethodRule& rule : AuthorizationPolicy()) found |= rule.method == path;
      EXPECT_TRUE(found) << path << " is not in AuthorizationPolicy()";
    }
  }
}

TEST(AuthorizationPolicyTest, TheDocsPrintThePolicyOfTheCode) {
  std::ifstream in(std::string(ZF_SOURCE_DIR) + "/docs/security.md");
  ASSERT_TRUE(in) << "docs/security.md";
  std::stringstream text;
  text << in.rdbuf();
  int rows = 0;
  for (const MethodRule& rule : AuthorizationPolicy()) {
    std::string roles;
    for (Role r : rule.roles) absl::StrAppend(&roles, roles.empty() ? "" : ", ", RoleName(r));
    const std::string row = absl::StrCat("| `", rule.method, "` | ", roles, " |");
    EXPECT_THAT(text.str(), HasSubstr(row)) << "docs/security.md lacks the row " << row;
    ++rows;
  }
  // No row for a method the code does not have.
  size_t at = 0;
  int doc_rows = 0;
  while ((at = text.str().find("\n| `/", at)) != std::string::npos) {
    ++doc_rows;
    ++at;
  }
  EXPECT_EQ(doc_rows, rows);
}

}  // namespace
}  // namespace zf::grpc_util
