#include "games/grid_symmetry.h"

#include <algorithm>
#include <set>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zf::games {
namespace {

using ::testing::ElementsAre;

// The cell map of "first a, then b".
std::vector<int> Compose(const std::vector<int>& a, const std::vector<int>& b) {
  std::vector<int> out(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = b[a[i]];
  return out;
}

std::vector<int> Identity(int n) {
  std::vector<int> out(n);
  for (int i = 0; i < n; ++i) out[i] = i;
  return out;
}

TEST(GridSymmetryTest, SquareHasEightDistinctPermutations) {
  const std::vector<GridTransform> transforms = GridTransformsFor(4, 4);
  ASSERT_EQ(transforms.size(), 8u);
  EXPECT_EQ(transforms[0], GridTransform::kIdentity);
  std::set<std::vector<int>> maps;
  for (GridTransform t : transforms) {
    std::vector<int> map = GridCellMap(t, 4, 4);
    std::vector<int> sorted = map;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, Identity(16)) << GridTransformName(t);
    maps.insert(map);
  }
  EXPECT_EQ(maps.size(), 8u);
  // Closed under composition: the dihedral group.
  for (const std::vector<int>& a : maps) {
    for (const std::vector<int>& b : maps) EXPECT_EQ(maps.count(Compose(a, b)), 1u);
  }
}

TEST(GridSymmetryTest, RectangleHasFour) {
  const std::vector<GridTransform> transforms = GridTransformsFor(2, 3);
  ASSERT_EQ(transforms.size(), 4u);
  EXPECT_THAT(GridCellMap(GridTransform::kMirror, 2, 3), ElementsAre(2, 1, 0, 5, 4, 3));
  EXPECT_THAT(GridCellMap(GridTransform::kFlip, 2, 3), ElementsAre(3, 4, 5, 0, 1, 2));
  EXPECT_THAT(GridCellMap(GridTransform::kRot180, 2, 3), ElementsAre(5, 4, 3, 2, 1, 0));
}

TEST(GridSymmetryTest, QuarterTurnsCompose) {
  const std::vector<int> rot90 = GridCellMap(GridTransform::kRot90, 3, 3);
  // Clockwise: the top-left corner goes to the top-right.
  EXPECT_EQ(rot90[0], 2);
  EXPECT_EQ(Compose(rot90, rot90), GridCellMap(GridTransform::kRot180, 3, 3));
  EXPECT_EQ(Compose(Compose(rot90, rot90), rot90), GridCellMap(GridTransform::kRot270, 3, 3));
  EXPECT_EQ(Compose(Compose(rot90, rot90), Compose(rot90, rot90)), Identity(9));
  const std::vector<int> mirror = GridCellMap(GridTransform::kMirror, 3, 3);
  EXPECT_EQ(Compose(mirror, mirror), Identity(9));
  EXPECT_EQ(Compose(GridCellMap(GridTransform::kTranspose, 3, 3), mirror), rot90);
}

TEST(GridSymmetryTest, Names) {
  std::set<std::string> names;
  for (GridTransform t : GridTransformsFor(2, 2)) names.insert(GridTransformName(t));
  EXPECT_EQ(names.size(), 8u);
  EXPECT_EQ(std::string(GridTransformName(GridTransform::kRot90)), "rot90");
}

}  // namespace
}  // namespace zf::games
