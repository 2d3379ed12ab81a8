//===- RuntimeToLLVM.cpp - weftrt -> LLVM dialect calls of the runtime ----===//
//
//   weft_model_run(ptr arena, ptr params, ptr inputs, ptr outputs)
//
// After each launch, weft_trace_launch(i64 index) marks its end (the index
// is the launch's position in the signature's "launches" table).
//
// Buffers become pointers (arena + offset, or loaded from the params /
// inputs / outputs tables), each launch stores its buffers in a stack array
// and calls weft_k_<kernel>(array, descriptor). Descriptors and constants are
// private globals; the signature is the JSON string weft_model_signature.
//
// target=cuda (ModelABI.h): the buffers are GPU memory, which the model
// never touches itself. A constant is weft_rt_constant(id, &global, bytes)
// (its device copy), a copy weft_rt_copy(dst, src, bytes), the stage index
// weft_rt_load_i64(ptr); descriptors stay in host memory.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/JSON.h"

namespace weft {
#define GEN_PASS_DEF_RUNTIMETOLLVM
#include "passes/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

/// The tensors of a kernel descriptor (KernelABI.h) as MLIR-style types,
/// "16x64x8x8xf32" (rank 0: "f32"), operands then results.
llvm::json::Array descTensors(ArrayRef<int64_t> desc) {
  llvm::json::Array out;
  if (desc.empty())
    return out;
  size_t at = 1;
  for (int64_t t = 0; t < desc[0] && at + 1 < desc.size(); ++t) {
    const int64_t dtype = desc[at], rank = desc[at + 1];
    at += 2;
    std::string type;
    for (int64_t d = 0; d < rank && at < desc.size(); ++d, ++at)
      type += std::to_string(desc[at]) + "x";
    out.push_back(type + weftDTypeName(dtype));
  }
  return out;
}

/// The bytes of a constant in the runtime's layout: little-endian elements,
/// booleans one byte each.
std::string elementsToBytes(ElementsAttr attr) {
  auto type = cast<ShapedType>(attr.getType());
  Type elementType = type.getElementType();
  std::string bytes;
  auto appendInt = [&](const APInt &v, unsigned byteWidth) {
    uint64_t word = v.getZExtValue();
    for (unsigned i = 0; i < byteWidth; ++i)
      bytes.push_back(static_cast<char>((word >> (8 * i)) & 0xff));
  };
  unsigned width = elementType.getIntOrFloatBitWidth();
  unsigned byteWidth = std::max(1u, width / 8);
  if (isa<FloatType>(elementType)) {
    for (APFloat v : attr.getValues<APFloat>())
      appendInt(v.bitcastToAPInt(), byteWidth);
  } else {
    for (APInt v : attr.getValues<APInt>())
      appendInt(width == 1 ? APInt(8, v.getBoolValue() ? 1 : 0) : v, byteWidth);
  }
  return bytes;
}

/// Signature entries; parameters carry their role (and whether the optimizer
/// trains them), inputs of a training step their batch dimension.
llvm::json::Array slotsToJson(ArrayAttr slots, bool batchInputs = false) {
  llvm::json::Array out;
  for (Attribute a : slots) {
    auto dict = cast<DictionaryAttr>(a);
    auto type =
        cast<RankedTensorType>(cast<TypeAttr>(dict.get("type")).getValue());
    llvm::json::Array shape;
    for (int64_t d : type.getShape())
      shape.push_back(d);
    llvm::json::Object entry{
        {"name", cast<StringAttr>(dict.get("name")).getValue()},
        {"dtype", getDTypeName(type.getElementType())},
        {"shape", std::move(shape)}};
    if (auto role = dict.getAs<StringAttr>("role"))
      entry["role"] = role.getValue();
    if (auto trainable = dict.getAs<BoolAttr>("trainable"))
      entry["trainable"] = trainable.getValue();
    if (batchInputs && type.getRank() > 0)
      entry["batch_dim"] = 0;
    if (auto stage = dict.getAs<IntegerAttr>("stage"))
      entry["stage"] = stage.getInt();
    for (StringRef key : {"shard", "sequence_shard"}) {
      auto shard = dict.getAs<DictionaryAttr>(key);
      if (!shard)
        continue;
      llvm::json::Array axes;
      for (Attribute a : shard.getAs<ArrayAttr>("mesh_axes"))
        axes.push_back(cast<IntegerAttr>(a).getInt());
      llvm::json::Object split{
          {"dim", shard.getAs<IntegerAttr>("dim").getInt()},
          {"mesh_axes", std::move(axes)}};
      if (auto outer = shard.getAs<IntegerAttr>("outer"))
        split["outer"] = outer.getInt();
      entry[key] = std::move(split);
    }
    out.push_back(std::move(entry));
  }
  return out;
}

struct RuntimeToLLVMPass
    : public weft::impl::RuntimeToLLVMBase<RuntimeToLLVMPass> {
  using RuntimeToLLVMBase::RuntimeToLLVMBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (target != "cpu" && target != "cuda") {
      module.emitError("unknown target '")
          << target << "' for weftrt-to-llvm (expected cpu or cuda)";
      return signalPassFailure();
    }
    auto func = module.lookupSymbol<func::FuncOp>("weft_model_run");
    if (!func) {
      module.emitError(
          "no weft_model_run function: run weft-lower-to-runtime first");
      return signalPassFailure();
    }
    if (failed(lower(module, func)))
      return signalPassFailure();
  }

  LogicalResult lower(ModuleOp module, func::FuncOp func) {
    MLIRContext *ctx = module.getContext();
    auto ptrType = LLVM::LLVMPointerType::get(ctx);
    auto i8Type = IntegerType::get(ctx, 8);
    auto i64Type = IntegerType::get(ctx, 64);
    auto voidType = LLVM::LLVMVoidType::get(ctx);
    Location loc = func.getLoc();

    auto arenaAttr = func->getAttrOfType<IntegerAttr>("weftrt.arena_bytes");
    auto inputs = func->getAttrOfType<ArrayAttr>("weftrt.inputs");
    auto params = func->getAttrOfType<ArrayAttr>("weftrt.params");
    auto outputs = func->getAttrOfType<ArrayAttr>("weftrt.outputs");
    auto modeAttr = func->getAttrOfType<StringAttr>("weftrt.mode");
    std::string mode = modeAttr ? modeAttr.str() : "inference";
    if (!inputs || !params || !outputs)
      return func.emitError(
          "lacks the signature weft-lower-to-runtime records");
    for (Operation &op : func.getBody().front())
      if (isa<rt::AllocOp>(op))
        return op.emitError("is not placed: run weftrt-assign-buffers first");

    OpBuilder mb = OpBuilder::atBlockEnd(module.getBody());

    // The signature the executor checks inputs and parameters against.
    llvm::json::Object signature{
        {"format_version", 1},
        {"arena_bytes", arenaAttr ? arenaAttr.getInt() : 0},
        {"arena_alignment", 64},
        {"mode", mode},
        {"params", slotsToJson(params)},
        {"inputs", slotsToJson(inputs, /*batchInputs=*/mode == "train")},
        {"outputs", slotsToJson(outputs)}};
    const bool onDevice = target == "cuda";
    if (onDevice)
      signature["target"] = "cuda";
    // The source model whatever the plan (weftc sets it): a checkpoint
    // moves only between plans of one model.
    if (auto model = module->getAttrOfType<StringAttr>("weft.model_sha256"))
      signature["model_sha256"] = model.getValue();
    // A partitioned program runs on every device of its mesh.
    if (auto meshShape =
            func->getAttrOfType<DenseI64ArrayAttr>("weftrt.mesh_shape")) {
      int64_t worldSize = 1;
      llvm::json::Array shape, axes;
      for (int64_t d : meshShape.asArrayRef()) {
        shape.push_back(d);
        worldSize *= d;
      }
      if (auto names = func->getAttrOfType<ArrayAttr>("weftrt.mesh_axes"))
        for (Attribute n : names)
          axes.push_back(cast<StringAttr>(n).getValue());
      signature["world_size"] = worldSize;
      if (auto axis = func->getAttrOfType<IntegerAttr>("weftrt.pipeline_axis"))
        signature["pipeline_axis"] = axis.getInt();
      if (auto stages = func->getAttrOfType<DenseI64ArrayAttr>(
              "weftrt.stage_arena_bytes")) {
        llvm::json::Array bytes;
        for (int64_t b : stages.asArrayRef())
          bytes.push_back(b);
        signature["stage_arena_bytes"] = std::move(bytes);
      }
      signature["mesh"] = llvm::json::Object{{"axes", std::move(axes)},
                                             {"shape", std::move(shape)}};
    }
    // The launches in program order, for traces (weft train --trace): the
    // kernel, its tensors and where in the step it runs.
    llvm::json::Array launches;
    func.walk([&](rt::LaunchOp launch) {
      llvm::json::Object entry{{"kernel", launch.getKernel()},
                               {"tensors", descTensors(launch.getDesc())}};
      for (auto [attr, key] :
           {std::pair<StringRef, StringRef>{"weftrt.stage", "stage"},
            {"weftrt.microbatch", "microbatch"},
            {"weftrt.chunk", "chunk"}})
        if (auto v = launch->getAttrOfType<IntegerAttr>(attr))
          entry[key] = v.getInt();
      if (launch->hasAttr("weftrt.backward"))
        entry["backward"] = true;
      if (launch->hasAttr("weftrt.weight_grad"))
        entry["weight_grad"] = true;
      launches.push_back(std::move(entry));
    });
    signature["launches"] = std::move(launches);
    std::string json;
    llvm::raw_string_ostream(json) << llvm::json::Value(std::move(signature));
    json.push_back('\0');
    LLVM::GlobalOp::create(mb, loc,
                           LLVM::LLVMArrayType::get(i8Type, json.size()),
                           /*isConstant=*/true, LLVM::Linkage::External,
                           "weft_model_signature", mb.getStringAttr(json));

    // Kernel declarations, created on first use.
    llvm::StringMap<LLVM::LLVMFuncOp> kernels;
    auto kernelDecl = [&](StringRef kernel) {
      auto &decl = kernels[kernel];
      if (!decl)
        decl = LLVM::LLVMFuncOp::create(
            mb, loc, ("weft_k_" + kernel).str(),
            LLVM::LLVMFunctionType::get(voidType, {ptrType, ptrType}));
      return decl;
    };
    // Private read-only globals (descriptors are shared when equal).
    unsigned globalCount = 0;
    std::map<std::vector<int64_t>, LLVM::GlobalOp> descGlobals;
    auto descGlobal = [&](ArrayRef<int64_t> desc) {
      std::vector<int64_t> key(desc.begin(), desc.end());
      auto &global = descGlobals[key];
      if (!global) {
        auto arrayType = LLVM::LLVMArrayType::get(i64Type, desc.size());
        auto value = DenseElementsAttr::get(
            RankedTensorType::get({static_cast<int64_t>(desc.size())}, i64Type),
            desc);
        global = LLVM::GlobalOp::create(
            mb, loc, arrayType, /*isConstant=*/true, LLVM::Linkage::Private,
            "__weft_desc_" + std::to_string(globalCount++), value);
      }
      return global;
    };

    auto traceDecl = LLVM::LLVMFuncOp::create(
        mb, loc, "weft_trace_launch",
        LLVM::LLVMFunctionType::get(voidType, {i64Type}));
    // The runtime calls of cuda models, declared on first use.
    LLVM::LLVMFuncOp constantDecl, copyDecl, loadDecl;
    auto runtimeDecl = [&](LLVM::LLVMFuncOp &decl, StringRef name, Type result,
                           ArrayRef<Type> args) {
      if (!decl)
        decl = LLVM::LLVMFuncOp::create(
            mb, loc, name, LLVM::LLVMFunctionType::get(result, args));
      return decl;
    };
    int64_t constantCount = 0;
    int64_t launchCount = 0;
    auto fnType = LLVM::LLVMFunctionType::get(
        voidType, {ptrType, ptrType, ptrType, ptrType});
    auto llvmFunc = LLVM::LLVMFuncOp::create(mb, loc, "weft_model_run", fnType);
    Block *entry = llvmFunc.addEntryBlock(mb);
    Value arena = entry->getArgument(0);
    Value paramTable = entry->getArgument(1);
    Value inputTable = entry->getArgument(2);
    Value outputTable = entry->getArgument(3);
    OpBuilder b = OpBuilder::atBlockBegin(entry);

    // One stack array of pointers, sized for the widest launch.
    int64_t maxBuffers = 1;
    func.walk([&](rt::LaunchOp launch) {
      maxBuffers = std::max<int64_t>(maxBuffers, launch.getBuffers().size());
    });
    Value count = LLVM::ConstantOp::create(b, loc, i64Type,
                                           b.getI64IntegerAttr(maxBuffers));
    Value bufferArray = LLVM::AllocaOp::create(b, loc, ptrType, ptrType, count,
                                               /*alignment=*/8);

    // Pointers (arena slices, slots, constants) go to the entry block, so
    // they dominate the blocks of every pipeline stage.
    OpBuilder pb(ctx);
    auto pointerBuilder = [&]() -> OpBuilder & {
      if (!entry->empty() && entry->back().hasTrait<OpTrait::IsTerminator>())
        pb.setInsertionPoint(&entry->back());
      else
        pb.setInsertionPointToEnd(entry);
      return pb;
    };
    auto loadSlot = [&](Value table, int64_t index) -> Value {
      OpBuilder &p = pointerBuilder();
      Value addr = LLVM::GEPOp::create(
          p, loc, ptrType, ptrType, table,
          ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(index)});
      return LLVM::LoadOp::create(p, loc, ptrType, addr);
    };

    DenseMap<Value, Value> pointers;
    // Pipeline stages: this rank's stage, loaded once; runs of launches and
    // copies of one stage sit in a block entered only on that stage's ranks.
    Value stageIndex;
    std::optional<int64_t> guarded;
    Block *resume = nullptr;
    auto closeGuard = [&](Location opLoc) {
      if (!guarded)
        return;
      LLVM::BrOp::create(b, opLoc, ValueRange{}, resume);
      b.setInsertionPointToStart(resume);
      guarded.reset();
    };
    for (Operation &op : func.getBody().front()) {
      Location opLoc = op.getLoc();
      auto stage = op.getAttrOfType<IntegerAttr>("weftrt.stage");
      bool stageable = isa<rt::LaunchOp, rt::CopyOp>(op);
      // Pointers (built in the entry block) and keep_alive emit nothing
      // here, so they leave a stage's block open.
      bool inert = isa<rt::ArenaSliceOp, rt::ParamOp, rt::InputOp, rt::OutputOp,
                       rt::ConstantOp, rt::KeepAliveOp>(op);
      if (guarded && !inert &&
          (!stageable || !stage || stage.getInt() != *guarded))
        closeGuard(opLoc);
      if (stageable && stage && !guarded) {
        if (!stageIndex)
          return op.emitError("has a pipeline stage but the function does "
                              "not read this rank's stage first");
        Block *current = b.getInsertionBlock();
        Region *region = current->getParent();
        Block *then = new Block();
        resume = new Block();
        region->push_back(then);
        region->push_back(resume);
        Value want = LLVM::ConstantOp::create(
            b, opLoc, i64Type, b.getI64IntegerAttr(stage.getInt()));
        Value mine = LLVM::ICmpOp::create(b, opLoc, LLVM::ICmpPredicate::eq,
                                          stageIndex, want);
        LLVM::CondBrOp::create(b, opLoc, mine, then, resume);
        b.setInsertionPointToStart(then);
        guarded = stage.getInt();
      }
      if (auto slice = dyn_cast<rt::ArenaSliceOp>(op)) {
        OpBuilder &p = pointerBuilder();
        Value offset = LLVM::ConstantOp::create(
            p, opLoc, i64Type, p.getI64IntegerAttr(slice.getOffset()));
        pointers[slice] = LLVM::GEPOp::create(p, opLoc, ptrType, i8Type, arena,
                                              ValueRange{offset});
      } else if (auto param = dyn_cast<rt::ParamOp>(op)) {
        pointers[param] = loadSlot(paramTable, param.getIndex());
      } else if (auto input = dyn_cast<rt::InputOp>(op)) {
        pointers[input] = loadSlot(inputTable, input.getIndex());
      } else if (auto output = dyn_cast<rt::OutputOp>(op)) {
        pointers[output] = loadSlot(outputTable, output.getIndex());
      } else if (auto constant = dyn_cast<rt::ConstantOp>(op)) {
        std::string bytes = elementsToBytes(constant.getValue());
        if (bytes.empty())
          bytes.push_back('\0');
        auto global = LLVM::GlobalOp::create(
            mb, opLoc, LLVM::LLVMArrayType::get(i8Type, bytes.size()),
            /*isConstant=*/true, LLVM::Linkage::Private,
            "__weft_const_" + std::to_string(globalCount++),
            mb.getStringAttr(bytes), /*alignment=*/64);
        OpBuilder &p = pointerBuilder();
        Value pointer = LLVM::AddressOfOp::create(p, opLoc, global);
        if (onDevice) {
          // The device copy, uploaded by the runtime on first use.
          Value id = LLVM::ConstantOp::create(
              p, opLoc, i64Type, p.getI64IntegerAttr(constantCount++));
          Value size = LLVM::ConstantOp::create(
              p, opLoc, i64Type,
              p.getI64IntegerAttr(static_cast<int64_t>(bytes.size())));
          auto decl = runtimeDecl(constantDecl, "weft_rt_constant", ptrType,
                                  {i64Type, ptrType, i64Type});
          pointer = LLVM::CallOp::create(p, opLoc, decl,
                                         ValueRange{id, pointer, size})
                        .getResult();
        }
        pointers[constant] = pointer;
      } else if (auto launch = dyn_cast<rt::LaunchOp>(op)) {
        for (auto [i, buffer] : llvm::enumerate(launch.getBuffers())) {
          Value slot = LLVM::GEPOp::create(
              b, opLoc, ptrType, ptrType, bufferArray,
              ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(i)});
          LLVM::StoreOp::create(b, opLoc, pointers.lookup(buffer), slot);
        }
        Value desc =
            LLVM::AddressOfOp::create(b, opLoc, descGlobal(launch.getDesc()));
        LLVM::CallOp::create(b, opLoc, kernelDecl(launch.getKernel()),
                             ValueRange{bufferArray, desc});
        // Marks the launch's end for traces (a load and a branch when
        // tracing is off).
        Value index = LLVM::ConstantOp::create(
            b, opLoc, i64Type, b.getI64IntegerAttr(launchCount++));
        LLVM::CallOp::create(b, opLoc, traceDecl, ValueRange{index});
        if (launch->hasAttr("weftrt.stage_index")) {
          Value at = pointers.lookup(launch.getBuffers()[0]);
          stageIndex =
              onDevice
                  ? LLVM::CallOp::create(b, opLoc,
                                         runtimeDecl(loadDecl,
                                                     "weft_rt_load_i64",
                                                     i64Type, {ptrType}),
                                         ValueRange{at})
                        .getResult()
                  : LLVM::LoadOp::create(b, opLoc, i64Type, at).getResult();
        }
      } else if (auto copy = dyn_cast<rt::CopyOp>(op)) {
        Value bytes = LLVM::ConstantOp::create(
            b, opLoc, i64Type, b.getI64IntegerAttr(copy.getBytes()));
        Value dst = pointers.lookup(copy.getTarget());
        Value src = pointers.lookup(copy.getSource());
        if (onDevice)
          LLVM::CallOp::create(b, opLoc,
                               runtimeDecl(copyDecl, "weft_rt_copy", voidType,
                                           {ptrType, ptrType, i64Type}),
                               ValueRange{dst, src, bytes});
        else
          LLVM::MemcpyOp::create(b, opLoc, dst, src, bytes,
                                 /*isVolatile=*/false);
      } else if (isa<rt::KeepAliveOp>(op)) {
        // Only liveness (weftrt-assign-buffers) reads it.
      } else if (isa<func::ReturnOp>(op)) {
        LLVM::ReturnOp::create(b, opLoc, ValueRange{});
      } else {
        return op.emitError("cannot be lowered to LLVM by weftrt-to-llvm");
      }
    }
    func.erase();
    return success();
  }
};

} // namespace
