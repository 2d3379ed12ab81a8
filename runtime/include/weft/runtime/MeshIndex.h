//===- MeshIndex.h - A rank's index in a group of the device mesh ---------===//
//
// Ranks lay out the mesh row-major (the last axis varies fastest); a group
// over some mesh axes orders its members by their coordinates over those
// axes, the first listed major (the shard dialect's grid_axes order). The
// compiler (per-rank parameter files), the runtime and `weft export`
// (joining split parameters) all follow this one definition. The runtime's
// communicators (comm::Mesh, and the NCCL lanes) split the world into the
// groups with the colors and in the order defined here too.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_MESHINDEX_H
#define WEFT_RUNTIME_MESHINDEX_H

#include <cstdint>
#include <vector>

namespace weft {

/// `rank`'s coordinates in a mesh of `shape` (row-major: the last axis
/// varies fastest).
inline std::vector<int64_t> meshCoordinates(int64_t rank,
                                            const std::vector<int64_t> &shape) {
  std::vector<int64_t> coords(shape.size());
  for (size_t i = shape.size(); i-- > 0;) {
    coords[i] = rank % shape[i];
    rank /= shape[i];
  }
  return coords;
}

/// `rank`'s index in its group over `axes` (count entries) of a mesh of
/// `shape`.
inline int64_t meshGroupIndex(int64_t rank, const std::vector<int64_t> &shape,
                              const int64_t *axes, size_t count) {
  const std::vector<int64_t> coords = meshCoordinates(rank, shape);
  int64_t index = 0;
  for (size_t k = 0; k < count; ++k)
    index = index * shape[axes[k]] + coords[axes[k]];
  return index;
}

/// Which group over `axes` (count entries) `rank` belongs to, as the color
/// that splits the world into those groups: its row-major index over the
/// mesh's other axes.
inline int64_t meshGroupColor(int64_t rank, const std::vector<int64_t> &shape,
                              const int64_t *axes, size_t count) {
  const std::vector<int64_t> coords = meshCoordinates(rank, shape);
  int64_t color = 0;
  for (size_t a = 0; a < shape.size(); ++a) {
    bool inGroup = false;
    for (size_t k = 0; k < count; ++k)
      inGroup |= axes[k] == static_cast<int64_t>(a);
    if (!inGroup)
      color = color * shape[a] + coords[a];
  }
  return color;
}

namespace detail {
template <class F>
void chooseMeshAxes(int64_t n, size_t length, std::vector<int64_t> &axes,
                    std::vector<bool> &used, F &f) {
  if (axes.size() == length) {
    f(static_cast<const std::vector<int64_t> &>(axes));
    return;
  }
  for (int64_t a = 0; a < n; ++a) {
    if (used[a])
      continue;
    used[a] = true;
    axes.push_back(a);
    chooseMeshAxes(n, length, axes, used, f);
    axes.pop_back();
    used[a] = false;
  }
}
} // namespace detail

/// Calls f(axes) (a const std::vector<int64_t> &) for every ordered choice
/// of distinct axes of an n-axis mesh, shortest first, each length in
/// lexicographic order: the same list, in the same order, on every rank,
/// so that the groups split off the world in turn match up.
template <class F> void forEachMeshAxisChoice(int64_t n, F &&f) {
  std::vector<int64_t> axes;
  std::vector<bool> used(static_cast<size_t>(n), false);
  for (int64_t length = 1; length <= n; ++length)
    detail::chooseMeshAxes(n, static_cast<size_t>(length), axes, used, f);
}

} // namespace weft

#endif // WEFT_RUNTIME_MESHINDEX_H
