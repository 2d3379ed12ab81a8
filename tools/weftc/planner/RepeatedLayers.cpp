//===- RepeatedLayers.cpp - Profile identical layers once -----------------===//
#include "tools/weftc/planner/RepeatedLayers.h"

#include "dialects/weft/WeftOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/Hashing.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <set>
#include <tuple>

using namespace mlir;
using namespace weft;
using namespace weft::planner;

namespace {

/// A structural hash of an op: its name, attributes and types.
llvm::hash_code opSignature(Operation *op) {
  llvm::hash_code h =
      llvm::hash_combine(op->getName().getAsOpaquePointer(),
                         op->getAttrDictionary().getAsOpaquePointer());
  for (Type t : op->getOperandTypes())
    h = llvm::hash_combine(h, t.getAsOpaquePointer());
  for (Type t : op->getResultTypes())
    h = llvm::hash_combine(h, t.getAsOpaquePointer());
  return h;
}

/// The value crossing the cut after forward op `cut`: the one result of an
/// op at or before it used after it.
Value crossingValue(const ForwardOps &fwd, int64_t cut) {
  Block *block = fwd.ops[cut]->getBlock();
  for (int64_t i = cut; i >= 0; --i)
    for (Value r : fwd.ops[i]->getResults())
      for (Operation *user : r.getUsers()) {
        Operation *at = block->findAncestorOpInBlock(*user);
        if (at && (isa<func::ReturnOp>(at) ||
                   (fwd.position.count(at) && fwd.position.lookup(at) > cut)))
          return r;
      }
  return Value();
}

/// The records of the shortened model's partition spread over the whole
/// model's units, in the order of the whole model's program: by section
/// (forward, backward with weight gradients, optimizer), then layer (the
/// backward's last first), then place in the shortened program. Each
/// collective's copy starts after, and is waited for before, the copies of
/// its neighbouring ops nearest its own unit.
void spreadInOrder(TpProfile &p, const Repetition &rep) {
  const int64_t c = rep.opsPerLayer;
  auto layerOf = [&](int64_t unit) -> int64_t {
    if (unit < rep.start)
      return -1;
    return std::min((unit - rep.start) / c, rep.layers);
  };
  // The program's sections: the forward up to the first backward op, the
  // optimizer from the first update (an op of no unit's, such as a
  // scalar's, stays in the section it stands in).
  const int64_t count = static_cast<int64_t>(p.ops.size());
  int64_t backwardFrom = count, optimizerFrom = count;
  for (int64_t r = count - 1; r >= 0; --r) {
    if (p.ops[r].phase == Phase::Optimizer)
      optimizerFrom = r;
    else if (p.ops[r].phase != Phase::Forward)
      backwardFrom = r;
  }
  auto section = [&](int64_t r) -> int64_t {
    return r >= optimizerFrom ? 2 : r >= backwardFrom ? 1 : 0;
  };
  struct Copy {
    int64_t section, layer, record, copy;
    int32_t unit;
  };
  std::vector<Copy> copies;
  std::vector<SmallVector<int64_t, 1>> unitsOf(p.ops.size());
  // A record of unit 0 stays after the one before it in its section: an
  // op with no unit of its own (the loss's comparison of the targets, the
  // start of the backward) has unit 0 wherever it runs.
  int64_t previous = INT64_MIN;
  for (size_t r = 0; r < p.ops.size(); ++r) {
    unitsOf[r] = expandUnit(p.ops[r].unit, rep, /*dropped=*/true);
    const int64_t s = section(static_cast<int64_t>(r));
    if (r > 0 && s != section(static_cast<int64_t>(r) - 1))
      previous = INT64_MIN;
    int64_t earliest = INT64_MAX;
    for (size_t j = 0; j < unitsOf[r].size(); ++j) {
      const int64_t layer = layerOf(unitsOf[r][j]);
      int64_t key = s == 1 ? -layer : layer;
      if (unitsOf[r][j] == 0)
        key = previous;
      earliest = std::min(earliest, key);
      copies.push_back({s, key, static_cast<int64_t>(r),
                        static_cast<int64_t>(j),
                        static_cast<int32_t>(unitsOf[r][j])});
    }
    previous = earliest;
  }
  std::stable_sort(copies.begin(), copies.end(),
                   [](const Copy &a, const Copy &b) {
                     return std::tie(a.section, a.layer, a.record) <
                            std::tie(b.section, b.layer, b.record);
                   });
  std::vector<SmallVector<int32_t, 1>> placeOf(p.ops.size());
  for (size_t r = 0; r < p.ops.size(); ++r)
    placeOf[r].assign(unitsOf[r].size(), 0);
  std::vector<OpRecord> ops;
  ops.reserve(copies.size());
  for (const Copy &k : copies) {
    placeOf[k.record][k.copy] = static_cast<int32_t>(ops.size());
    ops.push_back(p.ops[k.record]);
    ops.back().unit = k.unit;
  }
  // The place of the copy of op record `r` whose unit is nearest `unit`.
  auto nearest = [&](int64_t r, int64_t unit) -> int32_t {
    size_t best = 0;
    for (size_t i = 1; i < unitsOf[r].size(); ++i)
      if (std::abs(unitsOf[r][i] - unit) < std::abs(unitsOf[r][best] - unit))
        best = i;
    return placeOf[r][best];
  };
  // Which record and copy each whole-model unit comes from, and the
  // records of each shortened unit by section, in order.
  std::map<int64_t, std::pair<int64_t, size_t>> origin;
  std::map<std::pair<int64_t, int64_t>, std::vector<int64_t>> recordsOf;
  std::vector<size_t> rank(p.ops.size());
  for (int64_t r = 0; r < count; ++r) {
    for (size_t i = 0; i < unitsOf[r].size(); ++i)
      origin.emplace(unitsOf[r][i], std::make_pair(p.ops[r].unit, i));
    std::vector<int64_t> &same = recordsOf[{section(r), p.ops[r].unit}];
    rank[r] = same.size();
    same.push_back(r);
  }
  // The place of op record `r`'s part next to a collective's copy, the
  // collective being of shortened unit `own` and this copy of unit `unit`:
  // the record in the layer as far from the copy's as r's is from the
  // collective's that plays r's part there (r's own copy, or the record at
  // the same place among its unit's records: the record before a middle
  // layer's collective can be the first layer's, or the template layer
  // next to the last one, which in the whole model is the other
  // template's). Outside the identical layers, r's copy nearest `unit`.
  const int64_t kept = rep.start + kKeptLayers * c;
  auto partOf = [&](int64_t r, int64_t own, int64_t unit) -> int32_t {
    const int64_t u = p.ops[r].unit;
    if (u >= rep.start && u < kept && own >= rep.start && own < kept &&
        unit >= rep.start && unit < rep.start + rep.layers * c) {
      const int64_t layer =
          (unit - rep.start) / c + (u - rep.start) / c - (own - rep.start) / c;
      const int64_t want = rep.start + layer * c + (u - rep.start) % c;
      for (size_t i = 0; i < unitsOf[r].size(); ++i)
        if (unitsOf[r][i] == want)
          return placeOf[r][i];
      auto from = origin.find(want);
      auto list = from == origin.end()
                      ? recordsOf.end()
                      : recordsOf.find({section(r), from->second.first});
      if (layer >= 0 && list != recordsOf.end() &&
          rank[r] < list->second.size()) {
        const int64_t other = list->second[rank[r]];
        const size_t i = from->second.second;
        if (i < unitsOf[other].size() && unitsOf[other][i] == want)
          return placeOf[other][i];
      }
    }
    return nearest(r, unit);
  };
  std::vector<CollectiveRecord> comms;
  for (const CollectiveRecord &r : p.collectives) {
    for (int64_t unit : expandUnit(r.unit, rep, /*dropped=*/true)) {
      CollectiveRecord copy = r;
      copy.unit = static_cast<int32_t>(unit);
      // Started right after the op before it, waited for right before the
      // op that reads it.
      copy.start = r.start > 0 ? partOf(r.start - 1, r.unit, unit) + 1 : 0;
      copy.wait = r.wait == r.start ? copy.start
                  : r.wait >= count
                      ? static_cast<int32_t>(ops.size())
                      : std::max(copy.start, partOf(r.wait, r.unit, unit));
      comms.push_back(copy);
    }
  }
  // The parameters' gathers chain: the first starts where the earliest
  // did, each next one where the one before it (now perhaps another
  // layer's copy) is waited for.
  std::vector<size_t> chain;
  int32_t first = INT32_MAX;
  for (size_t k = 0; k < comms.size(); ++k)
    if (comms[k].prefetch && comms[k].wait > comms[k].start) {
      chain.push_back(k);
      first = std::min(first, comms[k].start);
    }
  std::stable_sort(chain.begin(), chain.end(), [&](size_t a, size_t b) {
    return comms[a].wait < comms[b].wait;
  });
  for (size_t i = 0; i < chain.size(); ++i) {
    CollectiveRecord &next = comms[chain[i]];
    next.start = std::min(next.wait, i ? comms[chain[i - 1]].wait : first);
  }
  // In the order they start, as in the whole model's program. Between two
  // ops, reductions come first (weft-schedule-collectives moves each right
  // after the op that completes its operand), then parameters' gathers
  // (started right after a parameter or the previous one's wait), other
  // gathers last (each stands right before the op that reads it, or the
  // product it starts ahead of); else in the shortened program's order.
  auto rankOf = [](const CollectiveRecord &c) {
    return std::make_pair(c.start, c.kind != "all_gather" ? 0
                                   : c.prefetch           ? 1
                                                          : 2);
  };
  std::stable_sort(comms.begin(), comms.end(),
                   [&](const CollectiveRecord &a, const CollectiveRecord &b) {
                     return rankOf(a) < rankOf(b);
                   });
  p.ops = std::move(ops);
  p.collectives = std::move(comms);
}

} // namespace

Repetition weft::planner::findRepetition(const ForwardOps &fwd) {
  const int64_t n = fwd.ops.size();
  SmallVector<int64_t> begin = {0};
  for (int64_t c : fwd.layerBoundaries)
    begin.push_back(c + 1);
  const int64_t segments = begin.size();
  auto segEnd = [&](int64_t i) { return i + 1 < segments ? begin[i + 1] : n; };
  SmallVector<llvm::hash_code> sig(segments);
  for (int64_t i = 0; i < segments; ++i) {
    llvm::hash_code h = llvm::hash_value(segEnd(i) - begin[i]);
    for (int64_t o = begin[i]; o < segEnd(i); ++o)
      h = llvm::hash_combine(h, opSignature(fwd.ops[o]));
    sig[i] = h;
  }
  // For each period, the maximal runs where segment j equals segment j + q;
  // the run covering the most forward ops wins.
  Repetition best;
  for (int64_t q = 1; q <= 4; ++q)
    for (int64_t i = 0; i + q < segments;) {
      int64_t j = i;
      while (j + q < segments && sig[j] == sig[j + q])
        ++j;
      int64_t layers = (j - i + q) / q;
      if (layers >= 2) {
        int64_t ops = begin[i + q] - begin[i];
        if (layers * ops > best.layers * best.opsPerLayer)
          best = {begin[i], ops, layers};
      }
      i = std::max(j, i + 1);
    }
  return best;
}

bool weft::planner::dropRepeatedLayers(const ForwardOps &fwd,
                                       const Repetition &rep) {
  const int64_t c = rep.opsPerLayer;
  const int64_t keepEnd = rep.start + kKeptLayers * c; // first dropped op
  const int64_t dropEnd = rep.start + rep.layers * c;
  Value keep = crossingValue(fwd, keepEnd - 1);
  Value drop = crossingValue(fwd, dropEnd - 1);
  if (!keep || !drop || keep.getType() != drop.getType())
    return false;
  // Everything the dropped ops make is used by dropped ops only, except
  // the last layer's output.
  DenseSet<Operation *> dropped;
  for (int64_t i = keepEnd; i < dropEnd; ++i)
    dropped.insert(fwd.ops[i]);
  for (Operation *op : dropped)
    for (Value r : op->getResults())
      if (r != drop)
        for (Operation *user : r.getUsers())
          if (!dropped.contains(user))
            return false;
  drop.replaceAllUsesWith(keep);
  for (int64_t i = dropEnd - 1; i >= keepEnd; --i)
    fwd.ops[i]->erase();
  return true;
}

SmallVector<int64_t, 1>
weft::planner::expandUnit(int64_t u, const Repetition &rep, bool dropped) {
  if (!dropped)
    return {u};
  const int64_t c = rep.opsPerLayer, extra = (rep.layers - kKeptLayers) * c;
  if (u < rep.start + c)
    return {u};
  if (u < rep.start + (1 + kTemplateLayers) * c) {
    const int64_t t = (u - rep.start - c) / c, op = (u - rep.start) % c;
    SmallVector<int64_t, 1> all;
    for (int64_t i = 1 + t; i + 1 < rep.layers; i += kTemplateLayers)
      all.push_back(rep.start + i * c + op);
    return all;
  }
  return {u + extra};
}

void weft::planner::expandProfile(TpProfile &p, const Repetition &rep,
                                  bool dropped, int64_t units) {
  if (!dropped)
    return;
  spreadInOrder(p, rep);
  std::vector<UnitBytes> bytes(std::max<int64_t>(units, 1));
  for (size_t u = 0; u < p.units.size(); ++u)
    for (int64_t full : expandUnit(u, rep, dropped))
      if (full < static_cast<int64_t>(bytes.size()))
        bytes[full] = p.units[u];
  p.units = std::move(bytes);
  // A parameter of the template layers is one per layer it stands for
  // (its units expand alike, copy i of each unit in layer i); any other is
  // read by every unit its units stand for.
  std::vector<SharedParam> shared;
  for (const SharedParam &sp : p.sharedParams) {
    std::vector<SmallVector<int64_t, 1>> spread;
    for (int32_t u : sp.units)
      spread.push_back(expandUnit(u, rep, dropped));
    const size_t copies = spread.front().size();
    bool perLayer = copies > 1 && llvm::all_of(spread, [&](const auto &s) {
                      return s.size() == copies;
                    });
    for (size_t i = 0; i < (perLayer ? copies : 1); ++i) {
      std::set<int32_t> units;
      for (const auto &s : spread)
        for (size_t j = 0; j < s.size(); ++j)
          if (!perLayer || j == i)
            units.insert(static_cast<int32_t>(s[j]));
      shared.push_back(sp);
      shared.back().units.assign(units.begin(), units.end());
    }
  }
  p.sharedParams = std::move(shared);
}

std::vector<BatchCoupling>
weft::planner::expandCouplings(const std::vector<BatchCoupling> &couplings,
                               const Repetition &rep, bool dropped) {
  std::vector<BatchCoupling> all;
  for (const BatchCoupling &c : couplings)
    for (int64_t u : expandUnit(c.unit, rep, dropped)) {
      all.push_back(c);
      all.back().unit = static_cast<int32_t>(u);
      all.back().source =
          static_cast<int32_t>(std::max<int64_t>(0, u - (c.unit - c.source)));
    }
  return all;
}
