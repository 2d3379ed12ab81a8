//===- ReduceScatters.h - Sums cut after they are complete ------*- C++ -*-===//
//
// formReduceScatters(func): every all_slice whose input is an all_reduce
// over the same mesh axes, seen through elementwise ops, reshapes and
// transposes used nowhere else, becomes a reduce_scatter at the all_reduce
// with those ops working on this rank's block. Returns how many it formed.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_PASSES_REDUCESCATTERS_H
#define WEFT_PASSES_REDUCESCATTERS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace weft {

int formReduceScatters(mlir::func::FuncOp func);

} // namespace weft

#endif // WEFT_PASSES_REDUCESCATTERS_H
