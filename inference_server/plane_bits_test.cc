// PackPlaneBits / UnpackPlaneBits: round trips for sizes around byte boundaries, the layout
// (least significant bit first, each position on its own bytes), and refusal of values above 1.
#include "inference_server/plane_bits.h"

#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zf::inference {
namespace {

TEST(PlaneBitsTest, RoundTripsEverySizeAroundByteBoundaries) {
  std::mt19937 rng(7);
  for (int64_t plane_size : {1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 126, 6498}) {
    for (int64_t positions : {1, 2, 5}) {
      std::vector<uint8_t> planes(static_cast<size_t>(positions * plane_size));
      for (uint8_t& v : planes) v = rng() & 1;
      std::string bits;
      ASSERT_TRUE(PackPlaneBits(planes, plane_size, &bits)) << plane_size;
      EXPECT_EQ(bits.size(), static_cast<size_t>(positions * PackedPlaneBytes(plane_size)));
      std::vector<uint8_t> back(planes.size(), 9);
      UnpackPlaneBits(bits.data(), positions, plane_size, back.data());
      EXPECT_EQ(back, planes) << "plane_size " << plane_size << ", positions " << positions;
    }
  }
}

TEST(PlaneBitsTest, LeastSignificantBitFirstAndPositionsStartOnABytes) {
  // Two positions of 10 values: value 0 and 9 of the first, value 1 of the second.
  std::vector<uint8_t> planes(20, 0);
  planes[0] = 1;
  planes[9] = 1;
  planes[11] = 1;
  std::string bits;
  ASSERT_TRUE(PackPlaneBits(planes, 10, &bits));
  ASSERT_EQ(bits.size(), 4u);
  EXPECT_EQ(static_cast<uint8_t>(bits[0]), 0x01);
  EXPECT_EQ(static_cast<uint8_t>(bits[1]), 0x02);  // value 9: bit 1 of byte 1; high bits zero
  EXPECT_EQ(static_cast<uint8_t>(bits[2]), 0x02);
  EXPECT_EQ(static_cast<uint8_t>(bits[3]), 0x00);
}

TEST(PlaneBitsTest, UnusedHighBitsAreIgnoredWhenUnpacking) {
  const std::string bits = {static_cast<char>(0xFF)};
  std::vector<uint8_t> out(3, 9);
  UnpackPlaneBits(bits.data(), 1, 3, out.data());
  EXPECT_THAT(out, ::testing::ElementsAre(1, 1, 1));
}

TEST(PlaneBitsTest, RefusesValuesAboveOne) {
  for (size_t at : {0u, 7u, 8u, 12u}) {
    std::vector<uint8_t> planes(13, 1);
    planes[at] = 2;
    std::string bits;
    EXPECT_FALSE(PackPlaneBits(planes, 13, &bits)) << at;
  }
  std::vector<uint8_t> planes(13, 0);
  planes[5] = 128;
  std::string bits;
  EXPECT_FALSE(PackPlaneBits(planes, 13, &bits));
  EXPECT_FALSE(PackPlaneBits(planes, 5, &bits));  // 13 is not a multiple of 5
}

}  // namespace
}  // namespace zf::inference
