#include "replay/shard.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/clock.h"
#include "common/metrics/exposition.h"
#include "common/testing/status_matchers.h"
#include "common/testing/wait.h"
#include "common/thread.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "replay/testing/records.h"

namespace zf::replay {
namespace {

using ::testing::HasSubstr;
using zerofleet::v1::GameRecord;
using zerofleet::v1::SampleBatch;
using ::zf::replay::testing::MakeRecord;
using ::zf::testing::StatusIs;
using ::zf::testing::WaitFor;

class ShardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(::testing::TempDir(), "/replay_shard_test_", ::getpid(), "_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  ShardOptions Options() {
    ShardOptions o;
    o.dir = dir_;
    o.table.capacity_positions = 30;
    o.table.max_positions_per_game = 10;
    o.rate_limiter.samples_per_insert = 1;
    o.rate_limiter.min_size_to_sample = 5;
    o.rate_limiter.min_diff = -1000;
    o.rate_limiter.max_diff = 1000;
    o.rate_limiter.max_insert_positions = 10;
    o.rate_limiter.max_sample_positions = 64;
    o.segment_bytes = 1024;
    o.metrics = &registry_;
    o.clock = &clock_;
    return o;
  }

  double Counter(const std::string& text) {
    const std::string exposition = metrics::TextExposition(registry_);
    const size_t at = exposition.find("\n" + text + " ");
    if (at == std::string::npos) return -1;
    return std::stod(exposition.substr(at + text.size() + 2));
  }

  std::string dir_;
  FakeClock clock_;
  prometheus::Registry registry_;
};

TEST_F(ShardTest, InsertsAreSampleable) {
  ASSERT_OK_AND_ASSIGN(auto shard, Shard::Create(Options()));
  ASSERT_THAT(shard->Insert(MakeRecord("a", 6, 40), absl::InfiniteFuture()),
              ::zf::testing::IsOkAndHolds(InsertOutcome::kStored));
  SampleBatch batch;
  ASSERT_OK(shard->Sample(16, absl::InfiniteFuture(), &batch));
  EXPECT_EQ(batch.batch_size(), 16);
  for (int row = 0; row < 16; ++row) {
    EXPECT_GE(static_cast<uint8_t>(batch.planes()[row * 8]), 40);
    EXPECT_LT(static_cast<uint8_t>(batch.planes()[row * 8]), 46);
  }
  EXPECT_EQ(Counter("zf_replay_positions_stored"), 6);
  EXPECT_EQ(Counter("zf_replay_distinct_positions_stored"), 0);  // no position averaging
  EXPECT_EQ(shard->stats().distinct_positions, 0);
  EXPECT_EQ(Counter("zf_replay_inserts_total"), 1);
  EXPECT_EQ(Counter("zf_replay_sampled_positions_total"), 16);
  EXPECT_EQ(Counter("zf_replay_fsync_seconds_count"), 1);
}

TEST_F(ShardTest, DuplicateInsertsAreAcknowledgedOnceAlsoAcrossARestart) {
  {
    ASSERT_OK_AND_ASSIGN(auto shard, Shard::Create(Options()));
    ASSERT_THAT(shard->Insert(MakeRecord("a", 6), absl::InfiniteFuture()),
                ::zf::testing::IsOkAndHolds(InsertOutcome::kStored));
    ASSERT_THAT(shard->Insert(MakeRecord("a", 6), absl::InfiniteFuture()),
                ::zf::testing::IsOkAndHolds(InsertOutcome::kDuplicate));
    ASSERT_THAT(shard->Insert(MakeRecord("b", 3), absl::InfiniteFuture()),
                ::zf::testing::IsOkAndHolds(InsertOutcome::kStored));
    EXPECT_EQ(shard->stats().positions, 9);
    EXPECT_EQ(Counter("zf_replay_duplicates_total"), 1);
  }
  ASSERT_OK_AND_ASSIGN(auto shard, Shard::Create(Options()));
  EXPECT_EQ(shard->stats().games, 2);
  EXPECT_EQ(shard->stats().positions, 9);
  EXPECT_EQ(shard->recovery().records, 2);
  EXPECT_THAT(shard->Insert(MakeRecord("a", 6), absl::InfiniteFuture()),
              ::zf::testing::IsOkAndHolds(InsertOutcome::kDuplicate));
  EXPECT_THAT(shard->Insert(MakeRecord("b", 3), absl::InfiniteFuture()),
              ::zf::testing::IsOkAndHolds(InsertOutcome::kDuplicate));
  EXPECT_EQ(shard->stats().positions, 9);
  // Sampling works after recovery (9 positions >= min size 5).
  SampleBatch batch;
  EXPECT_OK(shard->Sample(4, clock_.Now(), &batch));
}

// Position averaging's distinct positions are counted (stats and the gauge) and rebuilt from the
// log on a restart, as the window itself is.
TEST_F(ShardTest, DistinctPositionsAreCountedAndRecovered) {
  ShardOptions o = Options();
  o.table.position_averaging = true;
  {
    ASSERT_OK_AND_ASSIGN(auto shard, Shard::Create(o));
    // Positions 0..5, then 0..3 again and 50..51: 8 distinct of 12.
    ASSERT_OK(shard->Insert(MakeRecord("a", 6), absl::InfiniteFuture()).status());
    ASSERT_OK(shard->Insert(MakeRecord("b", 4), absl::InfiniteFuture()).status());
    ASSERT_OK(shard->Insert(MakeRecord("c", 2, 50), absl::InfiniteFuture()).status());
    EXPECT_EQ(shard->stats().positions, 12);
    EXPECT_EQ(shard->stats().distinct_positions, 8);
    EXPECT_EQ(Counter("zf_replay_distinct_positions_stored"), 8);
  }
  ASSERT_OK_AND_ASSIGN(auto shard, Shard::Create(o));
  EXPECT_EQ(shard->stats().distinct_positions, 8);
  EXPECT_EQ(Counter("zf_replay_distinct_positions_stored"), 8);
  SampleBatch batch;
  ASSERT_OK(shard->Sample(64, clock_.Now(), &batch));
  for (int row = 0; row < 64; ++row) {
    const int plane = static_cast<uint8_t>(batch.planes()[row * 8]);
    EXPECT_TRUE(plane < 6 || plane == 50 || plane == 51) << plane;
  }
}

TEST_F(ShardTest, BadInputIsRejectedCountedAndNothingIsStored) {
  ASSERT_OK_AND_ASSIGN(auto shard, Shard::Create(Options()));
  GameRecord bad = MakeRecord("bad", 4);
  bad.set_returns(0, 7.0f);
  EXPECT_THAT(shard->Insert(bad, absl::InfiniteFuture()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bad_value")));
  GameRecord too_long = MakeRecord("long", 4);
  too_long.set_num_positions(11);
  EXPECT_THAT(shard->Insert(too_long, absl::InfiniteFuture()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("too_long")));
  EXPECT_EQ(shard->stats().positions, 0);
  EXPECT_EQ(shard->stats().rejected, 2);
  EXPECT_EQ(shard->log().bytes_on_disk(), 8);  // the active segment's magic only
  EXPECT_EQ(Counter("zf_replay_rejections_total{reason=\"bad_value\"}"), 1);
  EXPECT_EQ(Counter("zf_replay_rejections_total{reason=\"too_long\"}"), 1);
  // The id of a rejected record is not burnt: a corrected record stores.
  bad.set_returns(0, 1.0f);
  EXPECT_THAT(shard->Insert(bad, absl::InfiniteFuture()),
              ::zf::testing::IsOkAndHolds(InsertOutcome::kStored));
  // A record of another shape than the first stored one is refused.
  GameRecord other = MakeRecord("other", 2);
  other.set_game("chess");
  EXPECT_THAT(shard->Insert(other, absl::InfiniteFuture()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bad_shape")));
}

TEST_F(ShardTest, SegmentsOfEvictedGamesAreDeletedAndStayGoneAfterRestart) {
  std::vector<std::string> paths;
  {
    ASSERT_OK_AND_ASSIGN(auto shard, Shard::Create(Options()));
    // Each record is ~300 bytes encoded, so 1024-byte segments hold about three.
    for (int g = 0; g < 12; ++g) {
      ASSERT_OK(
          shard->Insert(MakeRecord(absl::StrCat("g", g), 10, g), absl::InfiniteFuture()).status());
    }
    EXPECT_EQ(shard->stats().positions, 30);  // the last three games
    EXPECT_EQ(shard->stats().games, 3);
    // Only segments holding one of the last three games (plus the active one) remain.
    EXPECT_LE(shard->log().segments().size(), 3u);
    EXPECT_LT(Counter("zf_replay_log_bytes"), 3 * 1024);
  }
  ASSERT_OK_AND_ASSIGN(auto shard, Shard::Create(Options()));
  EXPECT_EQ(shard->stats().games, 3);
  EXPECT_EQ(shard->stats().positions, 30);
  // Games evicted before the restart whose records were recovered are still deduplicated.
  EXPECT_THAT(shard->Insert(MakeRecord("g11", 10, 11), absl::InfiniteFuture()),
              ::zf::testing::IsOkAndHolds(InsertOutcome::kDuplicate));
}

TEST_F(ShardTest, SampleBlocksUntilMinSizeIsInserted) {
  ASSERT_OK_AND_ASSIGN(auto shard, Shard::Create(Options()));
  absl::Status status = absl::UnknownError("not run");
  absl::Notification done;
  SampleBatch batch;
  Thread sampler("sampler", [&] {
    status = shard->Sample(4, absl::InfiniteFuture(), &batch);
    done.Notify();
  });
  ASSERT_TRUE(WaitFor([&] { return clock_.NumWaiters() == 1; }));
  ASSERT_OK(shard->Insert(MakeRecord("a", 3), absl::InfiniteFuture()).status());
  EXPECT_FALSE(done.HasBeenNotified());  // 3 < min size 5
  ASSERT_OK(shard->Insert(MakeRecord("b", 3), absl::InfiniteFuture()).status());
  done.WaitForNotification();
  EXPECT_OK(status);
  EXPECT_EQ(batch.batch_size(), 4);
}

TEST_F(ShardTest, InsertBlocksWhenAheadOfSamplesUntilDeadline) {
  ShardOptions o = Options();
  o.rate_limiter.min_diff = -74;
  o.rate_limiter.max_diff = 0;  // 74 wide >= 10 * 1 + 64
  ASSERT_OK_AND_ASSIGN(auto shard, Shard::Create(o));
  ASSERT_OK(shard->Insert(MakeRecord("a", 5), absl::InfiniteFuture()).status());  // free
  absl::StatusOr<InsertOutcome> result = absl::UnknownError("not run");
  absl::Notification done;
  Thread inserter("inserter", [&] {
    result = shard->Insert(MakeRecord("b", 2), clock_.Now() + absl::Seconds(5));
    done.Notify();
  });
  ASSERT_TRUE(WaitFor([&] { return clock_.NumWaiters() == 1; }));
  clock_.AdvanceTime(absl::Seconds(5));
  done.WaitForNotification();
  EXPECT_THAT(result.status(), StatusIs(absl::StatusCode::kDeadlineExceeded));
  EXPECT_EQ(shard->stats().positions, 5);
  EXPECT_EQ(Counter("zf_replay_rate_limiter_wait_seconds_total{operation=\"insert\"}"), 5);
  // Sampling makes room; the same id then stores (a failed insert burns nothing).
  SampleBatch batch;
  ASSERT_OK(shard->Sample(7, clock_.Now(), &batch));
  EXPECT_THAT(shard->Insert(MakeRecord("b", 2), clock_.Now()),
              ::zf::testing::IsOkAndHolds(InsertOutcome::kStored));
}

TEST_F(ShardTest, CloseCancelsBlockedSamples) {
  ASSERT_OK_AND_ASSIGN(auto shard, Shard::Create(Options()));
  absl::Status status = absl::UnknownError("not run");
  absl::Notification done;
  SampleBatch batch;
  Thread sampler("sampler", [&] {
    status = shard->Sample(4, absl::InfiniteFuture(), &batch);
    done.Notify();
  });
  ASSERT_TRUE(WaitFor([&] { return clock_.NumWaiters() == 1; }));
  shard->Close();
  done.WaitForNotification();
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kCancelled));
  EXPECT_THAT(shard->Insert(MakeRecord("a", 3), absl::InfiniteFuture()).status(),
              StatusIs(absl::StatusCode::kCancelled));
}

TEST_F(ShardTest, RefusesConfigurationsThatCouldNeverSample) {
  ShardOptions o = Options();
  o.rate_limiter.min_size_to_sample = 25;  // 25 + 10 > capacity 30
  EXPECT_THAT(Shard::Create(o).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("min_size_to_sample")));
  o = Options();
  o.rate_limiter.max_diff = 10;
  o.rate_limiter.min_diff = 0;
  EXPECT_THAT(Shard::Create(o).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("deadlock")));
}

TEST_F(ShardTest, TornLogTailLosesOnlyTheUnacknowledgedRecord) {
  std::string last_segment;
  {
    ASSERT_OK_AND_ASSIGN(auto shard, Shard::Create(Options()));
    ASSERT_OK(shard->Insert(MakeRecord("a", 2), absl::InfiniteFuture()).status());
    ASSERT_OK(shard->Insert(MakeRecord("b", 2), absl::InfiniteFuture()).status());
    last_segment = shard->log().SegmentPath(shard->log().segments().back());
  }
  std::filesystem::resize_file(last_segment, std::filesystem::file_size(last_segment) - 3);
  ASSERT_OK_AND_ASSIGN(auto shard, Shard::Create(Options()));
  EXPECT_EQ(shard->stats().games, 1);
  EXPECT_EQ(shard->recovery().warnings.size(), 1u);
  // The torn game was never acknowledged in this scenario's model; its retry stores it.
  EXPECT_THAT(shard->Insert(MakeRecord("b", 2), absl::InfiniteFuture()),
              ::zf::testing::IsOkAndHolds(InsertOutcome::kStored));
  EXPECT_THAT(shard->Insert(MakeRecord("a", 2), absl::InfiniteFuture()),
              ::zf::testing::IsOkAndHolds(InsertOutcome::kDuplicate));
}

// Zeroed bytes in a closed segment cost the one game whose record they hit: every later game is
// still there (a duplicate when offered again), the lost one is stored again when re-offered, and
// the damage is in the quarantine gauge.
TEST_F(ShardTest, ZeroedBytesInAClosedSegmentLoseOnlyTheGameTheyHit) {
  std::vector<std::string> ids;
  for (char c = 'a'; c <= 't'; ++c) ids.emplace_back(1, c);
  std::string first_segment;
  {
    ShardOptions o = Options();
    o.table.capacity_positions = 1000;
    ASSERT_OK_AND_ASSIGN(auto shard, Shard::Create(o));
    for (const std::string& id : ids) {
      ASSERT_OK(shard->Insert(MakeRecord(id, 2), absl::InfiniteFuture()).status());
    }
    ASSERT_GE(shard->log().segments().size(), 2u);
    first_segment = shard->log().SegmentPath(shard->log().segments().front());
  }
  {
    // 16 zeroed bytes inside the first record's payload ("a": the magic, then its header).
    std::fstream f(first_segment, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(8 + 16 + 20);
    f.write(std::string(16, '\0').data(), 16);
  }
  ShardOptions o = Options();
  o.table.capacity_positions = 1000;
  ASSERT_OK_AND_ASSIGN(auto shard, Shard::Create(o));
  EXPECT_EQ(shard->stats().games, static_cast<int64_t>(ids.size()) - 1);
  ASSERT_EQ(shard->recovery().damage.size(), 1u);
  EXPECT_FALSE(shard->recovery().damage[0].torn_tail);
  EXPECT_GT(Counter("zf_replay_log_quarantined_bytes{kind=\"corrupt\"}"), 0);
  EXPECT_EQ(Counter("zf_replay_log_quarantined_bytes{kind=\"torn_tail\"}"), 0);
  EXPECT_THAT(shard->Insert(MakeRecord("a", 2), absl::InfiniteFuture()),
              ::zf::testing::IsOkAndHolds(InsertOutcome::kStored));
  for (size_t i = 1; i < ids.size(); ++i) {
    EXPECT_THAT(shard->Insert(MakeRecord(ids[i], 2), absl::InfiniteFuture()),
                ::zf::testing::IsOkAndHolds(InsertOutcome::kDuplicate))
        << ids[i];
  }
}

}  // namespace
}  // namespace zf::replay
