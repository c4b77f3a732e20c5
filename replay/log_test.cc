#include "replay/log.h"

#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zf::replay {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;
using ::zf::testing::StatusIs;

class LogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(::testing::TempDir(), "/replay_log_test_", ::getpid(), "_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  LogOptions Options(int64_t segment_bytes = 1 << 20) {
    LogOptions o;
    o.dir = dir_;
    o.segment_bytes = segment_bytes;
    return o;
  }

  // Opens the log, collecting every recovered payload.
  std::unique_ptr<Log> OpenCollecting(const LogOptions& o,
                                      std::vector<std::pair<SegmentId, std::string>>* out) {
    auto log = Log::Open(o, [out](SegmentId s, absl::string_view p) {
      out->emplace_back(s, std::string(p));
      return absl::OkStatus();
    });
    EXPECT_OK(log.status());
    return log.ok() ? std::move(*log) : nullptr;
  }

  std::vector<std::string> Payloads(const std::vector<std::pair<SegmentId, std::string>>& v) {
    std::vector<std::string> out;
    for (const auto& [s, p] : v) out.push_back(p);
    return out;
  }

  std::string dir_;
};

TEST_F(LogTest, AppendsAreRecoveredInOrder) {
  std::vector<std::pair<SegmentId, std::string>> recovered;
  {
    auto log = OpenCollecting(Options(), &recovered);
    ASSERT_NE(log, nullptr);
    EXPECT_TRUE(recovered.empty());
    ASSERT_OK(log->Append("one").status());
    ASSERT_OK(log->Append("two").status());
    ASSERT_OK(log->Append(std::string(1000, 'x')).status());
  }
  auto log = OpenCollecting(Options(), &recovered);
  ASSERT_NE(log, nullptr);
  EXPECT_THAT(Payloads(recovered), ElementsAre("one", "two", std::string(1000, 'x')));
  EXPECT_EQ(log->recovery().records, 3);
  EXPECT_EQ(log->recovery().discarded_bytes, 0);
  EXPECT_TRUE(log->recovery().warnings.empty());
}

TEST_F(LogTest, GroupCommitCompletesManyConcurrentAppends) {
  std::vector<std::pair<SegmentId, std::string>> recovered;
  auto log = OpenCollecting(Options(), &recovered);
  ASSERT_NE(log, nullptr);
  constexpr int kAppends = 500;
  std::atomic<int> done{0};
  absl::Notification all_done;
  for (int i = 0; i < kAppends; ++i) {
    log->AppendAsync(absl::StrCat("record ", i), [&](absl::StatusOr<SegmentId> r) {
      EXPECT_OK(r.status());
      if (done.fetch_add(1) + 1 == kAppends) all_done.Notify();
    });
  }
  all_done.WaitForNotification();
  log.reset();
  recovered.clear();
  log = OpenCollecting(Options(), &recovered);
  ASSERT_THAT(recovered, SizeIs(kAppends));
  for (int i = 0; i < kAppends; ++i) EXPECT_EQ(recovered[i].second, absl::StrCat("record ", i));
}

TEST_F(LogTest, TornTailIsDiscardedWithAWarningAndNewAppendsAreClean) {
  std::vector<std::pair<SegmentId, std::string>> recovered;
  std::string path;
  {
    auto log = OpenCollecting(Options(), &recovered);
    ASSERT_OK(log->Append("kept").status());
    ASSERT_OK_AND_ASSIGN(SegmentId s, log->Append("torn away"));
    path = log->SegmentPath(s);
  }
  // Cut the last record in half, as a crash during write() would.
  const auto size = std::filesystem::file_size(path);
  std::filesystem::resize_file(path, size - 4);
  {
    auto log = OpenCollecting(Options(), &recovered);
    ASSERT_NE(log, nullptr);
    EXPECT_THAT(Payloads(recovered), ElementsAre("kept"));
    EXPECT_EQ(log->recovery().discarded_bytes, 8 + 9 - 4);
    ASSERT_THAT(log->recovery().warnings, SizeIs(1));
    EXPECT_THAT(log->recovery().warnings[0], HasSubstr("torn record payload"));
    EXPECT_EQ(std::filesystem::file_size(path), size - (8 + 9));  // truncated on disk
    ASSERT_OK(log->Append("after").status());
  }
  recovered.clear();
  auto log = OpenCollecting(Options(), &recovered);
  EXPECT_THAT(Payloads(recovered), ElementsAre("kept", "after"));
  EXPECT_TRUE(log->recovery().warnings.empty());
}

TEST_F(LogTest, FlippedByteDiscardsTheCorruptRecordAndTheRestOfItsSegment) {
  std::vector<std::pair<SegmentId, std::string>> recovered;
  std::string path;
  {
    auto log = OpenCollecting(Options(), &recovered);
    ASSERT_OK_AND_ASSIGN(SegmentId s, log->Append("first"));
    ASSERT_OK(log->Append("second").status());
    ASSERT_OK(log->Append("third").status());
    path = log->SegmentPath(s);
  }
  {
    // Flip one bit in "second"'s payload: magic 8 + (8 + 5) + header 8 + 2.
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(8 + 13 + 8 + 2);
    char c;
    f.get(c);
    f.seekp(8 + 13 + 8 + 2);
    f.put(static_cast<char>(c ^ 0x10));
  }
  auto log = OpenCollecting(Options(), &recovered);
  ASSERT_NE(log, nullptr);
  EXPECT_THAT(Payloads(recovered), ElementsAre("first"));
  ASSERT_THAT(log->recovery().warnings, SizeIs(1));
  EXPECT_THAT(log->recovery().warnings[0], HasSubstr("checksum mismatch"));
  EXPECT_EQ(log->recovery().discarded_bytes, (8 + 6) + (8 + 5));
}

TEST_F(LogTest, CorruptLengthIsDetected) {
  std::vector<std::pair<SegmentId, std::string>> recovered;
  std::string path;
  {
    auto log = OpenCollecting(Options(), &recovered);
    ASSERT_OK_AND_ASSIGN(SegmentId s, log->Append("first"));
    path = log->SegmentPath(s);
  }
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(8 + 3);
    f.put('\x7f');  // length 0x7f000005: more than max_record_bytes
  }
  auto log = OpenCollecting(Options(), &recovered);
  EXPECT_TRUE(recovered.empty());
  ASSERT_THAT(log->recovery().warnings, SizeIs(1));
  EXPECT_THAT(log->recovery().warnings[0], HasSubstr("bad record length"));
}

TEST_F(LogTest, RollsSegmentsAndDeletesThoseWithNoLiveRecords) {
  std::vector<std::pair<SegmentId, std::string>> recovered;
  auto log = OpenCollecting(Options(/*segment_bytes=*/1024), &recovered);
  ASSERT_NE(log, nullptr);
  std::vector<SegmentId> where;
  for (int i = 0; i < 6; ++i) {
    ASSERT_OK_AND_ASSIGN(SegmentId s, log->Append(std::string(400, 'a' + i)));
    where.push_back(s);
  }
  // 8 + 2 * 408 fits 1024; a third record rolls: segments hold records {0,1}, {2,3}, {4,5}.
  EXPECT_EQ(where[0], where[1]);
  EXPECT_NE(where[1], where[2]);
  EXPECT_EQ(where[2], where[3]);
  EXPECT_NE(where[3], where[4]);
  EXPECT_THAT(log->segments(), SizeIs(3));
  const std::string first = log->SegmentPath(where[0]);
  log->Release(where[0]);
  EXPECT_TRUE(std::filesystem::exists(first));  // one record still live
  log->Release(where[1]);
  EXPECT_FALSE(std::filesystem::exists(first));
  EXPECT_THAT(log->segments(), SizeIs(2));
  // The active segment is never deleted, even with no live record.
  log->Release(where[4]);
  log->Release(where[5]);
  EXPECT_TRUE(std::filesystem::exists(log->SegmentPath(where[4])));
  log.reset();
  recovered.clear();
  log = OpenCollecting(Options(1024), &recovered);
  EXPECT_THAT(Payloads(recovered), ElementsAre(std::string(400, 'c'), std::string(400, 'd'),
                                               std::string(400, 'e'), std::string(400, 'f')));
}

TEST_F(LogTest, RefusesBadAppendsAndAppendsAfterClose) {
  std::vector<std::pair<SegmentId, std::string>> recovered;
  auto log = OpenCollecting(Options(), &recovered);
  EXPECT_THAT(log->Append("").status(), StatusIs(absl::StatusCode::kInvalidArgument));
  log->Close();
  EXPECT_THAT(log->Append("late").status(), StatusIs(absl::StatusCode::kCancelled));
}

TEST_F(LogTest, VisitorErrorFailsOpen) {
  {
    std::vector<std::pair<SegmentId, std::string>> recovered;
    auto log = OpenCollecting(Options(), &recovered);
    ASSERT_OK(log->Append("x").status());
  }
  auto log = Log::Open(
      Options(), [](SegmentId, absl::string_view) { return absl::DataLossError("no thanks"); });
  EXPECT_THAT(log.status(), StatusIs(absl::StatusCode::kDataLoss, HasSubstr("no thanks")));
}

TEST_F(LogTest, ReadListsRecordsWithoutTouchingTheFiles) {
  std::string path;
  {
    std::vector<std::pair<SegmentId, std::string>> recovered;
    auto log = OpenCollecting(Options(), &recovered);
    ASSERT_OK(log->Append("one").status());
    ASSERT_OK_AND_ASSIGN(SegmentId s, log->Append("two"));
    path = log->SegmentPath(s);
  }
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 1);  // torn "two"
  const auto size = std::filesystem::file_size(path);
  std::vector<std::string> read;
  ASSERT_OK_AND_ASSIGN(RecoveryReport report, Log::Read(dir_, /*max_record_bytes=*/1 << 20,
                                                        [&](SegmentId, absl::string_view p) {
                                                          read.emplace_back(p);
                                                          return absl::OkStatus();
                                                        }));
  EXPECT_THAT(read, ElementsAre("one"));
  EXPECT_EQ(report.records, 1);
  ASSERT_THAT(report.warnings, SizeIs(1));
  EXPECT_THAT(report.warnings[0], HasSubstr("torn record payload"));
  EXPECT_EQ(std::filesystem::file_size(path), size);  // not repaired: Read only reads
}

// A full disk: appends are refused with ResourceExhausted, nothing half-written is ever read
// back, and appends succeed again once space is freed, without restarting. Needs a small tmpfs
// (root); skipped elsewhere.
TEST_F(LogTest, FullDiskRefusesAppendsAndRecoversWhenSpaceIsFreed) {
  std::filesystem::create_directories(dir_);
  if (::mount("zf-log-test", dir_.c_str(), "tmpfs", 0, "size=256k") != 0) {
    GTEST_SKIP() << "cannot mount a tmpfs here (needs root): " << std::strerror(errno);
  }
  struct Unmount {
    std::string dir;
    ~Unmount() { ::umount2(dir.c_str(), MNT_DETACH); }
  } unmount{dir_};
  LogOptions o = Options(/*segment_bytes=*/64 << 10);
  o.dir = dir_ + "/log";
  std::vector<std::string> acknowledged;
  {
    std::vector<std::pair<SegmentId, std::string>> recovered;
    auto log = OpenCollecting(o, &recovered);
    ASSERT_NE(log, nullptr);
    // Fill the disk with records of 10 KB until one is refused.
    absl::Status refused;
    for (int i = 0; i < 100 && refused.ok(); ++i) {
      std::string payload = absl::StrCat("record ", i, " ", std::string(10 << 10, 'x'));
      absl::StatusOr<SegmentId> appended = log->Append(payload);
      if (appended.ok()) {
        acknowledged.push_back(payload);
      } else {
        refused = appended.status();
      }
    }
    ASSERT_THAT(refused, StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("disk full")));
    ASSERT_FALSE(acknowledged.empty());
    // Still full: refused again, not failed for good.
    EXPECT_THAT(log->Append(std::string(10 << 10, 'y')).status(),
                StatusIs(absl::StatusCode::kResourceExhausted));
    // Free space (a segment's worth: drop the oldest records' segment), then append again.
    const std::vector<SegmentId> segments = log->segments();
    ASSERT_GE(segments.size(), 2u);
    ASSERT_EQ(::unlink(log->SegmentPath(segments.front()).c_str()), 0);
    ASSERT_OK(log->Append("after the disk was freed").status());
    acknowledged.push_back("after the disk was freed");
  }
  // Everything acknowledged that was not deleted with the freed segment is read back intact,
  // and no refused record appears.
  std::vector<std::string> read;
  ASSERT_OK_AND_ASSIGN(RecoveryReport report,
                       Log::Read(o.dir, o.max_record_bytes, [&](SegmentId, absl::string_view p) {
                         read.emplace_back(p);
                         return absl::OkStatus();
                       }));
  EXPECT_TRUE(report.warnings.empty()) << report.warnings[0];
  ASSERT_FALSE(read.empty());
  EXPECT_EQ(read.back(), "after the disk was freed");
  for (const std::string& p : read) {
    EXPECT_NE(std::find(acknowledged.begin(), acknowledged.end(), p), acknowledged.end())
        << "a record that was refused was read back: " << p.substr(0, 20);
  }
}

}  // namespace
}  // namespace zf::replay
