//===- JoinShards.h - Whole parameters from every rank's checkpoint -------===//
//
// A plan that splits parameters (ZeRO-3, tensor parallelism) leaves each
// rank's state file of a checkpoint holding its blocks only. `weft export`
// reads the state file of every rank of the same step, verified as
// `weft train --resume` verifies it, and puts each parameter together
// along its signature's "shard" dim (blocks in group-index order, inside
// each of the dim's `outer` strided parts). Replicas of a block on other
// ranks must agree bit for bit, or the checkpoint is refused.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_TOOLS_WEFT_JOINSHARDS_H
#define WEFT_TOOLS_WEFT_JOINSHARDS_H

#include "runtime/executor/Checkpoint.h"
#include "weft/runtime/Executor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace weft {

struct WholeParam {
  std::string name;
  WeftDType dtype = WEFT_F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;
};

/// The trained parameters (role "param") of the checkpoint in `storeDir`
/// (`stepName`, or the latest when empty), whole. `signatureJson` is the
/// bundle's signature; `info` describes the checkpoint read.
Status loadWholeParams(const std::string &signatureJson,
                       const std::string &storeDir, const std::string &stepName,
                       std::vector<WholeParam> &params, CheckpointInfo &info);

} // namespace weft

#endif // WEFT_TOOLS_WEFT_JOINSHARDS_H
