//===- OpImporters.h - Import functions of the ONNX ops weft knows -*- C++
//-*-===//
//
// Internal to the ONNX frontend. One function per ONNX op type of the default
// domain, grouped by file; OpImporters.cpp holds the table that maps op types
// to them, which is also the list of supported ops.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_FRONTENDS_ONNX_OPIMPORTERS_H
#define WEFT_FRONTENDS_ONNX_OPIMPORTERS_H

#include "frontends/onnx/NodeImporter.h"

namespace weft::onnx_import {

/// Shared builders (ImportLinalg.cpp): a numpy-style matmul of two values
/// (1-D operands as rows and columns), and a Conv of `input` and `weight`
/// with the node's window attributes (strides, pads, dilations, auto_pad,
/// group); null after an error.
mlir::Value buildMatMul(NodeImporter &imp, mlir::Value lhs, mlir::Value rhs);
mlir::Value buildConv(NodeImporter &imp, mlir::Value input, mlir::Value weight,
                      mlir::Value bias);

/// Shared builders (ImportPad.cpp): `data` without `before` elements at the
/// start of `axis` and `after` at its end; `data` with `before` and `after`
/// copies of `value` (rank 0) along `axis`.
mlir::Value cropAxis(NodeImporter &imp, mlir::Value data, int64_t axis,
                     int64_t before, int64_t after);
mlir::Value padAxisConstant(NodeImporter &imp, mlir::Value data, int64_t axis,
                            int64_t before, int64_t after, mlir::Value value);

/// Imports one node: reads its inputs and attributes, builds weft ops and
/// binds every used output, or records an error on `imp` and fails.
using OpImportFn = mlir::LogicalResult (*)(NodeImporter &imp);

/// The import function of default-domain op `opType`; null when weft does
/// not support the op.
OpImportFn lookupOpImporter(llvm::StringRef opType);

// ImportElementwise.cpp
mlir::LogicalResult importAdd(NodeImporter &imp);
mlir::LogicalResult importSub(NodeImporter &imp);
mlir::LogicalResult importMul(NodeImporter &imp);
mlir::LogicalResult importDiv(NodeImporter &imp);
mlir::LogicalResult importPow(NodeImporter &imp);
mlir::LogicalResult importMax(NodeImporter &imp);
mlir::LogicalResult importMin(NodeImporter &imp);
mlir::LogicalResult importSum(NodeImporter &imp);
mlir::LogicalResult importMean(NodeImporter &imp);
mlir::LogicalResult importAnd(NodeImporter &imp);
mlir::LogicalResult importOr(NodeImporter &imp);
mlir::LogicalResult importEqual(NodeImporter &imp);
mlir::LogicalResult importLess(NodeImporter &imp);
mlir::LogicalResult importGreater(NodeImporter &imp);
mlir::LogicalResult importLessOrEqual(NodeImporter &imp);
mlir::LogicalResult importGreaterOrEqual(NodeImporter &imp);
mlir::LogicalResult importSqrt(NodeImporter &imp);
mlir::LogicalResult importNeg(NodeImporter &imp);
mlir::LogicalResult importSin(NodeImporter &imp);
mlir::LogicalResult importCos(NodeImporter &imp);
mlir::LogicalResult importAtan(NodeImporter &imp);
mlir::LogicalResult importFloor(NodeImporter &imp);
mlir::LogicalResult importCeil(NodeImporter &imp);
mlir::LogicalResult importRound(NodeImporter &imp);
mlir::LogicalResult importExp(NodeImporter &imp);
mlir::LogicalResult importLog(NodeImporter &imp);
mlir::LogicalResult importTanh(NodeImporter &imp);
mlir::LogicalResult importErf(NodeImporter &imp);
mlir::LogicalResult importRelu(NodeImporter &imp);
mlir::LogicalResult importSigmoid(NodeImporter &imp);
mlir::LogicalResult importNot(NodeImporter &imp);
mlir::LogicalResult importWhere(NodeImporter &imp);
mlir::LogicalResult importCast(NodeImporter &imp);

// ImportActivations.cpp
mlir::LogicalResult importReciprocal(NodeImporter &imp);
mlir::LogicalResult importAbs(NodeImporter &imp);
mlir::LogicalResult importClip(NodeImporter &imp);
mlir::LogicalResult importHardSigmoid(NodeImporter &imp);
mlir::LogicalResult importHardSwish(NodeImporter &imp);
mlir::LogicalResult importLeakyRelu(NodeImporter &imp);
mlir::LogicalResult importPRelu(NodeImporter &imp);
mlir::LogicalResult importElu(NodeImporter &imp);
mlir::LogicalResult importSelu(NodeImporter &imp);
mlir::LogicalResult importSoftplus(NodeImporter &imp);
mlir::LogicalResult importMish(NodeImporter &imp);
mlir::LogicalResult importGelu(NodeImporter &imp);
mlir::LogicalResult importMod(NodeImporter &imp);
mlir::LogicalResult importSoftsign(NodeImporter &imp);
mlir::LogicalResult importThresholdedRelu(NodeImporter &imp);
mlir::LogicalResult importSign(NodeImporter &imp);

// ImportEinsum.cpp
mlir::LogicalResult importEinsum(NodeImporter &imp);

// ImportLinalg.cpp
mlir::LogicalResult importMatMul(NodeImporter &imp);
mlir::LogicalResult importGemm(NodeImporter &imp);
mlir::LogicalResult importConv(NodeImporter &imp);
mlir::LogicalResult importConvTranspose(NodeImporter &imp);
mlir::LogicalResult importMaxPool(NodeImporter &imp);
mlir::LogicalResult importAveragePool(NodeImporter &imp);
mlir::LogicalResult importGlobalAveragePool(NodeImporter &imp);
mlir::LogicalResult importGlobalMaxPool(NodeImporter &imp);

// ImportNormalization.cpp
mlir::LogicalResult importBatchNormalization(NodeImporter &imp);
mlir::LogicalResult importLayerNormalization(NodeImporter &imp);
mlir::LogicalResult importInstanceNormalization(NodeImporter &imp);
mlir::LogicalResult importGroupNormalization(NodeImporter &imp);

// ImportNeuralNet.cpp
mlir::LogicalResult importSoftmax(NodeImporter &imp);
mlir::LogicalResult importLogSoftmax(NodeImporter &imp);
mlir::LogicalResult importSoftmaxCrossEntropyLoss(NodeImporter &imp);
mlir::LogicalResult importReduceMean(NodeImporter &imp);
mlir::LogicalResult importReduceSum(NodeImporter &imp);
mlir::LogicalResult importReduceMax(NodeImporter &imp);
mlir::LogicalResult importReduceMin(NodeImporter &imp);
mlir::LogicalResult importReduceSumSquare(NodeImporter &imp);
mlir::LogicalResult importReduceL1(NodeImporter &imp);
mlir::LogicalResult importReduceL2(NodeImporter &imp);
mlir::LogicalResult importReduceLogSum(NodeImporter &imp);
mlir::LogicalResult importReduceLogSumExp(NodeImporter &imp);
mlir::LogicalResult importArgMax(NodeImporter &imp);
mlir::LogicalResult importArgMin(NodeImporter &imp);
mlir::LogicalResult importTopK(NodeImporter &imp);
mlir::LogicalResult importSize(NodeImporter &imp);
mlir::LogicalResult importCelu(NodeImporter &imp);
mlir::LogicalResult importShrink(NodeImporter &imp);
mlir::LogicalResult importXor(NodeImporter &imp);
mlir::LogicalResult importIsNaN(NodeImporter &imp);
mlir::LogicalResult importIsInf(NodeImporter &imp);
mlir::LogicalResult importSinh(NodeImporter &imp);
mlir::LogicalResult importCosh(NodeImporter &imp);
mlir::LogicalResult importTan(NodeImporter &imp);
mlir::LogicalResult importAsinh(NodeImporter &imp);
mlir::LogicalResult importAcosh(NodeImporter &imp);
mlir::LogicalResult importAtanh(NodeImporter &imp);
mlir::LogicalResult importAsin(NodeImporter &imp);
mlir::LogicalResult importAcos(NodeImporter &imp);
mlir::LogicalResult importDepthToSpace(NodeImporter &imp);
mlir::LogicalResult importSpaceToDepth(NodeImporter &imp);
mlir::LogicalResult importCumSum(NodeImporter &imp);
/// The running sums of `x` along `axis` (CumSum's; exclusive: without each
/// element itself; reverse: from the end).
mlir::Value buildCumSum(NodeImporter &imp, mlir::Value x, int64_t axis,
                        bool exclusive, bool reverse);
mlir::LogicalResult importOneHot(NodeImporter &imp);
mlir::LogicalResult importHardmax(NodeImporter &imp);
mlir::LogicalResult importEyeLike(NodeImporter &imp);
mlir::LogicalResult importCastLike(NodeImporter &imp);
mlir::LogicalResult importNegativeLogLikelihoodLoss(NodeImporter &imp);

// ImportShapeOps.cpp
mlir::LogicalResult importReshape(NodeImporter &imp);
mlir::LogicalResult importFlatten(NodeImporter &imp);
mlir::LogicalResult importSqueeze(NodeImporter &imp);
mlir::LogicalResult importUnsqueeze(NodeImporter &imp);
mlir::LogicalResult importTranspose(NodeImporter &imp);
mlir::LogicalResult importConcat(NodeImporter &imp);
mlir::LogicalResult importSplit(NodeImporter &imp);
mlir::LogicalResult importSlice(NodeImporter &imp);
mlir::LogicalResult importGather(NodeImporter &imp);
mlir::LogicalResult importGatherElements(NodeImporter &imp);
mlir::LogicalResult importScatterElements(NodeImporter &imp);
mlir::LogicalResult importGatherND(NodeImporter &imp);
/// ScatterND with an operand that is not a constant (ImportElements.cpp).
mlir::LogicalResult importScatterNDComputed(NodeImporter &imp);
mlir::LogicalResult importExpand(NodeImporter &imp);
mlir::LogicalResult importTrilu(NodeImporter &imp);
mlir::LogicalResult importTile(NodeImporter &imp);
// ImportPad.cpp
mlir::LogicalResult importPad(NodeImporter &imp);
// ImportResize.cpp
mlir::LogicalResult importResize(NodeImporter &imp);

// ImportRecurrent.cpp
mlir::LogicalResult importRNN(NodeImporter &imp);
mlir::LogicalResult importGRU(NodeImporter &imp);
mlir::LogicalResult importLSTM(NodeImporter &imp);

// ImportConstants.cpp
mlir::LogicalResult importConstant(NodeImporter &imp);
mlir::LogicalResult importConstantOfShape(NodeImporter &imp);
mlir::LogicalResult importShape(NodeImporter &imp);
mlir::LogicalResult importRange(NodeImporter &imp);
mlir::LogicalResult importIdentity(NodeImporter &imp);
mlir::LogicalResult importHannWindow(NodeImporter &imp);
mlir::LogicalResult importMelWeightMatrix(NodeImporter &imp);
mlir::LogicalResult importHammingWindow(NodeImporter &imp);
mlir::LogicalResult importBlackmanWindow(NodeImporter &imp);
mlir::LogicalResult importReduceProd(NodeImporter &imp);
mlir::LogicalResult importLRN(NodeImporter &imp);
mlir::LogicalResult importLpNormalization(NodeImporter &imp);
mlir::LogicalResult importMeanVarianceNormalization(NodeImporter &imp);
mlir::LogicalResult importLpPool(NodeImporter &imp);
mlir::LogicalResult importGlobalLpPool(NodeImporter &imp);

// ImportSpectral.cpp
mlir::LogicalResult importDFT(NodeImporter &imp);
mlir::LogicalResult importSTFT(NodeImporter &imp);

// ImportSequence.cpp
mlir::LogicalResult importSequenceEmpty(NodeImporter &imp);
mlir::LogicalResult importSequenceConstruct(NodeImporter &imp);
mlir::LogicalResult importSequenceInsert(NodeImporter &imp);
mlir::LogicalResult importSequenceErase(NodeImporter &imp);
mlir::LogicalResult importSequenceAt(NodeImporter &imp);
mlir::LogicalResult importSequenceLength(NodeImporter &imp);
mlir::LogicalResult importConcatFromSequence(NodeImporter &imp);
mlir::LogicalResult importSplitToSequence(NodeImporter &imp);
mlir::LogicalResult importOptional(NodeImporter &imp);
mlir::LogicalResult importOptionalHasElement(NodeImporter &imp);
mlir::LogicalResult importOptionalGetElement(NodeImporter &imp);

// ImportQuantize.cpp
mlir::LogicalResult importQuantizeLinear(NodeImporter &imp);
mlir::LogicalResult importDequantizeLinear(NodeImporter &imp);
mlir::LogicalResult importDynamicQuantizeLinear(NodeImporter &imp);
mlir::LogicalResult importQLinearMatMul(NodeImporter &imp);
mlir::LogicalResult importQLinearConv(NodeImporter &imp);
mlir::LogicalResult importMatMulInteger(NodeImporter &imp);
mlir::LogicalResult importConvInteger(NodeImporter &imp);

// ImportGridSample.cpp
mlir::LogicalResult importGridSample(NodeImporter &imp);

// ImportImage.cpp
mlir::LogicalResult importCenterCropPad(NodeImporter &imp);
mlir::LogicalResult importAffineGrid(NodeImporter &imp);
mlir::LogicalResult importCol2Im(NodeImporter &imp);
mlir::LogicalResult importRoiAlign(NodeImporter &imp);
mlir::LogicalResult importMaxRoiPool(NodeImporter &imp);

// ImportDet.cpp
mlir::LogicalResult importDet(NodeImporter &imp);

// ImportControlFlow.cpp
mlir::LogicalResult importIf(NodeImporter &imp);
mlir::LogicalResult importLoop(NodeImporter &imp);
mlir::LogicalResult importScan(NodeImporter &imp);
mlir::LogicalResult importSequenceMap(NodeImporter &imp);
mlir::LogicalResult importReverseSequence(NodeImporter &imp);
mlir::LogicalResult importCompress(NodeImporter &imp);
mlir::LogicalResult importMaxUnpool(NodeImporter &imp);

// ImportRandom.cpp
mlir::LogicalResult importRandomNormal(NodeImporter &imp);
mlir::LogicalResult importRandomUniform(NodeImporter &imp);
mlir::LogicalResult importRandomNormalLike(NodeImporter &imp);
mlir::LogicalResult importRandomUniformLike(NodeImporter &imp);
mlir::LogicalResult importBernoulli(NodeImporter &imp);
mlir::LogicalResult importMultinomial(NodeImporter &imp);
mlir::LogicalResult importScatterND(NodeImporter &imp);
mlir::LogicalResult importDropout(NodeImporter &imp);

} // namespace weft::onnx_import

#endif // WEFT_FRONTENDS_ONNX_OPIMPORTERS_H
