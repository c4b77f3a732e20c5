#include "learner/checkpoint_dir.h"

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zf::learner {
namespace {

namespace fs = std::filesystem;

model::Checkpoint MakeCheckpoint(int64_t version) {
  model::Checkpoint c;
  c.manifest.game = "tictactoe";
  c.manifest.shape = {.input_channels = 2,
                      .board_height = 3,
                      .board_width = 3,
                      .num_actions = 9,
                      .blocks = 1,
                      .filters = 8,
                      .value_hidden = 8};
  c.manifest.version = version;
  c.manifest.training_step = version * 10;
  c.weights = std::string(1000 + version, 'w');
  c.optimizer_state = "opt";
  return c;
}

class CheckpointDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(::testing::TempDir(), "/checkpoint_dir_test_", ::getpid(), "_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

TEST(CheckpointNamesTest, RoundTrip) {
  EXPECT_EQ(CheckpointFileName(42), "ckpt-000000000042.zfckpt");
  EXPECT_EQ(VersionFromFileName("ckpt-000000000042.zfckpt"), 42);
  EXPECT_EQ(VersionFromFileName("ckpt-x.zfckpt"), -1);
  EXPECT_EQ(VersionFromFileName(".ckpt-000000000042.zfckpt.tmp.abc"), -1);
  EXPECT_EQ(VersionFromFileName("latest"), -1);
}

TEST_F(CheckpointDirTest, PublishKeepsTheLastNAndPointsLatestAtTheNewest) {
  ASSERT_OK_AND_ASSIGN(auto d, CheckpointDirectory::Create({.dir = dir_, .keep = 3}));
  EXPECT_EQ(LatestCheckpointPath(dir_).status().code(), absl::StatusCode::kNotFound);
  for (int v = 1; v <= 7; ++v) {
    ASSERT_OK(d->Publish(MakeCheckpoint(v)).status());
    ASSERT_OK_AND_ASSIGN(std::string latest, LatestCheckpointPath(dir_));
    EXPECT_EQ(fs::path(latest).filename(), CheckpointFileName(v));
    ASSERT_OK_AND_ASSIGN(model::Checkpoint read, model::ReadCheckpoint(latest));
    EXPECT_EQ(read.manifest.version, v);
    // Opening the link itself works too (what `zf match net:DIR/latest:SIMS` does).
    ASSERT_OK_AND_ASSIGN(model::Checkpoint via_link,
                         model::ReadCheckpoint(absl::StrCat(dir_, "/latest")));
    EXPECT_EQ(via_link.manifest.version, v);
  }
  ASSERT_OK_AND_ASSIGN(auto files, ListCheckpoints(dir_));
  ASSERT_EQ(files.size(), 3u);
  EXPECT_EQ(fs::path(files[0]).filename(), CheckpointFileName(5));
  EXPECT_EQ(fs::path(files[2]).filename(), CheckpointFileName(7));
  EXPECT_EQ(d->Publish(MakeCheckpoint(7)).status().code(), absl::StatusCode::kInvalidArgument);
  // A new directory object over the same folder also knows the last version.
  ASSERT_OK_AND_ASSIGN(auto again, CheckpointDirectory::Create({.dir = dir_, .keep = 3}));
  EXPECT_EQ(again->Publish(MakeCheckpoint(6)).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(CheckpointDirTest, LatestAlwaysNamesACompleteFileForAConcurrentReader) {
  // keep = 64: nothing is pruned while the reader reads, so any read error is a torn or missing
  // file. (With keep = 2, a reader descheduled between resolving `latest` and opening the file,
  // under a loaded machine, found it pruned: a slow reader, not a broken `latest`.)
  ASSERT_OK_AND_ASSIGN(auto d, CheckpointDirectory::Create({.dir = dir_, .keep = 64}));
  ASSERT_OK(d->Publish(MakeCheckpoint(1)).status());
  std::atomic<bool> done{false};
  std::atomic<int> reads{0};
  std::atomic<int> failures{0};
  std::thread reader([&] {
    // Reads until the writer is done (and at least a few times).
    while (!done.load() || reads.load() < 10) {
      absl::StatusOr<model::Checkpoint> c = model::ReadCheckpoint(absl::StrCat(dir_, "/latest"));
      if (!c.ok()) {
        ADD_FAILURE() << c.status();
        failures.fetch_add(1);
      }
      reads.fetch_add(1);
    }
  });
  for (int v = 2; v <= 40; ++v) ASSERT_OK(d->Publish(MakeCheckpoint(v)).status());
  done.store(true);
  reader.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GE(reads.load(), 10);
}

TEST_F(CheckpointDirTest, NewestCheckpointSkipsCorruptFilesAndLaggingLatest) {
  ASSERT_OK_AND_ASSIGN(auto d, CheckpointDirectory::Create({.dir = dir_, .keep = 5}));
  EXPECT_EQ(ReadNewestCheckpoint(dir_).status().code(), absl::StatusCode::kNotFound);
  for (int v = 1; v <= 3; ++v) ASSERT_OK(d->Publish(MakeCheckpoint(v)).status());
  // A crash after writing version 4 but before moving `latest`: 4 is complete and newest.
  ASSERT_OK(
      model::WriteCheckpoint(absl::StrCat(dir_, "/", CheckpointFileName(4)), MakeCheckpoint(4))
          .status());
  ASSERT_OK_AND_ASSIGN(NewestCheckpoint newest, ReadNewestCheckpoint(dir_));
  EXPECT_EQ(newest.checkpoint.manifest.version, 4);
  // A torn version 5 is skipped.
  std::ofstream(absl::StrCat(dir_, "/", CheckpointFileName(5))) << "torn";
  ASSERT_OK_AND_ASSIGN(newest, ReadNewestCheckpoint(dir_));
  EXPECT_EQ(newest.checkpoint.manifest.version, 4);
}

TEST_F(CheckpointDirTest, BadOptions) {
  EXPECT_EQ(CheckpointDirectory::Create({.dir = "", .keep = 1}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckpointDirectory::Create({.dir = dir_, .keep = 0}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace zf::learner
