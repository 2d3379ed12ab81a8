//===- RepeatedLayers.h - Profile identical layers once ---------*- C++ -*-===//
//
// A model of many identical layers (a transformer's blocks) is profiled on
// four of them: the first, two in the middle and the last. The profile's
// records of the two middle layers then stand for every middle layer in
// turn, placed where the whole model's program has them, so the cost
// model's predictions are those of the whole model's profile
// (WEFT_PLANNER_FULL_PROFILE=1 profiles every layer, to check that).
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_TOOLS_WEFTC_PLANNER_REPEATEDLAYERS_H
#define WEFT_TOOLS_WEFTC_PLANNER_REPEATEDLAYERS_H

#include "tools/weftc/planner/Profile.h"

#include "passes/StageCuts.h"

#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <vector>

namespace weft::planner {

/// A run of identical layers in the forward model: `layers` repetitions of
/// `opsPerLayer` forward ops starting at op `start`.
struct Repetition {
  int64_t start = 0, opsPerLayer = 0, layers = 0;
};

/// Layers the profile keeps of a longer run: the first, two in the middle
/// (the template of every middle layer, alternately) and the last. Two,
/// because tensor parallelism often alternates between layers (a column-
/// then a row-parallel product in Megatron's pairs): one template layer
/// would give every middle layer the same split.
constexpr int64_t kKeptLayers = 4;
constexpr int64_t kTemplateLayers = kKeptLayers - 2;

/// The longest run of identical layers: segments between layer boundaries
/// compared by signature, repeating with a period of 1 to 4 segments (a
/// transformer block is two: attention and MLP, each ending at its
/// residual add).
Repetition findRepetition(const ForwardOps &fwd);

/// Removes the middle layers of `rep` beyond kKeptLayers from @main's
/// forward model: the last kept layer's output feeds what the last layer's
/// fed. Returns false (leaving the model alone) when the layers do not
/// come apart cleanly.
bool dropRepeatedLayers(const ForwardOps &fwd, const Repetition &rep);

/// Where a unit of the shortened model lands in the whole one: the middle
/// kept layers stand for every middle layer in turn (middle layer i, from
/// 1, takes template layer (i - 1) mod kTemplateLayers).
llvm::SmallVector<int64_t, 1> expandUnit(int64_t u, const Repetition &rep,
                                         bool dropped);

/// The records of the shortened model's partition, spread over the whole
/// model's units: the op records and collectives in the order of the whole
/// model's program, the bytes per unit, the shared parameters.
void expandProfile(TpProfile &p, const Repetition &rep, bool dropped,
                   int64_t units);

/// The couplings of the shortened model at every unit of the whole one;
/// each keeps its distance to its source.
std::vector<BatchCoupling>
expandCouplings(const std::vector<BatchCoupling> &couplings,
                const Repetition &rep, bool dropped);

} // namespace weft::planner

#endif // WEFT_TOOLS_WEFTC_PLANNER_REPEATEDLAYERS_H
