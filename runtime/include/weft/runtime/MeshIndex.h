//===- MeshIndex.h - A rank's index in a group of the device mesh ---------===//
//
// Ranks lay out the mesh row-major (the last axis varies fastest); a group
// over some mesh axes orders its members by their coordinates over those
// axes, the first listed major (the shard dialect's grid_axes order). The
// compiler (per-rank parameter files), the runtime and `weft export`
// (joining split parameters) all follow this one definition.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_MESHINDEX_H
#define WEFT_RUNTIME_MESHINDEX_H

#include <cstdint>
#include <vector>

namespace weft {

/// `rank`'s index in its group over `axes` (count entries) of a mesh of
/// `shape`.
inline int64_t meshGroupIndex(int64_t rank, const std::vector<int64_t> &shape,
                              const int64_t *axes, size_t count) {
  std::vector<int64_t> coords(shape.size());
  for (size_t i = shape.size(); i-- > 0;) {
    coords[i] = rank % shape[i];
    rank /= shape[i];
  }
  int64_t index = 0;
  for (size_t k = 0; k < count; ++k)
    index = index * shape[axes[k]] + coords[axes[k]];
  return index;
}

} // namespace weft

#endif // WEFT_RUNTIME_MESHINDEX_H
