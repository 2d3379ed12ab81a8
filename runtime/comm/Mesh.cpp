//===- Mesh.cpp - The device mesh and its groups --------------------------===//
#include "CommInternal.h"

#include "weft/runtime/MeshIndex.h"

namespace weft {
namespace comm {

Mesh::Mesh(Communicator &world, std::vector<int64_t> shape,
           std::vector<std::string> axisNames)
    : world_(&world), shape_(std::move(shape)),
      axisNames_(std::move(axisNames)) {}

// The groups are freed before the world they were split from.
Mesh::~Mesh() { groups_.clear(); }

std::vector<int64_t> Mesh::coordinates(int64_t rank) const {
  return meshCoordinates(rank, shape_);
}

bool Mesh::validAxes(const int64_t *axes, int64_t count,
                     std::string &why) const {
  if (count < 0) {
    why = "negative number of mesh axes";
    return false;
  }
  for (int64_t i = 0; i < count; ++i) {
    // Before the executor sets a mesh up (mesh []), every axis is a
    // dimension of extent 1.
    if (axes[i] < 0 ||
        (!shape_.empty() && axes[i] >= static_cast<int64_t>(shape_.size()))) {
      why = "mesh axis " + std::to_string(axes[i]) +
            " is not an axis of the mesh (it has " +
            std::to_string(shape_.size()) + ")";
      return false;
    }
    for (int64_t j = 0; j < i; ++j)
      if (axes[j] == axes[i]) {
        why = "mesh axis " + std::to_string(axes[i]) + " is listed twice";
        return false;
      }
  }
  return true;
}

int64_t Mesh::groupSize(const int64_t *axes, int64_t count) const {
  int64_t n = 1;
  for (int64_t i = 0; i < count; ++i)
    if (axes[i] >= 0 && axes[i] < static_cast<int64_t>(shape_.size()))
      n *= shape_[axes[i]];
  return n;
}

int64_t Mesh::groupIndex(const int64_t *axes, int64_t count) const {
  std::vector<int64_t> c = coordinates(myRank());
  int64_t index = 0;
  for (int64_t i = 0; i < count; ++i)
    if (axes[i] >= 0 && axes[i] < static_cast<int64_t>(shape_.size()))
      index = index * shape_[axes[i]] + c[axes[i]];
  return index;
}

std::vector<int64_t> Mesh::groupMembers(const int64_t *axes,
                                        int64_t count) const {
  const int64_t n = groupSize(axes, count);
  std::vector<int64_t> members(static_cast<size_t>(n));
  if (n == 1) {
    members[0] = myRank();
    return members;
  }
  // Walk the group indices: unravel each over `axes` (first axis major)
  // into this rank's coordinates.
  const std::vector<int64_t> mine = coordinates(myRank());
  for (int64_t index = 0; index < n; ++index) {
    std::vector<int64_t> c = mine;
    int64_t rest = index;
    for (int64_t i = count; i-- > 0;) {
      c[axes[i]] = rest % shape_[axes[i]];
      rest /= shape_[axes[i]];
    }
    int64_t rank = 0;
    for (size_t a = 0; a < shape_.size(); ++a)
      rank = rank * shape_[a] + c[a];
    members[index] = rank;
  }
  return members;
}

std::string Mesh::groupName(const int64_t *axes, int64_t count) const {
  std::string s = "mesh axes [";
  for (int64_t i = 0; i < count; ++i)
    s += (i ? "," : "") + std::to_string(axes[i]);
  return s + "] (ranks " + formatRanks(groupMembers(axes, count)) + ")";
}

Communicator &Mesh::group(const int64_t *axes, int64_t count) {
  std::vector<int64_t> key(axes, axes + count);
  auto found = groups_.find(key);
  if (found != groups_.end())
    return *found->second;
  std::vector<int64_t> members = groupMembers(axes, count);
  std::string name = groupName(axes, count);
  std::unique_ptr<Communicator> comm;
  if (members.size() == 1) {
    // Every rank's group over these axes has one rank: nothing to split.
    comm = makeSelfCommunicator(members[0], std::move(name));
  } else {
    // color: the linear index over the other axes; key: the group index.
    const int64_t color =
        meshGroupColor(myRank(), shape_, axes, static_cast<size_t>(count));
    comm = world_->split(color, groupIndex(axes, count), std::move(members),
                         std::move(name));
  }
  Communicator &result = *comm;
  groups_.emplace(std::move(key), std::move(comm));
  return result;
}

void Mesh::createGroups() {
  // Every ordered choice of distinct axes, shortest first: the same list,
  // in the same order, on every rank.
  forEachMeshAxisChoice(static_cast<int64_t>(shape_.size()),
                        [&](const std::vector<int64_t> &axes) {
                          group(axes.data(), static_cast<int64_t>(axes.size()));
                        });
}

} // namespace comm
} // namespace weft
