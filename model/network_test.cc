#include "model/network.h"

#include <vector>

#include "common/testing/status_matchers.h"
#include "games/connect4/connect4.h"
#include "games/dotsboxes/dotsboxes.h"
#include "games/tictactoe/tictactoe.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/game_network.h"

namespace zf::model {
namespace {

using ::testing::HasSubstr;
using ::zf::testing::StatusIs;

NetworkShape ValidShape() {
  return {.input_channels = 3, .board_height = 6, .board_width = 7, .num_actions = 7};
}

TEST(NetworkShapeTest, DefaultsAreTheSmallNetwork) {
  const NetworkShape shape = ValidShape();
  EXPECT_OK(shape.Validate());
  EXPECT_EQ(shape.blocks, 4);
  EXPECT_EQ(shape.filters, 64);
  EXPECT_EQ(shape.value_hidden, 64);
  EXPECT_EQ(shape.PlaneSize(), 3 * 6 * 7);
  EXPECT_EQ(shape.DebugString(), "3x6x7 -> 7 actions, 4 blocks x 64 filters, value hidden 64");
}

TEST(NetworkShapeTest, ForwardFlopsCountsConvolutionsAndLinearLayers) {
  const NetworkShape s{.input_channels = 2,
                       .board_height = 3,
                       .board_width = 3,
                       .num_actions = 10,
                       .blocks = 1,
                       .filters = 4,
                       .value_hidden = 5};
  // Multiply-adds: stem 9*2*4*9 = 648; block 2*9*4*4*9 = 2592; policy 4*2*9 + 18*10 = 252;
  // value 4*9 + 9*5 + 5*3 = 96. Two flops each.
  EXPECT_EQ(s.ForwardFlops(), 2 * (648 + 2592 + 252 + 96));
}

TEST(NetworkShapeTest, GlobalPoolingIsInEverySecondBlockFromTheLast) {
  NetworkShape s = ValidShape();
  EXPECT_EQ(s.GlobalPoolingBlocks(), 0);
  EXPECT_FALSE(s.HasGlobalPooling(3));
  s.global_pooling = true;
  EXPECT_EQ(s.DebugString(),
            "3x6x7 -> 7 actions, 4 blocks x 64 filters, value hidden 64, global pooling");
  const std::vector<bool> four = {false, true, false, true};
  for (int b = 0; b < 4; ++b) EXPECT_EQ(s.HasGlobalPooling(b), four[b]) << b;
  EXPECT_EQ(s.GlobalPoolingBlocks(), 2);
  s.blocks = 1;
  EXPECT_TRUE(s.HasGlobalPooling(0));
  EXPECT_EQ(s.GlobalPoolingBlocks(), 1);
  s.blocks = 5;
  const std::vector<bool> five = {true, false, true, false, true};
  for (int b = 0; b < 5; ++b) EXPECT_EQ(s.HasGlobalPooling(b), five[b]) << b;
  EXPECT_EQ(s.GlobalPoolingBlocks(), 3);
}

TEST(NetworkShapeTest, ForwardFlopsCountsThePoolingLinearLayers) {
  NetworkShape s{.input_channels = 2,
                 .board_height = 3,
                 .board_width = 3,
                 .num_actions = 10,
                 .blocks = 1,
                 .filters = 4,
                 .value_hidden = 5};
  const int64_t plain = s.ForwardFlops();
  s.global_pooling = true;
  // One pooling block: linear 2*4 -> 4, 32 multiply-adds.
  EXPECT_EQ(s.ForwardFlops(), plain + 2 * 32);
}

TEST(NetworkShapeTest, DefaultConstructedIsInvalid) {
  EXPECT_THAT(NetworkShape{}.Validate(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("input_channels")));
}

TEST(NetworkShapeTest, RejectsEachBadField) {
  struct Case {
    const char* field;
    void (*mutate)(NetworkShape&);
  };
  const Case cases[] = {
      {"input_channels", [](NetworkShape& s) { s.input_channels = 0; }},
      {"input_channels",
       [](NetworkShape& s) { s.input_channels = NetworkShape::kMaxInputChannels + 1; }},
      {"board_height", [](NetworkShape& s) { s.board_height = -1; }},
      {"board_width", [](NetworkShape& s) { s.board_width = NetworkShape::kMaxBoardSide + 1; }},
      {"num_actions", [](NetworkShape& s) { s.num_actions = 0; }},
      {"num_actions", [](NetworkShape& s) { s.num_actions = NetworkShape::kMaxActions + 1; }},
      {"blocks", [](NetworkShape& s) { s.blocks = 0; }},
      {"blocks", [](NetworkShape& s) { s.blocks = NetworkShape::kMaxBlocks + 1; }},
      {"filters", [](NetworkShape& s) { s.filters = -64; }},
      {"filters", [](NetworkShape& s) { s.filters = NetworkShape::kMaxFilters + 1; }},
      {"value_hidden", [](NetworkShape& s) { s.value_hidden = 0; }},
      {"value_hidden", [](NetworkShape& s) { s.value_hidden = NetworkShape::kMaxValueHidden + 1; }},
  };
  for (const Case& c : cases) {
    NetworkShape shape = ValidShape();
    c.mutate(shape);
    EXPECT_THAT(shape.Validate(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.field)))
        << shape.DebugString();
  }
}

TEST(NetworkShapeTest, AcceptsTheBounds) {
  NetworkShape shape = ValidShape();
  shape.input_channels = NetworkShape::kMaxInputChannels;
  shape.board_height = NetworkShape::kMaxBoardSide;
  shape.board_width = 1;
  shape.num_actions = NetworkShape::kMaxActions;
  shape.blocks = 1;
  shape.filters = NetworkShape::kMaxFilters;
  shape.value_hidden = 1;
  EXPECT_OK(shape.Validate());
}

TEST(NetworkShapeForGameTest, ConnectFour) {
  const NetworkShape shape =
      NetworkShapeForGame(games::ConnectFour(), /*blocks=*/2, /*filters=*/32);
  EXPECT_EQ(shape, (NetworkShape{.input_channels = 3,
                                 .board_height = 6,
                                 .board_width = 7,
                                 .num_actions = 7,
                                 .blocks = 2,
                                 .filters = 32,
                                 .value_hidden = 64}));
  EXPECT_OK(shape.Validate());
  EXPECT_OK(CheckShapeFitsGame(shape, games::ConnectFour()));
}

TEST(NetworkShapeForGameTest, DotsAndBoxesTwoByThree) {
  ASSERT_OK_AND_ASSIGN(games::DotsAndBoxes game, games::DotsAndBoxes::Create(2, 3));
  const NetworkShape shape = NetworkShapeForGame(game);
  // 2 * 2 * 3 + 2 + 3 = 17 lines; a (2*2+1) x (2*3+1) grid of 4 planes.
  EXPECT_EQ(shape.num_actions, 17);
  EXPECT_EQ(shape.input_channels, 4);
  EXPECT_EQ(shape.board_height, 5);
  EXPECT_EQ(shape.board_width, 7);
  EXPECT_EQ(shape.blocks, NetworkShape{}.blocks);
  EXPECT_OK(CheckShapeFitsGame(shape, game));
}

TEST(NetworkShapeForGameTest, MismatchIsInvalidArgument) {
  ASSERT_OK_AND_ASSIGN(games::DotsAndBoxes three, games::DotsAndBoxes::Create(3, 3));
  ASSERT_OK_AND_ASSIGN(games::DotsAndBoxes two, games::DotsAndBoxes::Create(2, 3));
  EXPECT_THAT(CheckShapeFitsGame(NetworkShapeForGame(three), two),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("dotsboxes:2x3")));
  EXPECT_THAT(CheckShapeFitsGame(NetworkShapeForGame(games::TicTacToe()), games::ConnectFour()),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace zf::model
