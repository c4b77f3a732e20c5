// The symmetries of a rectangular grid of cells, shared by the games' Symmetries().
//
// A grid of height h and width w has cells (row, col), row 0 at the top, numbered row * w + col
// (the plane cell numbering of games/game.h). Every rectangle has four symmetries (identity, the
// two mirrors, the half turn); a square (h == w) has four more (the two transposes and the
// quarter turns), eight in all: the dihedral group of the square.
//
// Thread-safety: free functions over values; thread-safe.
#pragma once

#include <utility>
#include <vector>

namespace zf::games {

enum class GridTransform {
  kIdentity,       // (r, c) -> (r, c)
  kMirror,         // left-right: (r, c) -> (r, w-1-c)
  kFlip,           // top-bottom: (r, c) -> (h-1-r, c)
  kRot180,         // (r, c) -> (h-1-r, w-1-c)
  kTranspose,      // square only: (r, c) -> (c, r)
  kAntiTranspose,  // square only: (r, c) -> (w-1-c, h-1-r)
  kRot90,          // square only, clockwise: (r, c) -> (c, h-1-r)
  kRot270,         // square only, clockwise: (r, c) -> (w-1-c, r)
};

// The transforms of an h x w grid in the order listed above, identity first: 8 when
// height == width, else the first 4. Requires height, width >= 1.
std::vector<GridTransform> GridTransformsFor(int height, int width);

// A short lower-case name: "identity", "mirror", "flip", "rot180", "transpose",
// "antitranspose", "rot90", "rot270".
const char* GridTransformName(GridTransform t);

// Where cell (row, col) of an h x w grid goes under t, as (row, col). The square-only transforms
// require height == width (checked with ZF_DCHECK).
std::pair<int, int> TransformCell(GridTransform t, int height, int width, int row, int col);

// The cell permutation of t: result[row * width + col] is the index of the cell that (row, col)
// goes to. Size height * width.
std::vector<int> GridCellMap(GridTransform t, int height, int width);

}  // namespace zf::games
