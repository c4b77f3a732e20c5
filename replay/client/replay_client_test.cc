// ShardedReplayWriter and ReplaySampler against real ReplayServers over loopback.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/grpc/channel.h"
#include "common/testing/status_matchers.h"
#include "common/testing/wait.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "replay/client/replay_sampler.h"
#include "replay/client/sharded_writer.h"
#include "replay/service/replay_server.h"
#include "replay/testing/records.h"

namespace zf::replay {
namespace {

using zerofleet::v1::GetInfoRequest;
using zerofleet::v1::InsertRequest;
using zerofleet::v1::InsertResponse;
using zerofleet::v1::Replay;
using zerofleet::v1::ReplayInfo;

class ReplayClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(::testing::TempDir(), "/replay_client_test_", ::getpid(), "_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<ReplayServer> StartServer(int index, int port = 0, double error_buffer = 1e6) {
    ReplayServerOptions o;
    o.listen = absl::StrCat("127.0.0.1:", port);
    o.dir = absl::StrCat(dir_, "/shard", index);
    o.capacity_positions = 100000;
    o.samples_per_insert = 1.0;
    o.min_size_to_sample = 10;
    o.error_buffer = error_buffer;
    o.max_positions_per_game = 16;
    o.max_sample_positions = 64;
    o.insert_workers.num_threads = 4;
    absl::StatusOr<std::unique_ptr<ReplayServer>> server = ReplayServer::Create(o);
    EXPECT_OK(server);
    return server.ok() ? std::move(*server) : nullptr;
  }

  static ReplayInfo Info(const ReplayServer& server) {
    auto stub =
        Replay::NewStub(grpc_util::CreateChannel(absl::StrCat("127.0.0.1:", server.port())));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    ReplayInfo info;
    grpc::Status status = stub->GetInfo(&context, GetInfoRequest(), &info);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return info;
  }

  std::string dir_;
};

// The value of the gauge `name` in `registry` (-1 if absent).
double Gauge(prometheus::Registry& registry, const std::string& name) {
  for (const prometheus::MetricFamily& family : registry.Collect()) {
    if (family.name == name) return family.metric.at(0).gauge.value;
  }
  return -1;
}
double UnacknowledgedGauge(prometheus::Registry& registry) {
  return Gauge(registry, "zf_replay_writer_unacknowledged_games");
}

TEST_F(ReplayClientTest, WriterSpreadsGamesOverShardsByConsistentHashing) {
  std::unique_ptr<ReplayServer> a = StartServer(0);
  std::unique_ptr<ReplayServer> b = StartServer(1);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ShardedReplayWriterOptions options;
  options.shards = {absl::StrCat("127.0.0.1:", a->port()), absl::StrCat("127.0.0.1:", b->port())};
  options.max_unacked_games = 8;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ShardedReplayWriter> writer,
                       ShardedReplayWriter::Create(options));
  int expected[2] = {0, 0};
  for (int i = 0; i < 100; ++i) {
    std::string id = absl::StrCat("game", i);
    ++expected[writer->ShardFor(id)];
    ASSERT_OK(writer->Write(testing::MakeRecord(id, 3), absl::Now() + absl::Seconds(30)));
  }
  ASSERT_OK(writer->Flush(absl::Now() + absl::Seconds(60)));
  ShardedReplayWriterStats stats = writer->stats();
  EXPECT_EQ(stats.acked, 100);
  EXPECT_EQ(stats.unacked, 0);
  EXPECT_GT(expected[0], 0);
  EXPECT_GT(expected[1], 0);
  EXPECT_EQ(Info(*a).games(), expected[0]);
  EXPECT_EQ(Info(*b).games(), expected[1]);

  // Routing depends only on the id and the shard list.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ShardedReplayWriter> again,
                       ShardedReplayWriter::Create(options));
  for (int i = 0; i < 100; ++i) {
    std::string id = absl::StrCat("game", i);
    EXPECT_EQ(again->ShardFor(id), writer->ShardFor(id));
  }
}

// One shard down must not stall the writer once its memory is full: new games whose home is the
// dead shard go to the live one, each stored exactly once.
TEST_F(ReplayClientTest, WriterRoutesNewGamesAroundADownShard) {
  std::unique_ptr<ReplayServer> live = StartServer(0);
  std::unique_ptr<ReplayServer> dead = StartServer(1);
  ASSERT_NE(live, nullptr);
  ASSERT_NE(dead, nullptr);
  const int dead_port = dead->port();
  dead.reset();
  ShardedReplayWriterOptions options;
  options.shards = {absl::StrCat("127.0.0.1:", live->port()),
                    absl::StrCat("127.0.0.1:", dead_port)};
  // At most one request (4 games) waits for the dead shard: those may have been stored there,
  // so they are retried there. Every other slot must keep moving.
  options.max_unacked_games = 16;
  options.max_games_per_request = 4;
  options.rpc_timeout = absl::Seconds(1);
  options.max_backoff = absl::Milliseconds(100);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ShardedReplayWriter> writer,
                       ShardedReplayWriter::Create(options));
  int homed_on_dead = 0;
  for (int i = 0; i < 200; ++i) {
    std::string id = absl::StrCat("game", i);
    homed_on_dead += writer->ShardFor(id) == 1;
    // With 16 slots and half the ids homed on the dead shard, this would block for good if
    // games waited for their home shard.
    ASSERT_OK(writer->Write(testing::MakeRecord(id, 3), absl::Now() + absl::Seconds(30)));
  }
  ASSERT_GT(homed_on_dead, 20);
  // Only the request in flight to the dead shard waits for it; every other game is acknowledged
  // by the live shard, which stores each once.
  ShardedReplayWriterStats stats = writer->stats();
  // (Games queued for the dead shard move once its request in flight times out: rpc_timeout.)
  for (int i = 0; i < 200 && stats.unacked > options.max_games_per_request; ++i) {
    absl::SleepFor(absl::Milliseconds(50));
    stats = writer->stats();
  }
  EXPECT_LE(stats.unacked, options.max_games_per_request);
  EXPECT_GE(stats.rerouted, homed_on_dead - options.max_games_per_request);
  EXPECT_EQ(stats.acked + stats.unacked, 200);
  EXPECT_EQ(Info(*live).games(), stats.acked);
  EXPECT_EQ(stats.duplicates, 0);
}

TEST_F(ReplayClientTest, WriterSpoolsWhenEveryShardIsDownAndResendsOnReconnect) {
  std::unique_ptr<ReplayServer> server = StartServer(0);
  ASSERT_NE(server, nullptr);
  const int port = server->port();
  server.reset();  // the shard is down

  ShardedReplayWriterOptions options;
  options.shards = {absl::StrCat("127.0.0.1:", port)};
  options.max_unacked_games = 4;
  options.spool_path = dir_ + "/spool";
  options.rpc_timeout = absl::Seconds(2);
  options.max_backoff = absl::Milliseconds(200);
  auto registry = std::make_shared<prometheus::Registry>();
  options.metrics = registry.get();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ShardedReplayWriter> writer,
                       ShardedReplayWriter::Create(options));
  for (int i = 0; i < 20; ++i) {
    ASSERT_OK(writer->Write(testing::MakeRecord(absl::StrCat("g", i), 3),
                            absl::Now() + absl::Seconds(30)));
  }
  ShardedReplayWriterStats stats = writer->stats();
  EXPECT_EQ(stats.written, 20);
  EXPECT_EQ(stats.unacked, 4);   // memory stays bounded
  EXPECT_EQ(stats.spooled, 16);  // the rest went to disk
  EXPECT_GT(std::filesystem::file_size(options.spool_path), 0u);
  EXPECT_EQ(UnacknowledgedGauge(*registry), 20);  // the backlog: in memory and in the spool
  // Beside it, the memory bound an alert compares it with.
  EXPECT_EQ(Gauge(*registry, "zf_replay_writer_unacknowledged_games_limit"), 4);
  EXPECT_THAT(writer->Flush(absl::Now() + absl::Milliseconds(100)),
              ::zf::testing::StatusIs(absl::StatusCode::kDeadlineExceeded));
  // The writer has tried the down shard and failed at least once before it comes back (on a
  // loaded machine its first attempt can come later than the 100 ms above).
  ASSERT_TRUE(
      ::zf::testing::WaitFor([&] { return writer->stats().retries > 0; }, absl::Seconds(30)));

  server = StartServer(0, port);  // back, same directory and port
  ASSERT_NE(server, nullptr);
  ASSERT_OK(writer->Flush(absl::Now() + absl::Seconds(120)));
  stats = writer->stats();
  EXPECT_EQ(stats.acked, 20);
  EXPECT_EQ(stats.spool_pending, 0);
  EXPECT_GT(stats.retries, 0);
  EXPECT_EQ(UnacknowledgedGauge(*registry), 0);
  EXPECT_EQ(Info(*server).games(), 20);
  writer->Close();
  EXPECT_FALSE(std::filesystem::exists(options.spool_path));  // nothing left in it: removed
}

TEST_F(ReplayClientTest, WriterClosedWhileShardsAreDownResendsFromTheSpoolNextTime) {
  std::unique_ptr<ReplayServer> server = StartServer(0);
  ASSERT_NE(server, nullptr);
  const int port = server->port();
  server.reset();
  ShardedReplayWriterOptions options;
  options.shards = {absl::StrCat("127.0.0.1:", port)};
  options.max_unacked_games = 4;
  options.spool_path = dir_ + "/spool";
  options.rpc_timeout = absl::Seconds(2);
  options.max_backoff = absl::Milliseconds(200);
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<ShardedReplayWriter> writer,
                         ShardedReplayWriter::Create(options));
    for (int i = 0; i < 3; ++i) {
      ASSERT_OK(writer->Write(testing::MakeRecord(absl::StrCat("g", i), 3),
                              absl::Now() + absl::Seconds(30)));
    }
  }  // closed with 3 unacknowledged games in memory: they go to the spool
  server = StartServer(0, port);
  ASSERT_NE(server, nullptr);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ShardedReplayWriter> writer,
                       ShardedReplayWriter::Create(options));
  EXPECT_EQ(writer->stats().spool_pending + writer->stats().unacked, 3);
  ASSERT_OK(writer->Flush(absl::Now() + absl::Seconds(120)));
  EXPECT_EQ(Info(*server).games(), 3);
  writer->Close();
  EXPECT_FALSE(std::filesystem::exists(options.spool_path));
}

// One shard's rate limiter holds samples back for good (it gets no more inserts); the sampler
// must turn to the other shard instead of waiting on it (sample_timeout is an hour here, so
// waiting would fail every Next deadline below).
TEST_F(ReplayClientTest, SamplerTurnsAwayFromAShardWhoseRateLimiterHoldsSamples) {
  std::unique_ptr<ReplayServer> a = StartServer(0);
  // samples_per_insert 1, min size 10, band +-41 around 10: b takes at most 51 positions
  // before it holds inserts, and 50 positions allow about 80 sampled positions (10 batches).
  std::unique_ptr<ReplayServer> b = StartServer(1, 0, /*error_buffer=*/41);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  for (ReplayServer* server : {a.get(), b.get()}) {
    const int games = server == b.get() ? 5 : 10;
    auto stub =
        Replay::NewStub(grpc_util::CreateChannel(absl::StrCat("127.0.0.1:", server->port())));
    InsertRequest request;
    for (int i = 0; i < games; ++i) {
      *request.add_games() = testing::MakeRecord(absl::StrCat("g", i), 10);
    }
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    InsertResponse response;
    ASSERT_TRUE(stub->Insert(&context, request, &response).ok());
  }
  ReplaySamplerOptions options;
  options.shards = {absl::StrCat("127.0.0.1:", a->port()), absl::StrCat("127.0.0.1:", b->port())};
  options.batch_size = 8;
  options.prefetch = 1;
  options.seed = 11;
  options.sample_timeout = absl::Hours(1);
  options.shard_wait = absl::Milliseconds(50);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ReplaySampler> sampler, ReplaySampler::Create(options));
  for (int i = 0; i < 60; ++i) {
    absl::StatusOr<zerofleet::v1::SampleBatch> batch =
        sampler->Next(absl::Now() + absl::Seconds(60));
    ASSERT_TRUE(batch.ok()) << "batch " << i << ": " << batch.status();
  }
  ReplaySamplerStats stats = sampler->stats();
  ASSERT_EQ(stats.batches_per_shard.size(), 2u);
  EXPECT_LE(stats.batches_per_shard[1], 11);  // b's credit: about 80 positions, batches of 8
  EXPECT_GE(stats.batches_per_shard[0], 49);
  sampler->Close();
}

TEST_F(ReplayClientTest, SamplerDrawsFromShardsInProportionToTheirSizes) {
  std::unique_ptr<ReplayServer> a = StartServer(0);
  std::unique_ptr<ReplayServer> b = StartServer(1);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  auto fill = [](const ReplayServer& server, int games) {
    auto stub =
        Replay::NewStub(grpc_util::CreateChannel(absl::StrCat("127.0.0.1:", server.port())));
    InsertRequest request;
    for (int i = 0; i < games; ++i)
      *request.add_games() = testing::MakeRecord(absl::StrCat("g", i), 10);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    InsertResponse response;
    grpc::Status status = stub->Insert(&context, request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
  };
  fill(*a, 30);  // 300 positions
  fill(*b, 10);  // 100 positions

  ReplaySamplerOptions options;
  options.shards = {absl::StrCat("127.0.0.1:", a->port()), absl::StrCat("127.0.0.1:", b->port())};
  options.batch_size = 8;
  options.prefetch = 2;
  options.seed = 7;
  options.shard_wait = absl::Seconds(30);  // proportions, not the hold-back rule, are tested here
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ReplaySampler> sampler, ReplaySampler::Create(options));
  for (int i = 0; i < 200; ++i) {
    ASSERT_OK_AND_ASSIGN(zerofleet::v1::SampleBatch batch,
                         sampler->Next(absl::Now() + absl::Seconds(30)));
    EXPECT_EQ(batch.batch_size(), 8);
  }
  ReplaySamplerStats stats = sampler->stats();
  EXPECT_EQ(stats.batches, 200);
  EXPECT_GE(stats.waited, absl::ZeroDuration());
  ASSERT_EQ(stats.batches_per_shard.size(), 2u);
  int64_t fetched = stats.batches_per_shard[0] + stats.batches_per_shard[1];
  double share_a = static_cast<double>(stats.batches_per_shard[0]) / static_cast<double>(fetched);
  EXPECT_GT(share_a, 0.6);  // expected 0.75
  EXPECT_LT(share_a, 0.9);
  sampler->Close();
  EXPECT_THAT(sampler->Next(absl::Now() + absl::Seconds(1)),
              ::zf::testing::StatusIs(absl::StatusCode::kCancelled));
}

}  // namespace
}  // namespace zf::replay
