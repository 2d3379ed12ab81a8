//===- ImportEinsum.cpp - ONNX Einsum as transposes, sums and products ----===//
//
// Einsum (numpy's notation, with "..." and the implicit output) becomes weft
// ops the rest of the compiler knows. Every operand first sums the labels no
// one else needs (weft.reduce_sum); operands are then contracted left to
// right, each pair as one batched weft.matmul: the labels both keep are the
// batch, those only one keeps its rows or columns, and the shared labels
// nothing later needs the inner dimension (transposes and reshapes put them
// in place). Labels repeated within one operand (diagonals) are refused.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OpImporters.h"

#include "dialects/weft/ShapeRules.h"
#include "dialects/weft/WeftOps.h"

#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace weft;
using namespace weft::onnx_import;

namespace {
/// Letters are labels 0-51; the ellipsis's dimensions, aligned from the
/// right as numpy does, are kEllipsis + 0, 1, ... (the leftmost first).
constexpr int64_t kEllipsis = 64;

/// One operand or intermediate: a value and the label of each dimension.
struct Term {
  Value value;
  SmallVector<int64_t> labels;
};

struct Equation {
  SmallVector<SmallVector<int64_t>> inputs;
  SmallVector<int64_t> output;
};

int64_t letterLabel(char c) {
  if (c >= 'a' && c <= 'z')
    return c - 'a';
  if (c >= 'A' && c <= 'Z')
    return 26 + (c - 'A');
  return -1;
}

/// Parses one side's term; `rank` (-1 for the output) sizes the ellipsis.
/// `ellipsisRank` is the widest ellipsis among the inputs.
std::optional<SmallVector<int64_t>> parseTerm(StringRef text, int64_t rank,
                                              int64_t ellipsisRank,
                                              std::string &err,
                                              int64_t *ellipsisDims = nullptr) {
  SmallVector<int64_t> labels;
  size_t dots = text.find("...");
  if (dots != StringRef::npos &&
      text.find("...", dots + 3) != StringRef::npos) {
    err = "term '" + text.str() + "' has more than one '...'";
    return std::nullopt;
  }
  int64_t letters =
      static_cast<int64_t>(text.size()) - (dots == StringRef::npos ? 0 : 3);
  int64_t spanned = 0;
  if (dots != StringRef::npos)
    spanned = rank < 0 ? ellipsisRank : rank - letters;
  if (rank >= 0 &&
      (spanned < 0 || (dots == StringRef::npos && letters != rank))) {
    err = "term '" + text.str() + "' does not match an operand of rank " +
          std::to_string(rank);
    return std::nullopt;
  }
  if (ellipsisDims)
    *ellipsisDims = spanned;
  for (size_t i = 0; i < text.size(); ++i) {
    if (i == dots) {
      for (int64_t d = 0; d < spanned; ++d)
        labels.push_back(kEllipsis + (ellipsisRank - spanned) + d);
      i += 2;
      continue;
    }
    int64_t label = letterLabel(text[i]);
    if (label < 0) {
      err = std::string("'") + text[i] + "' is not a letter";
      return std::nullopt;
    }
    labels.push_back(label);
  }
  return labels;
}
} // namespace

/// Parses `equation` for operands of `ranks`; records an error and returns
/// nullopt when it is malformed or uses what weft does not support.
static std::optional<Equation>
parseEquation(NodeImporter &imp, StringRef equation, ArrayRef<int64_t> ranks) {
  std::string text;
  for (char c : equation)
    if (c != ' ')
      text.push_back(c);
  StringRef lhs = text, rhs;
  bool explicitOutput = false;
  if (size_t arrow = lhs.find("->"); arrow != StringRef::npos) {
    rhs = lhs.substr(arrow + 2);
    lhs = lhs.substr(0, arrow);
    explicitOutput = true;
  }
  SmallVector<StringRef> terms;
  lhs.split(terms, ',');
  auto fail = [&](const Twine &why) {
    (void)imp.emitError("equation '" + equation + "': " + why);
    return std::nullopt;
  };
  if (terms.size() != ranks.size())
    return fail(Twine(terms.size()) + " terms for " + Twine(ranks.size()) +
                " inputs");
  // The widest ellipsis sets how many dimensions "..." means in the output.
  int64_t ellipsisRank = 0;
  for (auto [term, rank] : llvm::zip(terms, ranks)) {
    if (term.contains("...")) {
      int64_t letters = static_cast<int64_t>(term.size()) - 3;
      ellipsisRank = std::max(ellipsisRank, rank - letters);
    }
  }
  Equation eq;
  std::string err;
  for (auto [term, rank] : llvm::zip(terms, ranks)) {
    std::optional<SmallVector<int64_t>> labels =
        parseTerm(term, rank, ellipsisRank, err);
    if (!labels)
      return fail(err);
    for (size_t i = 0; i < labels->size(); ++i)
      if (llvm::is_contained(ArrayRef(*labels).drop_front(i + 1), (*labels)[i]))
        return fail("term '" + term +
                    "' repeats a label (a diagonal), which weft does not "
                    "support");
    eq.inputs.push_back(std::move(*labels));
  }
  if (explicitOutput) {
    std::optional<SmallVector<int64_t>> labels =
        parseTerm(rhs, -1, ellipsisRank, err);
    if (!labels)
      return fail(err);
    for (int64_t label : *labels) {
      if (llvm::count(*labels, label) > 1)
        return fail("the output repeats a label");
      if (llvm::none_of(eq.inputs, [&](ArrayRef<int64_t> in) {
            return llvm::is_contained(in, label);
          }))
        return fail("the output has a label no input has");
    }
    eq.output = std::move(*labels);
  } else {
    // numpy's implicit output: the ellipsis, then the labels used once, in
    // alphabetical order.
    for (int64_t d = 0; d < ellipsisRank; ++d)
      eq.output.push_back(kEllipsis + d);
    for (int64_t label = 0; label < 52; ++label) {
      int64_t uses = 0;
      for (ArrayRef<int64_t> in : eq.inputs)
        uses += llvm::count(in, label);
      if (uses == 1)
        eq.output.push_back(label);
    }
  }
  return eq;
}

/// `term` summed over the labels not in `keep`.
static Term sumExcept(NodeImporter &imp, Term term,
                      const llvm::SmallSetVector<int64_t, 16> &keep) {
  SmallVector<int64_t> axes, labels;
  for (auto [axis, label] : llvm::enumerate(term.labels)) {
    if (keep.contains(label))
      labels.push_back(label);
    else
      axes.push_back(axis);
  }
  if (axes.empty())
    return term;
  OpBuilder &b = imp.getBuilder();
  Value sum = imp.createInferred<ReduceSumOp>(
      term.value, b.getDenseI64ArrayAttr(axes), b.getBoolAttr(false));
  return {sum, labels};
}

/// `term` with its dimensions in the order of `labels` (a permutation).
static Value permute(NodeImporter &imp, const Term &term,
                     ArrayRef<int64_t> labels) {
  SmallVector<int64_t> perm;
  for (int64_t label : labels)
    perm.push_back(llvm::find(term.labels, label) - term.labels.begin());
  if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
    return term.value;
  return imp.createInferred<TransposeOp>(
      term.value, imp.getBuilder().getDenseI64ArrayAttr(perm));
}

static int64_t sizeOf(const Term &term, int64_t label) {
  return getShape(
      term.value)[llvm::find(term.labels, label) - term.labels.begin()];
}

/// `a` and `b` contracted; the result keeps the labels in `keep`.
static std::optional<Term>
contract(NodeImporter &imp, Term a, Term b,
         const llvm::SmallSetVector<int64_t, 16> &keep) {
  SmallVector<int64_t> batch, inner, rows, cols;
  for (int64_t label : a.labels) {
    bool shared = llvm::is_contained(b.labels, label);
    if (shared && keep.contains(label))
      batch.push_back(label);
    else if (shared)
      inner.push_back(label);
    else
      rows.push_back(label);
  }
  for (int64_t label : b.labels)
    if (!llvm::is_contained(a.labels, label))
      cols.push_back(label);

  // Shared labels must agree in size, except that a size 1 broadcasts
  // (numpy allows that for the ellipsis). The inner dimension cannot
  // broadcast in a product: the operand with 1 is expanded.
  for (int64_t label : llvm::concat<int64_t>(batch, inner)) {
    int64_t sa = sizeOf(a, label), sb = sizeOf(b, label);
    if (sa == sb)
      continue;
    if (sa != 1 && sb != 1) {
      (void)imp.emitError("label sizes " + Twine(sa) + " and " + Twine(sb) +
                          " differ between " + formatType(a.value.getType()) +
                          " and " + formatType(b.value.getType()));
      return std::nullopt;
    }
    if (!llvm::is_contained(inner, label))
      continue;
    Term &narrow = sa == 1 ? a : b;
    SmallVector<int64_t> shape(getShape(narrow.value));
    shape[llvm::find(narrow.labels, label) - narrow.labels.begin()] =
        std::max(sa, sb);
    narrow.value = imp.create<BroadcastToOp>(
        getTensorType(narrow.value).clone(shape), narrow.value);
    if (!narrow.value)
      return std::nullopt;
  }

  auto product = [&](const Term &t, ArrayRef<int64_t> labels) {
    int64_t n = 1;
    for (int64_t label : labels)
      n *= sizeOf(t, label);
    return n;
  };
  SmallVector<int64_t> aShape, bShape, outShape, outLabels;
  for (int64_t label : batch) {
    aShape.push_back(sizeOf(a, label));
    bShape.push_back(sizeOf(b, label));
    outShape.push_back(std::max(sizeOf(a, label), sizeOf(b, label)));
    outLabels.push_back(label);
  }
  int64_t m = product(a, rows), k = product(a, inner), n = product(b, cols);
  aShape.append({m, k});
  bShape.append({k, n});
  for (int64_t label : rows) {
    outShape.push_back(sizeOf(a, label));
    outLabels.push_back(label);
  }
  for (int64_t label : cols) {
    outShape.push_back(sizeOf(b, label));
    outLabels.push_back(label);
  }

  SmallVector<int64_t> aOrder(batch), bOrder(batch);
  aOrder.append(rows.begin(), rows.end());
  aOrder.append(inner.begin(), inner.end());
  bOrder.append(inner.begin(), inner.end());
  bOrder.append(cols.begin(), cols.end());
  Value result;
  if (inner.empty()) {
    // Nothing to contract (outer and elementwise products): a broadcast
    // multiply of [batch, rows, 1...] and [batch, 1..., cols], not a
    // product with an inner dimension of 1.
    SmallVector<int64_t> aWide, bWide;
    for (int64_t label : batch) {
      aWide.push_back(sizeOf(a, label));
      bWide.push_back(sizeOf(b, label));
    }
    for (int64_t label : rows) {
      aWide.push_back(sizeOf(a, label));
      bWide.push_back(1);
    }
    for (int64_t label : cols) {
      aWide.push_back(1);
      bWide.push_back(sizeOf(b, label));
    }
    Value lhs = imp.createReshape(permute(imp, a, aOrder), aWide);
    Value rhs = imp.createReshape(permute(imp, b, bOrder), bWide);
    if (!lhs || !rhs)
      return std::nullopt;
    result = imp.createInferred<MulOp>(lhs, rhs);
  } else {
    Value lhs = imp.createReshape(permute(imp, a, aOrder), aShape);
    Value rhs = imp.createReshape(permute(imp, b, bOrder), bShape);
    if (!lhs || !rhs)
      return std::nullopt;
    BoolAttr no = imp.getBuilder().getBoolAttr(false);
    result = imp.createInferred<MatMulOp>(lhs, rhs, no, no);
    result = imp.createReshape(result, outShape);
  }
  if (!result)
    return std::nullopt;
  return Term{result, outLabels};
}

LogicalResult onnx_import::importEinsum(NodeImporter &imp) {
  if (!imp.hasAttr("equation"))
    return imp.emitError("missing required attribute 'equation'");
  std::string equation = imp.getStringAttr("equation", "");
  SmallVector<Term> terms;
  SmallVector<int64_t> ranks;
  for (unsigned i = 0, e = imp.getNumInputs(); i < e; ++i) {
    Value input = imp.getInput(i, "Inputs");
    if (!input)
      return failure();
    if (!isa<FloatType>(getElementType(input)))
      return imp.emitError("input " + Twine(i) + " has element type " +
                           formatType(getElementType(input)) +
                           "; weft's Einsum takes float tensors");
    if (!terms.empty() &&
        failed(imp.checkSameElementType(terms.front().value, input, "0",
                                        std::to_string(i))))
      return failure();
    terms.push_back({input, {}});
    ranks.push_back(getRank(input));
  }
  if (terms.empty())
    return imp.emitError("needs at least one input");
  std::optional<Equation> eq = parseEquation(imp, equation, ranks);
  if (!eq)
    return failure();
  for (auto [term, labels] : llvm::zip(terms, eq->inputs))
    term.labels = labels;

  // The labels needed once operands [0, i] are folded together: the
  // output's and those of operands after i.
  auto neededAfter = [&](size_t i) {
    llvm::SmallSetVector<int64_t, 16> keep;
    keep.insert(eq->output.begin(), eq->output.end());
    for (size_t j = i + 1; j < terms.size(); ++j)
      keep.insert(terms[j].labels.begin(), terms[j].labels.end());
    return keep;
  };
  // An operand first sums the labels nobody needs: neither the output, nor
  // a later operand, nor (from the second on) what was folded so far.
  Term acc = sumExcept(imp, terms[0], neededAfter(0));
  for (size_t i = 1; i < terms.size() && acc.value; ++i) {
    llvm::SmallSetVector<int64_t, 16> keep = neededAfter(i);
    keep.insert(acc.labels.begin(), acc.labels.end());
    Term next = sumExcept(imp, terms[i], keep);
    if (!next.value)
      return failure();
    std::optional<Term> joined = contract(imp, acc, next, neededAfter(i));
    if (!joined)
      return failure();
    acc = *joined;
  }
  if (!acc.value)
    return failure();
  llvm::SmallSetVector<int64_t, 16> output;
  output.insert(eq->output.begin(), eq->output.end());
  acc = sumExcept(imp, acc, output);
  Value result = acc.value ? permute(imp, acc, eq->output) : Value();
  if (!result)
    return failure();
  imp.setOutput(0, result);
  return success();
}
