//===- ImportRecurrent.cpp - ONNX RNN, GRU and LSTM unrolled over time ----===//
//
// weft's shapes are static, so a recurrent op's sequence length is known at
// import, and the op becomes the weft ops of its ONNX definition unrolled
// over the steps:
//  - the input's projection for every step at once: one weft.matmul of X
//    [T, batch, input] against W (transposed) plus W's bias, cut into steps
//    by one weft.split, whose gradient is one concat (T slices would give T
//    zero-padded slice gradients); the batch keeps a dimension of its own
//    throughout, so data parallelism and microbatches split it;
//  - each step adds the hidden state's product with R, cuts the gates apart
//    (weft.split) and applies their activations; a state that is zero (no
//    initial_h / initial_c given) is left out rather than multiplied;
//  - the states are joined by weft.concat into Y, the last ones into Y_h and
//    Y_c.
// Autodiff, sharding (the batch dimension splits through every step), fusion
// and both backends then apply unchanged. Rows shorter than the input
// (sequence_lens, an input or a constant) are masked: at a step past its
// length a row keeps its state and outputs zeros, so the forward direction's
// last state is the one at its length and the reverse direction starts from
// its last valid step, as ONNX defines. LSTM's input_forget couples the
// forget gate to the input gate, f = 1 - i (onnxruntime's reading).
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/ImportExpr.h"
#include "frontends/onnx/OpImporters.h"

#include "dialects/weft/WeftOps.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace weft;
using namespace weft::onnx_import;

namespace {
enum class Cell { Rnn, Gru, Lstm };

/// Blocks of hidden_size rows in W and R: RNN i; GRU z, r, h; LSTM i, o, f, c.
int64_t gateCount(Cell cell) {
  return cell == Cell::Rnn ? 1 : cell == Cell::Gru ? 3 : 4;
}

/// The activations' defaults, per direction: RNN f; GRU f, g; LSTM f, g, h.
ArrayRef<StringRef> defaultActivations(Cell cell) {
  static const StringRef rnn[] = {"Tanh"};
  static const StringRef gru[] = {"Sigmoid", "Tanh"};
  static const StringRef lstm[] = {"Sigmoid", "Tanh", "Tanh"};
  if (cell == Cell::Rnn)
    return rnn;
  if (cell == Cell::Gru)
    return gru;
  return lstm;
}

/// An activation the recurrent ops may name: how many of alpha and beta it
/// takes and their defaults (those of the ONNX op of the same name).
struct ActivationKind {
  StringRef name; // lower case
  int params;
  double alpha, beta;
};
constexpr ActivationKind kActivationKinds[] = {
    {"sigmoid", 0, 0, 0},        {"tanh", 0, 0, 0},
    {"relu", 0, 0, 0},           {"softsign", 0, 0, 0},
    {"softplus", 0, 0, 0},       {"affine", 2, 1.0, 0.0},
    {"leakyrelu", 1, 0.01, 0},   {"thresholdedrelu", 1, 1.0, 0},
    {"scaledtanh", 2, 1.0, 1.0}, {"hardsigmoid", 2, 0.2, 0.5},
    {"elu", 1, 1.0, 0},
};

struct Activation {
  std::string name; // lower case
  double alpha = 0, beta = 0;
};

/// The op's activations (the `activations` attribute or the defaults, for
/// each direction), with alpha and beta taken in order by the activations
/// that have them.
std::optional<SmallVector<Activation>>
readActivations(NodeImporter &imp, Cell cell, int64_t directions) {
  ArrayRef<StringRef> defaults = defaultActivations(cell);
  SmallVector<std::string> names;
  if (imp.hasAttr("activations")) {
    names = imp.getStringsAttr("activations");
    if (imp.hasError())
      return std::nullopt;
    if (static_cast<int64_t>(names.size()) !=
        static_cast<int64_t>(defaults.size()) * directions) {
      (void)imp.emitError("attribute 'activations' lists " +
                          Twine(names.size()) + " function(s); this op takes " +
                          Twine(defaults.size()) + " per direction, " +
                          Twine(defaults.size() * directions) + " in all");
      return std::nullopt;
    }
  } else {
    for (int64_t d = 0; d < directions; ++d)
      for (StringRef name : defaults)
        names.push_back(name.str());
  }
  SmallVector<float> alphas = imp.getFloatsAttr("activation_alpha");
  SmallVector<float> betas = imp.getFloatsAttr("activation_beta");
  size_t nextAlpha = 0, nextBeta = 0;
  SmallVector<Activation> result;
  for (const std::string &name : names) {
    std::string lower = llvm::StringRef(name).lower();
    const ActivationKind *kind =
        llvm::find_if(kActivationKinds,
                      [&](const ActivationKind &k) { return k.name == lower; });
    if (kind == std::end(kActivationKinds)) {
      (void)imp.emitUnsupportedAttr("activations", "'" + name + "'",
                                    "weft knows Sigmoid, Tanh, Relu, Affine, "
                                    "LeakyRelu, ThresholdedRelu, ScaledTanh, "
                                    "HardSigmoid, Elu, Softsign and Softplus");
      return std::nullopt;
    }
    Activation act{lower, kind->alpha, kind->beta};
    if (kind->params >= 1 && nextAlpha < alphas.size())
      act.alpha = widenFloat(alphas[nextAlpha++]);
    if (kind->params >= 2 && nextBeta < betas.size())
      act.beta = widenFloat(betas[nextBeta++]);
    result.push_back(act);
  }
  auto leftOver = [&](StringRef attr, size_t given, size_t taken) {
    (void)imp.emitError("attribute '" + attr + "' has " + Twine(given) +
                        " value(s), but the activations (" +
                        llvm::join(names, ", ") + ") take " + Twine(taken));
    return std::nullopt;
  };
  if (nextAlpha != alphas.size())
    return leftOver("activation_alpha", alphas.size(), nextAlpha);
  if (nextBeta != betas.size())
    return leftOver("activation_beta", betas.size(), nextBeta);
  return result;
}

/// Builds one recurrent node.
class Unroller {
public:
  Unroller(NodeImporter &imp, Cell cell) : imp(imp), e(imp), cell(cell) {}
  LogicalResult run();

private:
  /// act(x), x clipped first under `clip` when `clipInput` (the gates'
  /// pre-activations; not LSTM's cell state before h = o * act(c), which
  /// onnxruntime leaves unclipped).
  Value apply(const Activation &act, Value x, bool clipInput = true);
  /// `value` [D, ...] cut into its directions, each without the leading 1.
  SmallVector<Value> perDirection(Value value);
  /// `value` cut along `axis` into pieces of the given sizes.
  SmallVector<Value> cut(Value value, int64_t axis, ArrayRef<int64_t> sizes);
  Value matmulT(Value lhs, Value rhs) {
    if (!lhs || !rhs)
      return {};
    BoolAttr no = imp.getBuilder().getBoolAttr(false);
    BoolAttr yes = imp.getBuilder().getBoolAttr(true);
    return imp.createInferred<MatMulOp>(lhs, rhs, no, yes);
  }
  Value permute(Value value, ArrayRef<int64_t> perm) {
    return value ? imp.createInferred<TransposeOp>(
                       value, imp.getBuilder().getDenseI64ArrayAttr(perm))
                 : Value();
  }
  Value concat(ArrayRef<Value> parts, int64_t axis) {
    if (llvm::any_of(parts, [](Value v) { return !v; }))
      return {};
    if (parts.size() == 1)
      return parts.front();
    return imp.createInferred<ConcatOp>(
        parts, imp.getBuilder().getI64IntegerAttr(axis));
  }
  /// `x` plus `y`, or `x` when `y` is null (a zero term).
  Value addIf(Value x, Value y) { return y ? e.add(x, y) : x; }
  LogicalResult checkShape(Value value, StringRef what,
                           ArrayRef<int64_t> shape);
  /// `value` cut into its gates along its last axis.
  SmallVector<Value> gatesOf(Value value, int64_t count) {
    return cut(value, value ? getRank(value) - 1 : 0,
               SmallVector<int64_t>(count, hidden));
  }

  /// One direction: the states of every step (by time index) and the last
  /// cell state.
  LogicalResult runDirection(bool reverse, ArrayRef<Value> steps, Value h,
                             Value c, Value r, Value rb, Value p,
                             ArrayRef<Activation> acts,
                             SmallVectorImpl<Value> &states, Value &lastH,
                             Value &lastC);
  /// masks from sequence_lens (none when every row has the full length).
  LogicalResult buildMasks();

  NodeImporter &imp;
  Expr e;
  Cell cell;
  int64_t seqLen = 0, batch = 0, hidden = 0;
  double clip = 0;
  bool linearBeforeReset = false;
  /// LSTM's input_forget: f = 1 - i.
  bool inputForget = false;
  /// Per step t, [batch, 1]: whether t is inside the row's sequence.
  SmallVector<Value> masks;
};
} // namespace

Value Unroller::apply(const Activation &act, Value x, bool clipInput) {
  if (clip > 0 && clipInput)
    x = e.clip(x, e.scalar(x, -clip), e.scalar(x, clip));
  StringRef n = act.name;
  if (n == "sigmoid")
    return e.unary<SigmoidOp>(x);
  if (n == "tanh")
    return e.unary<TanhOp>(x);
  if (n == "relu")
    return e.unary<ReluOp>(x);
  if (n == "softsign")
    return e.softsign(x);
  if (n == "softplus")
    return e.softplus(x);
  if (n == "affine")
    return e.addScalar(e.mulScalar(x, act.alpha), act.beta);
  if (n == "leakyrelu")
    return e.leakyRelu(x, act.alpha);
  if (n == "thresholdedrelu")
    return e.thresholdedRelu(x, act.alpha);
  if (n == "scaledtanh")
    return e.mulScalar(e.unary<TanhOp>(e.mulScalar(x, act.beta)), act.alpha);
  if (n == "hardsigmoid")
    return e.hardSigmoid(x, act.alpha, act.beta);
  return e.elu(x, act.alpha); // "elu"; readActivations admits nothing else
}

SmallVector<Value> Unroller::cut(Value value, int64_t axis,
                                 ArrayRef<int64_t> sizes) {
  if (!value)
    return SmallVector<Value>(sizes.size());
  if (sizes.size() == 1)
    return {value};
  SmallVector<Type> types;
  for (int64_t size : sizes) {
    SmallVector<int64_t> shape(getShape(value));
    shape[axis] = size;
    types.push_back(getTensorType(value).clone(shape));
  }
  SmallVector<Value> pieces = imp.createMulti<SplitOp>(
      types, value, imp.getBuilder().getI64IntegerAttr(axis));
  if (pieces.empty())
    return SmallVector<Value>(sizes.size());
  return pieces;
}

SmallVector<Value> Unroller::perDirection(Value value) {
  if (!value)
    return {Value(), Value()};
  ArrayRef<int64_t> shape = getShape(value);
  SmallVector<int64_t> ones(shape[0], 1);
  SmallVector<Value> pieces = cut(value, 0, ones);
  for (Value &piece : pieces)
    piece = piece ? imp.createReshape(piece, shape.drop_front()) : Value();
  pieces.resize(2);
  return pieces;
}

LogicalResult Unroller::checkShape(Value value, StringRef what,
                                   ArrayRef<int64_t> shape) {
  if (!value || getShape(value) == shape)
    return success();
  return imp.emitError("input '" + what + "' has type " +
                       formatType(value.getType()) + "; expected shape " +
                       formatShape(shape));
}

LogicalResult Unroller::runDirection(bool reverse, ArrayRef<Value> steps,
                                     Value h, Value c, Value r, Value rb,
                                     Value p, ArrayRef<Activation> acts,
                                     SmallVectorImpl<Value> &states,
                                     Value &lastH, Value &lastC) {
  states.assign(seqLen, Value());
  int64_t H = hidden;
  // R cut for GRU's two products (z and r, then h) when the reset gate
  // applies before R (linear_before_reset = 0).
  Value rZR = r, rH, rbZR = rb, rbH;
  if (cell == Cell::Gru && !linearBeforeReset) {
    SmallVector<Value> rParts = cut(r, 0, {2 * H, H});
    rZR = rParts[0];
    rH = rParts[1];
    if (rb) {
      SmallVector<Value> bParts = cut(rb, 0, {2 * H, H});
      rbZR = bParts[0];
      rbH = bParts[1];
    }
  }
  SmallVector<Value> peep(3);
  if (p)
    peep = gatesOf(p, 3);
  for (int64_t k = 0; k < seqLen; ++k) {
    int64_t t = reverse ? seqLen - 1 - k : k;
    Value x = steps[t];
    Value hPrev = h, cPrev = c;
    if (cell == Cell::Rnn) {
      Value pre = h ? e.add(x, matmulT(h, r)) : x;
      if (rb)
        pre = e.add(pre, rb);
      h = apply(acts[0], pre);
    } else if (cell == Cell::Lstm) {
      Value pre = h ? e.add(x, matmulT(h, r)) : x;
      SmallVector<Value> g = gatesOf(pre, 4); // i, o, f, c
      Value gi = g[0], go = g[1], gf = g[2], gc = g[3];
      if (peep[0] && c) {
        gi = e.add(gi, e.mul(peep[0], c));
        gf = e.add(gf, e.mul(peep[2], c));
      }
      Value i = apply(acts[0], gi);
      Value f = inputForget ? e.sub(e.scalar(i, 1.0), i) : apply(acts[0], gf);
      Value candidate = apply(acts[1], gc);
      Value ic = e.mul(i, candidate);
      c = c ? e.add(e.mul(f, c), ic) : ic;
      if (peep[1])
        go = e.add(go, e.mul(peep[1], c));
      Value o = apply(acts[0], go);
      h = e.mul(o, apply(acts[2], c, /*clipInput=*/false));
    } else {
      SmallVector<Value> xg = gatesOf(x, 3); // z, r, h
      Value rz, rr, recH;
      if (linearBeforeReset) {
        Value rec = h ? addIf(matmulT(h, r), rb) : rb;
        if (rec) {
          SmallVector<Value> parts = gatesOf(rec, 3);
          rz = parts[0];
          rr = parts[1];
          recH = parts[2];
        }
      } else {
        Value rec = h ? addIf(matmulT(h, rZR), rbZR) : rbZR;
        if (rec) {
          SmallVector<Value> parts = gatesOf(rec, 2);
          rz = parts[0];
          rr = parts[1];
        }
      }
      Value z = apply(acts[0], addIf(xg[0], rz));
      Value reset = apply(acts[0], addIf(xg[1], rr));
      Value candidateIn;
      if (linearBeforeReset)
        candidateIn = recH ? e.add(xg[2], e.mul(reset, recH)) : xg[2];
      else
        candidateIn = addIf(
            addIf(xg[2], h ? matmulT(e.mul(reset, h), rH) : Value()), rbH);
      Value candidate = apply(acts[1], candidateIn);
      // (1 - z) * candidate + z * h.
      Value keep = e.sub(e.scalar(z, 1.0), z);
      Value fresh = e.mul(keep, candidate);
      h = h ? e.add(fresh, e.mul(z, h)) : fresh;
    }
    if (!h || imp.hasError())
      return failure();
    if (masks.empty()) {
      states[t] = h;
      continue;
    }
    // Past its length a row outputs zeros and keeps its state.
    Value zero = e.scalar(h, 0.0);
    states[t] = e.select(masks[t], h, zero);
    h = e.select(masks[t], h, hPrev ? hPrev : zero);
    if (cell == Cell::Lstm)
      c = e.select(masks[t], c, cPrev ? cPrev : zero);
    if (!h || imp.hasError())
      return failure();
  }
  lastH = h;
  lastC = c;
  return success();
}

LogicalResult Unroller::buildMasks() {
  if (!imp.hasInput(4))
    return success();
  Value lens = imp.getInput(4, "sequence_lens");
  if (!lens)
    return failure();
  if (!isa<IntegerType>(getElementType(lens)) ||
      getShape(lens) != ArrayRef<int64_t>{batch})
    return imp.emitError(
        "input 'sequence_lens' has type " + formatType(lens.getType()) +
        "; expected one integer per batch row, [" + Twine(batch) + "]");
  if (auto known = imp.matchConstant(lens)) {
    SmallVector<int64_t> values;
    for (const APInt &v : known->getValues<APInt>())
      values.push_back(v.getSExtValue());
    if (llvm::any_of(values, [&](int64_t n) { return n < 0 || n > seqLen; }))
      return imp.emitError("input 'sequence_lens' = " + formatShape(values) +
                           " has lengths outside [0, " + Twine(seqLen) +
                           "], the sequence's");
    if (llvm::all_of(values, [&](int64_t n) { return n == seqLen; }))
      return success(); // every row has the full length: nothing to mask
  } else if (imp.hasError()) {
    return failure();
  }
  // Step t is inside row b's sequence where t < sequence_lens[b] (lengths
  // given at run time beyond [0, T] act as 0 or T).
  for (int64_t t = 0; t < seqLen; ++t) {
    Value inside = e.less(imp.createScalar(getElementType(lens), t), lens);
    masks.push_back(inside ? imp.createReshape(inside, {batch, 1}) : Value());
    if (!masks.back())
      return failure();
  }
  return success();
}

LogicalResult Unroller::run() {
  Value x = imp.getInput(0, "X");
  Value w = imp.getInput(1, "W");
  Value r = imp.getInput(2, "R");
  if (!x || !w || !r)
    return failure();
  Value b = imp.getOptionalInput(3);
  Value h0 = imp.getOptionalInput(5);
  Value c0 = cell == Cell::Lstm ? imp.getOptionalInput(6) : Value();
  Value p = cell == Cell::Lstm ? imp.getOptionalInput(7) : Value();
  if (imp.hasError())
    return failure();
  if (!isa<FloatType>(getElementType(x)))
    return imp.emitError("input 'X' has element type " +
                         formatType(getElementType(x)) +
                         "; this op takes float tensors");
  if (failed(imp.checkSameElementType(x, w, "X", "W")) ||
      failed(imp.checkSameElementType(x, r, "X", "R")) ||
      (b && failed(imp.checkSameElementType(x, b, "X", "B"))) ||
      (h0 && failed(imp.checkSameElementType(x, h0, "X", "initial_h"))) ||
      (c0 && failed(imp.checkSameElementType(x, c0, "X", "initial_c"))) ||
      (p && failed(imp.checkSameElementType(x, p, "X", "P"))))
    return failure();

  std::string direction = imp.getStringAttr("direction", "forward");
  if (direction != "forward" && direction != "reverse" &&
      direction != "bidirectional")
    return imp.emitUnsupportedAttr(
        "direction", "'" + direction + "'",
        "ONNX defines forward, reverse and bidirectional");
  int64_t directions = direction == "bidirectional" ? 2 : 1;
  int64_t layout = imp.getIntAttr("layout", 0);
  if (layout != 0 && layout != 1)
    return imp.emitUnsupportedAttr("layout", Twine(layout),
                                   "ONNX defines 0 and 1");
  inputForget = cell == Cell::Lstm && imp.getIntAttr("input_forget", 0) != 0;
  linearBeforeReset =
      cell == Cell::Gru && imp.getIntAttr("linear_before_reset", 0) != 0;
  clip = imp.hasAttr("clip") ? imp.getFloatAttr("clip", 0.0) : 0.0;
  if (imp.hasAttr("clip") && !(clip > 0))
    return imp.emitUnsupportedAttr("clip", std::to_string(clip),
                                   "the threshold must be positive");
  std::optional<SmallVector<Activation>> acts =
      readActivations(imp, cell, directions);
  if (!acts)
    return failure();

  if (getRank(x) != 3)
    return imp.emitError("input 'X' has type " + formatType(x.getType()) +
                         "; expected rank 3");
  if (layout == 1) {
    x = permute(x, {1, 0, 2});
    if (h0 && getRank(h0) == 3)
      h0 = permute(h0, {1, 0, 2});
    if (c0 && getRank(c0) == 3)
      c0 = permute(c0, {1, 0, 2});
  }
  if (!x)
    return failure();
  seqLen = getShape(x)[0];
  batch = getShape(x)[1];
  int64_t inputSize = getShape(x)[2];
  int64_t gates = gateCount(cell);
  if (getRank(w) != 3 || getShape(w)[1] % gates != 0)
    return imp.emitError("input 'W' has type " + formatType(w.getType()) +
                         "; expected [num_directions, " + Twine(gates) +
                         " * hidden_size, input_size]");
  hidden = imp.getIntAttr("hidden_size", getShape(w)[1] / gates);
  if (hidden <= 0)
    return imp.emitError("attribute 'hidden_size' is " + Twine(hidden) +
                         "; it must be positive");
  int64_t H = hidden, G = gates, D = directions;
  // initial_h and initial_c are [D, batch, H] after the layout's transpose.
  if (getShape(w)[1] != G * H)
    return imp.emitError("attribute 'hidden_size' = " + Twine(H) +
                         " does not match input 'W' (" +
                         formatType(w.getType()) +
                         "): its second dimension "
                         "must be " +
                         Twine(G) + " * hidden_size = " + Twine(G * H));
  if (failed(checkShape(w, "W", {D, G * H, inputSize})) ||
      failed(checkShape(r, "R", {D, G * H, H})) ||
      failed(checkShape(b, "B", {D, 2 * G * H})) ||
      failed(checkShape(h0, layout ? "initial_h (layout 1)" : "initial_h",
                        {D, batch, H})) ||
      failed(checkShape(c0, layout ? "initial_c (layout 1)" : "initial_c",
                        {D, batch, H})) ||
      failed(checkShape(p, "P", {D, 3 * H})))
    return failure();
  // A state of constant zeros (what PyTorch exports when no state is given)
  // is left out like an absent one: no product with it, no gradient for it.
  // Only constants: a parameter that starts at zero is trained.
  auto zeroConstant = [](Value v) {
    auto constant = v ? v.getDefiningOp<ConstantOp>() : ConstantOp();
    auto splat =
        constant ? dyn_cast<SplatElementsAttr>(constant.getValue()) : nullptr;
    return splat && isa<FloatType>(splat.getElementType()) &&
           splat.getSplatValue<APFloat>().isZero();
  };
  if (zeroConstant(h0))
    h0 = Value();
  if (zeroConstant(c0))
    c0 = Value();
  if (seqLen == 0 || batch == 0)
    return imp.emitError("input 'X' has type " + formatType(x.getType()) +
                         "; the sequence and the batch must not be empty");
  if (failed(buildMasks()))
    return failure();

  SmallVector<Value> ws = perDirection(w), rs = perDirection(r);
  SmallVector<Value> bs = perDirection(b), hs = perDirection(h0);
  SmallVector<Value> cs = perDirection(c0), ps = perDirection(p);
  if (imp.hasError())
    return failure();
  SmallVector<SmallVector<Value>> states(D);
  SmallVector<Value> lastH, lastC;
  int64_t perDir = static_cast<int64_t>(defaultActivations(cell).size());
  for (int64_t d = 0; d < D; ++d) {
    Value wb, rb;
    if (bs[d]) {
      SmallVector<Value> parts = cut(bs[d], 0, {G * H, G * H});
      wb = parts[0];
      rb = parts[1];
    }
    // The input's projection for every step; for RNN and LSTM R's bias
    // joins W's there (GRU's h gate needs it inside the reset).
    Value bias = wb;
    if (cell != Cell::Gru && rb) {
      bias = e.add(wb, rb);
      rb = Value();
    }
    Value proj = addIf(matmulT(x, ws[d]), bias); // [T, batch, G * H]
    if (!proj)
      return failure();
    SmallVector<Value> steps = cut(proj, 0, SmallVector<int64_t>(seqLen, 1));
    for (Value &step : steps)
      step = step ? imp.createReshape(step, {batch, G * H}) : Value();
    if (imp.hasError())
      return failure();
    bool reverse = direction == "reverse" || d == 1;
    Value h, c;
    if (failed(
            runDirection(reverse, steps, hs[d], cs[d], rs[d], rb, ps[d],
                         ArrayRef<Activation>(*acts).slice(d * perDir, perDir),
                         states[d], h, c)))
      return failure();
    lastH.push_back(h);
    lastC.push_back(c);
  }

  // Y [T, D, batch, H] (layout 1: [batch, T, D, H]); Y_h and Y_c
  // [D, batch, H] (layout 1: [batch, D, H]).
  auto stack = [&](ArrayRef<Value> parts, ArrayRef<int64_t> pieceShape,
                   int64_t axis) {
    SmallVector<Value> reshaped;
    for (Value part : parts)
      reshaped.push_back(part ? imp.createReshape(part, pieceShape) : Value());
    return concat(reshaped, axis);
  };
  if (imp.isOutputUsed(0)) {
    SmallVector<Value> byDirection;
    for (int64_t d = 0; d < D; ++d)
      byDirection.push_back(stack(states[d], {1, 1, batch, H}, 0));
    Value y = concat(byDirection, 1);
    if (layout == 1)
      y = permute(y, {2, 0, 1, 3});
    if (!y)
      return failure();
    imp.setOutput(0, y);
  }
  auto finalState = [&](unsigned index, ArrayRef<Value> last) {
    if (!imp.isOutputUsed(index))
      return success();
    Value v = stack(last, {1, batch, H}, 0);
    if (layout == 1)
      v = permute(v, {1, 0, 2});
    if (!v)
      return failure();
    imp.setOutput(index, v);
    return success();
  };
  if (failed(finalState(1, lastH)))
    return failure();
  if (cell == Cell::Lstm && imp.isOutputUsed(2)) {
    // With no initial_c, a cell state is always built (the first step's
    // i * candidate), so every entry is set.
    if (failed(finalState(2, lastC)))
      return failure();
  }
  return success();
}

LogicalResult onnx_import::importRNN(NodeImporter &imp) {
  return Unroller(imp, Cell::Rnn).run();
}
LogicalResult onnx_import::importGRU(NodeImporter &imp) {
  return Unroller(imp, Cell::Gru).run();
}
LogicalResult onnx_import::importLSTM(NodeImporter &imp) {
  return Unroller(imp, Cell::Lstm).run();
}
