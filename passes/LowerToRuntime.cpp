//===- LowerToRuntime.cpp - weft graph -> weftrt kernel launches ----------===//
#include "passes/LowerCollectives.h"
#include "passes/Passes.h"

#include "llvm/ADT/ScopeExit.h"

#include "dialects/weft/Sharding.h"

#include "weft/runtime/KernelABI.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

namespace weft {
#define GEN_PASS_DEF_LOWERTORUNTIME
#include "passes/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;
using namespace weft::lowering;

namespace {

/// Which element types the CPU kernels accept, per kernel family. Anything
/// else is rejected at compile time with the op and type named, instead of
/// failing when the bundle runs.
bool cpuSupports(Operation *op, Type elementType) {
  std::optional<WeftDType> dtype = getDTypeOf(elementType);
  if (!dtype)
    return false;
  int64_t code = *dtype;
  bool isF32 = code == WEFT_F32;
  bool arithmetic =
      isF32 || code == WEFT_F64 || code == WEFT_I64 || code == WEFT_I32;
  StringRef kernel = cast<KernelOpInterface>(op).getKernelName();
  // weft.fused's verifier admits only what weft_k_fused runs.
  if (kernel == "fused")
    return true;
  if (kernel == "unary") {
    if (isa<NotOp>(op))
      return code == WEFT_BOOL;
    if (isa<NegOp, ReluOp>(op))
      return arithmetic;
    return isF32 || code == WEFT_F64;
  }
  if (kernel == "binary") {
    if (isa<AndOp, OrOp>(op))
      return code == WEFT_BOOL;
    return arithmetic;
  }
  if (kernel == "compare" || kernel == "topk")
    return arithmetic || (kernel == "compare" && code == WEFT_BOOL);
  // bf16 products and the sums of their gradients (the kernels widen to f32,
  // accumulate there and round the result once).
  bool bf16 = code == WEFT_BF16;
  if (kernel == "reduce" && !isa<ReduceMeanOp>(op))
    return arithmetic || bf16;
  if (kernel == "matmul" || kernel == "conv" || kernel == "conv_grad_input" ||
      kernel == "conv_grad_weight")
    return isF32 || bf16;
  if (kernel == "attention" || kernel == "attention_grad" ||
      kernel == "softmax_xent" || kernel == "softmax_xent_grad")
    return isF32 || bf16 || code == WEFT_F16;
  if (kernel == "where" || kernel == "cast" || kernel == "transpose" ||
      kernel == "concat" || kernel == "split" || kernel == "slice" ||
      kernel == "gather" || kernel == "expand" || kernel == "trilu")
    return true;
  // The backward kernels of training (KernelABI.h): f32 only.
  if (kernel == "scatter_add" || kernel == "conv_grad_input" ||
      kernel == "conv_grad_weight" || kernel == "max_pool_grad" ||
      kernel == "avg_pool_grad" || kernel == "layer_norm_grad" ||
      kernel == "softmax_grad" || kernel == "softmax_xent_grad" ||
      kernel == "slice_grad")
    return isF32;
  if (kernel == "dropout" || kernel == "random")
    return isF32 || code == WEFT_F64;
  // matmul, conv, pools, norms, softmax, reduce_mean, softmax_xent.
  return isF32;
}

/// The element type that decides kernel support: the first floating operand
/// for most ops; for compares and casts the operand's type.
Type decidingElementType(Operation *op) {
  Value v = op->getNumOperands() ? op->getOperand(0) : op->getResult(0);
  if (isa<WhereOp>(op))
    v = op->getOperand(1);
  if (isa<GatherOp>(op))
    v = op->getOperand(0);
  if (isa<ScatterAddOp>(op)) // indices, then the updates that decide
    v = op->getOperand(1);
  if (isa<RandomOp>(op)) // `like` gives only the shape
    v = op->getResult(0);
  return cast<RankedTensorType>(v.getType()).getElementType();
}

void appendTensorDesc(SmallVectorImpl<int64_t> &desc, Type type) {
  auto tensor = cast<RankedTensorType>(type);
  desc.push_back(*getDTypeOf(tensor.getElementType()));
  desc.push_back(tensor.getRank());
  desc.append(tensor.getShape().begin(), tensor.getShape().end());
}

DictionaryAttr slotAttr(Builder &b, StringRef name, RankedTensorType type,
                        ArrayRef<NamedAttribute> extra = {}) {
  SmallVector<NamedAttribute> fields = {
      b.getNamedAttr("name", b.getStringAttr(name)),
      b.getNamedAttr("type", TypeAttr::get(type))};
  fields.append(extra.begin(), extra.end());
  return b.getDictionaryAttr(fields);
}

/// Kernels that read each element before writing the same element, so their
/// result may be the buffer of a same-shaped operand.
bool isElementwiseInPlaceSafe(StringRef kernel) {
  return kernel == "adamw" || kernel == "sgd" || kernel == "binary" ||
         kernel == "unary";
}

/// Each op's index in `block`.
DenseMap<Operation *, int64_t> positionsIn(Block &block) {
  DenseMap<Operation *, int64_t> position;
  int64_t index = 0;
  for (Operation &op : block)
    position[&op] = index++;
  return position;
}

/// A concat or split whose pieces lie one after the other in the whole
/// (every dim before the axis is 1: a bucket of flattened gradients) gets
/// weftrt.piece_offsets, each piece's byte offset in the whole, so that
/// weftrt-assign-buffers may place the pieces there and drop the copy.
void markContiguousPieces(Operation *op, rt::LaunchOp launch) {
  int64_t axis = 0;
  RankedTensorType whole;
  SmallVector<Value> pieces;
  if (auto concat = dyn_cast<ConcatOp>(op)) {
    axis = concat.getAxis();
    whole = cast<RankedTensorType>(concat.getType());
    pieces.append(concat.getInputs().begin(), concat.getInputs().end());
  } else if (auto split = dyn_cast<SplitOp>(op)) {
    axis = split.getAxis();
    whole = cast<RankedTensorType>(split.getInput().getType());
    pieces.append(split.getResults().begin(), split.getResults().end());
  } else {
    return;
  }
  if (!whole.hasStaticShape() || axis < 0 || axis >= whole.getRank())
    return;
  for (int64_t d = 0; d < axis; ++d)
    if (whole.getDimSize(d) != 1)
      return;
  SmallVector<int64_t> offsets;
  int64_t offset = 0;
  for (Value piece : pieces) {
    auto type = cast<RankedTensorType>(piece.getType());
    if (!type.hasStaticShape() || type.getNumElements() == 0)
      return;
    offsets.push_back(offset);
    offset += getTensorBytes(type);
  }
  if (offset != getTensorBytes(whole))
    return;
  launch->setAttr("weftrt.piece_offsets",
                  DenseI64ArrayAttr::get(op->getContext(), offsets));
}

/// An all_reduce_start reduces in its result's buffer, into which the
/// runtime first copies the operand. When the operand is an intermediate
/// that nothing reads after the start, the result takes the operand's
/// buffer instead: the copy goes away (the gradient buckets of data
/// parallelism are the largest intermediates a step copies), and the
/// buffer lives on to the wait and the result's readers.
void reduceInPlace(func::FuncOp func) {
  Block &block = func.getBody().front();
  DenseMap<Operation *, int64_t> position = positionsIn(block);
  SmallVector<rt::LaunchOp> starts;
  for (Operation &op : block)
    if (auto launch = dyn_cast<rt::LaunchOp>(op))
      if (launch.getKernel() == "all_reduce_start" &&
          launch.getBuffers().size() == 2)
        starts.push_back(launch);
  for (rt::LaunchOp start : starts) {
    Value x = start.getBuffers()[0], y = start.getBuffers()[1];
    auto xAlloc = x.getDefiningOp<rt::AllocOp>();
    auto yAlloc = y.getDefiningOp<rt::AllocOp>();
    if (!xAlloc || !yAlloc || x == y || xAlloc.getBytes() != yAlloc.getBytes())
      continue;
    if (llvm::any_of(x.getUsers(), [&](Operation *user) {
          return position.lookup(user) > position[start];
        }))
      continue;
    y.replaceAllUsesWith(x);
    yAlloc.erase();
  }
}

/// A parameter update is first lowered to a copy into the parameter's buffer.
/// When the new value comes from an elementwise kernel and nothing reads the
/// old parameter after that kernel, the kernel writes the parameter in place
/// and the copy goes away.
void updateInPlace(func::FuncOp func) {
  Block &block = func.getBody().front();
  DenseMap<Operation *, int64_t> position = positionsIn(block);
  SmallVector<rt::CopyOp> copies;
  for (Operation &op : block)
    if (auto copy = dyn_cast<rt::CopyOp>(op))
      if (copy.getTarget().getDefiningOp<rt::ParamOp>())
        copies.push_back(copy);
  for (rt::CopyOp copy : copies) {
    auto alloc = copy.getSource().getDefiningOp<rt::AllocOp>();
    if (!alloc)
      continue;
    // The lowering places an alloc right before the launch that writes it,
    // so its first user is the writer; later users read the new value, which
    // the parameter's buffer holds just as well.
    Operation *writerOp = nullptr;
    for (Operation *user : alloc.getBuffer().getUsers())
      if (!writerOp || position[user] < position[writerOp])
        writerOp = user;
    auto writer = dyn_cast_or_null<rt::LaunchOp>(writerOp);
    if (!writer || !isElementwiseInPlaceSafe(writer.getKernel()))
      continue;
    Value param = copy.getTarget();
    bool readLater = false;
    for (Operation *user : param.getUsers())
      if (user != copy && position[user] > position[writer])
        readLater = true;
    if (readLater)
      continue;
    alloc.getBuffer().replaceAllUsesWith(param);
    copy.erase();
    alloc.erase();
  }
}

} // namespace

namespace {

struct LowerToRuntimePass
    : public weft::impl::LowerToRuntimeBase<LowerToRuntimePass> {
  using LowerToRuntimeBase::LowerToRuntimeBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>(entry);
    if (!func) {
      module.emitError() << "no function '" << entry << "' to lower";
      return signalPassFailure();
    }
    if (failed(lower(func)))
      return signalPassFailure();
  }

  LogicalResult lower(func::FuncOp func) {
    MLIRContext *ctx = func.getContext();
    Builder attrBuilder(ctx);
    if (!llvm::hasSingleElement(func.getBody()))
      return func.emitError("weft-lower-to-runtime expects a single block");

    auto bufferType = rt::BufferType::get(ctx);
    OpBuilder moduleBuilder(func);
    auto newFunc =
        func::FuncOp::create(moduleBuilder, func.getLoc(), "weft_model_run",
                             FunctionType::get(ctx, {}, {}));
    Block *body = newFunc.addEntryBlock();
    OpBuilder b = OpBuilder::atBlockBegin(body);

    DenseMap<Value, Value> buffers; // tensor value -> buffer
    SmallVector<Attribute> inputSlots, paramSlots, outputSlots;

    // Graph inputs.
    Block &oldBody = func.getBody().front();
    for (BlockArgument arg : oldBody.getArguments()) {
      auto type = dyn_cast<RankedTensorType>(arg.getType());
      if (!type || !type.hasStaticShape())
        return func.emitError("input ")
               << arg.getArgNumber() << " is not a static-shape tensor";
      auto name =
          func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "weft.name");
      std::string fallback = "input" + std::to_string(arg.getArgNumber());
      SmallVector<NamedAttribute> extra;
      if (Attribute shard = func.getArgAttr(arg.getArgNumber(), "weft.shard")) {
        std::optional<SmallVector<NamedAttribute, 2>> shards =
            inputShards(attrBuilder, shard, type.getRank());
        if (!shards)
          return func.emitError("input ")
                 << arg.getArgNumber()
                 << " is split over dimensions other than its rows (dim 0) "
                    "and its sequence (dim 1), or partial; the runtime feeds "
                    "inputs split along those";
        extra.append(shards->begin(), shards->end());
      }
      inputSlots.push_back(slotAttr(
          attrBuilder, name ? name.getValue() : fallback, type, extra));
      buffers[arg] =
          rt::InputOp::create(b, arg.getLoc(), bufferType, arg.getArgNumber());
    }

    llvm::StringMap<Value> paramBuffers;
    // Set by weft-build-train-step: which parameters the optimizer updates.
    llvm::StringSet<> trainable;
    if (auto names = func->getAttrOfType<ArrayAttr>("weft.trainable"))
      for (Attribute name : names)
        if (auto str = dyn_cast<StringAttr>(name))
          trainable.insert(str.getValue());
    bool training = false;
    // Started collectives not yet waited for: each compute kernel in
    // between is followed by a comm_progress, which polls them (MPI moves
    // a non-blocking transfer only inside its own calls).
    int64_t inFlight = 0;
    // In a pipeline, an op a later pass made (a canonicalization) runs on
    // the stage of what it reads, else of what reads it.
    if (func->hasAttr("weft.pipeline_axis")) {
      auto stageOf = [](Operation *o) {
        return o ? o->getAttrOfType<IntegerAttr>("weft.stage") : IntegerAttr();
      };
      for (Operation &op : oldBody.without_terminator())
        if (!stageOf(&op))
          for (Value v : op.getOperands())
            if (IntegerAttr s = stageOf(v.getDefiningOp())) {
              op.setAttr("weft.stage", s);
              break;
            }
      for (Operation &op : llvm::reverse(oldBody.without_terminator()))
        if (!stageOf(&op))
          for (Operation *user : op.getUsers())
            if (IntegerAttr s = stageOf(user)) {
              op.setAttr("weft.stage", s);
              break;
            }
    }
    // A pipeline's ranks run the launches of their own stage only: the
    // stage comes first (this rank's coordinate over the pipeline axis),
    // then every launch and copy of a staged op carries its stage
    // (weftrt-to-llvm guards it).
    if (auto axis = func->getAttrOfType<IntegerAttr>("weft.pipeline_axis")) {
      auto i64 = RankedTensorType::get({}, b.getI64Type());
      Value stage = rt::AllocOp::create(b, func.getLoc(), bufferType, 8);
      SmallVector<int64_t> desc = {1};
      appendTensorDesc(desc, i64);
      desc.append({3, 1, 1, axis.getInt()});
      auto launch = rt::LaunchOp::create(b, func.getLoc(), "mesh_offset",
                                         ValueRange{stage}, desc);
      launch->setAttr("weftrt.stage_index", b.getUnitAttr());
    }
    PieceBuckets pieceBuckets;
    if (unpackedBuckets)
      pieceBuckets.find(oldBody);
    // The pieces a started reduce_scatter_pieces reads until its wait.
    DenseMap<Operation *, SmallVector<Value>> readUntilWait;
    for (Operation &op : oldBody.without_terminator()) {
      Operation *mark = body->empty() ? nullptr : &body->back();
      // Where the op sits in the step (stage, microbatch, backward work,
      // interleaved chunk) goes to its launches: the lowering guards
      // stages, and traces and schedule diagrams label the work.
      llvm::scope_exit tagPlace([&] {
        SmallVector<NamedAttribute> place;
        for (auto [from, to] :
             {std::pair<StringRef, StringRef>{"weft.stage", "weftrt.stage"},
              {"weft.microbatch", "weftrt.microbatch"},
              {"weft.backward", "weftrt.backward"},
              {"weft.chunk", "weftrt.chunk"},
              {"weft.weight_grad", "weftrt.weight_grad"}})
          if (Attribute a = op.getAttr(from))
            place.push_back(attrBuilder.getNamedAttr(to, a));
        if (place.empty())
          return;
        for (Operation *o = mark ? mark->getNextNode() : &body->front(); o;
             o = o->getNextNode())
          if (isa<rt::LaunchOp, rt::CopyOp, rt::KeepAliveOp>(o))
            for (NamedAttribute a : place)
              o->setAttr(a.getName(), a.getValue());
      });
      for (Type t : op.getResultTypes()) {
        auto type = dyn_cast<RankedTensorType>(t);
        if (!type || !type.hasStaticShape() ||
            !getDTypeOf(type.getElementType()))
          return op.emitError("result type ")
                 << t << " has no runtime representation";
      }
      Location loc = op.getLoc();
      if (auto param = dyn_cast<ParamOp>(op)) {
        Value &buffer = paramBuffers[param.getName()];
        if (!buffer) {
          buffer = rt::ParamOp::create(b, loc, bufferType,
                                       static_cast<int64_t>(paramSlots.size()));
          SmallVector<NamedAttribute> extra;
          auto role = param->getAttrOfType<StringAttr>("weft.role");
          extra.push_back(attrBuilder.getNamedAttr(
              "role", role ? role : attrBuilder.getStringAttr("param")));
          if (!trainable.empty())
            extra.push_back(attrBuilder.getNamedAttr(
                "trainable",
                attrBuilder.getBoolAttr(trainable.count(param.getName()))));
          if (Attribute shard = param->getAttr("weft.shard")) {
            std::optional<NamedAttribute> slot =
                runtimeShard(attrBuilder, shard,
                             cast<RankedTensorType>(param.getType()).getRank());
            if (!slot)
              return param.emitError(
                  "is split over several dimensions or partial; the runtime "
                  "stores parameters split along one dimension");
            extra.push_back(*slot);
          }
          // In a pipeline, the stage whose ranks hold the live copy.
          if (func->hasAttr("weft.pipeline_axis"))
            if (auto stage = param->getAttrOfType<IntegerAttr>("weft.stage"))
              extra.push_back(attrBuilder.getNamedAttr("stage", stage));
          paramSlots.push_back(slotAttr(attrBuilder, param.getName(),
                                        cast<RankedTensorType>(param.getType()),
                                        extra));
        }
        buffers[param] = buffer;
        continue;
      }
      if (auto constant = dyn_cast<ConstantOp>(op)) {
        buffers[constant] =
            rt::ConstantOp::create(b, loc, bufferType, constant.getValue());
        continue;
      }
      if (auto reshape = dyn_cast<ReshapeOp>(op)) {
        buffers[reshape] = buffers.lookup(reshape.getInput());
        continue;
      }
      // The wait completes the start's buffer in place.
      if (auto wait = dyn_cast<CommWaitOp>(op)) {
        Value buffer = buffers.lookup(wait.getPending());
        buffers[wait] = buffer;
        Operation *start = wait.getPending().getDefiningOp();
        SmallVector<int64_t> desc = {1};
        // all_gather_pieces_start's slot names its first piece.
        SplitOp unpacked = pieceBuckets.unpackedBy.lookup(start);
        appendTensorDesc(desc, unpacked ? unpacked.getResult(0).getType()
                                        : wait.getType());
        desc.append({1, static_cast<int64_t>(wait.getSlot())});
        rt::LaunchOp::create(b, loc, "comm_wait", ValueRange{buffer}, desc);
        auto reading = readUntilWait.find(start);
        if (reading != readUntilWait.end())
          rt::KeepAliveOp::create(b, loc, reading->second);
        --inFlight;
        continue;
      }
      // A send's start copies its operand; the pending value names the
      // operand's buffer, which its comm_wait passes back.
      if (auto send = dyn_cast<SendStartOp>(op)) {
        Value buffer = buffers.lookup(send.getInput());
        buffers[send] = buffer;
        SmallVector<int64_t> desc = {1};
        appendTensorDesc(desc, send.getInput().getType());
        SmallVector<int64_t> attrs = {
            send.getSlotAttr().getInt(), send.getPeerAttr().getInt(),
            send.getTagAttr().getInt(),
            static_cast<int64_t>(send.getGridAxes().size())};
        attrs.append(send.getGridAxes().begin(), send.getGridAxes().end());
        desc.push_back(attrs.size());
        desc.append(attrs.begin(), attrs.end());
        rt::LaunchOp::create(b, loc, "send_start", ValueRange{buffer}, desc);
        ++inFlight;
        continue;
      }
      if (auto update = dyn_cast<ParamUpdateOp>(op)) {
        Value target = paramBuffers.lookup(update.getName());
        if (!target)
          return update.emitError("updates '")
                 << update.getName() << "', which the function never reads";
        auto type = cast<RankedTensorType>(update.getValue().getType());
        rt::CopyOp::create(b, loc, buffers.lookup(update.getValue()), target,
                           std::max<int64_t>(1, getTensorBytes(type)));
        training = true;
        continue;
      }
      // A bucket's concat or split that its collective does in place.
      if (pieceBuckets.folded.contains(&op))
        continue;
      StringRef kernelName;
      SmallVector<int64_t> attrs;
      SmallVector<Value> operands(op.getOperands());
      SmallVector<Value> results(op.getResults());
      if (std::optional<LogicalResult> collective =
              collectiveKernel(&op, kernelName, attrs)) {
        if (failed(*collective))
          return failure();
        // The bucket forms take the same attributes but the dim (after the
        // slot and the reduction).
        const bool started = isa<ReduceScatterStartOp, AllGatherStartOp>(op);
        if (ConcatOp concat = pieceBuckets.packedBy.lookup(&op)) {
          operands.assign(concat.getInputs().begin(), concat.getInputs().end());
          kernelName =
              started ? "reduce_scatter_pieces_start" : "reduce_scatter_pieces";
          attrs.erase(attrs.begin() + (started ? 2 : 1));
        } else if (SplitOp split = pieceBuckets.unpackedBy.lookup(&op)) {
          results.assign(split.getResults().begin(), split.getResults().end());
          kernelName =
              started ? "all_gather_pieces_start" : "all_gather_pieces";
          attrs.erase(attrs.begin() + (started ? 1 : 0));
        }
      } else {
        auto kernelOp = dyn_cast<KernelOpInterface>(op);
        if (!kernelOp)
          return op.emitError("has no lowering to the runtime");
        Type elementType = decidingElementType(&op);
        if (!cpuSupports(&op, elementType))
          return op.emitError("element type ")
                 << elementType << " is not supported by the cpu backend";
        kernelName = kernelOp.getKernelName();
        kernelOp.getKernelAttributes(attrs);
      }

      SmallVector<Value> launchBuffers;
      SmallVector<int64_t> desc = {
          static_cast<int64_t>(operands.size() + results.size())};
      for (Value operand : operands) {
        launchBuffers.push_back(buffers.lookup(operand));
        appendTensorDesc(desc, operand.getType());
      }
      for (Value result : results) {
        auto type = cast<RankedTensorType>(result.getType());
        Value buffer = rt::AllocOp::create(
            b, loc, bufferType, std::max<int64_t>(1, getTensorBytes(type)));
        buffers[result] = buffer;
        launchBuffers.push_back(buffer);
        appendTensorDesc(desc, type);
      }
      desc.push_back(attrs.size());
      desc.append(attrs.begin(), attrs.end());
      auto launch =
          rt::LaunchOp::create(b, loc, kernelName, launchBuffers, desc);
      markContiguousPieces(&op, launch);
      if (pieceBuckets.unpackedBy.contains(&op))
        buffers[op.getResult(0)] = buffers.lookup(results.front());
      if (kernelName == "reduce_scatter_pieces_start")
        readUntilWait[&op] =
            SmallVector<Value>(ValueRange(launchBuffers).drop_back());
      if (isa<AllReduceStartOp, AllGatherStartOp, ReduceScatterStartOp,
              RecvStartOp>(op))
        ++inFlight;
      else if (inFlight > 0)
        rt::LaunchOp::create(b, loc, "comm_progress", ValueRange{},
                             SmallVector<int64_t>{0, 0});
    }

    // Outputs: a buffer allocated for exactly this output is replaced by the
    // output slot, so the kernel writes there directly; anything else
    // (inputs, parameters, constants, a value returned twice) is copied.
    auto ret = cast<func::ReturnOp>(oldBody.getTerminator());
    for (auto [index, value] : llvm::enumerate(ret.getOperands())) {
      auto type = cast<RankedTensorType>(value.getType());
      auto name = func.getResultAttrOfType<StringAttr>(index, "weft.name");
      std::string fallback = "output" + std::to_string(index);
      outputSlots.push_back(
          slotAttr(attrBuilder, name ? name.getValue() : fallback, type));
      Value buffer = buffers.lookup(value);
      if (auto alloc = buffer.getDefiningOp<rt::AllocOp>()) {
        OpBuilder at(alloc);
        Value slot = rt::OutputOp::create(at, alloc.getLoc(), bufferType,
                                          static_cast<int64_t>(index));
        alloc.getBuffer().replaceAllUsesWith(slot);
        alloc.erase();
        for (auto &entry : buffers)
          if (entry.second == buffer)
            entry.second = slot;
        continue;
      }
      Value slot = rt::OutputOp::create(b, ret.getLoc(), bufferType,
                                        static_cast<int64_t>(index));
      rt::CopyOp::create(b, ret.getLoc(), buffer, slot,
                         std::max<int64_t>(1, getTensorBytes(type)));
    }
    func::ReturnOp::create(b, ret.getLoc());

    reduceInPlace(newFunc);
    if (training)
      updateInPlace(newFunc);
    newFunc->setAttr("weftrt.mode", attrBuilder.getStringAttr(
                                        training ? "train" : "inference"));
    newFunc->setAttr("weftrt.inputs", attrBuilder.getArrayAttr(inputSlots));
    newFunc->setAttr("weftrt.params", attrBuilder.getArrayAttr(paramSlots));
    newFunc->setAttr("weftrt.outputs", attrBuilder.getArrayAttr(outputSlots));
    // The mesh goes into the signature; the grid itself has no runtime form.
    ModuleOp module = func->getParentOfType<ModuleOp>();
    for (shard::GridOp grid :
         llvm::make_early_inc_range(module.getOps<shard::GridOp>())) {
      newFunc->setAttr("weftrt.mesh_shape", grid.getShapeAttr());
      if (auto axis = func->getAttrOfType<IntegerAttr>("weft.pipeline_axis"))
        newFunc->setAttr("weftrt.pipeline_axis", axis);
      if (auto names = grid->getAttrOfType<ArrayAttr>("weft.mesh_axes"))
        newFunc->setAttr("weftrt.mesh_axes", names);
      grid.erase();
    }
    func.erase();
    return success();
  }
};

} // namespace
