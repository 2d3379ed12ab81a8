//===- ScheduleByKey.h - Reorder a block by per-op priorities
//--------------===//
//
// weft-microbatch (microbatch after microbatch) and weft-pipeline (each
// stage's schedule) order a block the same way: every op has a key, its own
// (a microbatch, a schedule slot) or else the latest key among the ops it
// reads; an op then takes the smallest key among its users, so what an
// earlier key needs (a label count every microbatch's loss divides by) runs
// for it; finally a list schedule moves the ready op with the smallest
// (key, original position) next, which respects every dependency.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_PASSES_SCHEDULEBYKEY_H
#define WEFT_PASSES_SCHEDULEBYKEY_H

#include "mlir/IR/Block.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <cstdint>
#include <limits>
#include <optional>

namespace weft {

constexpr int64_t kScheduleEarliest = std::numeric_limits<int64_t>::min() / 2;
constexpr int64_t kScheduleLatest = std::numeric_limits<int64_t>::max() / 2;

/// Reorders the ops of `body` before its terminator. `ownKey` gives an op's
/// own key, or none to take the latest of its operands' (kScheduleEarliest
/// when it reads nothing keyed).
void scheduleByKey(
    mlir::Block &body,
    llvm::function_ref<std::optional<int64_t>(mlir::Operation *)> ownKey);

} // namespace weft

#endif // WEFT_PASSES_SCHEDULEBYKEY_H
