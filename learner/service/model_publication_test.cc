// Model publication over loopback: a learner's checkpoint directory served by ModelServer, an
// InferenceServer kept up to date by a ModelWatcher, and a client evaluating throughout.
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "common/grpc/channel.h"
#include "common/status_macros.h"
#include "common/testing/status_matchers.h"
#include "common/testing/wait.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "inference_server/client/remote_evaluator_client.h"
#include "inference_server/model_watcher.h"
#include "inference_server/service/inference_server.h"
#include "inference_server/torch_backend.h"
#include "learner/checkpoint_dir.h"
#include "learner/service/model_server.h"
#include "learner/testing/batches.h"
#include "learner/trainer.h"
#include "model/inference_session.h"
#include "proto/zerofleet/v1/model.grpc.pb.h"

namespace zf::learner {
namespace {

namespace fs = std::filesystem;

absl::StatusOr<std::shared_ptr<inference::Backend>> LoadBackend(const std::string& path) {
  model::InferenceSession::Options o;
  o.checkpoint_path = path;
  o.game = "tiny";
  o.shape = testing::TinyShape();
  o.device = "cpu";
  o.intra_op_threads = 1;
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<model::InferenceSession> session,
                      model::InferenceSession::Create(o));
  inference::TorchBackend::Options b;
  b.session = std::move(session);
  b.max_batch = 16;
  return inference::TorchBackend::Create(std::move(b));
}

// Evaluates one position at a time on `threads` threads until stopped, recording every result.
class Traffic {
 public:
  Traffic(inference::RemoteEvaluatorClient* client, int threads) : client_(client) {
    for (int t = 0; t < threads; ++t) threads_.emplace_back([this] { Loop(); });
  }
  ~Traffic() { Stop(); }
  void Stop() {
    stop_.store(true);
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
  }
  int64_t ok() const { return ok_.load(); }
  int64_t failed() const { return failed_.load(); }
  int64_t last_version() const { return last_version_.load(); }

 private:
  void Loop() {
    const std::vector<uint8_t> planes(testing::TinyShape().PlaneSize(), 1);
    while (!stop_.load()) {
      absl::Notification done;
      absl::Status submitted = client_->Submit(
          planes, 1, [&](absl::StatusOr<inference::RemoteEvaluatorClient::Result> r) {
            if (r.ok()) {
              ok_.fetch_add(1);
              int64_t seen = last_version_.load();
              while (r->model_version > seen &&
                     !last_version_.compare_exchange_weak(seen, r->model_version)) {
              }
            } else {
              ADD_FAILURE() << r.status();
              failed_.fetch_add(1);
            }
            done.Notify();
          });
      if (!submitted.ok()) {
        ADD_FAILURE() << submitted;
        failed_.fetch_add(1);
        return;
      }
      done.WaitForNotification();
    }
  }

  inference::RemoteEvaluatorClient* client_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> ok_{0};
  std::atomic<int64_t> failed_{0};
  std::atomic<int64_t> last_version_{0};
  std::vector<std::thread> threads_;
};

class ModelPublicationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(::testing::TempDir(), "/model_publication_test_", ::getpid(), "_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ + "/tmp");
    TrainerOptions t;
    t.game = "tiny";
    t.shape = testing::TinyShape();
    t.intra_op_threads = 1;
    ASSERT_OK_AND_ASSIGN(trainer_, Trainer::Create(t));
    ASSERT_OK_AND_ASSIGN(checkpoints_, CheckpointDirectory::Create({.dir = dir_ + "/checkpoints"}));
    Publish(1);

    ModelServer::Options m;
    m.checkpoint_dir = dir_ + "/checkpoints";
    m.listen_address = "127.0.0.1:0";
    m.chunk_bytes = 4096;  // several chunks per file
    ASSERT_OK_AND_ASSIGN(model_server_, ModelServer::Create(m));

    inference::InferenceServer::Options s;
    s.listen_address = "127.0.0.1:0";
    ASSERT_OK_AND_ASSIGN(s.backend, LoadBackend(dir_ + "/checkpoints/latest"));
    s.loader = LoadBackend;
    s.game = "tiny";
    s.batcher.max_batch = 16;
    s.batcher.max_delay = absl::Microseconds(200);
    s.batcher.num_workers = 2;
    ASSERT_OK_AND_ASSIGN(server_, inference::InferenceServer::Create(std::move(s)));
    ASSERT_OK(server_->Serve());
    EXPECT_EQ(server_->model_version(), 1);

    inference::RemoteEvaluatorClient::Options c;
    c.target = absl::StrCat("127.0.0.1:", server_->port());
    c.input_channels = 2;
    c.board_height = 3;
    c.board_width = 3;
    ASSERT_OK_AND_ASSIGN(client_, inference::RemoteEvaluatorClient::Create(c));
  }

  void TearDown() override {
    watcher_.reset();
    client_.reset();
    if (server_) server_->Shutdown();
    model_server_.reset();
    fs::remove_all(dir_);
  }

  void StartWatcher() {
    inference::ModelWatcherOptions w;
    w.address = absl::StrCat("127.0.0.1:", model_server_->port());
    w.temp_dir = dir_ + "/tmp";
    w.reload = [this](const std::string& path) { return server_->Reload(path); };
    w.current_version = [this] { return server_->model_version(); };
    w.initial_backoff = absl::Milliseconds(10);
    w.max_backoff = absl::Milliseconds(100);
    ASSERT_OK_AND_ASSIGN(watcher_, inference::ModelWatcher::Create(w));
  }

  void Publish(int64_t version) {
    ASSERT_OK(trainer_->Step(testing::MakeBatch(testing::TinyShape(), 8, version)).status());
    ASSERT_OK_AND_ASSIGN(model::Checkpoint c, trainer_->MakeCheckpoint(version));
    ASSERT_OK(checkpoints_->Publish(c).status());
    if (model_server_) model_server_->Notify();
  }

  std::string dir_;
  std::unique_ptr<Trainer> trainer_;
  std::unique_ptr<CheckpointDirectory> checkpoints_;
  std::unique_ptr<ModelServer> model_server_;
  std::unique_ptr<inference::InferenceServer> server_;
  std::unique_ptr<inference::RemoteEvaluatorClient> client_;
  std::unique_ptr<inference::ModelWatcher> watcher_;
};

TEST_F(ModelPublicationTest, ServiceAnswersLatestAndFetch) {
  auto stub = zerofleet::v1::ModelService::NewStub(
      grpc_util::CreateChannel(absl::StrCat("127.0.0.1:", model_server_->port())));
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  zerofleet::v1::ModelVersion latest;
  ASSERT_TRUE(stub->GetLatest(&context, {}, &latest).ok());
  EXPECT_EQ(latest.version(), 1);
  EXPECT_EQ(latest.game(), "tiny");
  EXPECT_EQ(latest.shape().filters(), 8);
  const std::string file = dir_ + "/checkpoints/" + CheckpointFileName(1);
  EXPECT_EQ(latest.size_bytes(), static_cast<int64_t>(fs::file_size(file)));

  grpc::ClientContext fetch_context;
  zerofleet::v1::FetchCheckpointRequest request;
  request.set_version(1);
  auto reader = stub->FetchCheckpoint(&fetch_context, request);
  zerofleet::v1::CheckpointChunk chunk;
  std::string data;
  int chunks = 0;
  while (reader->Read(&chunk)) {
    if (chunks++ == 0) {
      EXPECT_EQ(chunk.model().sha256(), latest.sha256());
    }
    EXPECT_EQ(chunk.offset(), static_cast<int64_t>(data.size()));
    data += chunk.data();
  }
  ASSERT_TRUE(reader->Finish().ok());
  EXPECT_GT(chunks, 1);
  EXPECT_EQ(model::Sha256Hex(data), latest.sha256());

  grpc::ClientContext missing_context;
  request.set_version(99);
  auto missing = stub->FetchCheckpoint(&missing_context, request);
  while (missing->Read(&chunk)) {
  }
  EXPECT_EQ(missing->Finish().error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(ModelPublicationTest, NewVersionsServeWithoutFailingRequestsAndBadOnesAreRefused) {
  Traffic traffic(client_.get(), /*threads=*/2);
  ASSERT_TRUE(zf::testing::WaitFor([&] { return traffic.ok() > 5; }));
  EXPECT_EQ(traffic.last_version(), 1);
  StartWatcher();

  Publish(2);
  ASSERT_TRUE(watcher_->WaitForOutcomes(1, absl::Now() + absl::Seconds(60)));
  EXPECT_EQ(watcher_->stats().loaded, 1);
  EXPECT_EQ(server_->model_version(), 2);
  ASSERT_TRUE(zf::testing::WaitFor([&] { return traffic.last_version() == 2; }));

  // A checkpoint whose weights are not a loadable archive (its hashes are consistent: only
  // loading finds the damage): refused, version 2 keeps serving.
  model::Checkpoint corrupt;
  ASSERT_OK_AND_ASSIGN(corrupt, trainer_->MakeCheckpoint(3));
  corrupt.weights = std::string(corrupt.weights.size(), 'x');
  ASSERT_OK(checkpoints_->Publish(corrupt).status());
  model_server_->Notify();
  ASSERT_TRUE(watcher_->WaitForOutcomes(2, absl::Now() + absl::Seconds(60)));
  EXPECT_EQ(watcher_->stats().refused, 1);
  EXPECT_EQ(server_->model_version(), 2);

  // Another network shape: refused too.
  TrainerOptions wide;
  wide.game = "tiny";
  wide.shape = testing::TinyShape();
  wide.shape.filters = 16;
  ASSERT_OK_AND_ASSIGN(auto other, Trainer::Create(wide));
  ASSERT_OK_AND_ASSIGN(model::Checkpoint mismatched, other->MakeCheckpoint(4));
  ASSERT_OK(checkpoints_->Publish(mismatched).status());
  model_server_->Notify();
  ASSERT_TRUE(watcher_->WaitForOutcomes(3, absl::Now() + absl::Seconds(60)));
  EXPECT_EQ(watcher_->stats().refused, 2);
  EXPECT_EQ(server_->model_version(), 2);

  // A good version after them is served.
  Publish(5);
  ASSERT_TRUE(watcher_->WaitForOutcomes(4, absl::Now() + absl::Seconds(60)));
  EXPECT_EQ(watcher_->stats().loaded, 2);
  EXPECT_EQ(server_->model_version(), 5);
  ASSERT_TRUE(zf::testing::WaitFor([&] { return traffic.last_version() == 5; }));
  traffic.Stop();
  EXPECT_EQ(traffic.failed(), 0);
  EXPECT_GT(traffic.ok(), 0);
}

// A checkpoint damaged at rest after it was written (its manifest intact, a weights byte changed)
// is never announced, so no server fetches it; the next good version is.
TEST_F(ModelPublicationTest, ACheckpointDamagedAtRestIsNotAnnounced) {
  model_server_.reset();  // its poller must not see version 2 before the damage
  ASSERT_OK(trainer_->Step(testing::MakeBatch(testing::TinyShape(), 8, 2)).status());
  ASSERT_OK_AND_ASSIGN(model::Checkpoint two, trainer_->MakeCheckpoint(2));
  ASSERT_OK(checkpoints_->Publish(two).status());
  const std::string file = dir_ + "/checkpoints/" + CheckpointFileName(2);
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(file) - 64));
    f.write("\xde\xad", 2);
  }
  ASSERT_OK(model::ReadManifest(file).status());  // the cheap check alone would pass it
  ModelServer::Options m;
  m.checkpoint_dir = dir_ + "/checkpoints";
  m.listen_address = "127.0.0.1:0";
  ASSERT_OK_AND_ASSIGN(model_server_, ModelServer::Create(m));
  EXPECT_EQ(model_server_->latest_version(), 0);
  Publish(3);
  ASSERT_TRUE(zf::testing::WaitFor([&] { return model_server_->latest_version() == 3; }));
}

TEST_F(ModelPublicationTest, WatcherReconnectsAfterTheModelServiceRestarts) {
  StartWatcher();
  const int port = model_server_->port();
  ASSERT_TRUE(zf::testing::WaitFor([&] { return watcher_->stats().last_version_seen == 1; }));
  model_server_.reset();
  Publish(2);
  ModelServer::Options m;
  m.checkpoint_dir = dir_ + "/checkpoints";
  m.listen_address = absl::StrCat("127.0.0.1:", port);
  ASSERT_OK_AND_ASSIGN(model_server_, ModelServer::Create(m));
  ASSERT_TRUE(watcher_->WaitForOutcomes(1, absl::Now() + absl::Seconds(60)));
  EXPECT_EQ(server_->model_version(), 2);
  EXPECT_GE(watcher_->stats().reconnects, 1);
}

}  // namespace
}  // namespace zf::learner
