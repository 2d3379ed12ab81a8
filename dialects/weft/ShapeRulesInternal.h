//===- ShapeRulesInternal.h - Helpers shared by the shape rules -*- C++ -*-===//
//
// Private to dialects/weft: the diagnostics and window arithmetic that the
// forward shape rules (ShapeRules.cpp) and the backward ops' rules
// (ShapeRulesGrad.cpp) share, so a backward op always agrees with its forward
// op on shapes.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_DIALECTS_WEFT_SHAPERULESINTERNAL_H
#define WEFT_DIALECTS_WEFT_SHAPERULESINTERNAL_H

#include "dialects/weft/ShapeRules.h"
#include "dialects/weft/WeftOps.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>

namespace weft::shape_rules {
using namespace mlir;

/// Reports inference errors at the op's location, worded like the op's own
/// verifier messages. Only the first error is reported: operands are
/// checked together, and one message per broken op is what users read.
class ShapeErrors {
public:
  ShapeErrors(std::optional<Location> loc, StringRef opName)
      : loc(loc), opName(opName) {}

  template <typename... Args> LogicalResult fail(Args &&...args) const {
    if (reported)
      return failure();
    reported = true;
    return emitOptionalError(loc, "'", opName, "' op ",
                             std::forward<Args>(args)...);
  }

  /// The type of `value` when it is a ranked tensor of static shape.
  FailureOr<RankedTensorType> tensor(Value value, StringRef name) const {
    if (!value)
      return fail("is missing operand '", name, "'");
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (!type)
      return fail(name, " must be a ranked tensor, got ", value.getType());
    if (!type.hasStaticShape())
      return fail(name, " must have a static shape, got ", type);
    return type;
  }

  /// A required array attribute that a builder may have left out.
  FailureOr<ArrayRef<int64_t>> array(DenseI64ArrayAttr attr,
                                     StringRef name) const {
    if (!attr)
      return fail("requires attribute '", name, "'");
    return attr.asArrayRef();
  }

  FailureOr<int64_t> integer(IntegerAttr attr, StringRef name) const {
    if (!attr)
      return fail("requires attribute '", name, "'");
    return attr.getValue().getSExtValue();
  }

private:
  std::optional<Location> loc;
  StringRef opName;
  mutable bool reported = false;
};

inline bool boolOr(BoolAttr attr, bool defaultValue) {
  return attr ? attr.getValue() : defaultValue;
}

/// "[2, 3]" for diagnostics.
inline std::string shapeString(ArrayRef<int64_t> shape) {
  std::string s = "[";
  llvm::raw_string_ostream os(s);
  llvm::interleaveComma(shape, os);
  os << "]";
  return s;
}

/// The window attributes of conv and the pools.
struct Window {
  ArrayRef<int64_t> kernel, strides, pads, dilations;
};

/// Checks the window attributes against the spatial rank of `input` and
/// computes [N, channels, out spatial...]. Pools also need each pad smaller
/// than the kernel (as onnxruntime enforces), so that no window covers
/// padding only.
LogicalResult inferWindowed(const ShapeErrors &errors, RankedTensorType input,
                            int64_t channels, const Window &window,
                            bool ceilMode, bool isPool,
                            SmallVectorImpl<Type> &results);

/// `dilations` is nullopt for avg_pool, which has none (all ones).
template <typename Adaptor>
LogicalResult inferPool(const ShapeErrors &errors, Adaptor adaptor,
                        std::optional<ArrayRef<int64_t>> dilations,
                        SmallVectorImpl<Type> &results) {
  FailureOr<RankedTensorType> input =
      errors.tensor(adaptor.getInput(), "input");
  if (failed(input))
    return failure();
  if (input->getRank() < 3)
    return errors.fail("input must have rank >= 3 (N, C, spatial dims), got ",
                       *input);
  const auto &props = adaptor.getProperties();
  FailureOr<ArrayRef<int64_t>> kernel =
      errors.array(props.kernel_shape, "kernel_shape");
  FailureOr<ArrayRef<int64_t>> strides = errors.array(props.strides, "strides");
  FailureOr<ArrayRef<int64_t>> pads = errors.array(props.pads, "pads");
  if (failed(kernel) || failed(strides) || failed(pads))
    return failure();
  SmallVector<int64_t> ones(input->getRank() - 2, 1);
  Window window{*kernel, *strides, *pads, dilations ? *dilations : ones};
  return inferWindowed(errors, *input, input->getDimSize(1), window,
                       boolOr(props.ceil_mode, false), /*isPool=*/true,
                       results);
}

/// The result types of weft.attention (result, lse), shared by its
/// gradient. With `seqMajor` the heads follow the sequence: query [...,
/// Sq, H, D], key [..., Sk, H, D], value [..., Sk, H, Dv], result [..., Sq,
/// H, Dv] and lse [..., H, Sq].
inline LogicalResult inferAttention(const ShapeErrors &errors, Value query,
                                    Value key, Value value, bool seqMajor,
                                    SmallVectorImpl<Type> &results) {
  FailureOr<RankedTensorType> q = errors.tensor(query, "query");
  FailureOr<RankedTensorType> k = errors.tensor(key, "key");
  FailureOr<RankedTensorType> v = errors.tensor(value, "value");
  if (failed(q) || failed(k) || failed(v))
    return failure();
  const int64_t rank = q->getRank();
  const int64_t minRank = seqMajor ? 3 : 2;
  if (rank < minRank || k->getRank() != rank || v->getRank() != rank)
    return errors.fail("query, key and value must have one rank of at least ",
                       minRank, ", got ", *q, ", ", *k, " and ", *v);
  if (k->getElementType() != q->getElementType() ||
      v->getElementType() != q->getElementType())
    return errors.fail("query, key and value must have one element type, got ",
                       *q, ", ", *k, " and ", *v);
  ArrayRef<int64_t> qs = q->getShape(), ks = k->getShape(), vs = v->getShape();
  // The sequence dim, and the dims before it that every tensor shares.
  const int64_t seq = seqMajor ? rank - 3 : rank - 2;
  if (qs.take_front(seq) != ks.take_front(seq) ||
      qs.take_front(seq) != vs.take_front(seq))
    return errors.fail("query, key and value must have the same leading "
                       "dims, got ",
                       *q, ", ", *k, " and ", *v);
  if (seqMajor &&
      (ks[rank - 2] != qs[rank - 2] || vs[rank - 2] != qs[rank - 2]))
    return errors.fail("query, key and value must have the same heads (dim ",
                       rank - 2, "), got ", *q, ", ", *k, " and ", *v);
  if (ks.back() != qs.back())
    return errors.fail("key must have query's last dim ", qs.back(), ", got ",
                       *k);
  if (vs[seq] != ks[seq])
    return errors.fail("value must have as many rows as key (", ks[seq],
                       "), got ", *v);
  SmallVector<int64_t> out(qs);
  out.back() = vs.back();
  results.push_back(RankedTensorType::get(out, q->getElementType()));
  SmallVector<int64_t> lse(qs.drop_back());
  if (seqMajor)
    std::swap(lse[rank - 3], lse[rank - 2]); // [..., H, Sq]
  results.push_back(
      RankedTensorType::get(lse, Float32Type::get(q->getContext())));
  return success();
}

/// The result type of weft.softmax_cross_entropy, shared by its gradient.
template <typename Adaptor>
FailureOr<RankedTensorType> inferCrossEntropyLoss(const ShapeErrors &errors,
                                                  Adaptor adaptor) {
  FailureOr<RankedTensorType> scores =
      errors.tensor(adaptor.getScores(), "scores");
  FailureOr<RankedTensorType> labels =
      errors.tensor(adaptor.getLabels(), "labels");
  if (failed(scores) || failed(labels))
    return failure();
  if (scores->getRank() < 2)
    return errors.fail("scores must have rank >= 2 (N, C, d1..dk), got ",
                       *scores);
  SmallVector<int64_t> expected(scores->getShape());
  expected.erase(expected.begin() + 1);
  if (labels->getShape() != ArrayRef<int64_t>(expected))
    return errors.fail("labels must have the scores' shape without the class "
                       "dim, ",
                       shapeString(expected), ", got ", *labels);
  int64_t classes = scores->getDimSize(1);
  if (IntegerAttr attr = adaptor.getProperties().classes) {
    classes = attr.getInt();
    if (classes < 1 || classes > scores->getDimSize(1))
      return errors.fail("classes ", classes, " must lie in [1, ",
                         scores->getDimSize(1), "] (the scores' dim 1)");
  }
  if (Value weights = adaptor.getWeights()) {
    FailureOr<RankedTensorType> type = errors.tensor(weights, "weights");
    if (failed(type))
      return failure();
    if (type->getRank() != 1 || type->getDimSize(0) != classes)
      return errors.fail("weights must have shape [classes] = [", classes,
                         "], got ", *type);
  }
  StringAttr reductionAttr = adaptor.getProperties().reduction;
  StringRef reduction = reductionAttr ? reductionAttr.getValue() : "mean";
  // 16-bit scores are computed in f32: an f32 loss.
  Type lossType = scores->getElementType();
  if (lossType.isBF16() || lossType.isF16())
    lossType = Float32Type::get(lossType.getContext());
  if (reduction == "none")
    return RankedTensorType::get(labels->getShape(), lossType);
  if (reduction != "mean" && reduction != "sum")
    return errors.fail("reduction must be \"mean\", \"sum\" or \"none\", got "
                       "\"",
                       reduction, "\"");
  return RankedTensorType::get({}, lossType);
}

} // namespace weft::shape_rules

#endif // WEFT_DIALECTS_WEFT_SHAPERULESINTERNAL_H
