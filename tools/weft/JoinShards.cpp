//===- JoinShards.cpp - Whole parameters from every rank's checkpoint -----===//
#include "tools/weft/JoinShards.h"

#include "weft/runtime/MeshIndex.h"

#include <cstring>
#include <memory>

using namespace weft;

namespace {

std::string baseName(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

} // namespace

Status weft::loadWholeParams(const std::string &signatureJson,
                             const std::string &storeDir,
                             const std::string &stepName,
                             std::vector<WholeParam> &params,
                             CheckpointInfo &info) {
  // Every rank's state, read through its own executor (the signature gives
  // each rank's local shapes).
  std::vector<std::unique_ptr<Executor>> ranks;
  auto load = [&](int64_t rank, int64_t world, const std::string &step,
                  CheckpointInfo &got) -> Status {
    auto executor = std::make_unique<Executor>();
    Status status = executor->init(signatureJson, nullptr);
    if (!status.ok())
      return status;
    CheckpointStore store(storeDir, signatureJson, rank, world);
    status = step.empty() ? store.load(*executor, got)
                          : store.loadStep(*executor, step, got);
    if (!status.ok())
      return status;
    ranks.push_back(std::move(executor));
    return Status::success();
  };
  Executor probe;
  Status status = probe.init(signatureJson, nullptr);
  if (!status.ok())
    return status;
  const ModelSignature &sig = probe.signature();
  const int64_t world = sig.worldSize;
  // Split parameters, and a pipeline's (each lives on its stage's ranks),
  // need more files than rank 0's.
  bool split = sig.pipelineAxis >= 0;
  for (const TensorSpec &spec : sig.params)
    split |= spec.role == StateRole::Param && spec.shardDim >= 0;
  status = load(0, world, stepName, info);
  if (!status.ok())
    return status;
  // The other ranks read the very step rank 0's "latest" resolved to.
  const std::string step = baseName(info.path);
  for (int64_t r = 1; split && r < world; ++r) {
    CheckpointInfo other;
    status = load(r, world, step, other);
    if (!status.ok())
      return status;
  }

  for (size_t i = 0; i < sig.params.size(); ++i) {
    const TensorSpec &spec = sig.params[i];
    if (spec.role != StateRole::Param)
      continue;
    WholeParam whole{spec.name, spec.dtype, spec.shape, {}};
    // The first rank holding the live copy: any rank, or the first of the
    // parameter's pipeline stage (whose coordinate over the axis is it).
    int64_t holder0 = 0;
    if (spec.stage >= 0 && sig.pipelineAxis >= 0) {
      const int64_t axis = sig.pipelineAxis;
      holder0 = -1;
      for (int64_t r = 0; r < world && holder0 < 0; ++r)
        if (meshGroupIndex(r, sig.meshShape, &axis, 1) == spec.stage)
          holder0 = r;
      if (holder0 < 0)
        return Status::badInput("parameter '" + spec.name + "' is on stage " +
                                std::to_string(spec.stage) +
                                ", which the mesh does not have");
    }
    const HostTensor &first = ranks[holder0]->param(i);
    auto bytes = [](const HostTensor &t) {
      return static_cast<const uint8_t *>(t.data.data());
    };
    if (spec.shardDim < 0) {
      whole.data.assign(bytes(first), bytes(first) + first.byteSize());
      params.push_back(std::move(whole));
      continue;
    }
    int64_t g = 1;
    for (int64_t a : spec.shardAxes)
      g *= sig.meshShape[a];
    const int64_t dim = spec.shardDim, outer = spec.shardOuter;
    whole.shape[dim] *= g;
    // Bytes: [pre][outer][rest][post] with rest = g blocks of `local`.
    int64_t elem = weftDTypeSize(spec.dtype);
    int64_t pre = 1, post = elem;
    for (int64_t d = 0; d < dim; ++d)
      pre *= spec.shape[d];
    for (size_t d = dim + 1; d < spec.shape.size(); ++d)
      post *= spec.shape[d];
    const int64_t local = spec.shape[dim] / outer * post; // one block's row
    whole.data.assign(static_cast<size_t>(first.byteSize() * g), 0);
    std::vector<int64_t> holder(g, -1);
    for (int64_t r = 0; r < world; ++r) {
      if (spec.stage >= 0 && sig.pipelineAxis >= 0) {
        const int64_t axis = sig.pipelineAxis;
        if (meshGroupIndex(r, sig.meshShape, &axis, 1) != spec.stage)
          continue; // another stage's stale copy
      }
      int64_t b = meshGroupIndex(r, sig.meshShape, spec.shardAxes.data(),
                                 spec.shardAxes.size());
      const uint8_t *src = bytes(ranks[r]->param(i));
      for (int64_t p = 0; p < pre * outer; ++p) {
        uint8_t *dst = whole.data.data() + (p * g + b) * local;
        const uint8_t *from = src + p * local;
        if (holder[b] < 0) {
          std::memcpy(dst, from, static_cast<size_t>(local));
        } else if (std::memcmp(dst, from, static_cast<size_t>(local)) != 0) {
          return Status::badInput(
              "checkpoint " + info.path + ": ranks " +
              std::to_string(holder[b]) + " and " + std::to_string(r) +
              " hold different copies of block " + std::to_string(b) +
              " of parameter '" + spec.name +
              "' (the state files do not belong to one run)");
        }
      }
      if (holder[b] < 0)
        holder[b] = r;
    }
    params.push_back(std::move(whole));
  }
  return Status::success();
}
