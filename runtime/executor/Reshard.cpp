//===- Reshard.cpp - Training state moved between plans -------------------===//
#include "runtime/executor/Reshard.h"

#include "weft/runtime/MeshIndex.h"

#include <cstring>
#include <map>

namespace weft {

namespace {

/// The ranks a split entry's dim is divided over.
int64_t groupSize(const ModelSignature &sig, const TensorSpec &spec) {
  int64_t g = 1;
  for (int64_t a : spec.shardAxes)
    g *= sig.meshShape[a];
  return g;
}

/// A split entry's bytes as [pre * outer][g][row]: the count of (pre,
/// outer) parts and the bytes of one block's row in each.
void blockLayout(const TensorSpec &spec, int64_t &parts, int64_t &row) {
  const int64_t dim = spec.shardDim;
  int64_t pre = 1, post = weftDTypeSize(spec.dtype);
  for (int64_t d = 0; d < dim; ++d)
    pre *= spec.shape[d];
  for (size_t d = dim + 1; d < spec.shape.size(); ++d)
    post *= spec.shape[d];
  parts = pre * spec.shardOuter;
  row = spec.shape[dim] / spec.shardOuter * post;
}

bool allocateLike(HostTensor &t, WeftDType dtype, std::vector<int64_t> shape,
                  size_t bytes) {
  t.dtype = dtype;
  t.shape = std::move(shape);
  return t.data.allocate(bytes);
}

/// Which of the writer's blocks of `old` (one flag per block; one for a
/// tensor it does not split) the block `rank` holds of `spec` overlaps:
/// along a dim both split alike (the same dim and strided parts), the
/// blocks its range covers; else all.
std::vector<char> neededBlocks(const ModelSignature &sig,
                               const TensorSpec &spec, int64_t rank,
                               const ModelSignature &writer,
                               const TensorSpec &old) {
  if (old.shardDim < 0)
    return {1};
  const int64_t g = groupSize(writer, old);
  std::vector<char> all(static_cast<size_t>(g), 1);
  if (spec.shardDim != old.shardDim || spec.shardOuter != old.shardOuter)
    return all;
  // Lengths along the dim within one strided part.
  const int64_t mine = spec.shape[spec.shardDim] / spec.shardOuter;
  const int64_t theirs = old.shape[old.shardDim] / old.shardOuter;
  const int64_t b = meshGroupIndex(rank, sig.meshShape, spec.shardAxes.data(),
                                   spec.shardAxes.size());
  std::vector<char> some(static_cast<size_t>(g), 0);
  for (int64_t o = b * mine / theirs; o <= ((b + 1) * mine - 1) / theirs; ++o)
    some[o] = 1;
  return some;
}

const char *roleWord(StateRole role) {
  return role == StateRole::Param ? "parameter" : "optimizer state";
}

} // namespace

std::vector<int64_t> wholeShape(const ModelSignature &sig,
                                const TensorSpec &spec) {
  std::vector<int64_t> shape = spec.shape;
  if (spec.shardDim >= 0)
    shape[spec.shardDim] *= groupSize(sig, spec);
  return shape;
}

Status joinState(const ModelSignature &sig,
                 const std::vector<std::vector<HostTensor>> &ranks,
                 size_t index, const std::string &where, HostTensor &whole,
                 const std::vector<char> *wanted) {
  const TensorSpec &spec = sig.params[index];
  const int64_t world = static_cast<int64_t>(ranks.size());
  auto held = [&](int64_t r) {
    return paramHeldBy(sig, spec, r) && ranks[r].size() > index &&
           ranks[r][index].byteSize() == spec.byteSize;
  };
  if (spec.shardDim < 0) {
    for (int64_t r = 0; r < world; ++r)
      if (held(r)) {
        const HostTensor &from = ranks[r][index];
        if (!allocateLike(whole, spec.dtype, spec.shape, from.byteSize()))
          return Status::failure("out of memory joining '" + spec.name + "'");
        std::memcpy(whole.data.data(), from.data.data(), from.byteSize());
        return Status::success();
      }
    return Status::badInput(where + ": no rank holds '" + spec.name + "'");
  }
  const int64_t g = groupSize(sig, spec);
  int64_t parts = 0, row = 0;
  blockLayout(spec, parts, row);
  if (!allocateLike(whole, spec.dtype, wholeShape(sig, spec),
                    static_cast<size_t>(spec.byteSize * g)))
    return Status::failure("out of memory joining '" + spec.name + "'");
  std::vector<int64_t> holder(static_cast<size_t>(g), -1);
  uint8_t *base = static_cast<uint8_t *>(whole.data.data());
  for (int64_t r = 0; r < world; ++r) {
    if (!held(r))
      continue;
    const int64_t b = meshGroupIndex(r, sig.meshShape, spec.shardAxes.data(),
                                     spec.shardAxes.size());
    const uint8_t *src =
        static_cast<const uint8_t *>(ranks[r][index].data.data());
    for (int64_t p = 0; p < parts; ++p) {
      uint8_t *dst = base + (p * g + b) * row;
      const uint8_t *from = src + p * row;
      if (holder[b] < 0)
        std::memcpy(dst, from, static_cast<size_t>(row));
      else if (std::memcmp(dst, from, static_cast<size_t>(row)) != 0)
        return Status::badInput(where + ": ranks " + std::to_string(holder[b]) +
                                " and " + std::to_string(r) +
                                " hold different copies of block " +
                                std::to_string(b) + " of '" + spec.name +
                                "' (the state files do not belong to one run)");
    }
    if (holder[b] < 0)
      holder[b] = r;
  }
  for (int64_t b = 0; b < g; ++b)
    if (holder[b] < 0 && (!wanted || (*wanted)[b]))
      return Status::badInput(where + ": no rank holds block " +
                              std::to_string(b) + " of '" + spec.name + "'");
  return Status::success();
}

void cutBlock(const ModelSignature &sig, const TensorSpec &spec, int64_t rank,
              const HostTensor &whole, HostTensor &local) {
  allocateLike(local, spec.dtype, spec.shape,
               static_cast<size_t>(spec.byteSize));
  if (spec.shardDim < 0) {
    std::memcpy(local.data.data(), whole.data.data(), spec.byteSize);
    return;
  }
  const int64_t g = groupSize(sig, spec);
  const int64_t b = meshGroupIndex(rank, sig.meshShape, spec.shardAxes.data(),
                                   spec.shardAxes.size());
  int64_t parts = 0, row = 0;
  blockLayout(spec, parts, row);
  const uint8_t *src = static_cast<const uint8_t *>(whole.data.data());
  uint8_t *dst = static_cast<uint8_t *>(local.data.data());
  for (int64_t p = 0; p < parts; ++p)
    std::memcpy(dst + p * row, src + (p * g + b) * row,
                static_cast<size_t>(row));
}

Status reshardState(
    const ModelSignature &sig, int64_t rank, const ModelSignature &writer,
    const std::string &stepDir,
    const std::function<Status(int64_t, std::vector<HostTensor> &)> &readRank,
    std::vector<HostTensor> &params) {
  // The same state under both plans.
  std::map<std::string, size_t> written;
  for (size_t i = 0; i < writer.params.size(); ++i)
    written[writer.params[i].name] = i;
  auto describe = [](const ModelSignature &s, const TensorSpec &spec) {
    return std::string(roleWord(spec.role)) + " " +
           formatTensorType(spec.dtype, wholeShape(s, spec));
  };
  const std::string other = "checkpoint " + stepDir;
  std::vector<size_t> from(sig.params.size());
  for (size_t i = 0; i < sig.params.size(); ++i) {
    const TensorSpec &spec = sig.params[i];
    auto it = written.find(spec.name);
    if (it == written.end())
      return Status::badInput(other +
                              " was written by another model or optimizer: "
                              "it holds no '" +
                              spec.name + "' (this bundle's " +
                              describe(sig, spec) + ")")
          .everyRank();
    const TensorSpec &old = writer.params[it->second];
    if (old.role != spec.role || old.dtype != spec.dtype ||
        wholeShape(writer, old) != wholeShape(sig, spec))
      return Status::badInput(other +
                              " was written by another model: it holds '" +
                              spec.name + "' as " + describe(writer, old) +
                              ", this bundle as " + describe(sig, spec))
          .everyRank();
    from[i] = it->second;
    written.erase(it);
  }
  if (!written.empty())
    return Status::badInput(
               other +
               " was written by another model or optimizer: it holds '" +
               written.begin()->first + "', which this bundle does not have" +
               (written.size() > 1
                    ? " (and " + std::to_string(written.size() - 1) + " more)"
                    : ""))
        .everyRank();

  // The writing ranks whose files hold the blocks this rank needs: for
  // each tensor, the writer's blocks its own block overlaps, each from one
  // rank holding it (a rank already read if one does, else one picked by
  // this rank's index, so the ranks spread their reading).
  std::vector<std::vector<char>> wanted(sig.params.size());
  std::vector<char> read(static_cast<size_t>(writer.worldSize), 0);
  for (size_t i = 0; i < sig.params.size(); ++i) {
    if (!paramHeldBy(sig, sig.params[i], rank))
      continue;
    const TensorSpec &old = writer.params[from[i]];
    wanted[i] = neededBlocks(sig, sig.params[i], rank, writer, old);
    for (size_t b = 0; b < wanted[i].size(); ++b) {
      if (!wanted[i][b])
        continue;
      std::vector<int64_t> holders;
      for (int64_t r = 0; r < writer.worldSize; ++r)
        if (paramHeldBy(writer, old, r) &&
            (old.shardDim < 0 ||
             meshGroupIndex(r, writer.meshShape, old.shardAxes.data(),
                            old.shardAxes.size()) == static_cast<int64_t>(b)))
          holders.push_back(r);
      if (holders.empty())
        return Status::badInput(other + ": no rank holds block " +
                                std::to_string(b) + " of '" + old.name + "'");
      int64_t pick = holders[static_cast<size_t>(rank) % holders.size()];
      for (int64_t r : holders)
        if (read[r])
          pick = r;
      read[pick] = 1;
    }
  }
  std::vector<std::vector<HostTensor>> ranks(read.size());
  for (size_t r = 0; r < read.size(); ++r) {
    if (!read[r])
      continue;
    Status status = readRank(static_cast<int64_t>(r), ranks[r]);
    if (!status.ok())
      return status;
  }
  params.clear();
  params.resize(sig.params.size());
  for (size_t i = 0; i < sig.params.size(); ++i) {
    if (!paramHeldBy(sig, sig.params[i], rank))
      continue;
    HostTensor whole;
    Status status = joinState(writer, ranks, from[i], other, whole, &wanted[i]);
    if (!status.ok())
      return status;
    cutBlock(sig, sig.params[i], rank, whole, params[i]);
  }
  return Status::success();
}

} // namespace weft
