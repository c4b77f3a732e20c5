#include "games/grid_symmetry.h"

#include "common/logging.h"

namespace zf::games {

std::vector<GridTransform> GridTransformsFor(int height, int width) {
  ZF_CHECK(height >= 1 && width >= 1) << "grid " << height << "x" << width;
  std::vector<GridTransform> out = {GridTransform::kIdentity, GridTransform::kMirror,
                                    GridTransform::kFlip, GridTransform::kRot180};
  if (height == width) {
    out.insert(out.end(), {GridTransform::kTranspose, GridTransform::kAntiTranspose,
                           GridTransform::kRot90, GridTransform::kRot270});
  }
  return out;
}

const char* GridTransformName(GridTransform t) {
  switch (t) {
    case GridTransform::kIdentity:
      return "identity";
    case GridTransform::kMirror:
      return "mirror";
    case GridTransform::kFlip:
      return "flip";
    case GridTransform::kRot180:
      return "rot180";
    case GridTransform::kTranspose:
      return "transpose";
    case GridTransform::kAntiTranspose:
      return "antitranspose";
    case GridTransform::kRot90:
      return "rot90";
    case GridTransform::kRot270:
      return "rot270";
  }
  return "unknown";
}

std::pair<int, int> TransformCell(GridTransform t, int height, int width, int row, int col) {
  switch (t) {
    case GridTransform::kIdentity:
      return {row, col};
    case GridTransform::kMirror:
      return {row, width - 1 - col};
    case GridTransform::kFlip:
      return {height - 1 - row, col};
    case GridTransform::kRot180:
      return {height - 1 - row, width - 1 - col};
    default:
      break;
  }
  ZF_DCHECK(height == width) << GridTransformName(t) << " needs a square grid, got " << height
                             << "x" << width;
  switch (t) {
    case GridTransform::kTranspose:
      return {col, row};
    case GridTransform::kAntiTranspose:
      return {width - 1 - col, height - 1 - row};
    case GridTransform::kRot90:
      return {col, height - 1 - row};
    case GridTransform::kRot270:
      return {width - 1 - col, row};
    default:
      break;
  }
  ZF_CHECK(false) << "unhandled grid transform " << static_cast<int>(t);
  return {row, col};
}

std::vector<int> GridCellMap(GridTransform t, int height, int width) {
  std::vector<int> map(static_cast<size_t>(height) * width);
  for (int r = 0; r < height; ++r) {
    for (int c = 0; c < width; ++c) {
      auto [tr, tc] = TransformCell(t, height, width, r, c);
      map[r * width + c] = tr * width + tc;
    }
  }
  return map;
}

}  // namespace zf::games
