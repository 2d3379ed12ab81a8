//===- Partitioner.h - The partitioner's state, for its parts ---*- C++ -*-===//
//
// weft-partition's walker (passes/Partition.cpp: the walk, resharding,
// the ops' clones) and its lookups (passes/PartitionLookups.cpp: lookups
// into tables split by rows, the vocabulary-parallel cross-entropy, labels
// counted over split rows, a scatter_add rebuilt split) share this class.
// Not an interface: only those two files include it.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_PASSES_PARTITIONER_H
#define WEFT_PASSES_PARTITIONER_H

#include "dialects/weft/Sharding.h"
#include "dialects/weft/ShardingRules.h"
#include "dialects/weft/WeftOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

#include <map>
#include <optional>
#include <string>

namespace weft::partition {

using mlir::FailureOr;
using mlir::IRMapping;
using mlir::Location;
using mlir::LogicalResult;
using mlir::ModuleOp;
using mlir::OpBuilder;
using mlir::Operation;
using mlir::RankedTensorType;
using mlir::Value;
namespace func = mlir::func;
using llvm::DenseMap;
using llvm::SmallVector;

struct LocalValue {
  Value value;
  TensorSharding sharding;
};

class Partitioner {
public:
  Partitioner(ModuleOp module, func::FuncOp global, Mesh mesh)
      : module(module), global(global), mesh(std::move(mesh)),
        b(module.getContext()) {}

  LogicalResult run();

private:
  LogicalResult partitionOp(Operation *op);
  FailureOr<Value> reshard(Value value, const TensorSharding &to,
                           Operation *user);
  FailureOr<Value> rebuildSplit(Value value, Value whole,
                                const TensorSharding &to, Operation *user);
  FailureOr<RankedTensorType> local(Value value, const TensorSharding &s,
                                    Operation *where);
  LogicalResult scatterLookup(GatherOp op, const TensorSharding &indices,
                              const ShardingPlan &plan);
  Value keptLabels(Operation *op, Value labels);
  Value countedLabels(Operation *op, Value labels, const MeshAxes &axes);
  Value allGather(Value local, int64_t dim, const DimSharding &split,
                  Location loc);
  std::optional<Value> completeSource(Value value, const TensorSharding &to,
                                      Operation *user);
  Value allSlice(Value whole, int64_t dim, const DimSharding &split,
                 Location loc);
  Value gatherPart(Value local, int64_t dim, int64_t localOuter, bool outerPart,
                   const MeshAxes &axes, Location loc);
  FailureOr<SmallVector<Value>>
  expandLookup(Operation *op, const ShardingPlan &plan, IRMapping &mapping);
  std::optional<LocalValue> splitScatter(Value value, const LocalValue &cur,
                                         const TensorSharding &to);

  ModuleOp module;
  func::FuncOp global, partitioned;
  Mesh mesh;
  OpBuilder b;
  DenseMap<Value, LocalValue> values;
  /// Resharded copies: (global value, target sharding) -> local value.
  std::map<std::pair<void *, std::string>, Value> reshards;
  DenseMap<Value, Value> labelCounts;
  /// all_gathers emitted so far.
  int64_t gathers = 0;
  /// Local partial sums made complete -> their sums.
  DenseMap<Value, Value> completed;
  /// Vocabulary-parallel cross-entropies: local scores -> log-sum-exp, so
  /// the gradient reuses the forward's.
  DenseMap<Value, Value> logSumExps;
  /// Local operands of each partitioned scatter_add (the global op), for
  /// rebuilding it split along its axis.
  DenseMap<Operation *, std::pair<Value, Value>> scatterOperands;
  llvm::StringMap<TensorSharding> paramShardings;
};

} // namespace weft::partition

#endif // WEFT_PASSES_PARTITIONER_H
