//===- OpImporters.cpp - The ONNX op type -> import function table --------===//
#include "frontends/onnx/OpImporters.h"

#include "llvm/ADT/StringMap.h"

using namespace weft::onnx_import;

namespace {
struct OpImporterEntry {
  const char *opType;
  OpImportFn import;
};
} // namespace

/// Every ONNX op (default domain, opsets 13 to 21) weft imports.
static const OpImporterEntry kOpImporters[] = {
    // Elementwise (ImportElementwise.cpp)
    {"Add", importAdd},
    {"Sub", importSub},
    {"Mul", importMul},
    {"Div", importDiv},
    {"Pow", importPow},
    {"Max", importMax},
    {"Min", importMin},
    {"And", importAnd},
    {"Or", importOr},
    {"Equal", importEqual},
    {"Less", importLess},
    {"Greater", importGreater},
    {"LessOrEqual", importLessOrEqual},
    {"GreaterOrEqual", importGreaterOrEqual},
    {"Sqrt", importSqrt},
    {"Neg", importNeg},
    {"Exp", importExp},
    {"Log", importLog},
    {"Tanh", importTanh},
    {"Erf", importErf},
    {"Relu", importRelu},
    {"Sigmoid", importSigmoid},
    {"Not", importNot},
    {"Where", importWhere},
    {"Cast", importCast},
    {"CastLike", importCastLike},
    {"Sin", importSin},
    {"Cos", importCos},
    {"Atan", importAtan},
    {"Floor", importFloor},
    {"Ceil", importCeil},
    {"Round", importRound},
    // Built from the elementwise ops (ImportActivations.cpp)
    {"Reciprocal", importReciprocal},
    {"Abs", importAbs},
    {"Clip", importClip},
    {"HardSigmoid", importHardSigmoid},
    {"HardSwish", importHardSwish},
    {"LeakyRelu", importLeakyRelu},
    {"PRelu", importPRelu},
    {"Elu", importElu},
    {"Selu", importSelu},
    {"Softplus", importSoftplus},
    {"Mish", importMish},
    {"Gelu", importGelu},
    {"Sum", importSum},
    {"Mean", importMean},
    {"Mod", importMod},
    {"Softsign", importSoftsign},
    {"ThresholdedRelu", importThresholdedRelu},
    {"Sign", importSign},
    // Matrix products, convolution, pooling (ImportLinalg.cpp)
    {"MatMul", importMatMul},
    {"Gemm", importGemm},
    {"Einsum", importEinsum},
    {"Conv", importConv},
    {"ConvTranspose", importConvTranspose},
    {"MaxPool", importMaxPool},
    {"AveragePool", importAveragePool},
    {"GlobalAveragePool", importGlobalAveragePool},
    {"GlobalMaxPool", importGlobalMaxPool},
    // Normalization, softmax, losses, reductions (ImportNeuralNet.cpp)
    {"BatchNormalization", importBatchNormalization},
    {"LayerNormalization", importLayerNormalization},
    {"Softmax", importSoftmax},
    {"LogSoftmax", importLogSoftmax},
    {"SoftmaxCrossEntropyLoss", importSoftmaxCrossEntropyLoss},
    {"NegativeLogLikelihoodLoss", importNegativeLogLikelihoodLoss},
    {"ReduceMean", importReduceMean},
    {"ReduceSum", importReduceSum},
    {"ReduceMax", importReduceMax},
    {"ReduceMin", importReduceMin},
    {"ReduceSumSquare", importReduceSumSquare},
    {"ReduceL1", importReduceL1},
    {"ReduceL2", importReduceL2},
    {"ReduceLogSum", importReduceLogSum},
    {"ReduceLogSumExp", importReduceLogSumExp},
    {"ArgMax", importArgMax},
    {"ArgMin", importArgMin},
    {"TopK", importTopK},
    {"InstanceNormalization", importInstanceNormalization},
    // Recurrent ops unrolled over the sequence (ImportRecurrent.cpp)
    {"RNN", importRNN},
    {"GRU", importGRU},
    {"LSTM", importLSTM},
    // Data movement (ImportShapeOps.cpp)
    {"Reshape", importReshape},
    {"Flatten", importFlatten},
    {"Squeeze", importSqueeze},
    {"Unsqueeze", importUnsqueeze},
    {"Transpose", importTranspose},
    {"Concat", importConcat},
    {"Split", importSplit},
    {"Slice", importSlice},
    {"Gather", importGather},
    {"GatherElements", importGatherElements},
    {"GatherND", importGatherND},
    {"ScatterElements", importScatterElements},
    {"Expand", importExpand},
    {"Trilu", importTrilu},
    {"Tile", importTile},
    {"Pad", importPad},
    {"Resize", importResize},
    {"GridSample", importGridSample},
    {"ReverseSequence", importReverseSequence},
    // Linear quantization in float (ImportQuantize.cpp)
    {"QuantizeLinear", importQuantizeLinear},
    {"DequantizeLinear", importDequantizeLinear},
    {"DynamicQuantizeLinear", importDynamicQuantizeLinear},
    {"QLinearMatMul", importQLinearMatMul},
    {"QLinearConv", importQLinearConv},
    {"MatMulInteger", importMatMulInteger},
    {"ConvInteger", importConvInteger},
    // Values known at import time, pass-throughs (ImportConstants.cpp)
    {"Constant", importConstant},
    {"ConstantOfShape", importConstantOfShape},
    {"Shape", importShape},
    {"Size", importSize},
    {"Celu", importCelu},
    {"Shrink", importShrink},
    {"Xor", importXor},
    {"IsNaN", importIsNaN},
    {"IsInf", importIsInf},
    {"Sinh", importSinh},
    {"Cosh", importCosh},
    {"Tan", importTan},
    {"Asinh", importAsinh},
    {"Acosh", importAcosh},
    {"Atanh", importAtanh},
    {"Asin", importAsin},
    {"Acos", importAcos},
    {"ReduceProd", importReduceProd},
    {"LRN", importLRN},
    {"LpNormalization", importLpNormalization},
    {"MeanVarianceNormalization", importMeanVarianceNormalization},
    {"LpPool", importLpPool},
    {"GlobalLpPool", importGlobalLpPool},
    {"DepthToSpace", importDepthToSpace},
    {"SpaceToDepth", importSpaceToDepth},
    {"CumSum", importCumSum},
    {"OneHot", importOneHot},
    {"Hardmax", importHardmax},
    {"EyeLike", importEyeLike},
    {"Range", importRange},
    {"Identity", importIdentity},
    {"HannWindow", importHannWindow},
    {"HammingWindow", importHammingWindow},
    {"BlackmanWindow", importBlackmanWindow},
    // Control flow decided at import (ImportControlFlow.cpp)
    {"If", importIf},
    {"Loop", importLoop},
    {"Scan", importScan},
    // Random numbers (ImportRandom.cpp)
    {"RandomNormal", importRandomNormal},
    {"RandomUniform", importRandomUniform},
    {"RandomNormalLike", importRandomNormalLike},
    {"RandomUniformLike", importRandomUniformLike},
    {"Bernoulli", importBernoulli},
    {"Dropout", importDropout},
    {"ScatterND", importScatterND},
};

OpImportFn weft::onnx_import::lookupOpImporter(llvm::StringRef opType) {
  static const llvm::StringMap<OpImportFn> table = [] {
    llvm::StringMap<OpImportFn> map;
    for (const OpImporterEntry &entry : kOpImporters)
      map[entry.opType] = entry.import;
    return map;
  }();
  return table.lookup(opType);
}
