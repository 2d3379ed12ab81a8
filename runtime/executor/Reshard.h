//===- Reshard.h - Training state moved between plans ---------------------===//
//
// A plan splits some state tensors (ZeRO, tensor parallelism) and puts a
// pipeline's on its stage's ranks; the rank state files of a checkpoint
// hold each rank's blocks under that plan's layout (the "shard" and
// "stage" of every params entry of its signature). Here a tensor is put
// back together from every rank's blocks (joinState), and a rank's block is
// cut out of the whole under another layout (cutBlock): what `weft export`
// needs, and what resuming a checkpoint under another plan of the same
// model needs (loadResharded: another number of ranks, another split).
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_EXECUTOR_RESHARD_H
#define WEFT_RUNTIME_EXECUTOR_RESHARD_H

#include "weft/runtime/Executor.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace weft {

/// The whole shape of a params entry (its local shape with the split dim
/// times the ranks of its mesh axes).
std::vector<int64_t> wholeShape(const ModelSignature &sig,
                                const TensorSpec &spec);

/// Params entry `index` of `sig` put together from every rank's state
/// (`ranks[r][index]`, empty where rank r does not hold it): blocks in
/// group-index order along the split dim (inside each of its `outer`
/// strided parts), from the ranks of its pipeline stage. Replicas of a
/// block must agree bit for bit; `where` names the state for that error.
/// With `wanted` (a flag per block), only those blocks must be there (the
/// others stay undefined).
Status joinState(const ModelSignature &sig,
                 const std::vector<std::vector<HostTensor>> &ranks,
                 size_t index, const std::string &where, HostTensor &whole,
                 const std::vector<char> *wanted = nullptr);

/// `rank`'s block of `whole` under `spec` (its local shape).
void cutBlock(const ModelSignature &sig, const TensorSpec &spec, int64_t rank,
              const HostTensor &whole, HostTensor &local);

/// Fills `params` (this rank's, under `sig`) from checkpoint `stepDir`,
/// written by `writer` (another plan of the same model, on `writer`'s
/// world size): every writing rank's state file is read and verified as a
/// resume verifies it, each tensor joined and this rank's block cut out.
/// The two plans must hold the same state: the same names, roles, dtypes
/// and whole shapes (else bad input naming the first difference).
/// `readRank(r, tensors)` reads writing rank r's file into `tensors`; it is
/// called only for the ranks whose blocks this rank's blocks overlap (one
/// holder of each), so that the ranks of a large run do not all read every
/// file.
Status reshardState(
    const ModelSignature &sig, int64_t rank, const ModelSignature &writer,
    const std::string &stepDir,
    const std::function<Status(int64_t, std::vector<HostTensor> &)> &readRank,
    std::vector<HostTensor> &params);

} // namespace weft

#endif // WEFT_RUNTIME_EXECUTOR_RESHARD_H
