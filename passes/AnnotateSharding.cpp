//===- AnnotateSharding.cpp - The mesh and the inputs' and params' splits -===//
#include "passes/Passes.h"

#include "dialects/weft/Sharding.h"

namespace weft {
#define GEN_PASS_DEF_ANNOTATESHARDING
#include "passes/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

/// Mesh axes, in the order of the grid's dimensions.
constexpr MeshAxis kDataAxis = 0;

struct AnnotateShardingPass
    : public weft::impl::AnnotateShardingBase<AnnotateShardingPass> {
  using AnnotateShardingBase::AnnotateShardingBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (dp < 1 || tp < 1) {
      module.emitError("parallel degrees must be at least 1, got dp=")
          << static_cast<int64_t>(dp) << " tp=" << static_cast<int64_t>(tp);
      return signalPassFailure();
    }
    if (!module.getOps<shard::GridOp>().empty()) {
      module.emitError("the module already has a device mesh");
      return signalPassFailure();
    }
    auto func = module.lookupSymbol<func::FuncOp>("main");
    if (!func) {
      module.emitError("no function 'main' to partition");
      return signalPassFailure();
    }
    OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
    auto grid =
        shard::GridOp::create(b, module.getLoc(), b.getStringAttr("mesh"),
                              b.getDenseI64ArrayAttr({dp, tp}));
    grid->setAttr("weft.mesh_axes",
                  b.getStrArrayAttr({StringRef("dp"), StringRef("tp")}));
    if (dp == 1)
      return;
    for (BlockArgument arg : func.getArguments()) {
      auto type = cast<RankedTensorType>(arg.getType());
      auto name =
          func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "weft.name");
      std::string label = name ? "'" + name.str() + "'"
                               : "input " + std::to_string(arg.getArgNumber());
      if (type.getRank() == 0) {
        func.emitError("input ")
            << label << " is a scalar: data parallelism splits every input "
            << "along its batch dimension";
        return signalPassFailure();
      }
      if (type.getDimSize(0) % dp != 0) {
        func.emitError("the batch of input ")
            << label << " (" << type.getDimSize(0)
            << " rows) does not split into dp=" << static_cast<int64_t>(dp)
            << " equal parts";
        return signalPassFailure();
      }
      TensorSharding s = TensorSharding::replicated(type.getRank());
      s.dims[0] = DimSharding(MeshAxes{kDataAxis});
      func.setArgAttr(arg.getArgNumber(), "weft.shard", shardingToAttr(b, s));
    }
  }
};

} // namespace
