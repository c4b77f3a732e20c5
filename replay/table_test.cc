#include "replay/table.h"

#include <map>
#include <random>
#include <string>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "replay/testing/records.h"
#include "replay/validate.h"

namespace zf::replay {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using zerofleet::v1::GameRecord;
using zerofleet::v1::SampleBatch;
using ::zf::replay::testing::MakeRecord;
using ::zf::replay::testing::PackFloats;
using ::zf::replay::testing::UnpackFloats;
using ::zf::testing::StatusIs;

TableOptions Options(int64_t capacity) {
  TableOptions o;
  o.capacity_positions = capacity;
  o.max_positions_per_game = 10;
  o.remembered_evicted_ids = 2;
  return o;
}

TEST(TableTest, EvictsOldestWholeGamesToFit) {
  ASSERT_OK_AND_ASSIGN(auto table, Table::Create(Options(10)));
  EXPECT_TRUE(table->Insert(MakeRecord("a", 4), 1).evicted.empty());
  EXPECT_TRUE(table->Insert(MakeRecord("b", 3), 1).evicted.empty());
  EXPECT_TRUE(table->Insert(MakeRecord("c", 3), 2).evicted.empty());
  EXPECT_EQ(table->num_positions(), 10);
  // 2 more positions: "a" (4) goes, whole, leaving 8.
  InsertResult r = table->Insert(MakeRecord("d", 2), 3);
  ASSERT_EQ(r.outcome, InsertOutcome::kStored);
  ASSERT_EQ(r.evicted.size(), 1u);
  EXPECT_EQ(r.evicted[0].id, "a");
  EXPECT_EQ(r.evicted[0].positions, 4);
  EXPECT_EQ(r.evicted[0].location, 1u);
  EXPECT_EQ(table->num_positions(), 8);
  EXPECT_EQ(table->num_games(), 3);
  // A full-size game evicts everything older that is needed: b, c (and d stays? 8 + 10 > 10).
  r = table->Insert(MakeRecord("e", 10), 4);
  ASSERT_EQ(r.evicted.size(), 3u);
  EXPECT_EQ(r.evicted[0].id, "b");
  EXPECT_EQ(r.evicted[2].id, "d");
  EXPECT_EQ(table->num_positions(), 10);
  EXPECT_EQ(table->num_games(), 1);
}

TEST(TableTest, DuplicatesAndRecentlyEvictedIdsAreNotStoredAgain) {
  ASSERT_OK_AND_ASSIGN(auto table, Table::Create(Options(10)));
  table->Insert(MakeRecord("a", 5), 1);
  InsertResult dup = table->Insert(MakeRecord("a", 5), 2);
  EXPECT_EQ(dup.outcome, InsertOutcome::kDuplicate);
  EXPECT_EQ(table->num_positions(), 5);
  table->Insert(MakeRecord("b", 10), 1);  // evicts a
  EXPECT_TRUE(table->Contains("a"));      // remembered as evicted
  EXPECT_EQ(table->Insert(MakeRecord("a", 5), 3).outcome, InsertOutcome::kDuplicate);
  // remembered_evicted_ids = 2: after two more evictions "a" is forgotten.
  table->Insert(MakeRecord("c", 10), 1);
  table->Insert(MakeRecord("d", 10), 1);
  EXPECT_FALSE(table->Contains("a"));
  EXPECT_TRUE(table->Contains("b"));
  EXPECT_EQ(table->Insert(MakeRecord("a", 5), 3).outcome, InsertOutcome::kStored);
}

TEST(TableTest, SampleIsEmptyTableError) {
  ASSERT_OK_AND_ASSIGN(auto table, Table::Create(Options(10)));
  std::mt19937_64 rng(1);
  SampleBatch batch;
  EXPECT_THAT(table->Sample(4, rng, &batch), StatusIs(absl::StatusCode::kFailedPrecondition));
}

TEST(TableTest, SampleBuildsPackedTensorsWithTargetsFromTheMoversView) {
  TableOptions o = Options(10);
  ASSERT_OK_AND_ASSIGN(auto table, Table::Create(o));
  GameRecord r = MakeRecord("a", 3, /*first_value=*/10);
  r.set_full_search(std::string("\x01\x00\x01", 3));
  table->Insert(r, 1);
  std::mt19937_64 rng(7);
  SampleBatch batch;
  ASSERT_OK(table->Sample(64, rng, &batch));
  EXPECT_EQ(batch.batch_size(), 64);
  EXPECT_EQ(batch.game(), "toy");
  EXPECT_EQ(batch.plane_shape().channels(), 2);
  ASSERT_EQ(batch.planes().size(), 64u * 8);
  ASSERT_EQ(batch.policy().size(), 64u * 4 * 4);
  std::vector<float> policy = UnpackFloats(batch.policy());
  std::vector<float> value = UnpackFloats(batch.value());
  ASSERT_EQ(value.size(), 64u);
  for (int row = 0; row < 64; ++row) {
    const int i = static_cast<uint8_t>(batch.planes()[row * 8]) - 10;  // which position
    ASSERT_GE(i, 0);
    ASSERT_LT(i, 3);
    for (int k = 0; k < 8; ++k) EXPECT_EQ(batch.planes()[row * 8 + k], batch.planes()[row * 8]);
    for (int a = 0; a < 4; ++a) EXPECT_EQ(policy[row * 4 + a], a == i ? 1.0f : 0.0f);
    // to_play alternates 0, 1, 0; returns {1, -1}.
    EXPECT_EQ(value[row], i % 2 == 0 ? 1.0f : -1.0f);
    EXPECT_EQ(batch.policy_mask()[row], i == 1 ? 0 : 1);
    EXPECT_EQ(batch.model_version(row), 7);
    EXPECT_EQ(batch.position_age(row), 0);
  }
}

// search_value is the record's root value for the position's player to move (a scalar: no
// symmetry touches it), and the result itself for a game recorded without root values.
TEST(TableTest, SearchValueIsTheRootValueOrTheResult) {
  ASSERT_OK_AND_ASSIGN(auto table, Table::Create(Options(20)));
  GameRecord searched = MakeRecord("searched", 3, /*first_value=*/10);
  for (float q : {0.25f, -0.5f, 0.75f}) searched.add_root_values(q);
  table->Insert(searched, 1);
  table->Insert(MakeRecord("plain", 2, /*first_value=*/50), 1);
  std::mt19937_64 rng(3);
  SampleBatch batch;
  ASSERT_OK(table->Sample(200, rng, &batch));
  const std::vector<float> value = UnpackFloats(batch.value());
  const std::vector<float> search = UnpackFloats(batch.search_value());
  ASSERT_EQ(search.size(), 200u);
  int from_search = 0;
  for (int row = 0; row < 200; ++row) {
    const int first = static_cast<uint8_t>(batch.planes()[row * 8]);
    if (first >= 50) {
      EXPECT_EQ(search[row], value[row]) << "row " << row;
    } else {
      ++from_search;
      const float expected[] = {0.25f, -0.5f, 0.75f};
      EXPECT_EQ(search[row], expected[first - 10]) << "row " << row;
    }
  }
  EXPECT_GT(from_search, 0);
  // Root values count in the payload: 4 bytes a position beyond the 26 of the plain record.
  EXPECT_EQ(table->payload_bytes(), 3 * (26 + 4) + 2 * 26);
}

// Positions, not games, are sampled uniformly: a 1-position game and a 9-position game are hit
// in proportion 1:9, and each position about equally often.
TEST(TableTest, SamplingIsUniformOverPositions) {
  ASSERT_OK_AND_ASSIGN(auto table, Table::Create(Options(20)));
  table->Insert(MakeRecord("short", 1, /*first_value=*/100), 1);
  table->Insert(MakeRecord("long", 9, /*first_value=*/0), 1);
  table->Insert(MakeRecord("mid", 5, /*first_value=*/50), 1);
  std::mt19937_64 rng(12345);
  std::map<int, int> hits;
  constexpr int kBatches = 400, kBatch = 100;
  SampleBatch batch;
  for (int b = 0; b < kBatches; ++b) {
    ASSERT_OK(table->Sample(kBatch, rng, &batch));
    for (int row = 0; row < kBatch; ++row) ++hits[static_cast<uint8_t>(batch.planes()[row * 8])];
  }
  ASSERT_EQ(hits.size(), 15u);                       // every position was drawn
  const double expected = kBatches * kBatch / 15.0;  // 2666.7 per position
  for (const auto& [value, count] : hits) {
    EXPECT_NEAR(count, expected, 0.1 * expected) << "position with plane value " << value;
  }
  int long_hits = 0;
  for (int v = 0; v < 9; ++v) long_hits += hits[v];
  EXPECT_NEAR(static_cast<double>(long_hits) / hits[100], 9.0, 1.5);
}

// Hand-checked: planes [1, 2, 2] and 4 actions, one symmetry that mirrors columns.
TEST(TableTest, AppliesRecordSymmetriesToPlanesAndPolicy) {
  TableOptions o = Options(10);
  ASSERT_OK_AND_ASSIGN(auto table, Table::Create(o));
  GameRecord r;
  r.set_game_id("sym");
  r.set_game("mirror");
  r.mutable_plane_shape()->set_channels(2);
  r.mutable_plane_shape()->set_height(2);
  r.mutable_plane_shape()->set_width(2);
  r.set_num_actions(4);
  r.set_num_positions(1);
  // channel 0 cells (r,c): (0,0)=1 (0,1)=2 (1,0)=3 (1,1)=4; channel 1: 5 6 7 8.
  r.set_planes(std::string("\x01\x02\x03\x04\x05\x06\x07\x08", 8));
  r.set_policy(PackFloats({0.1f, 0.2f, 0.3f, 0.4f}));
  r.set_to_play(std::string("\x00", 1));
  r.set_full_search(std::string("\x01", 1));
  r.add_returns(0);
  r.add_returns(0);
  auto* mirror = r.add_symmetries();
  mirror->set_name("mirror");
  for (int v : {1, 0, 3, 2}) mirror->add_cell_map(v);    // cell (r,c) -> (r,1-c)
  for (int v : {3, 2, 1, 0}) mirror->add_action_map(v);  // action a -> 3 - a
  ASSERT_OK(ValidateGameRecord(r, o));
  table->Insert(r, 1);
  std::mt19937_64 rng(3);
  SampleBatch batch;
  ASSERT_OK(table->Sample(200, rng, &batch));
  std::vector<float> policy = UnpackFloats(batch.policy());
  int identity = 0, mirrored = 0;
  for (int row = 0; row < 200; ++row) {
    std::string planes = batch.planes().substr(row * 8, 8);
    std::vector<float> p(policy.begin() + row * 4, policy.begin() + row * 4 + 4);
    if (planes == std::string("\x01\x02\x03\x04\x05\x06\x07\x08", 8)) {
      ++identity;
      EXPECT_THAT(p, ElementsAre(0.1f, 0.2f, 0.3f, 0.4f));
    } else {
      ++mirrored;
      EXPECT_EQ(planes, std::string("\x02\x01\x04\x03\x06\x05\x08\x07", 8));
      EXPECT_THAT(p, ElementsAre(0.4f, 0.3f, 0.2f, 0.1f));
    }
  }
  // Identity and mirror are each chosen with probability 1/2.
  EXPECT_GT(identity, 60);
  EXPECT_GT(mirrored, 60);

  TableOptions no_sym = o;
  no_sym.apply_random_symmetry = false;
  ASSERT_OK_AND_ASSIGN(auto plain, Table::Create(no_sym));
  plain->Insert(r, 1);
  ASSERT_OK(plain->Sample(50, rng, &batch));
  for (int row = 0; row < 50; ++row) {
    EXPECT_EQ(batch.planes().substr(row * 8, 8), r.planes());
  }
}

// Ownership and score: from the mover's side (to_play alternates 0, 1, 0), under the planes'
// symmetry, masked for rows of a game without them; absent while no stored game has them.
TEST(TableTest, OwnershipAndScoreFollowTheMoverAndTheSymmetry) {
  TableOptions o = Options(10);
  ASSERT_OK_AND_ASSIGN(auto table, Table::Create(o));
  table->Insert(MakeRecord("plain", 2, /*first_value=*/50), 1);
  std::mt19937_64 rng(5);
  SampleBatch batch;
  ASSERT_OK(table->Sample(8, rng, &batch));
  EXPECT_TRUE(batch.ownership().empty());
  EXPECT_TRUE(batch.score().empty());
  EXPECT_TRUE(batch.aux_mask().empty());

  GameRecord r = MakeRecord("owned", 3, /*first_value=*/10);
  // Cells (r,c): (0,0) player 0's, (0,1) player 1's, (1,0) nobody's, (1,1) player 0's.
  r.set_final_ownership(std::string("\x01\xff\x00\x01", 4));
  r.set_final_score(2.5f);
  auto* mirror = r.add_symmetries();
  for (int v : {1, 0, 3, 2}) mirror->add_cell_map(v);
  for (int v : {3, 2, 1, 0}) mirror->add_action_map(v);
  ASSERT_OK(ValidateGameRecord(r, o));
  table->Insert(r, 1);
  ASSERT_OK(table->Sample(400, rng, &batch));
  ASSERT_EQ(batch.ownership().size(), 400u * 4);
  ASSERT_EQ(batch.aux_mask().size(), 400u);
  const std::vector<float> score = UnpackFloats(batch.score());
  int plain = 0, identity = 0, mirrored = 0;
  for (int row = 0; row < 400; ++row) {
    const int first = static_cast<uint8_t>(batch.planes()[row * 8]);
    std::vector<int> owner;
    for (int k = 0; k < 4; ++k)
      owner.push_back(static_cast<int8_t>(batch.ownership()[row * 4 + k]));
    if (first >= 50) {  // the game without targets
      ++plain;
      EXPECT_EQ(batch.aux_mask()[row], 0);
      EXPECT_THAT(owner, ElementsAre(0, 0, 0, 0));
      EXPECT_EQ(score[row], 0.0f);
      continue;
    }
    EXPECT_EQ(batch.aux_mask()[row], 1);
    const int i = first - 10;
    const int sign = i % 2 == 0 ? 1 : -1;  // positions 0 and 2: player 0 to move
    EXPECT_EQ(score[row], sign * 2.5f);
    // The toy planes are constant per position, so the symmetry shows in the policy only.
    const std::vector<float> policy = UnpackFloats(batch.policy().substr(row * 16, 16));
    if (policy[i % 4] == 1.0f) {
      ++identity;
      EXPECT_THAT(owner, ElementsAre(sign, -sign, 0, sign));
    } else {
      ++mirrored;
      EXPECT_EQ(policy[3 - i % 4], 1.0f);
      EXPECT_THAT(owner, ElementsAre(-sign, sign, sign, 0));
    }
  }
  EXPECT_GT(plain, 50);
  EXPECT_GT(identity, 50);
  EXPECT_GT(mirrored, 50);
}

TEST(TableTest, PayloadBytesTrackTheEncodedRecordsAndStopGrowingWhenFull) {
  ASSERT_OK_AND_ASSIGN(auto table, Table::Create(Options(20)));
  // Per position: 8 plane bytes + 16 policy bytes + 2 flag bytes.
  for (int g = 0; g < 10; ++g) table->Insert(MakeRecord("g" + std::to_string(g), 5), 1);
  EXPECT_EQ(table->num_positions(), 20);
  EXPECT_EQ(table->payload_bytes(), 20 * 26);
}

TEST(TableTest, PositionAgeCountsNewerPositions) {
  ASSERT_OK_AND_ASSIGN(auto table, Table::Create(Options(20)));
  table->Insert(MakeRecord("old", 2, /*first_value=*/0), 1);
  table->Insert(MakeRecord("new", 3, /*first_value=*/50), 1);
  std::mt19937_64 rng(5);
  SampleBatch batch;
  ASSERT_OK(table->Sample(100, rng, &batch));
  for (int row = 0; row < 100; ++row) {
    const bool old = static_cast<uint8_t>(batch.planes()[row * 8]) < 50;
    EXPECT_EQ(batch.position_age(row), old ? 3 : 0);
  }
}

// Position averaging: two games through the same three positions and one other position make
// four distinct positions, each drawn about equally often; a shared position's value is the mean
// of both games' results for its player, its policy the mean over the full searches among its
// occurrences, its version the newest occurrence's. Eviction takes a game's occurrences away.
TEST(TableTest, PositionAveragingSamplesDistinctPositionsWithMeanTargets) {
  TableOptions o = Options(20);
  o.position_averaging = true;
  o.apply_random_symmetry = false;
  ASSERT_OK_AND_ASSIGN(auto table, Table::Create(o));
  GameRecord first = MakeRecord("first", 3, /*first_value=*/10);  // results {1, -1}
  table->Insert(first, 1);
  GameRecord second = MakeRecord("second", 3, /*first_value=*/10);
  second.set_returns(0, -1.0f);
  second.set_returns(1, 1.0f);
  // Position 0 searched to action 3 (first: action 0); position 1 a fast search (not averaged).
  second.set_policy(PackFloats({0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0}));
  second.set_full_search(std::string("\x01\x00\x01", 3));
  second.clear_model_versions();
  second.add_model_versions(9);
  table->Insert(second, 2);
  table->Insert(MakeRecord("other", 1, /*first_value=*/50), 3);
  EXPECT_EQ(table->num_positions(), 7);
  EXPECT_EQ(table->num_distinct_positions(), 4);

  std::mt19937_64 rng(11);
  std::map<int, int> hits;
  SampleBatch batch;
  for (int b = 0; b < 100; ++b) {
    ASSERT_OK(table->Sample(80, rng, &batch));
    const std::vector<float> policy = UnpackFloats(batch.policy());
    const std::vector<float> value = UnpackFloats(batch.value());
    const std::vector<float> search = UnpackFloats(batch.search_value());
    for (int row = 0; row < 80; ++row) {
      const int plane = static_cast<uint8_t>(batch.planes()[row * 8]);
      ++hits[plane];
      const float* p = &policy[row * 4];
      if (plane == 50) {
        EXPECT_EQ(value[row], 1.0f);
        EXPECT_EQ(batch.model_version(row), 7);
        continue;
      }
      const int i = plane - 10;
      EXPECT_EQ(value[row], 0.0f) << "results 1 and -1 for position " << i;
      EXPECT_EQ(search[row], 0.0f) << "no root values: the mean result";
      EXPECT_EQ(batch.model_version(row), 9) << "the newest occurrence's";
      EXPECT_EQ(batch.policy_mask()[row], 1);
      if (i == 0) {
        EXPECT_THAT(std::vector<float>(p, p + 4), ElementsAre(0.5f, 0.0f, 0.0f, 0.5f));
      } else if (i == 1) {
        EXPECT_THAT(std::vector<float>(p, p + 4), ElementsAre(0.0f, 1.0f, 0.0f, 0.0f));
      } else {
        EXPECT_THAT(std::vector<float>(p, p + 4), ElementsAre(0.0f, 0.0f, 1.0f, 0.0f));
      }
    }
  }
  ASSERT_EQ(hits.size(), 4u);
  for (const auto& [plane, count] : hits) {
    EXPECT_NEAR(count, 2000, 200) << "distinct position with plane value " << plane;
  }

  // 19 new positions evict "first" and "second": 1 + 19 = 20 of 20. Then a game through
  // position 10 again keeps only its own targets.
  table->Insert(MakeRecord("fill", 10, /*first_value=*/100), 4);
  table->Insert(MakeRecord("fill2", 9, /*first_value=*/120), 5);
  EXPECT_EQ(table->num_games(), 3);
  EXPECT_EQ(table->num_distinct_positions(), 20);
  table->Insert(MakeRecord("again", 1, /*first_value=*/10), 6);  // evicts "other"
  EXPECT_EQ(table->num_distinct_positions(), 20);
  ASSERT_OK(table->Sample(400, rng, &batch));
  const std::vector<float> value = UnpackFloats(batch.value());
  int again = 0;
  for (int row = 0; row < 400; ++row) {
    if (static_cast<uint8_t>(batch.planes()[row * 8]) != 10) continue;
    ++again;
    EXPECT_EQ(value[row], 1.0f);
    EXPECT_EQ(UnpackFloats(batch.policy())[row * 4], 1.0f);
  }
  EXPECT_GT(again, 0);
  // 8 bytes of key a stored position beside the 26 of the plain record.
  EXPECT_EQ(table->payload_bytes(), 20 * (26 + 8));
}

TEST(TableOptionsTest, RefusesCapacityBelowOneGame) {
  TableOptions o = Options(5);
  EXPECT_THAT(o.Validate(), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(Table::Create(o).status(), StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace zf::replay
