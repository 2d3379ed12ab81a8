//===- FuseElementwise.cpp - Chains of elementwise ops into weft.fused ----===//
//
// Greedy producer-consumer fusion within each block, in program order. An
// op joins a group when
//   - its result has the group's shape (the iteration shape),
//   - it has the group's discardable attributes (stage, microbatch, ...),
//   - every value of the group read outside it is read after the op: the
//     group becomes one op at the position of its last member, so a reader
//     before that position would read a value not yet computed,
//   - the group stays within weft_k_fused's limits.
// Placing the group at its last member keeps every operand defined before
// it: each member's operands precede that member, and another group's
// results precede every outside reader of them by the rule above.
// An op that fails only the third rule, a few ops below the group's last
// member and reading nothing defined after it, joins as if it stood right
// after that member (it is hoisted): the bf16 cast of a gradient that a
// bias gradient's reduction reads first, say. The group then stays where
// it was.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/weft/Fusion.h"

#include "weft/runtime/KernelABI.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

namespace weft {
#define GEN_PASS_DEF_FUSEELEMENTWISE
#include "passes/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

struct Group {
  SmallVector<Operation *> members;
  /// The member the group is built at: the last one that joined where it
  /// stands (hoisted members join above their place).
  Operation *anchor = nullptr;
  ArrayRef<int64_t> shape;
  /// The members' place in the step (their discardable attributes, less
  /// weft.stage under ignore-stage).
  DictionaryAttr attrs;
};

/// Where `op` runs in the step, as groups and merged casts compare it: its
/// discardable attributes, less weft.stage under ignore-stage.
DictionaryAttr placeOf(Operation *op, bool ignoreStage) {
  DictionaryAttr attrs = op->getDiscardableAttrDictionary();
  if (!ignoreStage || !attrs.contains("weft.stage"))
    return attrs;
  NamedAttrList rest(attrs);
  rest.erase("weft.stage");
  return rest.getDictionary(op->getContext());
}

/// An op that may be a member: a fusible elementwise op on fusible tensors
/// whose operands all broadcast to its result's shape.
bool isFusible(Operation *op) {
  if (!fusedOpcode(op) || op->getNumResults() != 1 ||
      !isFusibleTensor(op->getResult(0).getType()))
    return false;
  return llvm::all_of(op->getOperandTypes(), isFusibleTensor);
}

class Fuser {
public:
  Fuser(Block &block, bool ignoreStage)
      : block(block), ignoreStage(ignoreStage) {
    int64_t index = 0;
    for (Operation &op : block)
      position[&op] = index++;
  }

  void run() {
    for (Operation &op : block) {
      if (!isFusible(&op))
        continue;
      Group *group = nullptr;
      Join join = Join::No;
      for (Value operand : op.getOperands())
        if (Operation *def = operand.getDefiningOp())
          if (Group *candidate = groupOf.lookup(def)) {
            join = canJoin(*candidate, &op);
            if (join != Join::No) {
              group = candidate;
              break;
            }
          }
      if (!group) {
        groups.push_back(std::make_unique<Group>());
        group = groups.back().get();
        group->shape =
            cast<RankedTensorType>(op.getResult(0).getType()).getShape();
        group->attrs = place(&op);
      }
      group->members.push_back(&op);
      if (join != Join::Hoisted)
        group->anchor = &op;
      groupOf[&op] = group;
    }
    for (auto &group : groups)
      if (group->members.size() > 1)
        build(*group);
  }

private:
  /// The op of this block that holds `user` (the user itself or an
  /// ancestor), or null.
  Operation *inBlock(Operation *user) {
    return block.findAncestorOpInBlock(*user);
  }

  DictionaryAttr place(Operation *op) { return placeOf(op, ignoreStage); }

  enum class Join { No, Here, Hoisted };

  /// Whether `op` may join `group`, where it stands or hoisted to just
  /// after the group's anchor.
  Join canJoin(Group &group, Operation *op) {
    if (cast<RankedTensorType>(op->getResult(0).getType()).getShape() !=
            group.shape ||
        place(op) != group.attrs)
      return Join::No;
    SmallVector<Operation *> trial(group.members);
    trial.push_back(op);
    Counts counts = count(trial);
    if (counts.operands > WEFT_FUSED_MAX_OPERANDS ||
        counts.results > WEFT_FUSED_MAX_RESULTS ||
        counts.registers > WEFT_FUSED_MAX_REGISTERS)
      return Join::No;
    int64_t at = position.lookup(op);
    bool readBefore = false;
    for (Operation *member : group.members)
      for (Operation *user : member->getUsers()) {
        Operation *reader = inBlock(user);
        if (reader == op || groupOf.lookup(reader) == &group)
          continue;
        if (!reader)
          return Join::No;
        readBefore |= position.lookup(reader) < at;
      }
    if (!readBefore)
      return Join::Here;
    // Every outside reader follows the anchor (the rule held for each
    // member), so right after it the op is read late enough; it may move
    // there when what it reads from outside the group is defined above.
    int64_t anchorAt = position.lookup(group.anchor);
    if (at - anchorAt > kMaxHoist)
      return Join::No;
    // (Not a value of another group, which is built at its own anchor.)
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (!def)
        continue;
      Group *from = groupOf.lookup(def);
      if (from == &group)
        continue;
      Operation *outer = inBlock(def);
      if (from || (outer && position.lookup(outer) > anchorAt))
        return Join::No;
    }
    return Join::Hoisted;
  }

  /// How far below the anchor (in ops) a member may be hoisted from: far
  /// enough for a reduction and a reshape in between, near enough not to
  /// compute a value long before its use.
  static constexpr int64_t kMaxHoist = 8;

  struct Counts {
    int64_t operands = 0, results = 0, registers = 0;
  };

  /// The outside values the members read (splat constants aside, which
  /// become immediates) and the member values read outside them.
  void boundary(ArrayRef<Operation *> members, llvm::SetVector<Value> &operands,
                llvm::SetVector<Operation *> &constants,
                SmallVectorImpl<Value> &results) {
    llvm::SmallPtrSet<Operation *, 16> inside(members.begin(), members.end());
    for (Operation *member : members) {
      for (Value operand : member->getOperands()) {
        Operation *def = operand.getDefiningOp();
        if (def && inside.contains(def))
          continue;
        if (def && isFusibleConstant(def))
          constants.insert(def);
        else
          operands.insert(operand);
      }
      Value result = member->getResult(0);
      if (llvm::any_of(result.getUsers(),
                       [&](Operation *user) { return !inside.contains(user); }))
        results.push_back(result);
    }
  }

  Counts count(ArrayRef<Operation *> members) {
    llvm::SetVector<Value> operands;
    llvm::SetVector<Operation *> constants;
    SmallVector<Value> results;
    boundary(members, operands, constants, results);
    Counts counts;
    counts.operands = operands.size();
    // The last member's value may only be read inside the group so far;
    // it becomes a result once the group closes, so count it.
    counts.results = std::max<int64_t>(1, results.size());
    counts.registers = operands.size() + constants.size() + members.size();
    return counts;
  }

  void build(Group &group) {
    llvm::SetVector<Value> operands;
    llvm::SetVector<Operation *> constants;
    SmallVector<Value> results;
    boundary(group.members, operands, constants, results);
    if (results.empty() || operands.empty())
      return;
    Operation *last = group.anchor;
    OpBuilder b(last);
    SmallVector<Type> resultTypes;
    for (Value v : results)
      resultTypes.push_back(v.getType());
    SmallVector<Location> locs;
    for (Operation *member : group.members)
      locs.push_back(member->getLoc());
    auto fused = FusedOp::create(b, b.getFusedLoc(locs), resultTypes,
                                 operands.getArrayRef());
    // The same as every member's, weft.stage aside (ignore-stage: the
    // last member's, where the group runs).
    fused->setDiscardableAttrs(last->getDiscardableAttrDictionary());
    Block *body = b.createBlock(&fused.getBody());
    IRMapping mapping;
    for (Value operand : operands)
      mapping.map(operand,
                  body->addArgument(operand.getType(), operand.getLoc()));
    for (Operation *constant : constants)
      b.clone(*constant, mapping);
    for (Operation *member : group.members) {
      Operation *copy = b.clone(*member, mapping);
      copy->setDiscardableAttrs(DictionaryAttr::get(copy->getContext()));
    }
    SmallVector<Value> yielded;
    for (Value v : results)
      yielded.push_back(mapping.lookup(v));
    YieldOp::create(b, last->getLoc(), yielded);
    for (auto [old, now] : llvm::zip(results, fused.getResults()))
      old.replaceAllUsesWith(now);
    for (Operation *member : llvm::reverse(group.members))
      member->erase();
    for (Operation *constant : constants)
      if (constant->use_empty())
        constant->erase();
  }

  Block &block;
  const bool ignoreStage;
  DenseMap<Operation *, int64_t> position;
  DenseMap<Operation *, Group *> groupOf;
  SmallVector<std::unique_ptr<Group>> groups;
};

bool isNarrowing(CastOp cast) {
  Type from = cast.getInput().getType().getElementType();
  Type to = cast.getType().getElementType();
  return from.isF32() && (to.isBF16() || to.isF16());
}

bool isWidening(CastOp cast) {
  Type from = cast.getInput().getType().getElementType();
  Type to = cast.getType().getElementType();
  return (from.isBF16() || from.isF16()) && to.isF32();
}

/// The casts of `block` that `keep` accepts, in block order.
SmallVector<CastOp> castsIn(Block &block, bool (*keep)(CastOp)) {
  SmallVector<CastOp> casts;
  for (Operation &op : block)
    if (auto cast = dyn_cast<CastOp>(op); cast && keep(cast))
      casts.push_back(cast);
  return casts;
}

/// Casts to bf16 or f16 move above the data movement (transpose, reshape,
/// slice) they follow, so they can join the elementwise group that made the
/// data and the data moves at half the bytes; a narrowing of a widening
/// from the same type cancels; casts of one value to one type are merged.
/// All of it is exact: a cast commutes with moving elements.
void sinkNarrowingCasts(Block &block, bool ignoreStage) {
  SmallVector<CastOp> work = castsIn(block, isNarrowing);
  while (!work.empty()) {
    CastOp cast = work.pop_back_val();
    Operation *mover = cast.getInput().getDefiningOp();
    if (!mover || !isa<TransposeOp, ReshapeOp, SliceOp>(mover) ||
        !mover->hasOneUse())
      continue;
    Type narrow = cast.getType().getElementType();
    Value input = mover->getOperand(0);
    auto inputType = llvm::cast<RankedTensorType>(input.getType());
    OpBuilder b(mover);
    Value narrowed;
    if (auto widening = input.getDefiningOp<CastOp>();
        widening && widening.getInput().getType().getElementType() == narrow)
      narrowed = widening.getInput();
    if (!narrowed) {
      auto inner =
          CastOp::create(b, cast.getLoc(), inputType.clone(narrow), input);
      inner->setDiscardableAttrs(mover->getDiscardableAttrDictionary());
      work.push_back(inner);
      narrowed = inner;
    }
    Operation *moved = b.clone(*mover);
    moved->setOperand(0, narrowed);
    moved->getResult(0).setType(cast.getType());
    cast.getResult().replaceAllUsesWith(moved->getResult(0));
    cast.erase();
    mover->erase();
    if (Operation *def = input.getDefiningOp();
        def && isa<CastOp>(def) && def->use_empty())
      def->erase();
  }
  // The first cast of a value to a type precedes the others in the block,
  // so it can stand for them.
  DenseMap<std::pair<Value, Type>, CastOp> first;
  for (Operation &op : llvm::make_early_inc_range(block)) {
    auto cast = dyn_cast<CastOp>(op);
    if (!cast)
      continue;
    auto [it, inserted] =
        first.try_emplace({cast.getInput(), cast.getType()}, cast);
    if (inserted ||
        placeOf(cast, ignoreStage) != placeOf(it->second, ignoreStage))
      continue;
    cast.getResult().replaceAllUsesWith(it->second.getResult());
    cast.erase();
  }
}

/// Casts to f32 from bf16 or f16 move below the transposes, reshapes and
/// slices that are their only reader, and below a concat all of whose
/// inputs are such casts from one type: the data moves at half the bytes
/// and the cast may join the group that reads it. A narrowing back to the
/// narrow type then cancels, and a transpose of a transpose (the key's
/// head split and the fused attention's layout, say) becomes one. All of
/// it is exact. Mixed precision's gradients are the usual case: a
/// gradient of bf16 data widens to f32 before its head merge and concat.
void sinkWideningCasts(Block &block) {
  SmallVector<CastOp> work = castsIn(block, isWidening);
  while (!work.empty()) {
    CastOp cast = work.pop_back_val();
    if (!cast->hasOneUse())
      continue;
    Operation *mover = *cast->getUsers().begin();
    if (mover->getBlock() != &block)
      continue;
    Type narrow = cast.getInput().getType().getElementType();
    SmallVector<Value> narrowInputs;
    if (isa<TransposeOp, ReshapeOp, SliceOp>(mover)) {
      narrowInputs.push_back(cast.getInput());
    } else if (auto concat = dyn_cast<ConcatOp>(mover)) {
      for (Value input : concat.getInputs()) {
        auto widening = input.getDefiningOp<CastOp>();
        if (!widening || !isWidening(widening) || !widening->hasOneUse() ||
            widening.getInput().getType().getElementType() != narrow)
          break;
        narrowInputs.push_back(widening.getInput());
      }
      if (narrowInputs.size() != concat.getInputs().size())
        continue;
    } else {
      continue;
    }
    OpBuilder b(mover);
    Operation *moved = b.clone(*mover);
    moved->setOperands(narrowInputs);
    auto wideType = llvm::cast<RankedTensorType>(mover->getResult(0).getType());
    moved->getResult(0).setType(wideType.clone(narrow));
    auto widened =
        CastOp::create(b, cast.getLoc(), wideType, moved->getResult(0));
    widened->setDiscardableAttrs(mover->getDiscardableAttrDictionary());
    mover->getResult(0).replaceAllUsesWith(widened.getResult());
    // The casts it read are left unread (and erased below): some may still
    // be on the work list.
    mover->erase();
    work.push_back(widened);
  }
  for (Operation &op : llvm::make_early_inc_range(block))
    if (isa<CastOp>(op) && op.use_empty())
      op.erase();
  // What the moves made foldable: a narrowing of a widening from the same
  // type, a transpose of a transpose (CastOp's and TransposeOp's folders).
  for (Operation &op : llvm::make_early_inc_range(block)) {
    if (!isa<CastOp, TransposeOp>(op) ||
        !isa_and_nonnull<CastOp, TransposeOp>(op.getOperand(0).getDefiningOp()))
      continue;
    Operation *inner = op.getOperand(0).getDefiningOp();
    // Folded in place (no results), or to a value.
    SmallVector<OpFoldResult> folded;
    if (failed(op.fold(folded)))
      continue;
    if (folded.size() == 1)
      if (auto value = dyn_cast<Value>(folded.front())) {
        op.getResult(0).replaceAllUsesWith(value);
        op.erase();
      }
    if (inner->use_empty())
      inner->erase();
  }
}

/// A bf16 or f16 product only widened to f32, by casts that no fusible op
/// reads, becomes one product with an f32 result: the kernels accumulate in
/// f32 anyway, and one pass over memory goes away (a fused group reading
/// the narrow product instead reads half the bytes, so those casts stay).
void foldWideningCasts(Block &block) {
  SmallVector<CastOp> casts;
  for (Operation &op : block)
    if (auto cast = dyn_cast<CastOp>(op))
      casts.push_back(cast);
  for (CastOp cast : casts) {
    auto product = cast.getInput().getDefiningOp<MatMulOp>();
    auto narrow = dyn_cast<RankedTensorType>(cast.getInput().getType());
    if (!product || !product->hasOneUse() || !narrow ||
        !(narrow.getElementType().isBF16() ||
          narrow.getElementType().isF16()) ||
        !cast.getType().getElementType().isF32() ||
        llvm::any_of(cast->getUsers(), isFusible))
      continue;
    OpBuilder b(product);
    auto wide = MatMulOp::create(
        b, product.getLoc(), cast.getType(), product.getLhs(), product.getRhs(),
        product.getTransposeAAttr(), product.getTransposeBAttr());
    wide->setDiscardableAttrs(product->getDiscardableAttrDictionary());
    cast.getResult().replaceAllUsesWith(wide.getResult());
    cast.erase();
    product.erase();
  }
}

struct FuseElementwisePass
    : public weft::impl::FuseElementwiseBase<FuseElementwisePass> {
  using FuseElementwiseBase::FuseElementwiseBase;
  void runOnOperation() override {
    SmallVector<Block *> blocks;
    getOperation().walk([&](Block *block) {
      if (!isa<FusedOp>(block->getParentOp()))
        blocks.push_back(block);
    });
    for (Block *block : blocks) {
      sinkNarrowingCasts(*block, ignoreStage);
      foldWideningCasts(*block);
      sinkWideningCasts(*block);
      Fuser(*block, ignoreStage).run();
    }
  }
};

} // namespace
