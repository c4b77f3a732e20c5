#include "replay/validate.h"

#include <cmath>
#include <functional>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "replay/testing/records.h"

namespace zf::replay {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using zerofleet::v1::GameRecord;
using ::zf::replay::testing::MakeRecord;
using ::zf::replay::testing::PackFloats;
using ::zf::testing::StatusIs;

TableOptions Options() {
  TableOptions o;
  o.capacity_positions = 100;
  o.max_positions_per_game = 10;
  return o;
}

struct Case {
  std::string name;
  std::function<void(GameRecord&)> corrupt;
  RejectReason reason;
};

TEST(ValidateTest, AcceptsAGoodRecord) {
  EXPECT_OK(ValidateGameRecord(MakeRecord("a", 3), Options()));
}

TEST(ValidateTest, RejectsEachKindOfBadRecordWithItsReason) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<Case> cases = {
      {"empty id", [](GameRecord& r) { r.clear_game_id(); }, RejectReason::kBadId},
      {"long id", [](GameRecord& r) { r.set_game_id(std::string(200, 'x')); },
       RejectReason::kBadId},
      {"zero channels", [](GameRecord& r) { r.mutable_plane_shape()->set_channels(0); },
       RejectReason::kBadShape},
      {"zero actions", [](GameRecord& r) { r.set_num_actions(0); }, RejectReason::kBadShape},
      {"too long", [](GameRecord& r) { r.set_num_positions(11); }, RejectReason::kTooLong},
      {"no positions", [](GameRecord& r) { r.set_num_positions(0); }, RejectReason::kTooLong},
      {"short planes", [](GameRecord& r) { r.mutable_planes()->pop_back(); },
       RejectReason::kBadSize},
      {"long policy", [](GameRecord& r) { r.mutable_policy()->append(4, '\0'); },
       RejectReason::kBadSize},
      {"short to_play", [](GameRecord& r) { r.mutable_to_play()->pop_back(); },
       RejectReason::kBadSize},
      {"one action of three", [](GameRecord& r) { r.add_actions(0); }, RejectReason::kBadSize},
      {"an action past A",
       [](GameRecord& r) {
         for (int i = 0; i < r.num_positions(); ++i) r.add_actions(r.num_actions());
       },
       RejectReason::kBadValue},
      {"two root values of three",
       [](GameRecord& r) {
         r.add_root_values(0.5f);
         r.add_root_values(0.5f);
       },
       RejectReason::kBadSize},
      {"a root value of 1.5",
       [](GameRecord& r) {
         for (int i = 0; i < r.num_positions(); ++i) r.add_root_values(i == 1 ? 1.5f : 0.0f);
       },
       RejectReason::kBadValue},
      {"nan policy",
       [nan](GameRecord& r) {
         r.set_policy(PackFloats({nan, 1, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0}));
       },
       RejectReason::kNan},
      {"negative policy",
       [](GameRecord& r) {
         r.set_policy(PackFloats({-0.5f, 1.5f, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0}));
       },
       RejectReason::kBadPolicy},
      {"policy sums to 0.5",
       [](GameRecord& r) {
         r.set_policy(PackFloats({0.5f, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0}));
       },
       RejectReason::kBadPolicy},
      {"nan return", [nan](GameRecord& r) { r.set_returns(0, nan); }, RejectReason::kNan},
      {"return out of range", [](GameRecord& r) { r.set_returns(1, -1.5f); },
       RejectReason::kBadValue},
      {"one return", [](GameRecord& r) { r.mutable_returns()->RemoveLast(); },
       RejectReason::kBadValue},
      {"player 2", [](GameRecord& r) { (*r.mutable_to_play())[1] = 2; }, RejectReason::kBadPlayer},
      {"flag 3", [](GameRecord& r) { (*r.mutable_full_search())[0] = 3; }, RejectReason::kBadFlag},
      {"negative version", [](GameRecord& r) { r.add_model_versions(-1); },
       RejectReason::kBadVersion},
      {"symmetry not a permutation",
       [](GameRecord& r) {
         auto* s = r.add_symmetries();
         for (int v : {0, 0, 1, 2}) s->add_action_map(v);
         for (int v : {0, 1, 2, 3}) s->add_cell_map(v);
       },
       RejectReason::kBadSymmetry},
      {"symmetry wrong size",
       [](GameRecord& r) {
         auto* s = r.add_symmetries();
         for (int v : {0, 1, 2, 3}) s->add_action_map(v);
         for (int v : {0, 1, 2}) s->add_cell_map(v);
       },
       RejectReason::kBadSymmetry},
      {"ownership without score",
       [](GameRecord& r) { r.set_final_ownership(std::string("\1\1\xff\0", 4)); },
       RejectReason::kBadOwnership},
      {"score without ownership", [](GameRecord& r) { r.set_final_score(2.5f); },
       RejectReason::kBadOwnership},
      {"ownership of 3 cells",
       [](GameRecord& r) {
         r.set_final_ownership(std::string("\1\1\1", 3));
         r.set_final_score(3);
       },
       RejectReason::kBadOwnership},
      {"owner 2",
       [](GameRecord& r) {
         r.set_final_ownership(std::string("\1\2\1\1", 4));
         r.set_final_score(3);
       },
       RejectReason::kBadOwnership},
      {"nan score",
       [nan](GameRecord& r) {
         r.set_final_ownership(std::string("\1\1\1\1", 4));
         r.set_final_score(nan);
       },
       RejectReason::kBadOwnership},
      {"score over 4 points a cell",
       [](GameRecord& r) {
         r.set_final_ownership(std::string("\1\1\1\1", 4));
         r.set_final_score(16.5f);
       },
       RejectReason::kBadOwnership},
      {"score against the result",
       [](GameRecord& r) {
         r.set_final_ownership(std::string("\1\1\1\1", 4));
         r.set_final_score(-3);
       },
       RejectReason::kBadOwnership},
      {"ownership of a resigned game",
       [](GameRecord& r) {
         r.set_final_ownership(std::string("\1\1\1\1", 4));
         r.set_final_score(4);
         r.set_resigned(true);
       },
       RejectReason::kBadOwnership},
  };
  for (const Case& c : cases) {
    GameRecord r = MakeRecord("a", 3);
    c.corrupt(r);
    RejectReason reason = RejectReason::kBadId;
    if (c.reason == RejectReason::kBadId) reason = RejectReason::kBadVersion;
    absl::Status s = ValidateGameRecord(r, Options(), std::nullopt, &reason);
    EXPECT_THAT(s, StatusIs(absl::StatusCode::kInvalidArgument,
                            StartsWith(std::string(RejectReasonName(c.reason)) + ":")))
        << c.name;
    EXPECT_EQ(reason, c.reason) << c.name;
  }
}

TEST(ValidateTest, AcceptsOwnershipAndScore) {
  GameRecord r = MakeRecord("a", 3);
  r.set_final_ownership(std::string("\1\xff\0\1", 4));
  r.set_final_score(16.0f);
  EXPECT_OK(ValidateGameRecord(r, Options()));
}

TEST(ValidateTest, AcceptsTheMovesAndTheSearchValues) {
  GameRecord r = MakeRecord("a", 3);
  for (int i = 0; i < 3; ++i) {
    r.add_actions(i);
    r.add_root_values(-1.0f + i);
  }
  EXPECT_OK(ValidateGameRecord(r, Options()));
}

TEST(ValidateTest, NonFullSearchRowsNeedNotSumToOne) {
  GameRecord r = MakeRecord("a", 3);
  r.set_policy(PackFloats({0.5f, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0}));
  (*r.mutable_full_search())[0] = 0;
  EXPECT_OK(ValidateGameRecord(r, Options()));
}

TEST(ValidateTest, RejectsARecordOfAnotherShapeThanTheTables) {
  Table::Shape shape{"toy", 2, 2, 2, 4};
  EXPECT_OK(ValidateGameRecord(MakeRecord("a", 3), Options(), shape));
  shape.num_actions = 7;
  EXPECT_THAT(ValidateGameRecord(MakeRecord("a", 3), Options(), shape),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bad_shape")));
  TableOptions o = Options();
  o.game = "connect4";
  EXPECT_THAT(ValidateGameRecord(MakeRecord("a", 3), o),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("connect4")));
}

TEST(ValidateTest, EveryReasonHasADistinctName) {
  std::set<std::string> names;
  for (int i = 0; i < kNumRejectReasons; ++i) {
    names.insert(std::string(RejectReasonName(static_cast<RejectReason>(i))));
  }
  EXPECT_EQ(names.size(), static_cast<size_t>(kNumRejectReasons));
  EXPECT_EQ(names.count("unknown"), 0u);
}

TEST(LeadingGameIdTest, ReadsTheIdOfADamagedRecordWhereItSurvives) {
  const std::string id(200, 'g');  // a two-byte varint length
  std::string payload = MakeRecord(id, 3).SerializeAsString();
  EXPECT_EQ(LeadingGameId(payload, /*max_id_bytes=*/256), id);
  // Damage after the id leaves it readable.
  for (size_t i = id.size() + 3; i < payload.size(); ++i) payload[i] = '\0';
  EXPECT_EQ(LeadingGameId(payload, 256), id);
  EXPECT_EQ(LeadingGameId(payload.substr(0, 100), 256), std::nullopt);  // the id is cut short
  EXPECT_EQ(LeadingGameId(payload, /*max_id_bytes=*/128), std::nullopt);
  EXPECT_EQ(LeadingGameId(MakeRecord("short", 1).SerializeAsString()), "short");
  EXPECT_EQ(LeadingGameId(""), std::nullopt);
  EXPECT_EQ(LeadingGameId(std::string(16, '\0') + payload, 256), std::nullopt);
  EXPECT_EQ(LeadingGameId("\x0a\x80\x80\x80\x80\x80\x01", 256), std::nullopt);  // no varint end
  EXPECT_EQ(LeadingGameId("\x0a\x00", 256), std::nullopt);                      // empty id
}

}  // namespace
}  // namespace zf::replay
