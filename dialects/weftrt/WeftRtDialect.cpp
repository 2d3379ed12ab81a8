//===- WeftRtDialect.cpp - Runtime-level ops of weft ----------------------===//
#include "dialects/weftrt/WeftRtOps.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace weft::rt;

#include "dialects/weftrt/WeftRtDialect.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/weftrt/WeftRtTypes.cpp.inc"

void WeftRtDialect::initialize() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "dialects/weftrt/WeftRtTypes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialects/weftrt/WeftRtOps.cpp.inc"
      >();
}

int64_t weft::rt::describedTensorsEnd(ArrayRef<int64_t> desc) {
  if (desc.empty() || desc[0] < 0)
    return -1;
  size_t pos = 1;
  for (int64_t t = 0; t < desc[0]; ++t) {
    if (pos + 2 > desc.size())
      return -1;
    int64_t rank = desc[pos + 1];
    if (rank < 0)
      return -1;
    pos += 2 + rank;
  }
  if (pos >= desc.size())
    return -1;
  return pos;
}

LogicalResult LaunchOp::verify() {
  ArrayRef<int64_t> desc = getDesc();
  int64_t attrPos = describedTensorsEnd(desc);
  if (attrPos < 0)
    return emitOpError("has a malformed descriptor");
  if (desc[0] != static_cast<int64_t>(getBuffers().size()))
    return emitOpError("describes ") << desc[0] << " tensors but gets "
                                     << getBuffers().size() << " buffers";
  if (static_cast<int64_t>(desc.size()) != attrPos + 1 + desc[attrPos])
    return emitOpError("descriptor declares ")
           << desc[attrPos] << " attributes but holds "
           << static_cast<int64_t>(desc.size()) - attrPos - 1;
  return success();
}

#define GET_OP_CLASSES
#include "dialects/weftrt/WeftRtOps.cpp.inc"
