//===- ShapeRulesGrad.cpp - Result types of the backward ops --------------===//
#include "dialects/weft/ShapeRulesInternal.h"

using namespace mlir;
using namespace weft;
using namespace weft::shape_rules;

//===----------------------------------------------------------------------===//
// Backward ops (WeftGradOps.td). scatter_add, conv_grad_input,
// conv_grad_weight, avg_pool_grad and slice_grad take their result types
// from the forward op's operands; their verifiers check them.
//===----------------------------------------------------------------------===//

/// Checks that `grad` has the type of the forward result, `expected`.
static LogicalResult checkGradType(const ShapeErrors &errors, Value grad,
                                   StringRef name, Type expected) {
  FailureOr<RankedTensorType> type = errors.tensor(grad, name);
  if (failed(type))
    return failure();
  if (*type != expected)
    return errors.fail(name, " must have the forward result's type ", expected,
                       ", got ", *type);
  return success();
}

LogicalResult MaxPoolGradOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &results) {
  ShapeErrors errors(loc, getOperationName());
  FailureOr<ArrayRef<int64_t>> dilations =
      errors.array(adaptor.getProperties().dilations, "dilations");
  if (failed(dilations))
    return failure();
  SmallVector<Type> forward;
  if (failed(inferPool(errors, adaptor, *dilations, forward)) ||
      failed(checkGradType(errors, adaptor.getGrad(), "grad", forward[0])))
    return failure();
  results.push_back(adaptor.getInput().getType());
  return success();
}

LogicalResult
LayerNormGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                  Adaptor adaptor,
                                  SmallVectorImpl<Type> &results) {
  ShapeErrors errors(loc, getOperationName());
  FailureOr<RankedTensorType> input =
      errors.tensor(adaptor.getInput(), "input");
  FailureOr<RankedTensorType> scale =
      errors.tensor(adaptor.getScale(), "scale");
  FailureOr<int64_t> axis =
      errors.integer(adaptor.getProperties().axis, "axis");
  if (failed(input) || failed(scale) || failed(axis))
    return failure();
  if (*axis < 0 || *axis >= input->getRank())
    return errors.fail("axis ", *axis, " is out of range [0, ",
                       input->getRank(), ") for input ", *input);
  int64_t normalized = numElements(input->getShape().drop_front(*axis));
  if (scale->getElementType() != input->getElementType() ||
      scale->getNumElements() != normalized)
    return errors.fail("scale must hold the normalized shape (input dims from "
                       "axis ",
                       *axis, ", ", normalized, " elements of ",
                       input->getElementType(), "), got ", *scale);
  if (failed(checkGradType(errors, adaptor.getGrad(), "grad", *input)))
    return failure();
  results.append({*input, *scale, *scale});
  return success();
}

LogicalResult
AttentionGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                  Adaptor adaptor,
                                  SmallVectorImpl<Type> &results) {
  ShapeErrors errors(loc, getOperationName());
  SmallVector<Type> forward;
  if (failed(inferAttention(
          errors, adaptor.getQuery(), adaptor.getKey(), adaptor.getValue(),
          boolOr(adaptor.getProperties().seq_major, false), forward)) ||
      failed(
          checkGradType(errors, adaptor.getResult(), "result", forward[0])) ||
      failed(checkGradType(errors, adaptor.getLse(), "lse", forward[1])) ||
      failed(checkGradType(errors, adaptor.getGrad(), "grad", forward[0])))
    return failure();
  results.append({adaptor.getQuery().getType(), adaptor.getKey().getType(),
                  adaptor.getValue().getType()});
  return success();
}

LogicalResult SoftmaxGradOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &results) {
  ShapeErrors errors(loc, getOperationName());
  FailureOr<RankedTensorType> output =
      errors.tensor(adaptor.getOutput(), "output");
  FailureOr<int64_t> axis =
      errors.integer(adaptor.getProperties().axis, "axis");
  if (failed(output) || failed(axis))
    return failure();
  if (*axis < 0 || *axis >= output->getRank())
    return errors.fail("axis ", *axis, " is out of range [0, ",
                       output->getRank(), ") for output ", *output);
  if (failed(checkGradType(errors, adaptor.getGrad(), "grad", *output)))
    return failure();
  results.push_back(*output);
  return success();
}

LogicalResult SoftmaxCrossEntropyGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  ShapeErrors errors(loc, getOperationName());
  FailureOr<RankedTensorType> loss = inferCrossEntropyLoss(errors, adaptor);
  if (failed(loss) ||
      failed(checkGradType(errors, adaptor.getLossGrad(), "loss_grad", *loss)))
    return failure();
  results.push_back(adaptor.getScores().getType());
  return success();
}
