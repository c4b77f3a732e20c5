// A real `zf replay` process killed with SIGKILL while clients insert: after it restarts on the
// same directory, every acknowledged game is present exactly once. Also: SIGTERM drains and exits
// 0, and bad flags are usage errors.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/grpc/channel.h"
#include "common/testing/background_process.h"
#include "common/testing/status_matchers.h"
#include "common/testing/wait.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/zerofleet/v1/replay.grpc.pb.h"
#include "replay/testing/records.h"
#include "tests/zf_cli_testing.h"

namespace zf::replay {
namespace {

using zerofleet::v1::GetInfoRequest;
using zerofleet::v1::InsertRequest;
using zerofleet::v1::InsertResponse;
using zerofleet::v1::Replay;
using zerofleet::v1::ReplayInfo;
using ::zf::testing::BackgroundProcess;

constexpr int kPositionsPerGame = 5;

class ReplayProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(::testing::TempDir(), "/replay_process_test_", ::getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Starts `zf replay` on a free port and waits (bounded) until it serves; returns its port.
  std::unique_ptr<BackgroundProcess> StartShard(int run, int* port) {
    absl::StatusOr<std::unique_ptr<BackgroundProcess>> process =
        BackgroundProcess::Start({ZF_BINARY, "replay", "--listen", "127.0.0.1:0", "--dir",
                                  dir_ + "/shard", "--capacity", "1000000", "--min_size_to_sample",
                                  "1", "--samples_per_insert", "1", "--error_buffer", "1000000"},
                                 absl::StrCat(dir_, "/run", run));
    EXPECT_OK(process);
    if (!process.ok()) return nullptr;
    const std::string marker = "on port ";
    std::string out;
    bool started = ::zf::testing::WaitFor([&] {
      out = (*process)->Stdout();
      return out.find('\n') != std::string::npos || !(*process)->Running();
    });
    EXPECT_TRUE(started) << "zf replay did not start; stderr: " << (*process)->Stderr();
    size_t at = out.find(marker);
    EXPECT_NE(at, std::string::npos) << out << (*process)->Stderr();
    *port = 0;
    if (at != std::string::npos) {
      size_t end = out.find_first_not_of("0123456789", at + marker.size());
      EXPECT_TRUE(absl::SimpleAtoi(out.substr(at + marker.size(), end - at - marker.size()), port));
    }
    return std::move(*process);
  }

  std::string dir_;
};

grpc::Status Insert(Replay::Stub& stub, const std::string& id, InsertResponse* response) {
  InsertRequest request;
  *request.add_games() = testing::MakeRecord(id, kPositionsPerGame);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  return stub.Insert(&context, request, response);
}

TEST_F(ReplayProcessTest, AcknowledgedGamesSurviveSigkillExactlyOnce) {
  int port = 0;
  std::unique_ptr<BackgroundProcess> shard = StartShard(1, &port);
  ASSERT_NE(shard, nullptr);
  ASSERT_GT(port, 0);

  absl::Mutex mu;
  absl::flat_hash_set<std::string> acked;      // guarded by mu
  absl::flat_hash_set<std::string> attempted;  // guarded by mu
  std::atomic<bool> stop{false};
  std::vector<std::thread> clients;
  for (int t = 0; t < 4; ++t) {
    clients.emplace_back([&, t] {
      auto stub = Replay::NewStub(grpc_util::CreateChannel(absl::StrCat("127.0.0.1:", port)));
      for (int i = 0; !stop.load(); ++i) {
        std::string id = absl::StrCat("client", t, "/game", i);
        {
          absl::MutexLock lock(&mu);
          attempted.insert(id);
        }
        InsertResponse response;
        grpc::Status status = Insert(*stub, id, &response);
        if (!status.ok()) break;  // the shard is gone
        ASSERT_EQ(response.outcomes_size(), 1);
        EXPECT_EQ(response.outcomes(0), InsertResponse::STORED);
        absl::MutexLock lock(&mu);
        acked.insert(id);
      }
    });
  }
  // Kill the shard mid-stream, once enough games are acknowledged.
  EXPECT_TRUE(::zf::testing::WaitFor([&] {
    absl::MutexLock lock(&mu);
    return acked.size() >= 300;
  }));
  shard->Signal(SIGKILL);
  ASSERT_OK(shard->Wait(absl::Seconds(30)));
  stop = true;
  for (std::thread& c : clients) c.join();
  absl::flat_hash_set<std::string> acked_ids, attempted_ids;
  {
    absl::MutexLock lock(&mu);
    acked_ids = acked;
    attempted_ids = attempted;
  }
  ASSERT_GE(acked_ids.size(), 300u);

  std::unique_ptr<BackgroundProcess> restarted = StartShard(2, &port);
  ASSERT_NE(restarted, nullptr);
  auto stub = Replay::NewStub(grpc_util::CreateChannel(absl::StrCat("127.0.0.1:", port)));
  auto info = [&stub] {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    ReplayInfo reply;
    grpc::Status status = stub->GetInfo(&context, GetInfoRequest(), &reply);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return reply;
  };
  ReplayInfo before = info();
  // Every acknowledged game was recovered; games whose insert was cut off may or may not be; none
  // is stored twice (every game has kPositionsPerGame positions).
  EXPECT_GE(before.games(), static_cast<int64_t>(acked_ids.size()));
  EXPECT_LE(before.games(), static_cast<int64_t>(attempted_ids.size()));
  EXPECT_EQ(before.positions(), before.games() * kPositionsPerGame);
  EXPECT_EQ(before.recovered_games(), before.games());

  // Each acknowledged game is present: inserting it again is a duplicate and stores nothing.
  for (const std::string& id : acked_ids) {
    InsertResponse response;
    grpc::Status status = Insert(*stub, id, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    ASSERT_EQ(response.outcomes_size(), 1);
    EXPECT_EQ(response.outcomes(0), InsertResponse::DUPLICATE) << id;
  }
  ReplayInfo after = info();
  EXPECT_EQ(after.games(), before.games());
  EXPECT_EQ(after.duplicates(), static_cast<int64_t>(acked_ids.size()));

  // SIGTERM drains and exits 0.
  restarted->Signal(SIGTERM);
  absl::StatusOr<int> exit_code = restarted->Wait(absl::Seconds(60));
  ASSERT_OK(exit_code);
  EXPECT_EQ(*exit_code, 0) << restarted->Stderr();
}

// The reproduction: 2,000 acknowledged games in one shard, the shard stopped, 16 bytes
// zeroed in the middle of its log, the shard restarted and every game offered again. Only the
// games whose records the zeroed bytes touched are stored anew; `zf replay verify` named them
// before the restart and reports their copies after it until they are removed.
TEST_F(ReplayProcessTest, SixteenZeroedBytesLoseOnlyTheGamesTheyTouch) {
  constexpr int kGames = 2000;
  constexpr int kPerRequest = 50;
  int port = 0;
  std::unique_ptr<BackgroundProcess> shard = StartShard(1, &port);
  ASSERT_NE(shard, nullptr);
  {
    auto stub = Replay::NewStub(grpc_util::CreateChannel(absl::StrCat("127.0.0.1:", port)));
    for (int first = 0; first < kGames; first += kPerRequest) {
      InsertRequest request;
      for (int i = first; i < first + kPerRequest; ++i) {
        *request.add_games() = testing::MakeRecord(absl::StrCat("game-", i), kPositionsPerGame);
      }
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
      InsertResponse response;
      grpc::Status status = stub->Insert(&context, request, &response);
      ASSERT_TRUE(status.ok()) << status.error_message();
      ASSERT_EQ(response.outcomes_size(), kPerRequest);
    }
  }
  shard->Signal(SIGTERM);
  ASSERT_OK(shard->Wait(absl::Seconds(60)));

  std::string segment;
  for (const auto& entry : std::filesystem::directory_iterator(dir_ + "/shard")) {
    if (entry.path().extension() == ".zlog") segment = entry.path().string();
  }
  ASSERT_FALSE(segment.empty());
  const auto size = std::filesystem::file_size(segment);
  {
    std::fstream f(segment, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(size / 2));
    f.write(std::string(16, '\0').data(), 16);
  }
  ::zf::testing::ProcessResult verify =
      ::zf::testing::Zf({"replay", "verify", "--dir", dir_ + "/shard", "--json"});
  EXPECT_EQ(verify.exit_code, 1) << verify.stderr_text;
  EXPECT_THAT(verify.stderr_text, ::testing::HasSubstr("corrupt regions"));
  EXPECT_THAT(verify.stdout_text, ::testing::HasSubstr("\"kind\": \"corrupt\""));
  EXPECT_THAT(verify.stdout_text, ::testing::HasSubstr("\"game_id\": \"game-"));

  std::unique_ptr<BackgroundProcess> restarted = StartShard(2, &port);
  ASSERT_NE(restarted, nullptr);
  auto stub = Replay::NewStub(grpc_util::CreateChannel(absl::StrCat("127.0.0.1:", port)));
  std::vector<std::string> stored_again;
  for (int i = 0; i < kGames; ++i) {
    InsertResponse response;
    const std::string id = absl::StrCat("game-", i);
    grpc::Status status = Insert(*stub, id, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    ASSERT_EQ(response.outcomes_size(), 1);
    if (response.outcomes(0) == InsertResponse::STORED) stored_again.push_back(id);
  }
  std::cout << "zeroed 16 bytes at offset " << size / 2 << " of " << size << ": "
            << stored_again.size() << " of " << kGames << " games lost; zf replay verify said "
            << verify.stdout_text;
  // 16 bytes touch one record, or two across a boundary; each named by verify.
  EXPECT_GE(stored_again.size(), 1u);
  EXPECT_LE(stored_again.size(), 2u);
  for (const std::string& id : stored_again) {
    EXPECT_THAT(verify.stdout_text, ::testing::HasSubstr(absl::StrCat("\"", id, "\"")));
  }
  restarted->Signal(SIGTERM);
  ASSERT_OK(restarted->Wait(absl::Seconds(60)));

  // The log reads clean now; the copies in damaged/ keep verify failing until they are removed.
  verify = ::zf::testing::Zf({"replay", "verify", "--dir", dir_ + "/shard"});
  EXPECT_EQ(verify.exit_code, 1);
  EXPECT_THAT(verify.stdout_text, ::testing::HasSubstr("from earlier recoveries"));
  std::filesystem::remove_all(dir_ + "/shard/damaged");
  verify = ::zf::testing::Zf({"replay", "verify", "--dir", dir_ + "/shard"});
  EXPECT_EQ(verify.exit_code, 0) << verify.stdout_text << verify.stderr_text;
}

TEST(ReplayCommandTest, BadFlagsAreUsageErrors) {
  ::zf::testing::ExpectUsageError({"replay", "--listen", "127.0.0.1:0"}, "--dir");
  ::zf::testing::ExpectUsageError({"replay", "--dir", "/tmp/zf-unused", "--capacity", "-5"},
                                  "capacity");
  ::zf::testing::ExpectUsageError({"replay", "--dir", "/tmp/zf-unused", "--listen", "nonsense"},
                                  "listen address");
  ::zf::testing::ExpectUsageError({"replay", "--dir", "/tmp/zf-unused", "--games", "3"}, "games");
}

}  // namespace
}  // namespace zf::replay
