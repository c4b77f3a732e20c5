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
#include <iterator>
#include <random>
#include <set>
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

  // Opens the log, appends `payloads` and closes it. Returns the path of the segment that holds
  // the first one.
  std::string WriteRecords(const std::vector<std::string>& payloads) {
    std::vector<std::pair<SegmentId, std::string>> ignored;
    auto log = OpenCollecting(Options(), &ignored);
    std::string path;
    for (const std::string& payload : payloads) {
      absl::StatusOr<SegmentId> s = log->Append(payload);
      EXPECT_OK(s.status());
      if (path.empty() && s.ok()) path = log->SegmentPath(*s);
    }
    return path;
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
  EXPECT_EQ(log->recovery().torn_bytes + log->recovery().corrupt_bytes, 0);
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

// Frame sizes of the format written today: magic 8, then per record a 16-byte header.
constexpr int64_t kMagic = 8;
constexpr int64_t kHeader = 16;

std::string ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void Overwrite(const std::string& path, int64_t offset, const std::string& bytes) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(offset);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

void FlipBit(const std::string& path, int64_t offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(offset);
  char c;
  f.get(c);
  f.seekp(offset);
  f.put(static_cast<char>(c ^ 0x10));
}

TEST_F(LogTest, TornTailIsCutOffCopiedAsideAndNewAppendsAreClean) {
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
  const std::string torn = ReadAll(path).substr(size - (kHeader + 9));
  {
    auto log = OpenCollecting(Options(), &recovered);
    ASSERT_NE(log, nullptr);
    EXPECT_THAT(Payloads(recovered), ElementsAre("kept"));
    EXPECT_EQ(log->recovery().torn_bytes, kHeader + 9 - 4);
    EXPECT_EQ(log->recovery().corrupt_bytes, 0);
    ASSERT_THAT(log->recovery().warnings, SizeIs(1));
    EXPECT_THAT(log->recovery().warnings[0], HasSubstr("torn tail (torn record payload)"));
    ASSERT_THAT(log->recovery().damage, SizeIs(1));
    const DamagedRegion& region = log->recovery().damage[0];
    EXPECT_TRUE(region.torn_tail);
    EXPECT_EQ(region.offset, kMagic + kHeader + 4);
    EXPECT_EQ(ReadAll(region.quarantine), torn);  // the bytes are kept, not thrown away
    EXPECT_THAT(region.quarantine, HasSubstr("/damaged/"));
    EXPECT_EQ(log->recovery().quarantined_torn_bytes, kHeader + 9 - 4);
    EXPECT_EQ(std::filesystem::file_size(path), size - (kHeader + 9));  // cut off on disk
    ASSERT_OK(log->Append("after").status());
  }
  recovered.clear();
  auto log = OpenCollecting(Options(), &recovered);
  EXPECT_THAT(Payloads(recovered), ElementsAre("kept", "after"));
  EXPECT_TRUE(log->recovery().warnings.empty());
}

TEST_F(LogTest, FlippedBitCostsOnlyItsRecordAndTheSegmentIsRewrittenWithoutIt) {
  std::vector<std::pair<SegmentId, std::string>> recovered;
  const std::string path = WriteRecords({"first", "second", "third"});
  const int64_t second = kMagic + kHeader + 5;
  const std::string damaged_frame = ReadAll(path).substr(second, kHeader + 6);
  FlipBit(path, second + kHeader + 2);  // in "second"'s payload
  {
    auto log = OpenCollecting(Options(), &recovered);
    ASSERT_NE(log, nullptr);
    EXPECT_THAT(Payloads(recovered), ElementsAre("first", "third"));
    ASSERT_THAT(log->recovery().warnings, SizeIs(1));
    EXPECT_THAT(log->recovery().warnings[0], HasSubstr("corrupt region (checksum mismatch)"));
    EXPECT_EQ(log->recovery().corrupt_bytes, kHeader + 6);
    EXPECT_EQ(log->recovery().torn_bytes, 0);
    ASSERT_THAT(log->recovery().damage, SizeIs(1));
    const DamagedRegion& region = log->recovery().damage[0];
    EXPECT_FALSE(region.torn_tail);
    EXPECT_EQ(region.offset, second);
    EXPECT_EQ(region.bytes, kHeader + 6);
    std::string flipped = damaged_frame;
    flipped[kHeader + 2] = static_cast<char>(flipped[kHeader + 2] ^ 0x10);
    EXPECT_EQ(ReadAll(region.quarantine), flipped);
    EXPECT_THAT(region.quarantine, ::testing::EndsWith(".corrupt"));
    EXPECT_EQ(log->recovery().quarantined_corrupt_bytes, kHeader + 6);
  }
  // Repaired once: the next start reads clean and keeps both records; the copy stays.
  recovered.clear();
  auto log = OpenCollecting(Options(), &recovered);
  EXPECT_THAT(Payloads(recovered), ElementsAre("first", "third"));
  EXPECT_TRUE(log->recovery().warnings.empty());
  EXPECT_EQ(log->recovery().quarantined_corrupt_bytes, kHeader + 6);
}

TEST_F(LogTest, ACorruptLengthIsCaughtByTheHeaderChecksumAndTheNextRecordIsFound) {
  std::vector<std::pair<SegmentId, std::string>> recovered;
  const std::string path = WriteRecords({"first", "second"});
  Overwrite(path, kMagic + 4 + 3, "\x7f");  // length 0x7f000005: also over max_record_bytes
  auto log = OpenCollecting(Options(), &recovered);
  EXPECT_THAT(Payloads(recovered), ElementsAre("second"));
  ASSERT_THAT(log->recovery().warnings, SizeIs(1));
  EXPECT_THAT(log->recovery().warnings[0], HasSubstr("record header checksum mismatch"));
  EXPECT_EQ(log->recovery().corrupt_bytes, kHeader + 5);
}

TEST_F(LogTest, DamageAtTheEndOfAClosedSegmentIsCorruptNotATornTail) {
  std::vector<std::pair<SegmentId, std::string>> recovered;
  std::string first_segment;
  {
    auto log = OpenCollecting(Options(/*segment_bytes=*/1024), &recovered);
    for (int i = 0; i < 80; ++i) ASSERT_OK(log->Append(absl::StrCat("record ", i)).status());
    ASSERT_GE(log->segments().size(), 2u);
    first_segment = log->SegmentPath(log->segments().front());
  }
  const auto size = static_cast<int64_t>(std::filesystem::file_size(first_segment));
  Overwrite(first_segment, size - 3, std::string(3, '\0'));
  auto log = OpenCollecting(Options(1024), &recovered);
  EXPECT_THAT(recovered, SizeIs(79));
  ASSERT_THAT(log->recovery().damage, SizeIs(1));
  EXPECT_FALSE(log->recovery().damage[0].torn_tail);
  EXPECT_EQ(log->recovery().torn_bytes, 0);
  EXPECT_GT(log->recovery().corrupt_bytes, 0);
}

TEST_F(LogTest, ABadMagicLosesNoRecord) {
  std::vector<std::pair<SegmentId, std::string>> recovered;
  const std::string path = WriteRecords({"first", "second"});
  Overwrite(path, 0, std::string(8, '\0'));
  {
    auto log = OpenCollecting(Options(), &recovered);
    EXPECT_THAT(Payloads(recovered), ElementsAre("first", "second"));
    ASSERT_THAT(log->recovery().damage, SizeIs(1));
    EXPECT_EQ(log->recovery().damage[0].problem, "bad magic");
    EXPECT_EQ(log->recovery().corrupt_bytes, kMagic);
  }
  recovered.clear();
  auto log = OpenCollecting(Options(), &recovered);
  EXPECT_THAT(Payloads(recovered), ElementsAre("first", "second"));
  EXPECT_TRUE(log->recovery().warnings.empty());
}

// Segments of the first format ([length][crc][payload], magic ZFRLOG01) are still read; new
// records go to a segment of today's format.
TEST_F(LogTest, ReadsSegmentsOfTheFirstFormat) {
  std::filesystem::create_directories(dir_);
  {
    std::ofstream f(absl::StrCat(dir_, "/segment-00000000000000000007.zlog"), std::ios::binary);
    f << "ZFRLOG01";
    // "one": length 3, zlib crc32("one") = 0x7a6c86f1.
    f.write("\x03\x00\x00\x00\xf1\x86\x6c\x7a", 8);
    f << "one";
  }
  std::vector<std::pair<SegmentId, std::string>> recovered;
  {
    auto log = OpenCollecting(Options(), &recovered);
    ASSERT_NE(log, nullptr);
    EXPECT_THAT(recovered, ElementsAre(std::make_pair(SegmentId{7}, std::string("one"))));
    ASSERT_OK_AND_ASSIGN(SegmentId s, log->Append("two"));
    EXPECT_EQ(s, 8u);
    EXPECT_EQ(ReadAll(log->SegmentPath(s)).substr(0, 8), "ZFRLOG02");
  }
  recovered.clear();
  auto log = OpenCollecting(Options(), &recovered);
  EXPECT_THAT(Payloads(recovered), ElementsAre("one", "two"));
}

// Damage of random kind, length and place in a closed segment costs exactly the records whose
// frames it touches: every other record is recovered, in order.
TEST_F(LogTest, RandomDamageCostsExactlyTheRecordsItTouches) {
  std::mt19937 rng(20261202);
  for (int trial = 0; trial < 60; ++trial) {
    std::filesystem::remove_all(dir_);
    std::vector<std::pair<SegmentId, std::string>> recovered;
    std::vector<std::pair<int64_t, int64_t>> frames;  // in the first segment: [from, to)
    std::vector<std::string> written;
    std::string first_segment;
    {
      auto log = OpenCollecting(Options(/*segment_bytes=*/4096), &recovered);
      int64_t offset = kMagic;
      for (int i = 0; i < 80; ++i) {
        std::string payload =
            absl::StrCat("game-", trial, "-", i, ":", std::string(1 + rng() % 120, 'a' + i % 26));
        ASSERT_OK_AND_ASSIGN(SegmentId s, log->Append(payload));
        if (s == log->segments().front()) {
          frames.emplace_back(offset, offset + kHeader + static_cast<int64_t>(payload.size()));
          offset = frames.back().second;
        }
        written.push_back(std::move(payload));
      }
      ASSERT_GE(log->segments().size(), 2u);
      first_segment = log->SegmentPath(log->segments().front());
    }
    const int64_t size = static_cast<int64_t>(std::filesystem::file_size(first_segment));
    const int64_t length = 1 + static_cast<int64_t>(rng() % 64);
    const int64_t at = kMagic + static_cast<int64_t>(rng() % (size - kMagic - length));
    const std::string original = ReadAll(first_segment).substr(at, length);
    std::string bytes = original;
    for (char& c : bytes) c = (trial % 2 == 0) ? '\0' : static_cast<char>(c ^ (1 + rng() % 255));
    Overwrite(first_segment, at, bytes);

    // Zeroing a byte that was zero changes nothing: only changed bytes touch a record.
    std::set<std::string> touched;
    for (int64_t i = 0; i < length; ++i) {
      if (bytes[i] == original[i]) continue;
      for (size_t r = 0; r < frames.size(); ++r) {
        if (frames[r].first <= at + i && at + i < frames[r].second) touched.insert(written[r]);
      }
    }
    std::vector<std::string> expected;
    for (const std::string& p : written) {
      if (!touched.contains(p)) expected.push_back(p);
    }
    auto log = OpenCollecting(Options(4096), &recovered);
    ASSERT_NE(log, nullptr);
    EXPECT_EQ(Payloads(recovered), expected)
        << "trial " << trial << ": " << length << " bytes at " << at;
    EXPECT_EQ(log->recovery().torn_bytes, 0);
  }
}

// A payload is a client's bytes and may hold a whole valid frame; when that record is damaged,
// recovery skips its bytes whole (its intact header says how many) and never reads the frame
// inside it as a record.
TEST_F(LogTest, AFrameInsideADamagedPayloadIsNotRecovered) {
  std::vector<std::pair<SegmentId, std::string>> recovered;
  std::string inner, path;
  {
    auto log = OpenCollecting(Options(), &recovered);
    ASSERT_OK_AND_ASSIGN(SegmentId s, log->Append("planted"));
    path = log->SegmentPath(s);
  }
  inner = ReadAll(path).substr(kMagic);  // a valid frame of "planted"
  std::filesystem::remove_all(dir_);
  {
    auto log = OpenCollecting(Options(), &recovered);
    ASSERT_OK(log->Append("x" + inner + "tail").status());
    ASSERT_OK(log->Append("after").status());
    ASSERT_OK(log->Append("last").status());
  }
  // Damage running from the outer record's end into the next one's header, so recovery must
  // search for the next intact record (the one after the outer record is not).
  const int64_t outer = kHeader + 1 + static_cast<int64_t>(inner.size()) + 4;
  Overwrite(path, kMagic + outer - 2, std::string(4, '\0'));
  recovered.clear();
  auto log = OpenCollecting(Options(), &recovered);
  EXPECT_THAT(Payloads(recovered), ElementsAre("last"));
  EXPECT_EQ(log->recovery().corrupt_bytes, outer + kHeader + 5);
}

TEST_F(LogTest, ReadReportsDamageWithItsBytesAndRepairsNothing) {
  const std::string path = WriteRecords({"first", "second", "third"});
  FlipBit(path, kMagic + kHeader + 5 + kHeader);
  const std::string before = ReadAll(path);
  std::vector<std::string> payloads, damaged;
  ASSERT_OK_AND_ASSIGN(RecoveryReport report,
                       Log::Read(
                           dir_, LogOptions().max_record_bytes,
                           [&](SegmentId, absl::string_view p) {
                             payloads.emplace_back(p);
                             return absl::OkStatus();
                           },
                           [&](const DamagedRegion& region, absl::string_view bytes) {
                             EXPECT_TRUE(region.quarantine.empty());
                             damaged.emplace_back(bytes.substr(region.header_bytes));
                           }));
  EXPECT_THAT(payloads, ElementsAre("first", "third"));
  ASSERT_THAT(damaged, SizeIs(1));
  EXPECT_EQ(damaged[0].substr(1), "econd");
  EXPECT_EQ(report.corrupt_bytes, kHeader + 6);
  EXPECT_EQ(ReadAll(path), before);
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/damaged"));
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
