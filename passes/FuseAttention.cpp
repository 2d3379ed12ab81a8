//===- FuseAttention.cpp - Scaled dot-product attention as one op ---------===//
//
// Attention written out as ops keeps a batch x heads x Sq x Sk score tensor
// (and, training, its softmax and their gradients) in memory several times
// over: 100 M floats per layer for GPT-2 small at batch 8. weft.attention
// computes the same thing a block of queries at a time. The pattern, from
// the softmax outwards:
//
//   scores = matmul(q, k^T)          [q may be q0 * c or q0 / c]
//            [cast to f32]           (mixed precision's widening cast)
//            [* c or / c]            (a scalar constant)
//            [+ mask]                (a constant causal mask)
//   p      = softmax(scores, last axis)
//            [cast to q's dtype]     (mixed precision's narrowing cast)
//   out    = matmul(p, v)
//
// Each intermediate must have that one reader, or fusing would compute it
// twice. The keys come transposed by the product's flag or laid out as
// [..., D, Sk], in which case a transpose gives them as [..., Sk, D].
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/weft/ElementFolding.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"

#include <cmath>
#include <functional>
#include <tuple>

namespace weft {
#define GEN_PASS_DEF_FUSEATTENTION
#include "passes/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

/// A mask entry at or below this is "never seen": e^(s + m) underflows to
/// exactly 0 in f32 for any score the softmax could otherwise keep.
constexpr double kMaskedAtMost = -1e4;

RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// The value of a one-element float constant.
std::optional<double> scalarConstant(Value v) {
  auto c = v.getDefiningOp<ConstantOp>();
  if (!c)
    return std::nullopt;
  DenseElementsAttr dense = folding::denseOf(c.getValue());
  if (!dense || dense.getNumElements() != 1 ||
      !isa<FloatType>(dense.getElementType()))
    return std::nullopt;
  return (*dense.getValues<APFloat>().begin()).convertToDouble();
}

/// The scale a multiply or divide by a scalar constant applies to its other
/// operand, and that operand; nullopt when `op` is not one.
std::optional<std::pair<double, Value>> scaling(Operation *op) {
  if (auto mul = dyn_cast_or_null<MulOp>(op)) {
    if (auto c = scalarConstant(mul.getRhs()))
      return std::make_pair(*c, mul.getLhs());
    if (auto c = scalarConstant(mul.getLhs()))
      return std::make_pair(*c, mul.getRhs());
  }
  if (auto div = dyn_cast_or_null<DivOp>(op))
    if (auto c = scalarConstant(div.getRhs()); c && *c != 0.0)
      return std::make_pair(1.0 / *c, div.getLhs());
  return std::nullopt;
}

/// Entry (i, j) of a constant mask of shape [..., Sq, Sk] whose leading dims
/// are all 1, as a function; null when the mask is not such a constant (a
/// weft.constant, or a weft.trilu of one).
std::function<double(int64_t, int64_t)> maskEntries(Value mask, int64_t sq,
                                                    int64_t sk) {
  auto type = tensorType(mask);
  const int64_t rank = type.getRank();
  if (rank < 2 || type.getDimSize(rank - 2) != sq ||
      type.getDimSize(rank - 1) != sk ||
      llvm::any_of(type.getShape().drop_back(2),
                   [](int64_t d) { return d != 1; }))
    return nullptr;
  Value source = mask;
  auto trilu = mask.getDefiningOp<TriluOp>();
  if (trilu)
    source = trilu.getInput();
  auto c = source.getDefiningOp<ConstantOp>();
  if (!c)
    return nullptr;
  DenseElementsAttr dense = folding::denseOf(c.getValue());
  if (!dense || !isa<FloatType>(dense.getElementType()))
    return nullptr;
  std::vector<double> values;
  values.reserve(dense.getNumElements());
  for (const APFloat &v : dense.getValues<APFloat>())
    values.push_back(v.convertToDouble());
  const bool splat = values.size() == 1;
  const bool upper = trilu && trilu.getUpper();
  const int64_t k = trilu ? trilu.getK() : 0;
  return [values = std::move(values), splat, trilu = bool(trilu), upper, k,
          sk](int64_t i, int64_t j) {
    if (trilu && (upper ? j - i < k : j - i > k))
      return 0.0; // trilu zeroes this triangle
    return values[splat ? 0 : i * sk + j];
  };
}

/// isCausalMask's verdicts by (the mask's type, its constant, trilu's kind
/// and diagonal, Sq, Sk): a model's layers share one mask or equal ones,
/// and a 2048 x 2048 mask takes a while to read, so each is read once.
using MaskKey =
    std::tuple<const void *, const void *, int64_t, int64_t, int64_t, int64_t>;
using MaskVerdicts = DenseMap<MaskKey, bool>;

/// Whether `mask` is a constant causal mask for Sq x Sk scores: 0 where
/// j <= i + Sk - Sq, at most kMaskedAtMost elsewhere.
bool isCausalMask(Value mask, int64_t sq, int64_t sk, MaskVerdicts &verdicts) {
  if (sq > sk) // a query that sees no key: the written-out softmax is uniform
    return false;
  auto trilu = mask.getDefiningOp<TriluOp>();
  auto constant = (trilu ? trilu.getInput() : mask).getDefiningOp<ConstantOp>();
  if (!constant)
    return false;
  const MaskKey key(mask.getType().getAsOpaquePointer(),
                    constant.getValue().getAsOpaquePointer(),
                    trilu ? (trilu.getUpper() ? 2 : 1) : 0,
                    trilu ? trilu.getK() : 0, sq, sk);
  if (auto known = verdicts.find(key); known != verdicts.end())
    return known->second;
  bool &verdict = verdicts[key];
  auto entry = maskEntries(mask, sq, sk);
  if (!entry)
    return verdict = false;
  for (int64_t i = 0; i < sq; ++i)
    for (int64_t j = 0; j < sk; ++j) {
      const double m = entry(i, j);
      if (j <= i + sk - sq ? m != 0.0 : !(m <= kMaskedAtMost))
        return verdict = false;
    }
  return verdict = true;
}

/// The one reader of `v`, or null.
Operation *soleUser(Value v) {
  return v.hasOneUse() ? *v.getUsers().begin() : nullptr;
}

struct Match {
  MatMulOp scores, output;
  Value query, key, value;
  bool keyTransposed = false;   // key is [..., D, Sk]
  bool valueTransposed = false; // value is [..., Dv, Sk]
  double scale = 1.0;
  bool causal = false;
  SmallVector<Operation *> erase; // from the output product backwards
};

/// Walks from a softmax over the last axis to the two products around it.
std::optional<Match> match(SoftmaxOp softmax, MaskVerdicts &verdicts) {
  Match m;
  RankedTensorType type = softmax.getType();
  const int64_t rank = type.getRank();
  if (rank < 2 || static_cast<int64_t>(softmax.getAxis()) != rank - 1 ||
      !type.hasStaticShape())
    return std::nullopt;
  // Forward: [cast] then the product by the values.
  Operation *next = soleUser(softmax.getResult());
  SmallVector<Operation *> after;
  if (auto narrow = dyn_cast_or_null<CastOp>(next)) {
    after.push_back(narrow);
    next = soleUser(narrow.getResult());
  }
  auto output = dyn_cast_or_null<MatMulOp>(next);
  if (!output || output.getTransposeA() ||
      output.getLhs() != (after.empty() ? Value(softmax.getResult())
                                        : after.back()->getResult(0)))
    return std::nullopt;
  m.output = output;
  m.value = output.getRhs();
  m.valueTransposed = output.getTransposeB();
  // Backward: [+ mask] [* scale] [widening cast] then the product of the
  // queries by the keys.
  Value x = softmax.getInput();
  SmallVector<Operation *> before;
  auto single = [&](Value v) { return v.hasOneUse(); };
  Value mask;
  if (auto add = x.getDefiningOp<AddOp>(); add && single(x)) {
    // The mask is the constant (or trilu) operand, the scores the other.
    auto constantLike = [](Value v) {
      return v.getDefiningOp<ConstantOp>() || v.getDefiningOp<TriluOp>();
    };
    bool lhsIsScores = !constantLike(add.getLhs());
    mask = lhsIsScores ? add.getRhs() : add.getLhs();
    before.push_back(add);
    x = lhsIsScores ? add.getLhs() : add.getRhs();
  }
  if (auto s = scaling(x.getDefiningOp());
      s && single(x) && tensorType(s->second) == type) {
    m.scale = s->first;
    before.push_back(x.getDefiningOp());
    x = s->second;
  }
  if (auto widen = x.getDefiningOp<CastOp>(); widen && single(x)) {
    before.push_back(widen);
    x = widen.getInput();
  }
  auto scores = x.getDefiningOp<MatMulOp>();
  if (!scores || !single(x) || scores.getTransposeA())
    return std::nullopt;
  before.push_back(scores);
  m.scores = scores;
  m.query = scores.getLhs();
  m.key = scores.getRhs();
  m.keyTransposed = !scores.getTransposeB();
  // A scale on the queries instead of the scores.
  if (m.scale == 1.0)
    if (auto s = scaling(m.query.getDefiningOp());
        s && m.query.hasOneUse() &&
        tensorType(s->second) == tensorType(m.query)) {
      m.scale = s->first;
      before.push_back(m.query.getDefiningOp());
      m.query = s->second;
    }
  // One dtype for the operands and the output, the leading dims alike.
  auto q = tensorType(m.query), k = tensorType(m.key), v = tensorType(m.value),
       out = output.getType();
  Type dtype = q.getElementType();
  if (k.getElementType() != dtype || v.getElementType() != dtype ||
      out.getElementType() != dtype || !q.hasStaticShape() ||
      !k.hasStaticShape() || !v.hasStaticShape() || q.getRank() != rank ||
      k.getRank() != rank || v.getRank() != rank ||
      q.getShape().drop_back(2) != type.getShape().drop_back(2) ||
      k.getShape().drop_back(2) != type.getShape().drop_back(2) ||
      v.getShape().drop_back(2) != type.getShape().drop_back(2))
    return std::nullopt;
  // Mixed precision: both casts or neither, between f32 and q's dtype.
  bool widened =
      llvm::any_of(before, [](Operation *o) { return isa<CastOp>(o); });
  if (widened != !after.empty() || (widened && !type.getElementType().isF32()))
    return std::nullopt;
  if (!widened && type.getElementType() != dtype)
    return std::nullopt;
  const int64_t sq = type.getDimSize(rank - 2), sk = type.getDimSize(rank - 1);
  if (mask) {
    if (!isCausalMask(mask, sq, sk, verdicts))
      return std::nullopt;
    m.causal = true;
  }
  m.erase.push_back(output);
  m.erase.append(after.rbegin(), after.rend());
  m.erase.push_back(softmax);
  m.erase.append(before.begin(), before.end());
  return m;
}

/// The permutation of `rank` dims that swaps dims i and j.
SmallVector<int64_t> swapPerm(int64_t rank, int64_t i, int64_t j) {
  SmallVector<int64_t> perm;
  for (int64_t d = 0; d < rank; ++d)
    perm.push_back(d);
  std::swap(perm[i], perm[j]);
  return perm;
}

/// `type` with dims i and j swapped.
RankedTensorType swapDims(RankedTensorType type, int64_t i, int64_t j) {
  SmallVector<int64_t> shape(type.getShape());
  std::swap(shape[i], shape[j]);
  return type.clone(shape);
}

/// `x` with its last two dims swapped.
Value swapLastTwo(OpBuilder &b, Location loc, Value x) {
  auto type = tensorType(x);
  const int64_t rank = type.getRank();
  return TransposeOp::create(
      b, loc, swapDims(type, rank - 2, rank - 1), x,
      b.getDenseI64ArrayAttr(swapPerm(rank, rank - 2, rank - 1)));
}

/// The permutation that swaps dims rank - 3 and rank - 2 (heads and
/// sequence), the others in place.
SmallVector<int64_t> headsSwap(int64_t rank) {
  return swapPerm(rank, rank - 3, rank - 2);
}

/// A seq-major operand: the tensor an operand is made from by transposes
/// that swap the heads and the sequence ([..., S, H, D] -> [..., H, S, D])
/// and, optionally, a cast (mixed precision's, which commutes with them)
/// to `castTo`.
struct SeqMajorSource {
  Value source;
  Type castTo; // the operand's element type when a cast was passed
};

/// `v`'s seq-major source, if it has one.
std::optional<SeqMajorSource> seqMajorSource(Value v) {
  const int64_t rank = tensorType(v).getRank();
  SmallVector<int64_t> perm; // v's dim d is x's dim perm[d]
  for (int64_t d = 0; d < rank; ++d)
    perm.push_back(d);
  Value x = v;
  Type castTo;
  while (true) {
    if (auto c = x.getDefiningOp<CastOp>(); c && !castTo) {
      castTo = tensorType(v).getElementType();
      x = c.getInput();
      continue;
    }
    auto t = x.getDefiningOp<TransposeOp>();
    if (!t)
      return std::nullopt;
    ArrayRef<int64_t> p = t.getPermutation();
    SmallVector<int64_t> composed;
    for (int64_t d = 0; d < rank; ++d)
      composed.push_back(p[perm[d]]);
    perm = composed;
    x = t.getInput();
    if (ArrayRef<int64_t>(perm) == ArrayRef<int64_t>(headsSwap(rank)))
      break;
  }
  // A cast right above the transposes counts too.
  if (auto c = x.getDefiningOp<CastOp>(); c && !castTo) {
    castTo = tensorType(v).getElementType();
    x = c.getInput();
  }
  if (castTo && tensorType(x).getElementType() == castTo)
    castTo = Type();
  return SeqMajorSource{x, castTo};
}

/// Erases `x` and the transposes and casts it was made from while nothing
/// reads them.
void eraseUnused(Value x) {
  while (x && x.use_empty()) {
    Operation *def = x.getDefiningOp();
    if (!def || !isa<TransposeOp, CastOp>(def))
      break;
    x = def->getOperand(0);
    def->erase();
  }
}

/// Rewrites `attention` (not seq-major, rank >= 4 with the heads the last
/// leading dim) to read seq-major operands when all three are transposes
/// of them; what read its result through the heads' merge (a transpose
/// back, or a cast and then one) reads the new result, anything else a
/// transpose of it. Erases what nothing reads any more.
void useSeqMajor(AttentionOp attention) {
  const int64_t rank = tensorType(attention.getQuery()).getRank();
  if (rank < 4 || attention.getSeqMajor())
    return;
  std::optional<SeqMajorSource> sources[3] = {
      seqMajorSource(attention.getQuery()), seqMajorSource(attention.getKey()),
      seqMajorSource(attention.getValue())};
  if (!sources[0] || !sources[1] || !sources[2])
    return;
  OpBuilder b(attention);
  Location loc = attention.getLoc();
  const SmallVector<int64_t> swap = headsSwap(rank);
  auto swapped = [&](RankedTensorType t) {
    return swapDims(t, rank - 3, rank - 2);
  };
  SmallVector<Value> operands;
  for (auto &src : sources) {
    Value x = src->source;
    if (src->castTo)
      x = CastOp::create(b, loc, tensorType(x).clone(src->castTo), x);
    operands.push_back(x);
  }
  auto out = tensorType(attention.getResult());
  auto fused = AttentionOp::create(
      b, loc, TypeRange{swapped(out), attention.getLse().getType()},
      operands[0], operands[1], operands[2], attention.getScaleAttr(),
      attention.getCausalAttr(), b.getBoolAttr(true));
  auto isMerge = [&](Operation *op) {
    auto t = dyn_cast<TransposeOp>(op);
    return t && t.getPermutation() == ArrayRef<int64_t>(swap);
  };
  for (Operation *user :
       llvm::make_early_inc_range(attention.getResult().getUsers())) {
    if (isMerge(user)) {
      user->getResult(0).replaceAllUsesWith(fused.getResult());
      user->erase();
      continue;
    }
    // Mixed precision's widening, then the merge.
    auto c = dyn_cast<CastOp>(user);
    if (!c || c->use_empty() || !llvm::all_of(c->getUsers(), isMerge))
      continue;
    OpBuilder after(c);
    Value wide =
        CastOp::create(after, c.getLoc(), swapped(tensorType(c.getResult())),
                       fused.getResult());
    for (Operation *merge : llvm::make_early_inc_range(c->getUsers())) {
      merge->getResult(0).replaceAllUsesWith(wide);
      merge->erase();
    }
    c->erase();
  }
  if (!attention.getResult().use_empty())
    attention.getResult().replaceAllUsesWith(TransposeOp::create(
        b, loc, out, fused.getResult(), b.getDenseI64ArrayAttr(swap)));
  attention.getLse().replaceAllUsesWith(fused.getLse());
  SmallVector<Value> old = {attention.getQuery(), attention.getKey(),
                            attention.getValue()};
  attention->erase();
  for (Value x : old)
    eraseUnused(x);
}

struct FuseAttentionPass
    : public weft::impl::FuseAttentionBase<FuseAttentionPass> {
  using FuseAttentionBase::FuseAttentionBase;
  void runOnOperation() override {
    SmallVector<SoftmaxOp> softmaxes;
    getOperation().walk([&](SoftmaxOp s) { softmaxes.push_back(s); });
    MaskVerdicts verdicts;
    for (SoftmaxOp s : softmaxes)
      if (std::optional<Match> m = match(s, verdicts))
        fuse(*m);
    if (!seqMajor)
      return;
    SmallVector<AttentionOp> attentions;
    getOperation().walk([&](AttentionOp a) { attentions.push_back(a); });
    for (AttentionOp a : attentions)
      useSeqMajor(a);
  }

  void fuse(Match &m) {
    OpBuilder b(m.output);
    Location loc = m.output.getLoc();
    Value key = m.keyTransposed ? swapLastTwo(b, loc, m.key) : m.key;
    Value value = m.valueTransposed ? swapLastTwo(b, loc, m.value) : m.value;
    auto q = tensorType(m.query);
    SmallVector<int64_t> lseShape(q.getShape().drop_back());
    auto attention = AttentionOp::create(
        b, loc,
        TypeRange{m.output.getType(),
                  RankedTensorType::get(lseShape, b.getF32Type())},
        m.query, key, value, b.getF64FloatAttr(m.scale),
        b.getBoolAttr(m.causal));
    m.output.getResult().replaceAllUsesWith(attention.getResult());
    // Users first: each op's one reader is erased before it.
    for (Operation *op : m.erase)
      op->erase();
  }
};

} // namespace
