//===- ImportConstants.cpp - Values known at import time, pass-throughs ---===//
//
// Constant, ConstantOfShape, Shape and Range produce weft.constant (all
// shapes are static, so Shape is a constant too); Identity and inference-mode
// Dropout produce no op at all.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxModelLoader.h"
#include "frontends/onnx/OpImporters.h"

#include "dialects/weft/ElementFolding.h"
#include "dialects/weft/WeftOps.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace weft;
using namespace weft::onnx_import;

/// Results of Range beyond this many elements are refused (a constant that
/// large is almost certainly a mistake).
static constexpr int64_t kMaxRangeElements = int64_t(1) << 26;

/// Decodes the tensor attribute `name` of the node.
static std::optional<TensorData> decodeTensorAttr(NodeImporter &imp,
                                                  StringRef name) {
  const onnx::TensorProto *tensor = imp.getTensorAttr(name);
  if (!tensor)
    return std::nullopt;
  TensorData data;
  std::string error;
  if (!decodeTensor(*tensor, imp.getModelDir(),
                    "attribute '" + name.str() + "'", data, error)) {
    (void)imp.emitError(error);
    return std::nullopt;
  }
  return data;
}

LogicalResult onnx_import::importConstant(NodeImporter &imp) {
  MLIRContext &ctx = imp.getContext();
  OpBuilder &builder = imp.getBuilder();
  for (const char *name : {"value_string", "value_strings", "sparse_value"})
    if (imp.hasAttr(name))
      return imp.emitUnsupportedAttr(name, "(given)",
                                     "weft has no string or sparse tensors");
  if (imp.hasAttr("value")) {
    std::optional<TensorData> data = decodeTensorAttr(imp, "value");
    if (!data)
      return failure();
    return imp.setResult(imp.createConstant(data->toAttr(ctx)));
  }
  if (imp.hasAttr("value_float"))
    return imp.setResult(imp.createScalar(builder.getF32Type(),
                                          imp.getFloatAttr("value_float", 0)));
  if (imp.hasAttr("value_int")) {
    int64_t value = imp.getIntAttr("value_int", 0);
    auto type = RankedTensorType::get({}, builder.getI64Type());
    return imp.setResult(imp.createConstant(
        DenseElementsAttr::get(type, ArrayRef<int64_t>(value))));
  }
  if (imp.hasAttr("value_ints")) {
    SmallVector<int64_t> values = imp.getIntsAttr("value_ints");
    auto type = RankedTensorType::get({static_cast<int64_t>(values.size())},
                                      builder.getI64Type());
    return imp.setResult(imp.createConstant(
        DenseElementsAttr::get(type, ArrayRef<int64_t>(values))));
  }
  if (imp.hasAttr("value_floats")) {
    SmallVector<float> values = imp.getFloatsAttr("value_floats");
    auto type = RankedTensorType::get({static_cast<int64_t>(values.size())},
                                      builder.getF32Type());
    return imp.setResult(imp.createConstant(
        DenseElementsAttr::get(type, ArrayRef<float>(values))));
  }
  return imp.emitError("missing its value attribute");
}

LogicalResult onnx_import::importConstantOfShape(NodeImporter &imp) {
  MLIRContext &ctx = imp.getContext();
  std::optional<SmallVector<int64_t>> shape = imp.getConstantInts(0, "input");
  if (!shape)
    return failure();
  if (llvm::any_of(*shape, [](int64_t d) { return d < 0; }))
    return imp.emitError("negative dimension in shape " + formatShape(*shape));
  DenseElementsAttr element;
  if (imp.hasAttr("value")) {
    std::optional<TensorData> data = decodeTensorAttr(imp, "value");
    if (!data)
      return failure();
    if (data->numElements() != 1)
      return imp.emitError("attribute 'value' must hold one element, not " +
                           Twine(data->numElements()));
    element = data->toAttr(ctx);
  } else {
    element = DenseElementsAttr::get(
        RankedTensorType::get({1}, Float32Type::get(&ctx)), 0.0f);
  }
  auto type = RankedTensorType::get(*shape, element.getElementType());
  return imp.setResult(imp.createConstant(
      DenseElementsAttr::get(type, element.getSplatValue<Attribute>())));
}

/// Shape (with start and end from opset 15) is known at import time.
LogicalResult onnx_import::importShape(NodeImporter &imp) {
  Value data = imp.getInput(0, "data");
  if (!data)
    return failure();
  ArrayRef<int64_t> shape = getShape(data);
  int64_t rank = shape.size();
  auto clampIndex = [&](int64_t index) {
    if (index < 0)
      index += rank;
    return std::clamp<int64_t>(index, 0, rank);
  };
  int64_t start = clampIndex(imp.getIntAttr("start", 0));
  int64_t end = clampIndex(imp.getIntAttr("end", rank));
  ArrayRef<int64_t> dims =
      end > start ? shape.slice(start, end - start) : ArrayRef<int64_t>();
  auto type = RankedTensorType::get({static_cast<int64_t>(dims.size())},
                                    imp.getBuilder().getI64Type());
  return imp.setResult(imp.createConstant(DenseElementsAttr::get(type, dims)));
}

/// Size: the input's element count, a rank-0 i64 constant (shapes are
/// static).
LogicalResult onnx_import::importSize(NodeImporter &imp) {
  Value data = imp.getInput(0, "data");
  if (!data)
    return failure();
  auto type = RankedTensorType::get({}, imp.getBuilder().getI64Type());
  return imp.setResult(imp.createConstant(DenseElementsAttr::get(
      type, ArrayRef<int64_t>{getTensorType(data).getNumElements()})));
}

static double toDouble(APFloat value) {
  bool losesInfo;
  value.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven,
                &losesInfo);
  return value.convertToDouble();
}

/// Range of constant scalars: max(ceil((limit - start) / delta), 0) elements
/// start + i * delta.
LogicalResult onnx_import::importRange(NodeImporter &imp) {
  std::optional<DenseElementsAttr> operands[3];
  const char *names[] = {"start", "limit", "delta"};
  for (int i = 0; i < 3; ++i) {
    operands[i] = imp.getConstantInput(i, names[i]);
    if (!operands[i])
      return failure();
    if (operands[i]->getNumElements() != 1)
      return imp.emitError("input '" + Twine(names[i]) +
                           "' must be a scalar, not " +
                           formatType(operands[i]->getType()));
  }
  Type elementType = operands[0]->getElementType();
  if (operands[1]->getElementType() != elementType ||
      operands[2]->getElementType() != elementType)
    return imp.emitError("inputs start, limit and delta have different types");

  SmallVector<Attribute> elements;
  if (auto floatType = dyn_cast<FloatType>(elementType)) {
    double start = toDouble(operands[0]->getSplatValue<APFloat>());
    double limit = toDouble(operands[1]->getSplatValue<APFloat>());
    double delta = toDouble(operands[2]->getSplatValue<APFloat>());
    if (delta == 0 || !std::isfinite(start) || !std::isfinite(limit))
      return imp.emitError("invalid range (delta 0 or infinite bounds)");
    double count = std::max(0.0, std::ceil((limit - start) / delta));
    if (count > kMaxRangeElements)
      return imp.emitError("range of " + Twine(static_cast<int64_t>(count)) +
                           " elements is too long");
    for (int64_t i = 0; i < static_cast<int64_t>(count); ++i)
      elements.push_back(FloatAttr::get(floatType, start + i * delta));
  } else {
    int64_t start = operands[0]->getSplatValue<APInt>().getSExtValue();
    int64_t limit = operands[1]->getSplatValue<APInt>().getSExtValue();
    int64_t delta = operands[2]->getSplatValue<APInt>().getSExtValue();
    if (delta == 0)
      return imp.emitError("delta must not be 0");
    // ceil((limit - start) / delta) in integers, computed in 128 bits.
    __int128 diff = static_cast<__int128>(limit) - start;
    __int128 count =
        diff / delta + ((diff % delta != 0) && ((diff > 0) == (delta > 0)));
    if (count < 0)
      count = 0;
    if (count > kMaxRangeElements)
      return imp.emitError("range is too long");
    for (int64_t i = 0; i < static_cast<int64_t>(count); ++i)
      elements.push_back(IntegerAttr::get(elementType, start + i * delta));
  }
  auto type = RankedTensorType::get({static_cast<int64_t>(elements.size())},
                                    elementType);
  return imp.setResult(
      imp.createConstant(DenseElementsAttr::get(type, elements)));
}

LogicalResult onnx_import::importIdentity(NodeImporter &imp) {
  return imp.setResult(imp.getInput(0, "input"));
}

/// Dropout at inference is the identity; its mask, when read, is all true.
/// In training mode with a ratio above 0 it is a weft.dropout: each element's
/// draw is a function of the seed (the `seed` attribute, else 0), the node's
/// stream (dropouts in node order), the step and its position, so every
/// plan draws the single-device masks. A training step's import reads the
/// step counter ("weft.step", new masks every step); an inference import
/// draws step 0's.
LogicalResult onnx_import::importDropout(NodeImporter &imp) {
  Value data = imp.getInput(0, "data");
  if (!data)
    return failure();
  bool training = false;
  if (imp.hasInput(2)) {
    std::optional<SmallVector<int64_t>> mode = imp.getConstantInts(
        2, "training_mode", NodeImporter::kNeedsImportTimeValue);
    if (!mode)
      return failure();
    training = llvm::any_of(*mode, [](int64_t v) { return v != 0; });
  }
  // ONNX's default ratio is 0.5; PyTorch's dropout=0.0 drops nothing.
  double ratio = 0.5;
  if (training && imp.hasInput(1)) {
    std::optional<DenseElementsAttr> given =
        imp.getConstantInput(1, "ratio", NodeImporter::kNeedsImportTimeValue);
    if (!given)
      return failure();
    if (!isa<FloatType>(given->getElementType()) ||
        given->getNumElements() != 1)
      return imp.emitError("input 'ratio' must be a float scalar");
    ratio = (*given->getValues<APFloat>().begin()).convertToDouble();
  }
  OpBuilder &b = imp.getBuilder();
  if (!training || ratio == 0.0) {
    imp.setOutput(0, data);
    if (imp.isOutputUsed(1)) {
      auto type = getTensorType(data).clone(b.getI1Type());
      Value mask = imp.createConstant(DenseElementsAttr::get(type, true));
      if (!mask)
        return failure();
      imp.setOutput(1, mask);
    }
    return success();
  }
  if (!(ratio > 0.0 && ratio < 1.0)) {
    std::string text;
    llvm::raw_string_ostream(text) << llvm::format("%g", ratio);
    return imp.emitError("input 'ratio' = " + text + " is outside [0, 1)");
  }
  auto type = getTensorType(data);
  if (!isa<FloatType>(type.getElementType()))
    return imp.emitError("input 'data' (" + formatType(type) +
                         ") must be a float tensor in training mode");
  Value step = imp.getDrawStep();
  auto offsetsType = RankedTensorType::get({type.getRank()}, b.getI64Type());
  Value offsets = imp.createConstant(
      DenseElementsAttr::get(offsetsType, b.getI64IntegerAttr(0)));
  if (!step || !offsets)
    return failure();
  int64_t seed = imp.getIntAttr("seed", 0);
  SmallVector<Value> results = imp.createMulti<DropoutOp>(
      TypeRange{type, type.clone(b.getI1Type())}, data, step, offsets,
      b.getF64FloatAttr(ratio), b.getI64IntegerAttr(seed),
      b.getI64IntegerAttr(imp.takeDropoutStream()),
      b.getDenseI64ArrayAttr(type.getShape()));
  if (results.size() != 2)
    return failure();
  imp.setOutput(0, results[0]);
  imp.setOutput(1, results[1]);
  return success();
}

/// ScatterND of constants (the masks exporters build from shapes, e.g. Swin's
/// shifted windows) is computed at import; with a computed operand (an
/// in-place assignment such as PyTorch's x[:, 0] = y) it is built from
/// gathers (ImportElements.cpp).
LogicalResult onnx_import::importScatterND(NodeImporter &imp) {
  std::string reduction = imp.getStringAttr("reduction", "none");
  // none and add are built for computed operands too.
  if (reduction == "none" || reduction == "add") {
    for (unsigned i = 0; i < 3; ++i) {
      Value operand = imp.getInput(i, i == 0   ? "data"
                                      : i == 1 ? "indices"
                                               : "updates");
      if (!operand)
        return failure();
      // A trainable initializer stays a parameter: folding it would drop
      // its gradient.
      if (!imp.matchConstant(operand) || operand.getDefiningOp<ParamOp>())
        return importScatterNDComputed(imp);
    }
  }
  const std::string why = "weft computes ScatterND with reduction '" +
                          reduction + "' at import time only";
  std::optional<DenseElementsAttr> data = imp.getConstantInput(0, "data", why);
  if (!data)
    return failure();
  std::optional<SmallVector<int64_t>> indices =
      imp.getConstantInts(1, "indices", why);
  if (!indices)
    return failure();
  std::optional<DenseElementsAttr> updates =
      imp.getConstantInput(2, "updates", why);
  if (!updates)
    return failure();
  if (reduction != "none" && reduction != "add" && reduction != "mul" &&
      reduction != "max" && reduction != "min")
    return imp.emitUnsupportedAttr("reduction", "'" + reduction + "'",
                                   "ONNX defines none, add, mul, max and min");
  ArrayRef<int64_t> dataShape = data->getType().getShape();
  ArrayRef<int64_t> indexShape = getShape(imp.getInput(1, "indices"));
  ArrayRef<int64_t> updateShape = updates->getType().getShape();
  int64_t k = indexShape.empty() ? 0 : indexShape.back();
  if (indexShape.empty() || k < 1 || k > static_cast<int64_t>(dataShape.size()))
    return imp.emitError("indices " + formatShape(indexShape) +
                         " do not index data " + formatShape(dataShape));
  SmallVector<int64_t> expected(indexShape.drop_back());
  expected.append(dataShape.begin() + k, dataShape.end());
  if (ArrayRef<int64_t>(expected) != updateShape)
    return imp.emitError("updates " + formatShape(updateShape) +
                         " should have shape " + formatShape(expected));
  if (data->getElementType() != updates->getElementType())
    return imp.emitError("data and updates have different element types");
  int64_t slice = 1;
  for (int64_t d : dataShape.drop_front(k))
    slice *= d;
  int64_t count = static_cast<int64_t>(indices->size()) / k;
  // Each update slice n lands at the data offset its index tuple names;
  // later updates of one element combine with `reduction`.
  SmallVector<int64_t> target(count);
  for (int64_t n = 0; n < count; ++n) {
    int64_t offset = 0;
    for (int64_t j = 0; j < k; ++j) {
      int64_t dim = dataShape[j], index = (*indices)[n * k + j];
      if (index < -dim || index >= dim)
        return imp.emitError("index " + Twine(index) +
                             " is out of range for dimension " + Twine(j) +
                             " of data " + formatShape(dataShape));
      offset = offset * dim + (index < 0 ? index + dim : index);
    }
    target[n] = offset * slice;
  }
  bool isUnsigned = folding::isUnsignedInt(data->getElementType());
  auto combine = [&](auto &into, const auto &update) {
    using T = std::decay_t<decltype(update)>;
    if (reduction == "none") {
      into = update;
    } else if constexpr (std::is_same_v<T, APFloat>) {
      if (reduction == "add")
        into = into + update;
      else if (reduction == "mul")
        into = into * update;
      else if (reduction == "max")
        into = llvm::maximum(into, update);
      else
        into = llvm::minimum(into, update);
    } else {
      bool less = isUnsigned ? into.ult(update) : into.slt(update);
      if (reduction == "add")
        into = into + update;
      else if (reduction == "mul")
        into = into * update;
      else if (reduction == "max")
        into = less ? update : into;
      else
        into = less ? into : update;
    }
  };
  auto scatter = [&](auto values, const auto &updateValues) {
    using T = std::decay_t<decltype(values[0])>;
    for (int64_t n = 0; n < count; ++n)
      for (int64_t i = 0; i < slice; ++i)
        combine(values[target[n] + i], updateValues[n * slice + i]);
    return DenseElementsAttr::get(data->getType(), ArrayRef<T>(values));
  };
  DenseElementsAttr result =
      isa<FloatType>(data->getElementType())
          ? scatter(SmallVector<APFloat>(data->getValues<APFloat>()),
                    SmallVector<APFloat>(updates->getValues<APFloat>()))
          : scatter(SmallVector<APInt>(data->getValues<APInt>()),
                    SmallVector<APInt>(updates->getValues<APInt>()));
  return imp.setResult(imp.createConstant(result));
}

/// The float element type of `output_datatype` (f32 without it); null
/// after recording an error for a non-float one.
static Type floatOutputType(NodeImporter &imp) {
  Type type = imp.hasAttr("output_datatype")
                  ? imp.getElementTypeAttr("output_datatype")
                  : Type(imp.getBuilder().getF32Type());
  if (!type || imp.hasError())
    return {};
  if (!isa<FloatType>(type)) {
    (void)imp.emitError("attribute 'output_datatype' must be a float type "
                        "here, not " +
                        formatType(type));
    return {};
  }
  return type;
}

/// A constant of `shape` and float `type` holding `values`.
static Value floatConstant(NodeImporter &imp, ArrayRef<int64_t> shape,
                           Type type, ArrayRef<double> values) {
  SmallVector<Attribute> elements;
  for (double v : values)
    elements.push_back(FloatAttr::get(type, v));
  return imp.createConstant(
      DenseElementsAttr::get(RankedTensorType::get(shape, type), elements));
}

/// HannWindow, HammingWindow, BlackmanWindow: constants of `size` (known at
/// import) elements of sum_k a_k cos(2 pi k n / N), N = size when periodic
/// (the default), size - 1 when symmetric; in `output_datatype` (default
/// f32).
static LogicalResult importWindow(NodeImporter &imp,
                                  ArrayRef<double> coefficients) {
  std::optional<SmallVector<int64_t>> size = imp.getConstantInts(0, "size");
  if (!size)
    return failure();
  if (size->size() != 1 || size->front() < 0 ||
      size->front() > kMaxRangeElements)
    return imp.emitError("input 'size' must be one count in [0, " +
                         Twine(kMaxRangeElements) + "]");
  bool periodic = imp.getIntAttr("periodic", 1) != 0;
  Type type = floatOutputType(imp);
  if (!type)
    return failure();
  int64_t n = size->front();
  double span = periodic ? static_cast<double>(n) : static_cast<double>(n - 1);
  SmallVector<double> values;
  for (int64_t i = 0; i < n; ++i) {
    double v = 0, sign = 1;
    for (auto [k, a] : llvm::enumerate(coefficients)) {
      double angle = span > 0 ? 2 * M_PI * k * i / span : 0.0;
      v += sign * a * std::cos(angle);
      sign = -sign;
    }
    values.push_back(v);
  }
  return imp.setResult(floatConstant(imp, {n}, type, values));
}

LogicalResult onnx_import::importHannWindow(NodeImporter &imp) {
  return importWindow(imp, {0.5, 0.5});
}

LogicalResult onnx_import::importHammingWindow(NodeImporter &imp) {
  return importWindow(imp, {25.0 / 46.0, 21.0 / 46.0});
}

LogicalResult onnx_import::importBlackmanWindow(NodeImporter &imp) {
  return importWindow(imp, {0.42, 0.5, 0.08});
}

/// MelWeightMatrix: a constant [dft_length / 2 + 1, num_mel_bins] of
/// triangular filters on the mel scale (mel(f) = 2595 log10(1 + f / 700)),
/// as ONNX's reference builds it: num_mel_bins + 2 band edges spaced by
/// (mel(upper) - mel(lower)) / (num_mel_bins + 2) from mel(lower), each
/// turned back into the spectrogram bin floor((dft_length + 1) * f /
/// sample_rate); filter i rises from edge i to 1 at edge i + 1 and falls to
/// edge i + 2 (a band whose edges share a bin is 1 there). The inputs must
/// be known at import.
LogicalResult onnx_import::importMelWeightMatrix(NodeImporter &imp) {
  const char *why = NodeImporter::kNeedsImportTimeValue;
  std::optional<SmallVector<int64_t>> bins =
      imp.getConstantInts(0, "num_mel_bins", why);
  std::optional<SmallVector<int64_t>> dft =
      imp.getConstantInts(1, "dft_length", why);
  std::optional<SmallVector<int64_t>> rate =
      imp.getConstantInts(2, "sample_rate", why);
  std::optional<DenseElementsAttr> lower =
      imp.getConstantInput(3, "lower_edge_hertz", why);
  std::optional<DenseElementsAttr> upper =
      imp.getConstantInput(4, "upper_edge_hertz", why);
  if (!bins || !dft || !rate || !lower || !upper)
    return failure();
  auto scalarFloat = [&](DenseElementsAttr a, StringRef what,
                         double &out) -> LogicalResult {
    if (a.getNumElements() != 1 || !isa<FloatType>(a.getElementType()))
      return imp.emitError("input '" + what + "' must be one float");
    out = (*a.value_begin<APFloat>()).convertToDouble();
    return success();
  };
  double low = 0, high = 0;
  if (bins->size() != 1 || dft->size() != 1 || rate->size() != 1)
    return imp.emitError("inputs 'num_mel_bins', 'dft_length' and "
                         "'sample_rate' must be one integer each");
  if (failed(scalarFloat(*lower, "lower_edge_hertz", low)) ||
      failed(scalarFloat(*upper, "upper_edge_hertz", high)))
    return failure();
  int64_t melBins = bins->front(), length = dft->front(),
          sampleRate = rate->front();
  if (melBins < 1 || length < 1 || sampleRate < 1 ||
      melBins > kMaxRangeElements || length > kMaxRangeElements)
    return imp.emitError(
        "num_mel_bins (" + Twine(melBins) + "), dft_length (" + Twine(length) +
        ") and sample_rate (" + Twine(sampleRate) +
        ") must be positive (and at most " + Twine(kMaxRangeElements) + ")");
  Type type = floatOutputType(imp);
  if (!type)
    return failure();
  int64_t spectrumBins = length / 2 + 1;
  auto toMel = [](double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); };
  double lowMel = toMel(low);
  double step = (toMel(high) - lowMel) / static_cast<double>(melBins + 2);
  auto shortest = [](double v) {
    std::string text;
    llvm::raw_string_ostream(text) << llvm::format("%g", v);
    return text;
  };
  SmallVector<int64_t> edges;
  for (int64_t k = 0; k < melBins + 2; ++k) {
    double hz = 700.0 * (std::pow(10.0, (k * step + lowMel) / 2595.0) - 1.0);
    double bin = std::floor(static_cast<double>(length + 1) * hz /
                            static_cast<double>(sampleRate));
    if (!(bin >= 0) || bin >= static_cast<double>(spectrumBins))
      return imp.emitError(
          "the mel bands between lower_edge_hertz " + shortest(low) +
          " and upper_edge_hertz " + shortest(high) +
          " reach past the spectrum's bins 0.." + Twine(spectrumBins - 1) +
          " for dft_length " + Twine(length) + " and sample_rate " +
          Twine(sampleRate));
    edges.push_back(static_cast<int64_t>(bin));
  }
  SmallVector<double> values(spectrumBins * melBins, 0.0);
  auto at = [&](int64_t bin, int64_t band) -> double & {
    return values[bin * melBins + band];
  };
  for (int64_t i = 0; i < melBins; ++i) {
    int64_t left = edges[i], center = edges[i + 1], right = edges[i + 2];
    if (center == left)
      at(center, i) = 1.0;
    else
      for (int64_t j = left; j <= center; ++j)
        at(j, i) = static_cast<double>(j - left) / (center - left);
    for (int64_t j = center; j < right; ++j)
      at(j, i) = static_cast<double>(right - j) / (right - center);
  }
  return imp.setResult(
      floatConstant(imp, {spectrumBins, melBins}, type, values));
}
