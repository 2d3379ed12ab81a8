//===- ShardingRules.cpp - What each weft op can compute on blocks --------===//
#include "dialects/weft/ShardingRules.h"
#include "dialects/weft/ShardingRulesInternal.h"

#include "dialects/weft/WeftOps.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace weft;
using namespace weft::sharding;

/// Removes, from later dims, mesh axes an earlier dim already uses (a
/// mesh axis can split one dimension only). A dim split twice (its outer
/// factor and its rest) keeps the part that does not clash: rows of
/// [sequence, batch] split over [tp, dp] keep their batch split when tp
/// splits a weight's features.
void weft::sharding::dedupeAxes(MutableArrayRef<DimSharding> dims,
                                MeshAxes &used) {
  auto clashes = [&](const MeshAxes &axes) {
    return llvm::any_of(
        axes, [&](MeshAxis a) { return llvm::is_contained(used, a); });
  };
  for (DimSharding &dim : dims) {
    bool rest = clashes(dim.axes), outer = clashes(dim.outerAxes);
    if (rest && (outer || dim.outerAxes.empty()))
      dim.clear();
    else if (rest)
      dim = DimSharding(dim.outerAxes); // the outer factor's split: blocks
    else if (outer)
      dim = DimSharding(dim.axes, dim.outer);
    MeshAxes all = dim.allAxes();
    used.append(all.begin(), all.end());
  }
}

namespace {

/// Clears, in `s`, the axes of dims that are not in `keep` (their dims must
/// be whole) and the partial sums unless `keepPartial`.
TensorSharding wholeExcept(const TensorSharding &s, ArrayRef<int64_t> keep,
                           bool keepPartial = false) {
  TensorSharding t = TensorSharding::replicated(s.dims.size());
  for (int64_t d : keep)
    t.dims[d] = s.dims[d];
  if (keepPartial)
    t.partial = s.partial;
  return t;
}

/// `dim` and, for a dim split twice (its outer factor and its rest), each
/// part alone: the splits it is resharded to by gathering one part.
SmallVector<DimSharding, 3> partsOf(const DimSharding &dim) {
  SmallVector<DimSharding, 3> parts = {dim};
  if (dim.outer != 1 && !dim.outerAxes.empty()) {
    parts.push_back(DimSharding(dim.axes, dim.outer));
    parts.push_back(DimSharding(dim.outerAxes));
  }
  return parts;
}

/// How partial sums may pass through an op.
enum class Linearity {
  None,  // every operand must be whole sums
  All,   // linear in all float operands jointly (add, sub)
  One,   // linear in any one float operand (mul)
  First, // linear in operand 0 only (div)
  Unary, // linear in its one operand (neg, cast, data movement)
};

/// The partial axes of the result, and which operands keep theirs.
void planPartials(Operation *op, ArrayRef<TensorSharding> in, Linearity lin,
                  Plan &plan) {
  MeshAxes resultPartial;
  SmallVector<bool> keep(in.size(), false);
  auto floats = [&](unsigned i) { return isFloat(op->getOperand(i)); };
  switch (lin) {
  case Linearity::None:
    break;
  case Linearity::Unary:
    resultPartial = in[0].partial;
    keep[0] = true;
    break;
  case Linearity::All: {
    bool same = true;
    for (unsigned i = 0; i < in.size(); ++i)
      if (floats(i) && in[i].partial != in[0].partial)
        same = false;
    if (same && !in[0].partial.empty()) {
      resultPartial = in[0].partial;
      keep.assign(in.size(), true);
    }
    break;
  }
  case Linearity::One:
  case Linearity::First: {
    int partialOperand = -1, count = 0;
    for (unsigned i = 0; i < in.size(); ++i)
      if (!in[i].partial.empty()) {
        partialOperand = i;
        ++count;
      }
    if (count == 1 && (lin == Linearity::One || partialOperand == 0)) {
      resultPartial = in[partialOperand].partial;
      keep[partialOperand] = true;
    }
    break;
  }
  }
  // An operand that keeps its partial sums is taken as it is (rules that
  // build their operands' shardings afresh, like matmul's, start with none):
  // summing it first and passing its sums on too would count them twice.
  for (unsigned i = 0; i < in.size(); ++i)
    plan.operands[i].partial = keep[i] ? in[i].partial : MeshAxes();
  for (TensorSharding &r : plan.results)
    r.partial = resultPartial;
}

/// Elementwise ops with numpy broadcasting (also broadcast_to and the
/// optimizer updates): each result dim takes the split of the first operand
/// that has that dim at full size; operands follow it, broadcast dims stay
/// whole. With `finest` (the optimizer updates), the split over the most
/// axes instead: ZeRO keeps the optimizer state split over [tp, dp] where
/// the parameter is split over tp, and the update runs on the state's
/// block (the gradient's partial sum reduce-scattered to it, the new
/// parameter gathered over dp alone), not on the parameter's with the
/// state gathered. The gradient (operand 1) does not choose there: the
/// update runs where the parameter and its state are stored, and a
/// gradient split otherwise (over the sequence-parallel tokens, a position
/// embedding's) is gathered once rather than the new parameter and each
/// state tensor after the update.
Plan elementwise(Operation *op, ArrayRef<TensorSharding> in, Linearity lin,
                 bool finest = false) {
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  int64_t rank = resultType.getRank();
  SmallVector<DimSharding, 4> dims(rank);
  for (int64_t d = 0; d < rank; ++d)
    for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
      RankedTensorType t = tensorType(operand);
      int64_t od = d - (rank - t.getRank());
      if (od < 0 || t.getDimSize(od) != resultType.getDimSize(d))
        continue;
      const DimSharding &split = in[i].dims[od];
      if (split.empty() || (finest && i == 1))
        continue;
      if (!finest) {
        dims[d] = split;
        break;
      }
      if (dims[d].empty() || split.axes.size() > dims[d].axes.size())
        dims[d] = split;
    }
  MeshAxes used;
  dedupeAxes(dims, used);
  Plan plan;
  for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
    RankedTensorType t = tensorType(operand);
    TensorSharding s = TensorSharding::replicated(t.getRank());
    s.partial = in[i].partial;
    for (int64_t od = 0; od < t.getRank(); ++od) {
      int64_t d = od + (rank - t.getRank());
      if (t.getDimSize(od) == resultType.getDimSize(d))
        s.dims[od] = dims[d];
    }
    plan.operands.push_back(s);
  }
  for (Value r : op->getResults()) {
    TensorSharding s = TensorSharding::replicated(tensorType(r).getRank());
    if (tensorType(r).getShape() == resultType.getShape())
      s.dims.assign(dims.begin(), dims.end());
    plan.results.push_back(s);
  }
  planPartials(op, in, lin, plan);
  return plan;
}

/// Ops that work along some dims and keep the others' splits: `whole` are
/// the dims (of operand 0 and result 0, same rank) that must be complete.
/// Other operands are whole unless they have the result's shape. The split
/// kept is the finest of the operands that have it (a concat of a learned
/// token broadcast over the whole batch and the batch's patches, ViT's:
/// the token is cut to the rank's rows, the patches are not gathered).
Plan alongDims(Operation *op, ArrayRef<TensorSharding> in,
               ArrayRef<int64_t> whole, Linearity lin = Linearity::None) {
  RankedTensorType first = tensorType(op->getOperand(0));
  SmallVector<int64_t> keep;
  for (int64_t d = 0; d < first.getRank(); ++d)
    if (!llvm::is_contained(whole, d))
      keep.push_back(d);
  // A value follows operand 0's split when it matches it outside the
  // dims kept whole (a concat's operands, a split's results differ along
  // the axis only).
  auto follows = [&](Value v) {
    RankedTensorType t = tensorType(v);
    if (t.getRank() != first.getRank())
      return false;
    for (int64_t d : keep)
      if (t.getDimSize(d) != first.getDimSize(d))
        return false;
    return true;
  };
  auto splitAxes = [&](const TensorSharding &s) {
    size_t n = 0;
    for (int64_t d : keep)
      n += s.dims[d].allAxes().size();
    return n;
  };
  size_t from = 0;
  for (auto [i, operand] : llvm::enumerate(op->getOperands()))
    if (i > 0 && follows(operand) && splitAxes(in[i]) > splitAxes(in[from]))
      from = i;
  TensorSharding main = wholeExcept(in[from], keep, true);
  Plan plan;
  for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
    if (follows(operand)) {
      TensorSharding s = main;
      s.partial = in[i].partial;
      plan.operands.push_back(s);
    } else {
      plan.operands.push_back(
          TensorSharding::replicated(tensorType(operand).getRank()));
    }
  }
  for (Value r : op->getResults()) {
    TensorSharding s =
        follows(r) ? main : TensorSharding::replicated(tensorType(r).getRank());
    s.partial.clear();
    plan.results.push_back(s);
  }
  planPartials(op, in, lin, plan);
  return plan;
}

/// weft.attention and its gradient: the leading (batch, head) dims split
/// as the query's; each problem's rows and head dims stay whole. Every
/// tensor has the query's rank except lse (the query's without its last
/// dim), whose leading dims follow too.
Plan attention(Operation *op, ArrayRef<TensorSharding> in) {
  const int64_t rank = tensorType(op->getOperand(0)).getRank();
  auto seqMajorAttr = op->getAttrOfType<BoolAttr>("seq_major");
  const bool seqMajor = seqMajorAttr && seqMajorAttr.getValue();
  // The problem dims (batch and heads) of the query-shaped tensors; lse
  // ([..., H, Sq] when seq-major) has the heads one dim earlier.
  SmallVector<int64_t> leading;
  for (int64_t d = 0; d + (seqMajor ? 3 : 2) < rank; ++d)
    leading.push_back(d);
  if (seqMajor)
    leading.push_back(rank - 2);
  const TensorSharding main = wholeExcept(in[0], leading);
  auto like = [&](Value v) {
    const int64_t r = tensorType(v).getRank();
    TensorSharding s = TensorSharding::replicated(r);
    for (int64_t d : leading)
      s.dims[seqMajor && r == rank - 1 && d == rank - 2 ? rank - 3 : d] =
          main.dims[d];
    return s;
  };
  Plan plan;
  for (Value operand : op->getOperands())
    plan.operands.push_back(like(operand));
  for (Value r : op->getResults())
    plan.results.push_back(like(r));
  return plan;
}

/// Leading dims [0, axis) of operand 0 split; a result of the shape of the
/// trailing dims (a norm's scale gradient) is a partial sum over those axes.
Plan rowwise(Operation *op, ArrayRef<TensorSharding> in, int64_t axis) {
  RankedTensorType x = tensorType(op->getOperand(0));
  SmallVector<int64_t> whole;
  for (int64_t d = axis; d < x.getRank(); ++d)
    whole.push_back(d);
  Plan plan = alongDims(op, in, whole);
  MeshAxes rowAxes;
  for (int64_t d = 0; d < axis; ++d)
    rowAxes.append(plan.operands[0].dims[d].allAxes());
  for (auto [i, r] : llvm::enumerate(op->getResults()))
    if (tensorType(r).getShape() != x.getShape())
      plan.results[i].partial = rowAxes;
  return plan;
}

Plan matmul(MatMulOp op, ArrayRef<TensorSharding> in) {
  RankedTensorType a = tensorType(op.getLhs()), b = tensorType(op.getRhs());
  RankedTensorType c = op.getType();
  int64_t ra = a.getRank(), rb = b.getRank(), rc = c.getRank();
  bool ta = op.getTransposeA(), tb = op.getTransposeB();
  int64_t aM = ta ? ra - 1 : ra - 2, aK = ta ? ra - 2 : ra - 1;
  int64_t bK = tb ? rb - 1 : rb - 2, bN = tb ? rb - 2 : rb - 1;
  Plan plan;
  plan.operands = {TensorSharding::replicated(ra),
                   TensorSharding::replicated(rb)};
  TensorSharding result = TensorSharding::replicated(rc);
  // A 2-D right operand is a weight shared by the whole batch: its split
  // of the output features (tensor parallelism) wins over a split of the
  // activations' rows on the same axis, which are gathered instead
  // (sequence parallelism's all_gather before a column-parallel product).
  bool weightFirst = rb == 2;
  MeshAxes used;
  if (weightFirst)
    used = in[1].dims[bN].allAxes();
  // Batch dims broadcast like elementwise operands.
  for (int64_t d = 0; d < rc - 2; ++d) {
    int64_t da = d - (rc - ra), db = d - (rc - rb);
    DimSharding axes;
    if (da >= 0 && a.getDimSize(da) == c.getDimSize(d))
      axes = in[0].dims[da];
    if (axes.empty() && db >= 0 && b.getDimSize(db) == c.getDimSize(d))
      axes = in[1].dims[db];
    SmallVector<DimSharding, 1> one = {axes};
    dedupeAxes(one, used);
    result.dims[d] = one[0];
    if (da >= 0 && a.getDimSize(da) == c.getDimSize(d))
      plan.operands[0].dims[da] = one[0];
    if (db >= 0 && b.getDimSize(db) == c.getDimSize(d))
      plan.operands[1].dims[db] = one[0];
  }
  // The contraction: split the same way on both sides leaves partial sums.
  // Sides that share one part of a split twice keep that part (a weight's
  // gradient over rows of [sequence, batch]: the sequence-parallel side,
  // split over [tp, dp], is gathered over tp only; the sum stays partial
  // over dp).
  DimSharding k;
  for (const DimSharding &ka : partsOf(in[0].dims[aK])) {
    if (!k.empty())
      break;
    for (const DimSharding &kb : partsOf(in[1].dims[bK]))
      if (ka == kb && !ka.empty()) {
        SmallVector<DimSharding, 1> one = {ka};
        dedupeAxes(one, used);
        k = one[0];
        break;
      }
  }
  plan.operands[0].dims[aK] = k;
  plan.operands[1].dims[bK] = k;
  SmallVector<DimSharding, 2> mn = {in[0].dims[aM], in[1].dims[bN]};
  if (weightFirst) {
    MutableArrayRef<DimSharding> m(mn.data(), 1);
    dedupeAxes(m, used);
  } else {
    dedupeAxes(mn, used);
  }
  plan.operands[0].dims[aM] = result.dims[rc - 2] = mn[0];
  plan.operands[1].dims[bN] = result.dims[rc - 1] = mn[1];
  result.partial = k.allAxes();
  plan.results.push_back(result);
  // Linear in either operand: one partial operand passes through.
  TensorSharding withK = plan.results[0];
  planPartials(op, in, Linearity::One, plan);
  for (MeshAxis axis : withK.partial)
    if (!llvm::is_contained(plan.results[0].partial, axis))
      plan.results[0].partial.push_back(axis);
  return plan;
}

/// `s` with every dim split over any of `axes` made whole.
template <typename Factors>
SmallVector<TensorSharding, 1> wholeInputsOf(const TensorSharding &s,
                                             const Factors &factors) {
  TensorSharding t = s;
  for (DimSharding &dim : t.dims)
    for (const auto &f : factors)
      if (llvm::any_of(f.axes, [&](MeshAxis a) {
            return llvm::is_contained(dim.allAxes(), a);
          }))
        dim.clear();
  return {t};
}

/// A reshape moves splits as factors of the flat index. Each split dim
/// contributes its `rest` factor (stride: the elements after the dim; size
/// rest) split over `axes`, and with `outerAxes` its `outer` factor too. A
/// factor lands in the output dim that holds its major end; when it
/// straddles a boundary, its split moves to the part of it inside that dim
/// where the blocks divide that part (heads of [batch, heads * dims] ->
/// [batch * heads, dims]). An output dim takes at most two factors: the
/// minor one as its split `rest`, the major one, which must then start the
/// dim, as its split `outer` (outerAxes). A split dim any of whose factors
/// cannot land is made whole on the operand instead.
Plan reshape(ReshapeOp op, ArrayRef<TensorSharding> in, const Mesh &mesh) {
  ArrayRef<int64_t> from = op.getInput().getType().getShape();
  ArrayRef<int64_t> to = op.getType().getShape();
  TensorSharding src = in[0];
  TensorSharding dst = TensorSharding::replicated(to.size());
  dst.partial = src.partial;
  auto strides = [](ArrayRef<int64_t> shape) {
    SmallVector<int64_t> st(shape.size(), 1);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
      st[d] = st[d + 1] * shape[d + 1];
    return st;
  };
  SmallVector<int64_t> inStride = strides(from), outStride = strides(to);
  struct Factor {
    int64_t stride, size;
    MeshAxes axes;
  };
  // Where each factor lands: (output dim, factor at its refined place).
  SmallVector<SmallVector<Factor, 2>> landed(to.size());
  for (auto [d, dim] : llvm::enumerate(in[0].dims)) {
    if (dim.empty())
      continue;
    SmallVector<Factor, 2> factors;
    int64_t rest = from[d] / dim.outer;
    factors.push_back({inStride[d], rest, dim.axes});
    if (!dim.outerAxes.empty())
      factors.push_back({inStride[d] * rest, dim.outer, dim.outerAxes});
    SmallVector<std::pair<int64_t, Factor>, 2> places;
    for (const Factor &f : factors) {
      int64_t top = f.stride * f.size, g = mesh.groupSize(f.axes);
      std::optional<std::pair<int64_t, Factor>> place;
      for (size_t k = 0; k < to.size(); ++k) {
        int64_t lo = outStride[k], hi = outStride[k] * to[k];
        if (!(lo < top && top <= hi) || top % lo != 0)
          continue;
        Factor refined = f;
        if (f.stride < lo) {
          if (lo % f.stride != 0)
            break;
          refined = {lo, top / lo, f.axes};
        } else if (f.stride % lo != 0) {
          break;
        }
        if (refined.size % g == 0)
          place = std::make_pair(static_cast<int64_t>(k), refined);
        break;
      }
      if (!place)
        break;
      places.push_back(*place);
    }
    if (places.size() != factors.size()) {
      src.dims[d].clear();
      continue;
    }
    for (auto &[k, f] : places)
      landed[k].push_back(f);
  }
  for (auto [k, fs] : llvm::enumerate(landed)) {
    if (fs.empty())
      continue;
    llvm::sort(fs, [](const Factor &a, const Factor &b) {
      return a.stride > b.stride;
    });
    int64_t lo = outStride[k], hi = outStride[k] * to[k];
    const Factor &minor = fs.back();
    int64_t outer = hi / (minor.stride * minor.size);
    if (fs.size() == 1) {
      dst.dims[k] = DimSharding(minor.axes, outer);
      continue;
    }
    const Factor &major = fs.front();
    if (fs.size() == 2 && major.stride * major.size == hi && outer > 1 &&
        minor.stride >= lo) {
      dst.dims[k] = DimSharding(minor.axes, outer, major.axes);
      continue;
    }
    // Not representable: the operand's dims behind these factors are made
    // whole (the partitioner gathers them) and the result dim stays whole.
    return reshape(op, wholeInputsOf(in[0], fs), mesh);
  }
  Plan plan;
  plan.operands.push_back(src);
  plan.results.push_back(dst);
  return plan;
}

Plan transpose(TransposeOp op, ArrayRef<TensorSharding> in) {
  Plan plan;
  plan.operands.push_back(in[0]);
  TensorSharding r = TensorSharding::replicated(op.getPermutation().size());
  for (auto [d, p] : llvm::enumerate(op.getPermutation()))
    r.dims[d] = in[0].dims[p];
  r.partial = in[0].partial;
  plan.results.push_back(r);
  return plan;
}

Plan reduce(Operation *op, ArrayRef<int64_t> axes, bool keepdims,
            ArrayRef<TensorSharding> in, const Mesh &mesh) {
  bool isMax = isa<ReduceMaxOp>(op);
  TensorSharding operand = in[0];
  TensorSharding result;
  MeshAxes reducedAxes;
  for (auto [d, dim] : llvm::enumerate(in[0].dims)) {
    bool reduced = llvm::is_contained(axes, static_cast<int64_t>(d));
    if (!reduced) {
      result.dims.push_back(dim);
      continue;
    }
    if (isMax)
      operand.dims[d].clear();
    else
      reducedAxes.append(dim.allAxes());
    if (keepdims)
      result.dims.push_back({});
  }
  Plan plan;
  if (isMax)
    operand.partial.clear();
  plan.operands.push_back(operand);
  result.partial = operand.partial;
  result.partial.append(reducedAxes.begin(), reducedAxes.end());
  plan.results.push_back(result);
  if (isa<ReduceMeanOp>(op) && !reducedAxes.empty()) {
    plan.fixup = Plan::Fixup::Scale;
    plan.scale = 1.0 / static_cast<double>(mesh.groupSize(reducedAxes));
  }
  return plan;
}

/// A partial sum that passes through an op (linear in a partial operand)
/// cannot stay partial over a mesh axis the result is also split over
/// (say a partial gradient times a column-split weight): the operands are
/// summed over such axes first.
Plan completeOverSplitAxes(Plan plan) {
  MeshAxes clash;
  for (const TensorSharding &r : plan.results) {
    for (MeshAxis a : r.partial)
      for (const DimSharding &d : r.dims)
        if (llvm::is_contained(d.allAxes(), a) && !llvm::is_contained(clash, a))
          clash.push_back(a);
  }
  if (clash.empty())
    return plan;
  auto drop = [&](TensorSharding &t) {
    llvm::erase_if(t.partial,
                   [&](MeshAxis a) { return llvm::is_contained(clash, a); });
  };
  for (TensorSharding &t : plan.operands)
    drop(t);
  for (TensorSharding &t : plan.results)
    drop(t);
  return plan;
}

} // namespace

FailureOr<ShardingPlan> weft::planSharding(Operation *op,
                                           ArrayRef<TensorSharding> in,
                                           const Mesh &mesh,
                                           std::string &error) {
  using L = Linearity;
  std::optional<Plan> plan =
      llvm::TypeSwitch<Operation *, std::optional<Plan>>(op)
          .Case<AddOp, SubOp>(
              [&](Operation *o) { return elementwise(o, in, L::All); })
          .Case<MulOp>([&](Operation *o) { return elementwise(o, in, L::One); })
          .Case<DivOp>(
              [&](Operation *o) { return elementwise(o, in, L::First); })
          .Case<NegOp, CastOp, BroadcastToOp>(
              [&](Operation *o) { return elementwise(o, in, L::Unary); })
          .Case<SqrtOp, ExpOp, LogOp, TanhOp, ErfOp, ReluOp, SigmoidOp, SinOp,
                CosOp, FloorOp, CeilOp, RoundOp, AtanOp, NotOp, PowOp, RemOp,
                MaxOp, MinOp, AndOp, OrOp, EqualOp, LessOp, GreaterOp,
                LessEqualOp, GreaterEqualOp, WhereOp>(
              [&](Operation *o) { return elementwise(o, in, L::None); })
          .Case<AdamWUpdateOp, SgdUpdateOp>([&](Operation *o) {
            return elementwise(o, in, L::None, /*finest=*/true);
          })
          .Case<MatMulOp>([&](MatMulOp o) { return matmul(o, in); })
          .Case<ReshapeOp>([&](ReshapeOp o) { return reshape(o, in, mesh); })
          .Case<TransposeOp>([&](TransposeOp o) { return transpose(o, in); })
          .Case<ReduceSumOp, ReduceMeanOp, ReduceMaxOp>([&](Operation *o) {
            auto axes = o->getAttrOfType<DenseI64ArrayAttr>("axes");
            auto keep = o->getAttrOfType<BoolAttr>("keepdims");
            return reduce(o, axes.asArrayRef(), !keep || keep.getValue(), in,
                          mesh);
          })
          .Case<SoftmaxOp, LogSoftmaxOp>([&](Operation *o) {
            return alongDims(o, in,
                             {o->getAttrOfType<IntegerAttr>("axis").getInt()});
          })
          .Case<SoftmaxGradOp>([&](SoftmaxGradOp o) {
            return alongDims(o, in, {static_cast<int64_t>(o.getAxis())});
          })
          .Case<AttentionOp, AttentionGradOp>(
              [&](Operation *o) { return attention(o, in); })
          .Case<LayerNormOp>(
              [&](LayerNormOp o) { return rowwise(o, in, o.getAxis()); })
          .Case<LayerNormGradOp>(
              [&](LayerNormGradOp o) { return rowwise(o, in, o.getAxis()); })
          // Every dim may stay split; the partitioner moves the offsets to
          // the rank's block (its draws are the whole tensor's).
          .Case<DropoutOp, RandomOp>(
              [&](Operation *o) { return alongDims(o, in, {}); })
          .Case<TriluOp>([&](TriluOp o) {
            int64_t r = o.getType().getRank();
            return alongDims(o, in, {r - 2, r - 1}, L::Unary);
          })
          .Case<ConcatOp, SplitOp>([&](Operation *o) {
            return alongDims(o, in,
                             {o->getAttrOfType<IntegerAttr>("axis").getInt()},
                             L::All);
          })
          .Case<SliceOp>([&](Operation *o) { return window(o, in, false); })
          .Case<SliceGradOp>([&](Operation *o) { return window(o, in, true); })
          .Case<GatherOp>([&](GatherOp o) { return gather(o, in); })
          .Case<TopKOp>([&](TopKOp o) {
            return alongDims(o, in, {static_cast<int64_t>(o.getAxis())});
          })
          .Case<ScatterAddOp>([&](ScatterAddOp o) { return scatterAdd(o, in); })
          .Case<ConvOp, ConvGradInputOp, ConvGradWeightOp, MaxPoolOp, AvgPoolOp,
                MaxPoolGradOp, AvgPoolGradOp, BatchNormOp>(
              [&](Operation *o) { return batchOnly(o, in); })
          .Default([&](Operation *) { return std::nullopt; });
  if (plan)
    return completeOverSplitAxes(*plan);
  FailureOr<Plan> ce = failure();
  if (auto fwd = dyn_cast<SoftmaxCrossEntropyOp>(op))
    ce = crossEntropy(fwd, in, error);
  else if (auto grad = dyn_cast<SoftmaxCrossEntropyGradOp>(op))
    ce = crossEntropy(grad, in, error);
  else
    error = "has no sharding rule";
  if (failed(ce))
    return failure();
  return completeOverSplitAxes(*ce);
}
