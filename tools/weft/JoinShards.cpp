//===- JoinShards.cpp - Whole parameters from every rank's checkpoint -----===//
#include "tools/weft/JoinShards.h"

#include "runtime/executor/Reshard.h"

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

  std::vector<std::vector<HostTensor>> state(ranks.size());
  for (size_t r = 0; r < ranks.size(); ++r)
    for (size_t i = 0; i < sig.params.size(); ++i)
      state[r].push_back(std::move(ranks[r]->mutableParam(i)));
  for (size_t i = 0; i < sig.params.size(); ++i) {
    const TensorSpec &spec = sig.params[i];
    if (spec.role != StateRole::Param)
      continue;
    HostTensor whole;
    status = joinState(sig, state, i, "checkpoint " + info.path, whole);
    if (!status.ok())
      return status;
    const uint8_t *bytes = static_cast<const uint8_t *>(whole.data.data());
    params.push_back({spec.name, spec.dtype, whole.shape,
                      std::vector<uint8_t>(bytes, bytes + whole.byteSize())});
  }
  return Status::success();
}
