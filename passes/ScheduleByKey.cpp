//===- ScheduleByKey.cpp - Reorder a block by per-op priorities
//------------===//
#include "passes/ScheduleByKey.h"

#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseMap.h"

#include <queue>
#include <vector>

using namespace mlir;

void weft::scheduleByKey(
    Block &body,
    llvm::function_ref<std::optional<int64_t>(Operation *)> ownKey) {
  std::vector<Operation *> ops;
  DenseMap<Operation *, int64_t> index, key;
  for (Operation &op : body.without_terminator()) {
    index[&op] = ops.size();
    ops.push_back(&op);
  }
  for (Operation *op : ops) {
    std::optional<int64_t> own = ownKey(op);
    int64_t k = own.value_or(kScheduleEarliest);
    if (!own)
      for (Value v : op->getOperands())
        if (Operation *def = v.getDefiningOp())
          if (key.count(def))
            k = std::max(k, key[def]);
    key[op] = k;
  }
  for (Operation *op : llvm::reverse(ops))
    for (Operation *user : op->getUsers())
      if (key.count(user))
        key[op] = std::min(key[op], key[user]);
  DenseMap<Operation *, int64_t> waiting;
  using Entry = std::pair<std::pair<int64_t, int64_t>, Operation *>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> ready;
  for (Operation *op : ops) {
    int64_t deps = 0;
    for (Value v : op->getOperands())
      if (Operation *def = v.getDefiningOp())
        if (index.count(def))
          ++deps;
    waiting[op] = deps;
    if (deps == 0)
      ready.push({{key[op], index[op]}, op});
  }
  Operation *terminator = body.getTerminator();
  while (!ready.empty()) {
    Operation *op = ready.top().second;
    ready.pop();
    op->moveBefore(terminator);
    for (Value r : op->getResults())
      for (Operation *user : r.getUsers())
        if (waiting.count(user) && --waiting[user] == 0)
          ready.push({{key[user], index[user]}, user});
  }
}
